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
- ``writer.py``: targets, ids, ``patchset.yaml``, patch files and ``IMPORT-NOTES.md``;
- ``observe.py`` and ``observed.py``: ``--observe``, the script run against a scratch engine:
  the engine's state before and after, the run, and what it changed as drafts labelled by the
  static reading.

It imports the analyser, the document, the diff parser and the environment's project names,
never the apply core or the CLI.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..analysis import DEFAULT_ENGINES, EngineNames, ShellSyntaxError, analyse_shell
from ..analysis.model import ScriptAnalysis
from ..analysis.syntax import parse_shell
from ..errors import InputError
from .convert import Converter
from .drafts import WalkResult
from .observe import Changes, RunResult, compare, keep_bytes, run_script, take_state
from .observed import files_of, is_text, observed_result
from .refs import DEFAULT_PROJECTS, parse_projects
from .writer import NOTES_NAME, ImportResult, check_out, write_patchset

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
    if _is_python(script, text):
        try:
            compile(text.removeprefix("\ufeff"), str(script), "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise InputError(f"not valid Python: {exc.msg}", file=script, line=exc.lineno) from None
        return text
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


def _is_python(script: Path, text: str) -> bool:
    """A Python patcher (``fix.py``, or a ``#!`` line naming python), not a shell script."""
    first = text.split("\n", 1)[0]
    return script.suffix == ".py" or (first.startswith("#!") and "python" in first)


def import_script(
    script: Path,
    out: Path,
    *,
    projects: dict[str, str] | None = None,
    force: bool = False,
    observe: str | None = None,
    scope: list[str] | None = None,
    root: Path | None = None,
) -> ImportResult:
    """Import ``script`` into the new patchset folder ``out``.

    Args:
        script: the shell patch script.
        out: the patchset folder to write (must not exist, or be empty, unless ``force``).
        projects: project name -> ``owner/repo`` for ``name #N`` references in comments
            (default :data:`DEFAULT_PROJECTS`).
        force: write into a folder that already holds files.
        observe: the interpreter of an engine made for the purpose: the script is run against
            it and what it changed becomes the patches (:mod:`.observe`, :mod:`.observed`);
            the static reading labels them. None: the static import alone.
        scope: more packages (import or distribution names) whose files are observed closely
            (their bytes kept before the run), besides the engines the script names.
        root: with ``observe``: a tree of the engine's packages (``--root``) observed instead
            of the interpreter's site-packages; ``observe`` is then any interpreter, and the
            tree comes first on the script's ``PYTHONPATH``.

    Returns:
        The :class:`ImportResult` (``partial`` when some part was not converted).

    Raises:
        InputError: the script is missing or not shell the importer can read (naming
            ``file:line``), its analysis stopped before the end (a bound of the walk, or a
            fault of the analyser: :class:`~patchbay.analysis.model.Incomplete`), or ``out``
            is not usable.
    """
    text = read_script(script)
    check_out(out, force=force)
    projects = projects if projects is not None else dict(DEFAULT_PROJECTS)
    engines = EngineNames.build(
        [*DEFAULT_ENGINES, *_MORE_ENGINES, *projects], repositories=list(projects.values())
    )
    python = _is_python(script, text)
    if python:  # a Python patcher is imported as the statement that runs it
        text = f"python3 ./{script.name}\n"
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
    converter = Converter(analysis, source, script, projects)
    found = converter.run()
    if python:
        found.remarks.insert(
            0, f"{script.name} is Python: it was read as the statement `python3 ./{script.name}`"
        )
    if observe is not None:
        found = _observe(script, out, observe, analysis, found, engines, scope or [], root)
        found = observed_result(*found, converter.comments_of_line, projects)
    return write_patchset(found, script, out, force=force)


def _observe(
    script: Path,
    out: Path,
    python: str,
    analysis: ScriptAnalysis,
    static: WalkResult,
    engines: EngineNames,
    scope: list[str],
    root: Path | None = None,
) -> tuple[Changes, RunResult, ScriptAnalysis, WalkResult]:
    """Run ``script`` against the engine of ``python``: what it changed, the run, and the
    static reading (for :func:`~.observed.observed_result`)."""

    names = [*analysis.packages, *engines.imports, *scope]
    for mod in [*analysis.modifications, *analysis.installs]:
        if mod.target is not None and mod.target.engine:
            names.append(mod.target.engine)
        for rel in files_of(mod):  # a package the script touches, engine or not
            top = rel.split("/", 1)[0]
            if top and "*" not in top and "$" not in top:
                names.append(top)
    before = take_state(python, names, root)
    log = Path(tempfile.mkdtemp(prefix="patchbay-observe-")) / f"{script.name}.log"
    run = run_script(script.resolve(), python, log, cwd=script.resolve().parent, root=root)
    after = take_state(python, names, root)
    changes = compare(before, after)
    binaries = [r for r, _, a in changes.modified if not is_text(a.data)]
    binaries += [r for r, a in changes.added if not is_text(a.data)]
    if binaries:
        from ..options import default_cache_dir

        cache = default_cache_dir()
        try:
            keep_bytes(after, binaries, cache)
        except OSError as exc:
            raise InputError(f"the observed files cannot be kept: {exc}", file=cache) from None
        static.remarks.append(
            f"{len(binaries)} binary file(s) the run wrote are kept in the download cache "
            f"({cache}/sha256): `apply` finds them there on this machine; give each its URL "
            "to apply elsewhere"
        )
    engine = f"the tree {root}" if root is not None else python
    static.remarks.insert(
        0,
        f"observed: the script ran against {engine} (exit status {run.exit_code}; its output "
        f"is in {log}); every patch is what that run changed",
    )
    return changes, run, analysis, static


_MORE_ENGINES = ("torchvision", "torchaudio", "amd-aiter")
"""Distributions of an engine image that are not engines of their own but never harness
tools either."""
