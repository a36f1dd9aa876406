#!/usr/bin/env bash
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cd "$SITE"
git apply --check /workspace/patches/fix.patch
patch -p1 --dry-run < /workspace/patches/fix.patch
grep -q "FP8_DECODE = True" vllm/attention/backends/mla/common.py && echo "already patched"
python3 -c "import vllm; print(vllm.__version__)"
pip show vllm
