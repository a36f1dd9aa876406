"""The engine interpreter of an unpacked tree: with ``--root``, a ``command`` patch's
``{python}`` is the interpreter that owns that site-packages, never patchbay's own.

A site-packages folder lies at ``<prefix>/lib/python3.X/site-packages`` (or ``dist-packages``,
Debian's name) under the prefix of the interpreter that imports from it (CPython's ``site``
module builds the path that way; a virtual environment's prefix holds ``pyvenv.cfg``). So the
interpreter is ``<prefix>/bin/python3.X``, else ``python3``, else ``python``, when it is an
executable file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_SITE = re.compile(r"python(\d+\.\d+)t?")


def candidates(root: Path) -> list[Path]:
    """Where the interpreter of the site-packages folder ``root`` would be, in the order looked
    at; empty when ``root`` is not shaped ``.../lib/python3.X/site-packages``."""
    root = Path(os.path.abspath(root))
    if root.name not in ("site-packages", "dist-packages") or len(root.parents) < 3:
        return []
    lib_python, lib = root.parent, root.parent.parent
    m = _SITE.fullmatch(lib_python.name)
    if m is None or lib.name not in ("lib", "lib64"):
        return []
    bin_dir = lib.parent / "bin"
    return [bin_dir / f"python{m[1]}", bin_dir / "python3", bin_dir / "python"]


def engine_python(root: Path) -> Path | None:
    """The interpreter of the tree ``root`` (see the module docstring), or None when there is
    none: ``root`` is not a site-packages folder, or no candidate is an executable file."""
    for path in candidates(root):
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None
