#!/usr/bin/env bash
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
tr -d '\r' < "$HERE/patches/vllm-rocm-mla.patch" > /tmp/mla.patch
cd "$SITE" && git apply /tmp/mla.patch
