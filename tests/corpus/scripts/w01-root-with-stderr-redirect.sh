#!/usr/bin/env bash
# The install root computed in $(...) with a redirection inside it (the commonest real form).
set -euo pipefail
ROOT="$(python3 -c 'import importlib.util as u, os; print(os.path.dirname(os.path.dirname(u.find_spec("vllm").origin)))' 2>/dev/null)"
[ -n "$ROOT" ] || exit 1
sed -i 's/max_tokens = 8/max_tokens = 16/' "$ROOT/vllm/envs.py"
SITE=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" 2>>/tmp/query.log)
cp fixed_attn.py "$SITE/vllm/attention/fixed_attn.py"
AITER_DIR=$(python3 - 2>/dev/null <<'PY'
import importlib.util
print(list(importlib.util.find_spec("aiter").submodule_search_locations)[0])
PY
)
cp mla.py "$AITER_DIR/mla.py"
