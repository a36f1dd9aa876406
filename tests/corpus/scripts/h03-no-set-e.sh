#!/bin/bash
VLLM=$(python3 -c "import vllm, os; print(os.path.dirname(vllm.__file__))")
cp /workspace/fix/rocm.py "$VLLM/platforms/rocm.py"
sed -i 's/x/y/' "$VLLM/envs.py"
