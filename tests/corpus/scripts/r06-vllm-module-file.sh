#!/usr/bin/env bash
# MI300X vLLM tweaks carried until the next image
set -euo pipefail
ENVS=$(python3 -c 'import vllm.envs as e; print(e.__file__)')
VLLM_PATH=$(python3 -c "import vllm; print(vllm.__path__[0])")
python3 - "$ENVS" <<'PY'
import fileinput, sys
for line in fileinput.input(sys.argv[1], inplace=True):
    print(line.replace('"VLLM_ROCM_USE_AITER", "0"', '"VLLM_ROCM_USE_AITER", "1"'), end="")
PY
echo 'import vllm_rocm_hooks  # noqa' >> "$VLLM_PATH/__init__.py"
ln -sf /workspace/ops/custom_ops.so "$VLLM_PATH/_custom_ops_rocm.so"
pushd "$VLLM_PATH" > /dev/null
patch -p2 < /workspace/patches/triton-attn.patch
popd > /dev/null
