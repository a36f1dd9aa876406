#!/bin/bash
# pip of a virtual environment the script creates is not the image's; `command -v python3`
# names the image's interpreter.
set -e
python3 -m venv /tmp/bench-venv
/tmp/bench-venv/bin/python -m pip install "torch==2.10.0" aiohttp
/tmp/bench-venv/bin/pip install "vllm==0.9.2"
PY=$(command -v python3)
"$PY" -m pip install --no-deps "vllm==0.9.2"
