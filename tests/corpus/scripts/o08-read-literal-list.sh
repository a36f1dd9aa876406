#!/usr/bin/env bash
set -euo pipefail
AITER=$(python3 -c 'import aiter, os; print(os.path.dirname(aiter.__file__))')
while read -r rel; do
  rm -f "$AITER/$rel"
done <<'LIST'
jit/module_rmsnorm.so
jit/module_quant.so
LIST
