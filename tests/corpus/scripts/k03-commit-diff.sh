#!/usr/bin/env bash
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
wget -qO- https://github.com/sgl-project/sglang/commit/0123456789abcdef0123456789abcdef01234567.diff | patch -p2 -d "$SITE"
