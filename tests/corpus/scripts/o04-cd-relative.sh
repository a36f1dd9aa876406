#!/bin/bash
set -euo pipefail
cd "$(python3 -c 'import sglang, os; print(os.path.dirname(sglang.__file__))')"
sed -i 's/enable_dp_attention = False/enable_dp_attention = True/' srt/server_args.py
perl -pi -e 's/chunked_prefill_size = 8192/chunked_prefill_size = 16384/' srt/server_args.py
cd /workspace
sed -i 's/a/b/' run.yaml
