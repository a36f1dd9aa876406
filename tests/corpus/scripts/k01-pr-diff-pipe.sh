#!/usr/bin/env bash
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cd "$SITE"
curl -fsSL https://github.com/vllm-project/vllm/pull/21234.diff | git apply -p1
