#!/usr/bin/env bash
set -euo pipefail
SG=$(python3 -c 'import sglang, os; print(os.path.dirname(sglang.__file__))')
find "$SG/srt/layers" -name '*.py' -exec sed -i 's/torch.cuda.is_available()/True/' {} +
for f in $(find "$SG/srt/models" -name 'deepseek*.py'); do
  perl -pi -e 's/is_hip_ = False/is_hip_ = True/' "$f"
done
