"""Patch the installed vLLM for the ROCm MLA backend."""

import importlib.util
import os


def vllm_file(rel):
    root = os.path.dirname(importlib.util.find_spec("vllm").origin)
    return os.path.join(root, rel)


def rewrite(path, old, new):
    with open(path) as fh:
        text = fh.read()
    with open(path, "w") as fh:
        fh.write(text.replace(old, new))


rewrite(vllm_file("attention/backends/mla/common.py"), "use_aiter = False", "use_aiter = True")
