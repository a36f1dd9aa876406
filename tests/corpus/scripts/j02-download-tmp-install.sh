#!/bin/bash
set -euo pipefail
WS=$(mktemp -d)
trap 'rm -rf "$WS"' EXIT
wget -q -O "$WS/fmoe.co" https://example.invalid/fmoe_fp8.co
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
install -m 0644 "$WS/fmoe.co" "$SITE/aiter_meta/hsa/gfx942/fmoe/fmoe_fp8.co"
