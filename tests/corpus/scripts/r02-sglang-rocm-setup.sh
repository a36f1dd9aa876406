#!/bin/bash
# SGLang on MI300X: fork branch with the aiter backend fixes, plus two local edits
set -ex

SGL_BRANCH=${SGL_BRANCH:-rocm-aiter-fixes}
SRC=/sgl-workspace/sglang

if [ ! -d "$SRC" ]; then
  git clone https://github.com/someuser/sglang.git "$SRC"
fi
cd "$SRC"
git fetch origin "$SGL_BRANCH"
git checkout "$SGL_BRANCH"

sed -i 's/"--attention-backend", default="triton"/"--attention-backend", default="aiter"/' \
  python/sglang/srt/server_args.py

python3 - <<'PY'
from pathlib import Path
p = Path("/sgl-workspace/sglang/python/sglang/srt/layers/attention/aiter_backend.py")
s = p.read_text()
s = s.replace("self.num_kv_splits = 8", "self.num_kv_splits = 16")
p.write_text(s)
PY

cd python
pip install -e ".[srt_hip]" --no-deps

export SGLANG_USE_AITER=1
python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 &
