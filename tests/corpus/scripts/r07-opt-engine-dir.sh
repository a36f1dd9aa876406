#!/bin/bash
set -euo pipefail
ENGINE_DIR=${ENGINE_DIR:-/opt/sglang}
cd "$ENGINE_DIR"
git apply /workspace/patches/sglang-aiter-mla.patch
git -C "$ENGINE_DIR" cherry-pick 0123abc
patch -p1 -d "$ENGINE_DIR" < <(curl -fsSL https://github.com/sgl-project/sglang/pull/9876.diff)
cd python && pip install --no-build-isolation -e .
