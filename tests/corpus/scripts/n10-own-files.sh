#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")"
patch -p1 < fixes/harness-timeout.patch
git apply fixes/client-retries.patch
python3 - <<'PY'
import json
cfg = json.load(open("configs/sweep.json"))
cfg["concurrency"] = [1, 2, 4]
json.dump(cfg, open("configs/sweep.json", "w"))
PY
