#!/usr/bin/env bash
set -euo pipefail
mkdir -p /tmp/evalhooks
cat > /tmp/evalhooks/sitecustomize.py <<'PY'
import lm_eval.api.model as m
m.CACHE_REQUESTS = False
PY
export PYTHONPATH=/tmp/evalhooks:${PYTHONPATH:-}
lm_eval --model local-completions --tasks gsm8k
