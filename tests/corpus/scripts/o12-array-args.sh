#!/usr/bin/env bash
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
files=("$SITE/vllm/envs.py" "$SITE/vllm/config.py")
for f in "${files[@]}"; do
  sed -i 's/VLLM_ROCM_USE_SKINNY_GEMM", "1"/VLLM_ROCM_USE_SKINNY_GEMM", "0"/' "$f"
done
