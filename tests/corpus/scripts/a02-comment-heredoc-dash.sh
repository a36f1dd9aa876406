#!/bin/bash
set -e
# usage: apply_diff DIR <<-'DIFF' ... DIFF   (tabs are stripped)
apply_diff() {
  cd "$1" && git apply -p1
}
VLLM_DIR=$(python3 -c "import vllm, os; print(os.path.dirname(vllm.__file__))")
apply_diff "$(dirname "$VLLM_DIR")" <<'DIFF'
--- a/vllm/attention/backends/rocm_flash_attn.py
+++ b/vllm/attention/backends/rocm_flash_attn.py
@@ -10,1 +10,1 @@
-_PARTITION_SIZE_ROCM = 256
+_PARTITION_SIZE_ROCM = 512
DIFF
