#!/bin/bash
# fp8 kv cache by default; the MLA offsets fix from a patcher of its own.
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
perl -pi -e 's/"auto"/"fp8"/' "$SITE/demo_engine/envs.py"
python3 "$(dirname "$0")/o08/fix_mla.py" "$SITE"
