#!/bin/bash
# Turn on the fast decode path in every process, and log the engine's start.
set -e
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo 'import os; os.environ.setdefault("DEMO_USE_FAST_DECODE", "1")' > "$SITE/demo_fast_decode.pth"
cat > "$SITE/sitecustomize.py" <<'PY'
import sys
sys.stderr.write("demo engine patched image\n")
PY
sed -i 's/"auto"/"fp8"/' "$SITE/demo_engine/envs.py"
