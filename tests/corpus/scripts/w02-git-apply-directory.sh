#!/usr/bin/env bash
# Diffs applied with --directory / -d against computed install roots.
set -e
ROOT="$(python3 -c 'import os, vllm; print(os.path.dirname(os.path.dirname(vllm.__file__)))' 2>/dev/null)"
META="$ROOT/aiter_meta"
WS=$(mktemp -d)
curl -sSL -o "$WS/pr.diff" "https://github.com/ROCm/aiter/pull/4521.diff"
curl -sSL -o "$WS/meta.diff" "https://github.com/ROCm/aiter/pull/4522.diff"
curl -sSL -o "$WS/vllm.diff" "https://github.com/vllm-project/vllm/pull/52849.diff"
git apply --directory="$ROOT" -p1 --unsafe-paths --whitespace=nowarn "$WS/pr.diff" 2>/dev/null \
  || patch -p1 -d "$ROOT" --fuzz=3 --forward < "$WS/pr.diff"
git apply --directory "$META" --unsafe-paths "$WS/meta.diff"
if ( cd "$ROOT" && git apply -p1 "$WS/vllm.diff" ) 2>/dev/null; then
    echo applied
elif patch -p1 -d "$ROOT" --forward < "$WS/vllm.diff" >/dev/null 2>&1; then
    echo applied with patch
fi
