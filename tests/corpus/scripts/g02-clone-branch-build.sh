#!/bin/bash
set -e
cd /tmp
git clone -b mla-ps https://github.com/ROCm/aiter.git
cd aiter
git submodule update --init
python3 setup.py develop
