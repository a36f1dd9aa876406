#!/usr/bin/env bash
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
case "${GPU_ARCH:-gfx942}" in
  gfx942) cp configs/mi300x/tuned_gemm.csv "$SITE/aiter/configs/tuned_gemm.csv" ;;
  gfx950) cp configs/mi355x/tuned_gemm.csv "$SITE/aiter/configs/tuned_gemm.csv" ;;
esac
