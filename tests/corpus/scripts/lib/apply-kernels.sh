#!/bin/bash
set -euo pipefail
META=$(python3 -c 'import aiter, os; print(os.path.join(os.path.dirname(os.path.dirname(aiter.__file__)), "aiter_meta"))')
cp "$(dirname "$0")"/kernels/*.co "$META/hsa/gfx950/"
