#!/bin/sh
# run inside the image build: no bash, no set -e on purpose (best effort patches)
SITE=$(python3 -c "import site; print(site.getsitepackages()[0])")
cd $SITE/vllm
patch -p2 -N -r - < /build/patches/rocm-custom-allreduce.patch
sed -i -e 's/VLLM_USE_TRITON_FLASH_ATTN = True/VLLM_USE_TRITON_FLASH_ATTN = False/' envs.py
cd /
python3 -m compileall -q $SITE/vllm > /dev/null 2>&1
