#!/usr/bin/env bash
set -euo pipefail
PY=${PYTHON:-python3}
# rewrite() FILE <<EOF: python program on stdin, FILE as argv[1]
rewrite() {
  "$PY" - "$1"
}
target=$("$PY" -c 'import sglang, os; print(os.path.join(os.path.dirname(sglang.__file__), "srt/layers/attention/aiter_backend.py"))')
"$PY" - "$target" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
open(p, "w").write(s.replace("max_num_partitions = 64", "max_num_partitions = 128"))
EOF
