#!/bin/bash
set -euo pipefail
echo "write the file with cat <<EOF > x, then EOF"
AITER=$(python3 -c 'import importlib.util as u; print(u.find_spec("aiter").submodule_search_locations[0])')
cp ./kernels/mla_asm.csv "$AITER/configs/mla_asm.csv"
