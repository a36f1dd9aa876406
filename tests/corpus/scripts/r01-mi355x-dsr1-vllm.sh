#!/usr/bin/env bash
# Container patches for the MI355X DeepSeek-R1 FP8 run (vLLM 0.10.1 + aiter).
#   vllm-project/vllm #22110  aiter MLA decode for qseqlen 4
#   ROCm/aiter #905           fp8 block-scale MoE kernels
set -euo pipefail

PYTHON=${PYTHON:-python3}
WORK=${WORK:-/workspace}
LOG=$WORK/patch.log

log() { echo "[$(date +%T)] $*" | tee -a "$LOG"; }

site_of() {
  "$PYTHON" -c "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('$1').submodule_search_locations[0]))"
}

VLLM_SITE=$(site_of vllm)
AITER_DIR=$("$PYTHON" -c 'import aiter, os; print(os.path.dirname(aiter.__file__))')

apply_diff() {
  local name=$1
  log "applying $name"
  if ! git -C "$VLLM_SITE" apply --check "$WORK/patches/$name" 2>/dev/null; then
    log "skip $name (already applied?)"
    return 0
  fi
  git -C "$VLLM_SITE" apply "$WORK/patches/$name"
}

apply_diff 0001-aiter-mla-qseqlen4.patch
apply_diff 0002-rocm-fp8-kv-cache.patch

# tuned GEMM tables for gfx950
for t in a8w8_blockscale_tuned_gemm.csv bf16_tuned_gemm.csv; do
  cp "$WORK/tuned/$t" "$AITER_DIR/configs/$t"
done

# clear stale JIT builds so the new tables are picked up
rm -rf "$AITER_DIR/jit/build" "$AITER_DIR"/jit/*.so

# harness
"$PYTHON" -m pip install --quiet "lm_eval[api]==0.4.8" tabulate
log "done"
