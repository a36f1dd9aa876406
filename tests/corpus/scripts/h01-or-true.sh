#!/usr/bin/env bash
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cd "$SITE" && git apply /workspace/patches/vllm-fp8.patch || true
patch -p1 -d "$SITE" -N < /workspace/patches/aiter.patch || :
