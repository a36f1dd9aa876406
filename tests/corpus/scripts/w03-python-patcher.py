"""A patcher file in the style of real ones: the install root found by a helper function."""
import argparse
import importlib.util
import os
import sys

REL_PATH = "v1/attention/backends/mla/rocm_aiter_mla.py"


def locate_vllm() -> str:
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("cannot locate vllm")
    return list(spec.submodule_search_locations)[0]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=None)
    args = ap.parse_args()
    target = args.target or os.path.join(locate_vllm(), REL_PATH)
    with open(target, encoding="utf-8") as fh:
        original = fh.read()
    patched = original.replace("num_kv_splits = 16", "num_kv_splits = 32")
    with open(target, "w", encoding="utf-8") as fh:
        fh.write(patched)
    pyc_dir = os.path.join(os.path.dirname(target), "__pycache__")
    for name in os.listdir(pyc_dir):
        os.remove(os.path.join(pyc_dir, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
