#!/usr/bin/env bash
set -euo pipefail
git clone https://github.com/vllm-project/vllm /tmp/vllm-src
cd /tmp/vllm-src && git checkout 0123456789abcdef0123456789abcdef01234567
python3 benchmarks/benchmark_serving.py --help
