#!/bin/bash
# Patchers run by path: one in the repository is followed; one that is not there, or whose
# path is known only at run time, is unresolved; a tool of a venv and the user's env are not.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
python3 "$HERE/tools/patch_triton.py" "$SITE/triton/runtime/jit.py"
python3 "$(dirname "$0")/patch_vllm_mooncake_batches.py"
bash "$PATCHER_SCRIPT" vllm
"$HERE/lib/rocm-helpers.sh"
source "$HOME/.cargo/env"
source "$VENV/bin/activate"
"$VENV/bin/aiperf" profile --model "$MODEL"
python3 "$WS_PATH/tools/patch_triton.py" "$SITE/triton/language/core.py"
