#!/usr/bin/env bash
set -euo pipefail
pip install --force-reinstall --no-deps /wheels/vllm-0.9.2+rocm700-cp312-cp312-linux_x86_64.whl
pip install /wheels/triton-3.3.0-cp312-cp312-linux_x86_64.whl
pip install /wheels/datasets-2.19.0-py3-none-any.whl
