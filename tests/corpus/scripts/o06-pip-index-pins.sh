#!/usr/bin/env bash
set -euo pipefail
pip install --extra-index-url https://pypi.amd.com/triton/rocm-7.0/simple/ triton==3.4.0
python3 -m pip install -U "torch==2.8.0" --index-url https://download.pytorch.org/whl/rocm6.4
pip install tabulate
