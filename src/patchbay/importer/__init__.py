"""``patchbay import``: turn an existing shell patch script into a draft patchset.

Patch scripts carry diffs in here-documents applied by a helper (``git apply || patch
--fuzz=3`` behind a ``grep`` marker), Python here-documents doing ``str.replace`` on installed
files, ``pip install`` pins, ``curl`` downloads into the engine's data folder and JIT rebuilds.
The importer reads such a script without running it (:mod:`.shell` parses it, :mod:`.walker`
follows it, :mod:`patchbay.analysis.pysnippet` reads its Python, :mod:`.refs` finds upstream
references in its comments) and writes a patchset (:mod:`.writer`) whose patches do what the
script did. What it cannot convert is listed, with the script's lines, in ``IMPORT-NOTES.md``;
nothing is dropped silently.

The layout:

- ``shell.py``: a parser for the sh/bash patch scripts use (never runs them);
- ``walker.py``: follows the script's state and recognises each kind of block;
- ``drafts.py``: the draft patches and per-command outcomes the walk produces;
- ``refs.py``: upstream references (URLs, ``owner/repo#N``, ``project #N``) in comments;
- ``writer.py``: targets, ids, ``patchset.yaml``, patch files and ``IMPORT-NOTES.md``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from ..errors import InputError
from .refs import DEFAULT_PROJECTS, parse_projects
from .shell import parse_script
from .walker import walk
from .writer import NOTES_NAME, ImportResult, write_patchset

__all__ = [
    "DEFAULT_PROJECTS",
    "NOTES_NAME",
    "ImportResult",
    "import_script",
    "parse_projects",
]


def read_script(script: Path) -> str:
    """The script's text, checked to be shell (``bash -n`` when bash is there).

    Raises:
        InputError: missing, unreadable, not text, or a shell syntax error (with its line).
    """
    try:
        data = script.read_bytes()
    except FileNotFoundError:
        raise InputError("no such script", file=script) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a script", file=script) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=script) from None
    if b"\0" in data:
        raise InputError("not a shell script (binary content)", file=script)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=script) from None
    bash = shutil.which("bash")
    if bash is not None:
        proc = subprocess.run(
            [bash, "-n", str(script)], capture_output=True, text=True, timeout=60, check=False
        )
        if proc.returncode != 0:
            first = (proc.stderr.strip().splitlines() or ["syntax error"])[0]
            m = re.search(r"line (\d+): (.*)", first)
            line = int(m.group(1)) if m else None
            reason = m.group(2) if m else first
            raise InputError(f"not valid shell (bash -n): {reason}", file=script, line=line)
    return text


def import_script(
    script: Path,
    out: Path,
    *,
    projects: dict[str, str] | None = None,
    force: bool = False,
) -> ImportResult:
    """Import ``script`` into the new patchset folder ``out``.

    Args:
        script: the shell patch script.
        out: the patchset folder to write (must not exist, or be empty, unless ``force``).
        projects: project name -> ``owner/repo`` for ``name #N`` references in comments
            (default :data:`DEFAULT_PROJECTS`).
        force: write into a folder that already holds files.

    Returns:
        The :class:`ImportResult` (``partial`` when some part was not converted).

    Raises:
        InputError: the script is missing or not shell the importer can read (naming
            ``file:line``), or ``out`` is not usable.
    """
    text = read_script(script)
    parsed = parse_script(text, script.resolve())
    found = walk(parsed, projects if projects is not None else dict(DEFAULT_PROJECTS))
    return write_patchset(found, script, out, force=force)
