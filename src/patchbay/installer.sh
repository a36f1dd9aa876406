#!/bin/sh
# Install patchbay from this bundle into a private virtual environment, with no network.
#   sh install-patchbay.sh [PYTHON [DEST]]
# PYTHON: the interpreter the environment is made from (default: the engine interpreter the
# bundle was made for, else python3). DEST: the environment (default: <bundle>/patchbay-env).
# Only the bundle's wheels are installed: pip runs isolated (no index, no configuration file,
# no PIP_* variable) and the interpreter with -I (no PYTHON* variable, no user site).
# The engine's own environment is not touched. Prints the path of the patchbay command.
set -eu
bundle=$(cd "$(dirname "$0")" && pwd)
wheels=$bundle/patchbay/wheels
python=${1:-@PYTHON@}
command -v "$python" >/dev/null 2>&1 || python=python3
dest=${2:-$bundle/patchbay-env}
case $dest in /*) ;; *) dest=$(pwd)/$dest ;; esac
unset PYTHONPATH PYTHONHOME  # also for the pip that --python starts in the environment
if "$python" -I -m venv "$dest" >/dev/null 2>&1 && [ -x "$dest/bin/pip" ]; then
  set -- "$dest/bin/python" -I -m pip
else  # no ensurepip in this Python: the interpreter's own pip installs into the environment
  rm -rf "$dest"
  "$python" -I -m venv --without-pip "$dest"
  set -- "$python" -I -m pip --python "$dest/bin/python"
fi
PIP_CONFIG_FILE=/dev/null "$@" --isolated install --quiet --no-index --no-deps \
  --no-cache-dir --disable-pip-version-check "$wheels"/*.whl
# patchbay and every dependency it declares import in the new environment
"$dest/bin/python" -I -c 'import sys; from patchbay.selfcarry import check_environment as c
sys.exit(c())'
"$dest/bin/patchbay" --version >/dev/null
echo "$dest/bin/patchbay"
