#!/bin/bash
set -euo pipefail
WS=$(mktemp -d)
curl -fsSL -o "$WS/pr.diff" https://github.com/ROCm/aiter/pull/812.diff
AITER_ROOT=$(python3 -c 'import aiter, os; print(os.path.dirname(os.path.dirname(aiter.__file__)))')
git -C "$AITER_ROOT" apply "$WS/pr.diff"
