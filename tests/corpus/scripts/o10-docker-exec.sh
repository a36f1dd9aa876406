#!/usr/bin/env bash
set -euo pipefail
docker exec -w /usr/local/lib/python3.12/dist-packages bench sed -i 's/a = 1/a = 2/' vllm/envs.py
docker exec bench cp /workspace/rocm.py /usr/local/lib/python3.12/dist-packages/vllm/platforms/rocm.py
