#!/usr/bin/env bash
set -euo pipefail
git clone --depth 1 -b rocm-mla-fix https://github.com/ROCm/vllm.git /opt/vllm
cd /opt/vllm
sed -i 's/max_split_size_mb=128/max_split_size_mb=512/' vllm/worker/model_runner.py
pip install -e . --no-build-isolation
