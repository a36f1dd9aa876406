#!/usr/bin/env bash
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
edit() {
  local file="$1" old="$2" new="$3"
  sed -i "s/$old/$new/" "$SITE/$file"
}
edit vllm/envs.py "VLLM_ROCM_FP8_PADDING\", \"1\"" "VLLM_ROCM_FP8_PADDING\", \"0\""
edit sglang/srt/layers/quantization/fp8.py "use_aiter = False" "use_aiter = True"
