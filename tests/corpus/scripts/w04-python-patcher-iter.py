"""Install roots found with next(iter(...)), Path(spec.origin).parent and importlib.resources."""
import importlib.resources
import importlib.util
from pathlib import Path

spec = importlib.util.find_spec("aiter")
root = next(iter(spec.submodule_search_locations))
mla = Path(root) / "mla.py"
mla.write_text(mla.read_text().replace("block_n = 64", "block_n = 128"))

origin = Path(importlib.util.find_spec("sglang").origin).parent
(origin / "srt" / "patched.py").write_text("PATCHED = True\n")

data = importlib.resources.files("vllm") / "envs.py"
data.write_text(data.read_text().replace("a", "b"))
