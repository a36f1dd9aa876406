#!/usr/bin/env bash
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
sed -i 's/a = 1/a = 2/' "$SITE/vllm/config.py" || echo "WARN: config patch failed"
sed -i 's/b = 1/b = 2/' "$SITE/vllm/envs.py" || { echo "envs patch failed"; exit 1; }
