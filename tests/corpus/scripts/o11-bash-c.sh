#!/bin/bash
set -e
SITE=/usr/local/lib/python3.12/dist-packages
bash -c "sed -i 's/a/b/' $SITE/sglang/srt/utils.py && cp x.py $SITE/sglang/srt/x.py"
