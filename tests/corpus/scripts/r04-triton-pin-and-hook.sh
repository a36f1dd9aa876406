#!/usr/bin/env bash
set -euo pipefail
# Triton 3.4 from the ROCm index is required by vllm #21811; the hook logs kernel launches
pip uninstall -y triton pytorch-triton-rocm || true
pip install --index-url https://download.pytorch.org/whl/rocm6.4 pytorch-triton-rocm==3.4.0
HOOKS=$(mktemp -d)
cat > "$HOOKS/sitecustomize.py" <<'PY'
import triton.runtime.jit as jit
_orig = jit.JITFunction.run
def run(self, *a, **k):
    return _orig(self, *a, **k)
jit.JITFunction.run = run
PY
export PYTHONPATH="$HOOKS${PYTHONPATH:+:$PYTHONPATH}"
vllm serve deepseek-ai/DeepSeek-R1 --tp 8
