#!/usr/bin/env bash
set -euo pipefail
log() { echo "[patch] $*"; }
AITER=$(python3 -c 'import aiter, os; print(os.path.dirname(aiter.__file__))')
curl -fsSL -o "$AITER/configs/tuned_fmoe.csv" https://example.invalid/tuned_fmoe.csv || log "no tuned table"
