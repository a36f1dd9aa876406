#!/usr/bin/env bash
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
apply_in() { cd "$1" && git apply "$2"; }
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
apply_in "$SITE" "$HERE/patches/vllm-rocm-mla.patch"
