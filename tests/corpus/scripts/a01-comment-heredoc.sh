#!/usr/bin/env bash
set -euo pipefail
# Helper: _patch FILE MARKER <<'PYEOF' ... PYEOF  rewrites FILE unless MARKER is in it.
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
sed -i 's/VLLM_ROCM_USE_AITER_MLA = False/VLLM_ROCM_USE_AITER_MLA = True/' "$SITE/vllm/envs.py"
echo "patched"
