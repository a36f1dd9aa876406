#!/usr/bin/env bash
set -euo pipefail
mkdir -p /opt/vllm && cd /opt/vllm
git init
git remote add fork https://github.com/someuser/vllm.git
git fetch --depth 1 fork rocm-fp8-kv
git checkout FETCH_HEAD
pip install -e . --no-deps
