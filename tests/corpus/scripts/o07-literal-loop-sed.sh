#!/usr/bin/env bash
set -euo pipefail
VLLM=$(python3 -c "import vllm, os; print(os.path.dirname(vllm.__file__))")
for f in model_executor/models/deepseek_v2.py model_executor/models/deepseek_mtp.py; do
  sed -i 's/use_fused_shared = False/use_fused_shared = True/' "$VLLM/$f"
done
