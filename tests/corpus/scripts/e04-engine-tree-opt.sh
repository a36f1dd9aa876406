#!/bin/bash
set -e
cd /sgl-workspace/sglang/python
sed -i 's/"triton"/"aiter"/' sglang/srt/layers/attention/__init__.py
cp /workspace/overrides/scheduler.py /sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py
