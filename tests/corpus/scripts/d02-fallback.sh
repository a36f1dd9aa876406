#!/usr/bin/env bash
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
apply_patch() {
  local file="$1"
  if git -C "$SITE" apply --check "$file" 2>/dev/null; then
    git -C "$SITE" apply "$file"
  else
    patch -d "$SITE" -p1 --fuzz=3 < "$file"
  fi
}
apply_patch /workspace/patches/aiter-fp8-mla.patch
