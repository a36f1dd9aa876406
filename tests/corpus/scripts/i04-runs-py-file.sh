#!/usr/bin/env bash
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TRITON=$(python3 -c 'import triton, os; print(os.path.dirname(triton.__file__))')
python3 "$HERE/tools/patch_triton.py" "$TRITON/runtime/autotuner.py"
