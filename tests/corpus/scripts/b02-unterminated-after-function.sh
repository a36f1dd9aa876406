#!/bin/bash
set -e
helper() { echo hi; }
python3 - <<PY
print("never closed")
