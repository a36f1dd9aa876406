#!/bin/bash
# A step helper runs its arguments ("$@" after shift): each change is the call's statement.
set -euo pipefail
VLLM_DIR=$(python3 -c 'import os, vllm; print(os.path.dirname(vllm.__file__))' 2>/dev/null)
step() {
  local label="$1"
  shift
  echo "==> $label"
  "$@"
}
run_logged() { echo "+ $*" >&2; "$@"; }
step "scheduler: 512 sequences" sed -i 's/max_num_seqs = 256/max_num_seqs = 512/' "$VLLM_DIR/config/scheduler.py"
run_logged cp patches/fused_moe.py "$VLLM_DIR/model_executor/layers/fused_moe/fused_moe.py"
step "triton: 8 warps" python3 tools/patch_triton.py "$VLLM_DIR/attention/ops/triton_decode.py"
step "done" echo all patched
