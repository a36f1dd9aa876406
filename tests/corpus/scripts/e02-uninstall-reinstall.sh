#!/bin/bash
set -euo pipefail
pip uninstall -y aiter
cd /workspace/aiter-src
pip install --no-build-isolation .
