#!/bin/bash
# eval of a string the script built is walked as shell; one known only at run time is unresolved.
set -e
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
FIX="sed -i 's/fp8_e4m3fnuz/fp8_e4m3fn/' \
  $SITE/aiter/ops/quant.py"
eval "$FIX"
PIP=(python3 -m pip install --no-deps)
"${PIP[@]}" "triton==3.3.0"
PATCH_CMD=$(curl -fsSL https://example.invalid/aiter/patch-cmd.txt)
eval "$PATCH_CMD"
$LAUNCHER_CMD --model "$MODEL"
