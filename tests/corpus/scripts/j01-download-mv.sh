#!/usr/bin/env bash
set -euo pipefail
META=$(python3 -c 'import aiter, os; print(os.path.join(os.path.dirname(os.path.dirname(aiter.__file__)), "aiter_meta"))')
f="$META/hsa/gfx950/mla/mla_a8w8_qh64_qseqlen4_gqaratio16_ps.co"
curl -fsSL -o "$f.new" "https://example.invalid/kernels/mla_a8w8_qh64.co" && mv "$f.new" "$f"
