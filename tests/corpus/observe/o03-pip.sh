#!/bin/bash
# Pin the helper package the patched scheduler needs, from the team's wheelhouse.
set -euo pipefail
python3 -m pip install --quiet --no-index --find-links "$WHEELHOUSE" tinypkg==1.2.3
