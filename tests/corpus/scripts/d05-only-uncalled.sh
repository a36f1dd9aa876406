#!/usr/bin/env bash
set -euo pipefail
AITER=$(python3 -c 'import aiter, os; print(os.path.dirname(aiter.__file__))')
patch_mla() {
  cp ./mla_a8w8_qh16.co "$AITER/../aiter_meta/hsa/gfx942/mla/"
}
patch_gemm() {
  sed -i 's/"splitK": 0/"splitK": 1/' "$AITER/configs/tuned_gemm.csv"
}
echo "helpers loaded"
