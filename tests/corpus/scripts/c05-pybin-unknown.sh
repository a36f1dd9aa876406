#!/bin/bash
set -euo pipefail
SITE=$($PYTHON_BIN -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
$PYTHON_BIN - "$SITE/sglang/srt/server_args.py" <<'PY'
import sys
p = sys.argv[1]
text = open(p).read().replace('default="triton"', 'default="aiter"')
open(p, "w").write(text)
PY
