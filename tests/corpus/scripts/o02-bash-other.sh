#!/usr/bin/env bash
set -euo pipefail
bash "$(dirname "$0")/lib/apply-kernels.sh"
vllm serve deepseek-ai/DeepSeek-R1
