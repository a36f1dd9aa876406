#!/usr/bin/env bash
set -euo pipefail
PYTHON=${PYTHON:-python3}
modfile() {
  "$PYTHON" -c "import importlib.util as u; print(u.find_spec('$1').origin)"
}
FUSED=$(modfile vllm.model_executor.layers.fused_moe.fused_moe)
"$PYTHON" - "$FUSED" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace("BLOCK_SIZE_K = 64", "BLOCK_SIZE_K = 128")
open(p, "w").write(s)
PY
