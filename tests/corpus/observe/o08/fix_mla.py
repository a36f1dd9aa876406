"""Widen the MLA offsets to 64 bits (demo-engine #91)."""
import pathlib
import sys

path = pathlib.Path(sys.argv[1], "demo_engine", "attention", "mla.py")
text = path.read_text()
text = text.replace("r * stride_kv for r in rows", "int(r) * stride_kv for r in rows")
path.write_text(text)
