#!/usr/bin/env bash
set -euo pipefail
docker run --rm --device=/dev/kfd --device=/dev/dri -v "$PWD:/workspace" rocm/vllm:latest \
  bash -c "cd /workspace && ./run_bench.sh"
docker exec bench cat /usr/local/lib/python3.12/dist-packages/vllm/envs.py
