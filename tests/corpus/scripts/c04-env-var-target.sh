#!/usr/bin/env bash
set -euo pipefail
export VLLM_ROOT=$(python3 -c 'import vllm, os; print(os.path.dirname(vllm.__file__))')
python3 - <<'PY'
import os
p = os.path.join(os.environ["VLLM_ROOT"], "model_executor", "models", "deepseek_v2.py")
s = open(p).read()
s = s.replace("self.use_mla = False", "self.use_mla = True")
with open(p, "w") as fh:
    fh.write(s)
PY
