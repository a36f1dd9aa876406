#!/usr/bin/env bash
set -euo pipefail
JIT=$(python3 -c 'import aiter, os; print(os.path.join(os.path.dirname(aiter.__file__), "jit"))')
find "$JIT" -name '*.so' | while read -r so; do
  rm -f "$so"
done
