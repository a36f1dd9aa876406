#!/usr/bin/env bash
set -euo pipefail
AITER_META=$(python3 -c 'import importlib.util as u, os; print(os.path.join(os.path.dirname(u.find_spec("aiter").submodule_search_locations[0]), "aiter_meta"))')
cp tuned/a8w8_blockscale_tuned_gemm.csv "$AITER_META/configs/a8w8_blockscale_tuned_gemm.csv"
cp kernels/fmoe_bf16_g1u1.co "$AITER_META/hsa/gfx950/fmoe/"
install -m 0755 build/libmha_fwd.so "$AITER_META/../aiter/jit/libmha_fwd.so"
cat > "$AITER_META/configs/model_config.json" <<'JSON'
{"num_experts": 256}
JSON
