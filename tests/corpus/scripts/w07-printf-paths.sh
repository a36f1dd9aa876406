#!/usr/bin/env bash
# A path built with printf; an injection whose value is known only at run time is shown as written.
SITE=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
target=$(printf '%s/%s/envs.py' "$SITE" vllm)
sed -i 's/x/y/' "$target"
venv_site="/opt/venvs/$(uname -m)/lib/python3.12/site-packages"
export PYTHONPATH="$venv_site${PYTHONPATH:+:$PYTHONPATH}"
vllm serve model
