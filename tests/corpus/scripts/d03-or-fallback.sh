#!/bin/bash
set -e
VLLM_DIR=$(python3 -c "import vllm, os; print(os.path.dirname(vllm.__file__))")
try_patch() {
  (cd "$VLLM_DIR/.." && git apply -p1 "$1") || (cd "$VLLM_DIR/.." && patch -p1 -N < "$1")
}
try_patch /workspace/patches/moe-align.patch
