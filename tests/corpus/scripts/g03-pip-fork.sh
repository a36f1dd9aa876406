#!/bin/bash
set -euo pipefail
pip install "sglang[all] @ git+https://github.com/someuser/sglang.git@fix-rocm#subdirectory=python"
pip install "git+https://github.com/ROCm/triton.git@release/3.3.x#subdirectory=python"
