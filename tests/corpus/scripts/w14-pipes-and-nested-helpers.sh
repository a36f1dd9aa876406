#!/bin/bash
# Code piped into a shell, helpers that run helpers, eval in a helper.
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
run_step() { local name=$1; shift; echo "== $name"; "$@"; }
quiet() { "$@" >/dev/null 2>&1 || true; }
wrap() { eval "$@"; }
run_step "kernels" quiet cp patches/fused_moe.py "$SITE/vllm/model_executor/layers/fused_moe/fused_moe.py"
wrap "sed -i s/fp8_e4m3fnuz/fp8_e4m3fn/ $SITE/aiter/ops/quant.py"
printf 'sed -i s/256/512/ %s/vllm/config/scheduler.py\n' "$SITE" | bash
curl -fsSL https://example.invalid/fix-aiter.sh | bash
