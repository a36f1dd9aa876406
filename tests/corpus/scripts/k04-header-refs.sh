#!/usr/bin/env bash
# Patches for the MI355X DeepSeek-R1 run:
#   vllm-project/vllm #20112  fp8 MLA decode on gfx950
#   ROCm/aiter #771           asm MoE with block scale
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cd "$SITE"
git apply <<'DIFF'
--- a/vllm/attention/backends/mla/common.py
+++ b/vllm/attention/backends/mla/common.py
@@ -1 +1 @@
-FP8_DECODE = False
+FP8_DECODE = True
DIFF
git apply <<'DIFF'
--- a/aiter/fused_moe.py
+++ b/aiter/fused_moe.py
@@ -1 +1 @@
-BLOCK_SCALE = False
+BLOCK_SCALE = True
DIFF
