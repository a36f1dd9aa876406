#!/usr/bin/env bash
set -euo pipefail
PY=${PYTHON:-python3}
f=$("$PY" -c 'import vllm.platforms.rocm as m; print(m.__file__)')
$PY - "$f" <<EOF
import sys
path = sys.argv[1]
src = open(path).read()
src = src.replace("return False  # fp8 mla", "return True  # fp8 mla")
open(path, "w").write(src)
EOF
