#!/usr/bin/env bash
set -euo pipefail
export VLLM_USE_V1=1 VLLM_ROCM_USE_AITER=1
MODEL=${MODEL:-deepseek-ai/DeepSeek-R1}
vllm serve "$MODEL" --tensor-parallel-size 8 --port 8000 &
python3 -m sglang.launch_server --model-path "$MODEL" --tp 8 --port 30000 &
until curl -s localhost:8000/health > /dev/null; do sleep 5; done
python3 benchmarks/benchmark_serving.py --model "$MODEL" --result-dir results/
wait
