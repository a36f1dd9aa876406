#!/usr/bin/env bash
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
export PYTHONPATH=/workspace/vllm-hooks:${PYTHONPATH:-}
echo /workspace/vllm-hooks > "$SITE/zz-vllm-hooks.pth"
cat > "$SITE/sitecustomize.py" <<'PY'
import vllm.envs
vllm.envs.VLLM_ROCM_USE_AITER = True
PY
LD_PRELOAD=/opt/rocm/lib/libhipblaslt-patched.so vllm serve deepseek-ai/DeepSeek-R1
