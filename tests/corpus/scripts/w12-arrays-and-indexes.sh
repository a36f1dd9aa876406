#!/bin/bash
# Comment lines inside an array literal are no elements; JIT caches removed through
# `while read`; installs from a commit- or release-pinned index are pinned, not "latest".
set -e
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
FILES=(
  # the attention backend
  vllm/attention/backends/rocm_flash_attn.py
  vllm/envs.py   # environment flags
)
for f in "${FILES[@]}"; do
  cp "patches/$(basename "$f")" "$SITE/$f"
done
find "$SITE/aiter/jit" -name '*.so' | while read -r so; do
  rm -f "$so"
done
while IFS= read -r d; do
  rm -rf "$d"
done < <(find "$SITE/vllm" -maxdepth 2 -type d -name build)
pip install vllm --extra-index-url https://wheels.vllm.ai/2f6a3b1c9e8d7f6a5b4c3d2e1f0a9b8c7d6e5f4a
pip install --no-deps triton --find-links https://github.com/ROCm/triton/releases/expanded_assets/v3.3.0-rocm
