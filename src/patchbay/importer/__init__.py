"""``patchbay import``: turn an existing shell patch script into a draft patchset.

Patch scripts carry diffs in here-documents applied by a helper (``git apply || patch
--fuzz=3`` behind a ``grep`` marker), Python here-documents doing ``str.replace`` on installed
files, ``pip install`` pins, ``curl`` downloads into the engine's data folder and JIT rebuilds.
The importer reads such a script without running it: the script analyser
(:mod:`patchbay.analysis`, the same one the audit uses: a tree-sitter parse and a symbolic walk)
says which statements change the engine, how and with what content; :mod:`.convert` turns those
modifications into draft patches (:mod:`.patches`) and gives every statement of the script an
outcome; :mod:`.writer` writes the patchset. What it cannot convert is listed, with the
script's lines, in ``IMPORT-NOTES.md``; nothing is dropped silently: a change the analyser found
that nothing converted (one in a function the script never calls, one in a script it runs) is
listed too, and the import is then partial.

The layout:

- ``statements.py``: the outcome of a command that changes no engine file (nothing to import,
  or not converted, with what to do);
- ``convert.py``: rows and outcomes of the script's statements, modifications to drafts;
- ``patches.py``: one function per mechanism (diff, Python ``replace`` edits, pip, artifact,
  rebuild, and what is never converted);
- ``conversion.py``: what those functions see of the converter (the statement's context, the
  outcomes they record);
- ``drafts.py``: the draft patches and per-command outcomes;
- ``refs.py``: upstream references (URLs, ``owner/repo#N``, ``project #N``) in comments;
- ``writer.py``: targets, ids, ``patchset.yaml``, patch files and ``IMPORT-NOTES.md``.

It imports the analyser, the document, the diff parser and the environment's project names,
never the apply core or the CLI.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from ..analysis import DEFAULT_ENGINES, EngineNames, ShellSyntaxError, analyse_shell
from ..analysis.syntax import parse_shell
from ..errors import InputError
from .convert import convert
from .refs import DEFAULT_PROJECTS, parse_projects
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
            ``file:line``), its analysis stopped before the end (a bound of the walk, or a
            fault of the analyser: :class:`~patchbay.analysis.model.Incomplete`), or ``out``
            is not usable.
    """
    text = read_script(script)
    projects = projects if projects is not None else dict(DEFAULT_PROJECTS)
    engines = EngineNames.build(
        [*DEFAULT_ENGINES, *_MORE_ENGINES, *projects], repositories=list(projects.values())
    )
    try:
        analysis = analyse_shell(text, script.name, engines, script.resolve().parent)
    except ShellSyntaxError as exc:
        raise InputError(exc.reason, file=script, line=exc.line) from None
    stop = analysis.incomplete
    if stop is not None:  # never a patchset of half a script that says it is whole
        raise InputError(
            f"the analysis stopped before the end of the script ({stop.reason}); "
            "nothing was imported",
            file=script.parent / stop.path if stop.path != script.name else script,
            line=stop.line,
        )
    source = parse_shell(text, script.name)
    found = convert(analysis, source, script, projects)
    return write_patchset(found, script, out, force=force)


_MORE_ENGINES = ("torchvision", "torchaudio", "amd-aiter")
"""Distributions of an engine image that are not engines of their own but never harness
tools either."""
