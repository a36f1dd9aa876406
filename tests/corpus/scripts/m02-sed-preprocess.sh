#!/bin/bash
set -e
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
sed 's/\r$//' /workspace/patches/aiter.patch | patch -p1 -d "$SITE"
