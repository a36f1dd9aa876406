#!/usr/bin/env bash
set -euo pipefail
pip install --quiet tabulate==0.9.0 "aiperf>=0.3" "lm_eval[api]==0.4.8"
python3 -m pip install -q pandas matplotlib
uv pip install --system datasets
pip install -r requirements-bench.txt
