#!/bin/bash
SITE=$(python3 -c 'import site; print(site.getsitepackages()[0])')
cat > "$SITE/vllm/_custom_patch.py" <<'PATCH'
X = 1
