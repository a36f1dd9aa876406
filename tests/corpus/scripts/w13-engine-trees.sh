#!/bin/bash
# Engine trees outside site-packages: a checkout named after its engine (vllm-src, sglang-main),
# or any folder a diff of engine files is applied in.
set -euo pipefail
cd /opt/vllm-local
git apply "$OLDPWD/patches/vllm-rocm-mla.patch" || true
git -C /workspace/engine apply patches/vllm-rocm-mla.patch
patch -p1 -d /opt/src/engine < patches/vllm-rocm-mla.patch
sed -i 's/"setuptools>=77"/"setuptools>=70"/' /opt/sglang-main/python/pyproject.toml
sed -i 's/^VERSION = .*/VERSION = "0.9.2+local"/' /opt/vllm-src/setup.py
cp results.json /workspace/vllm-results/run1.json
