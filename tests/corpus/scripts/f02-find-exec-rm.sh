#!/bin/bash
set -e
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
find "$SITE/aiter/jit/build" -maxdepth 1 -name 'module_*' -exec rm -rf {} \;
