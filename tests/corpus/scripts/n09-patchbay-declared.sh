#!/usr/bin/env bash
set -euo pipefail
patchbay apply patchsets/mi355x-dsr1 --python python3
patchbay status patchsets/mi355x-dsr1
vllm serve deepseek-ai/DeepSeek-R1 --tp 8
