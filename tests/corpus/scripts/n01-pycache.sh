#!/usr/bin/env bash
set -euo pipefail
VLLM=$(python3 -c "import vllm, os; print(os.path.dirname(vllm.__file__))")
find "$VLLM" -name '__pycache__' -type d -prune -exec rm -rf {} +
rm -rf "$VLLM"/__pycache__ "$VLLM"/*/__pycache__
find "$VLLM" -name '*.pyc' -delete
