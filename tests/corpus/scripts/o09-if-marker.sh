#!/usr/bin/env bash
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if ! grep -q "AITER_MLA_PS" "$SITE/vllm/envs.py"; then
  cat >> "$SITE/vllm/envs.py" <<'PY'
VLLM_ROCM_AITER_MLA_PS = os.environ.get("VLLM_ROCM_AITER_MLA_PS", "1") == "1"
PY
fi
