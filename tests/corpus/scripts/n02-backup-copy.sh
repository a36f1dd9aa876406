#!/usr/bin/env bash
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p /tmp/backup
cp "$SITE/vllm/envs.py" /tmp/backup/envs.py.orig
cp -r "$SITE/aiter/configs" /tmp/backup/
diff -u /tmp/backup/envs.py.orig "$SITE/vllm/envs.py" || true
