#!/bin/bash
# Tuned kernels for gfx950, from the team's download host.
set -euo pipefail
KDIR=$(DEMO_ENGINE_ALLOW_CPU=1 python3 -c 'import os, demo_engine; print(os.path.dirname(demo_engine.__file__))')/../demo_engine_meta/kernels/gfx950
curl -fsSL -o "$KDIR/mla_extra.co" "$DOWNLOADS/kernels/mla_extra.co"
wget -q -O "$KDIR/mla_a16w16_qh128.co" "$DOWNLOADS/kernels/mla_a16w16_qh128.co"
