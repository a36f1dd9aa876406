#!/usr/bin/env bash
set -euo pipefail
AITER_LOC=$(pip show -f amd-aiter | grep Location | cut -d' ' -f2)
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for p in /workspace/patches/vllm/*.patch; do
  git -C "$SITE" apply "$p"
done
cp /workspace/tuned/*.csv "$AITER_LOC/aiter/configs/"
COMMIT=0123456789abcdef0123456789abcdef01234567
git clone https://github.com/vllm-project/vllm /tmp/vllm && cd /tmp/vllm && git checkout "$COMMIT"
pip install --no-build-isolation /tmp/vllm
