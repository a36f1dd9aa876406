#!/bin/bash
set -euo pipefail
mkdir -p /workspace/results/vllm
cp results/*.json /workspace/results/vllm/
sed -i "s/^model:.*/model: $MODEL/" configs/run.yaml
cat > configs/client.yaml <<EOF
model: $MODEL
concurrency: 64
EOF
tee -a logs/run.log <<< "done"
