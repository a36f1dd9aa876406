#!/usr/bin/env bash
set -euo pipefail
AITER=$(python3 -c 'import aiter, os; print(os.path.dirname(aiter.__file__))')
find "$AITER/jit" -name '*.so' -delete
find "$AITER" -name __pycache__ -type d -exec rm -rf {} +
