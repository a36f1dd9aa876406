#!/usr/bin/env bash
# Changes to evaluation harnesses only: never engine patching.
set -e
_hooks_dir() {
    cd "$(dirname "${BASH_SOURCE[0]}")/evals" && pwd
}
hook_dir="$(mktemp -d)"
cp "$(_hooks_dir)/lm_eval_hook.py" "$hook_dir/sitecustomize.py"
export PYTHONPATH="${hook_dir}${PYTHONPATH:+:${PYTHONPATH}}"
python3 - <<'PY'
import lm_eval.models.api_models as api
from pathlib import Path
p = Path(api.__file__)
p.write_text(p.read_text().replace("timeout=300", "timeout=3600"))
PY
SWE=$(python3 -c 'import swebench, os; print(os.path.dirname(swebench.__file__))')
sed -i 's/cpu=1/cpu=4/' "$SWE/harness/modal_eval/run_evaluation_modal.py"
