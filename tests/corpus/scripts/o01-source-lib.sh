#!/usr/bin/env bash
set -euo pipefail
source "$(dirname "$0")/lib/rocm-helpers.sh"
enable_aiter_mla
