#!/bin/bash
# Patches for the demo engine, applied in the container before serving.
set -euo pipefail
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# vllm #12345: a bigger default batch
sed -i 's/"256"/"512"/' "$SITE/demo_engine/envs.py"
python3 - "$SITE/demo_engine/scheduler.py" <<'PY'
import sys
p = sys.argv[1]
t = open(p).read()
open(p, "w").write(t.replace("32, 64]", "32, 64, 128]"))
PY
cat > "$SITE/demo_engine/extra_flags.py" <<'FLAGS'
EXTRA = True
FLAGS
printf '\x00\x01kernel' > "$SITE/demo_engine_meta/kernels/new_kernel.co"
rm -f "$SITE/demo_engine/ops/decode.py"
NAME=$(echo d29ya2VyLnB5 | base64 -d)
sed -i 's/self.max_batch = max_batch/self.max_batch = int(max_batch)/' "$SITE/demo_engine/$NAME"
# a step only the run can read: the command is decoded at run time
STEP=$(echo c2VkIC1pICdzL1dJVEhJTl8yR0IgPSBUcnVlL1dJVEhJTl8yR0IgPSBGYWxzZS8nICIkU0lURS9kZW1vX2VuZ2luZS9hdHRlbnRpb24vbWxhLnB5Ig== | base64 -d)
eval "$STEP"
if [ -n "${NEVER:-}" ]; then
  sed -i 's/a/b/' "$SITE/demo_engine/__init__.py"
fi
