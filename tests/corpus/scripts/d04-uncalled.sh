#!/usr/bin/env bash
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
old_fix() {
  sed -i 's/use_triton_fa = True/use_triton_fa = False/' "$SITE/vllm/attention/ops/paged_attn.py"
}
sed -i 's/VLLM_USE_TRITON_FLASH_ATTN", "True"/VLLM_USE_TRITON_FLASH_ATTN", "False"/' "$SITE/vllm/envs.py"
