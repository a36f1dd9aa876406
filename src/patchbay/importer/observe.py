"""Import by observation, first half: the engine's state before and after a legacy patch
script runs, and the run itself (issue 22).

``patchbay import SCRIPT --observe --python ENGINE_PYTHON`` runs the script against an engine
made for the purpose (a scratch copy, or a throwaway container): what it changed is exact, where
a static reading of the script can only guess. This module takes the engine's state
(:func:`take_state`), runs the script (:func:`run_script`), takes the state again and compares
(:func:`compare`); :mod:`.observed` turns the :class:`Changes` into patches.

The state of an engine is:

- every regular file below its site-packages folders (``sysconfig`` ``purelib`` and
  ``platlib``), by size, modification time and mode, as ``git``'s index keeps a file's stat;
- for the files of the packages in scope (the engines the static reading names, the packages
  its Python locates, the ``--scope`` names: a top-level folder of site-packages and the
  ``.dist-info`` of its distribution), the SHA-256 of their bytes and, below
  :data:`KEEP_BYTES`, the bytes themselves: the pristine side of every diff made later;
- the installed distributions (``importlib.metadata``: name, version, and the URL of a direct
  install from ``direct_url.json``), as ``pip list`` shows them.

The script runs under ``bash -x`` with ``PS4`` set to the source file and ``$LINENO`` of each
command (by a ``BASH_ENV`` start-up file: bash ignores ``PS4`` from the environment when run as
root), the trace going to a file of its own (``BASH_XTRACEFD``): the lines it reached are kept
beside its exit status; its output streams through :mod:`patchbay.progress` into a log. The
engine interpreter's folder comes first on ``PATH``, so that ``python``, ``python3`` and
``pip`` are the engine's, as they are inside the container the script was written for. A copy
of a virtual environment keeps its console scripts' ``#!`` lines, which name the interpreter of
the original (``pip`` of a copy would change the original's packages): each such script of the
engine's ``bin`` gets a shim, ahead on ``PATH``, that runs it with the engine interpreter
(:func:`shims`).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import shlex
import stat
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .. import progress
from ..errors import InputError

KEEP_BYTES = 4 * 1024 * 1024
"""Files of the packages in scope up to this size keep their bytes (the pristine side of a
diff); a larger file keeps its hash only (a change to it becomes an artifact)."""

_PROBE = r"""
import json, sys, sysconfig
from importlib import metadata
sites = []
for key in ("purelib", "platlib"):
    path = sysconfig.get_paths()[key]
    if path not in sites:
        sites.append(path)
if len(sys.argv) > 1:  # --root: that tree is the engine's site folder
    sites = [sys.argv[1]]
dists = {}
for d in metadata.distributions(path=sites):
    name = d.metadata["Name"]
    if not name or name.lower() in dists:
        continue
    url = None
    try:
        text = d.read_text("direct_url.json")
        url = json.loads(text).get("url") if text else None
    except Exception:
        url = None
    top = (d.read_text("top_level.txt") or "").split()
    files = [str(f) for f in (d.files or [])]
    dists[name.lower()] = {"name": name, "version": d.version, "url": url, "top": top,
                           "info": str(getattr(d, "_path", "")), "files": files}
print(json.dumps({"sites": sites, "prefix": sys.prefix, "dists": dists}))
"""


@dataclass(frozen=True)
class FileState:
    """One file's stat, and its content when it is in scope: ``sha256`` (None: not hashed) and
    ``data`` (None: not kept)."""

    size: int
    mtime_ns: int
    mode: int
    sha256: str | None = None
    data: bytes | None = None


@dataclass(frozen=True)
class Distribution:
    """An installed distribution: its name as published, version, direct URL (``pip install
    URL``/a local path; None from an index), top-level packages, ``.dist-info`` folder and the
    files its ``RECORD`` lists (relative to site-packages)."""

    name: str
    version: str
    url: str | None
    top: tuple[str, ...]
    info: str
    files: frozenset[str] = frozenset()


@dataclass
class EngineState:
    """What :func:`take_state` saw.

    Attributes:
        sites: the site-packages folders (absolute), purelib first.
        files: ``site-relative path`` -> :class:`FileState` (a path of the first site that has
            it).
        dists: lower-cased distribution name -> :class:`Distribution`.
        scope: the top-level names whose files were hashed.
        links: site-relative path -> target of each symbolic link below site-packages.
        outside: the environment's own ``bin/`` files (``prefix``-relative), by stat: a
            change there is no patch of the engine's packages, and is said so.
    """

    sites: list[Path]
    files: dict[str, FileState]
    dists: dict[str, Distribution]
    scope: frozenset[str]
    links: dict[str, str] = field(default_factory=dict)
    outside: dict[str, FileState] = field(default_factory=dict)


@dataclass
class Changes:
    """Differences between two states, paths relative to site-packages.

    Attributes:
        modified: changed files: (path, before, after) with the bytes of both when known.
        added: new files: (path, bytes).
        deleted: files gone: (path, before).
        unknown_before: changed files outside the scope: no pristine bytes were kept.
        installed: distributions new or at another version or URL: (before or None, after).
        removed: distributions gone.
        links: symbolic links made, changed or removed: (path, target before, target after).
        outside: files of the environment's ``bin/`` the run changed, added or removed.
        recorded: the files the distributions' RECORD listed before the run (the engine's
            own files, as against caches and build products).
    """

    modified: list[tuple[str, FileState, FileState]] = field(default_factory=list)
    added: list[tuple[str, FileState]] = field(default_factory=list)
    deleted: list[tuple[str, FileState]] = field(default_factory=list)
    unknown_before: list[str] = field(default_factory=list)
    installed: list[tuple[Distribution | None, Distribution]] = field(default_factory=list)
    removed: list[Distribution] = field(default_factory=list)
    links: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    recorded: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not (
            self.modified
            or self.added
            or self.deleted
            or self.unknown_before
            or self.installed
            or self.removed
            or self.links
            or self.outside
        )


@dataclass
class RunResult:
    """A finished run of the script: its exit status, the log of its output, and each command
    its trace showed: ``(file, line, command)``, the file as bash named it and the command as
    bash printed it once expanded (the values of the script's variables in it)."""

    exit_code: int
    log: Path
    traced: list[tuple[str, int, str]] = field(default_factory=list)

    @property
    def reached(self) -> set[tuple[str, int]]:
        """The ``(file, line)`` pairs the run reached."""
        return {(file, line) for file, line, _ in self.traced}


def _probe(python: str, root: Path | None = None) -> dict:
    """The engine interpreter's site folders and distributions (:data:`_PROBE`); with
    ``root``, that tree's (read by ``python``, any interpreter).

    Raises:
        InputError: the interpreter cannot be run or prints no JSON.
    """
    try:
        proc = subprocess.run(
            [python, "-I", "-c", _PROBE, *([str(root)] if root is not None else [])],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(
            f"the engine interpreter cannot be run: {exc}", file=Path(python)
        ) from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"the engine interpreter failed: {last}", file=Path(python))
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise InputError("the engine interpreter printed no state", file=Path(python)) from None


def _dists(raw: dict) -> dict[str, Distribution]:
    return {
        key: Distribution(
            d["name"],
            d["version"],
            d["url"],
            tuple(d["top"]),
            d["info"],
            frozenset(posixpath.normpath(f) for f in d.get("files", [])),
        )
        for key, d in raw.items()
    }


def scope_of(dists: dict[str, Distribution], names: Iterable[str]) -> frozenset[str]:
    """The top-level site-packages entries whose files are hashed: each name given (an import
    name, or a distribution's name, whose top-level packages and ``.dist-info`` count)."""
    out: set[str] = set()
    for name in names:
        key = name.lower().replace("_", "-")
        dist = dists.get(key) or dists.get(name.lower())
        out.add(name)
        if dist is not None:
            out.update(dist.top)
            if dist.info:
                out.add(os.path.basename(dist.info))
    return frozenset(out)


def take_state(python: str, names: Iterable[str], root: Path | None = None) -> EngineState:
    """The engine's state (see the module docstring); ``names`` set the scope; with ``root``
    (``--root``: a tree of the engine's packages with no interpreter of its own), that tree
    is the site folder.

    Raises:
        InputError: the interpreter cannot be run.
    """
    raw = _probe(python, root)
    sites = [Path(s) for s in raw["sites"]]
    dists = _dists(raw["dists"])
    scope = scope_of(dists, names)
    files: dict[str, FileState] = {}
    links: dict[str, str] = {}
    for site in sites:
        if not site.is_dir():
            continue
        for folder, dirs, names_here in os.walk(site):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in [
                *names_here,
                *(d for d in dirs if os.path.islink(os.path.join(folder, d))),
            ]:
                full = os.path.join(folder, name)
                rel = os.path.relpath(full, site).replace(os.sep, "/")
                if rel in files or name.endswith((".pyc", ".pyo")):
                    continue
                if os.path.islink(full):
                    links[rel] = os.readlink(full)
                    continue
                state = _file_state(full, rel.split("/", 1)[0] in scope)
                if state is not None:
                    files[rel] = state
    outside: dict[str, FileState] = {}
    bindir = Path(raw.get("prefix") or "") / "bin" if root is None else None
    if bindir is not None and bindir.is_dir():
        for entry in sorted(bindir.iterdir()):
            state = _file_state(str(entry), False)
            if state is not None:
                outside[f"bin/{entry.name}"] = state
    return EngineState(sites, files, dists, scope, links, outside)


def _file_state(path: str, hashed: bool) -> FileState | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    if not hashed:
        return FileState(st.st_size, st.st_mtime_ns, st.st_mode)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return FileState(st.st_size, st.st_mtime_ns, st.st_mode)
    keep = data if len(data) <= KEEP_BYTES else None
    return FileState(st.st_size, st.st_mtime_ns, st.st_mode, hashlib.sha256(data).hexdigest(), keep)


def compare(before: EngineState, after: EngineState) -> Changes:
    """What changed between two states of one engine. Files of a distribution that was
    installed anew (another version or URL) are that install's, not changes of their own."""
    out = Changes(recorded=frozenset().union(*(d.files for d in before.dists.values())))
    for key, now in after.dists.items():
        was = before.dists.get(key)
        if was is None or (was.version, was.url) != (now.version, now.url):
            out.installed.append((was, now))
    out.removed = [d for k, d in before.dists.items() if k not in after.dists]
    reinstalled: set[str] = set()  # top-level folders and files of what pip (re)installed
    owned: set[str] = set()
    for was, now in out.installed:
        for d in (was, now):
            if d is not None:
                reinstalled.update(d.top)
                reinstalled.add(os.path.basename(d.info))
                owned |= d.files
    for d in out.removed:
        owned |= d.files
        reinstalled.add(os.path.basename(d.info))
    for rel, now in after.files.items():
        top = rel.split("/", 1)[0]
        if top in reinstalled or rel in owned:
            continue
        was = before.files.get(rel)
        if was is None:
            out.added.append((rel, _with_bytes(after, rel, now)))
        elif (was.size, was.mtime_ns) != (now.size, now.mtime_ns) or was.mode != now.mode:
            full = _with_bytes(after, rel, now)
            if was.sha256 is None:
                out.unknown_before.append(rel)
            elif full.sha256 != was.sha256 or was.mode != now.mode:
                out.modified.append((rel, was, full))
    for rel in sorted(set(before.links) | set(after.links)):
        if before.links.get(rel) != after.links.get(rel):
            out.links.append((rel, before.links.get(rel), after.links.get(rel)))
    scripts = {p.rsplit("/bin/", 1)[1] for p in owned if "/bin/" in p}  # pip's console scripts
    for rel in sorted(set(before.outside) | set(after.outside)):
        if rel.removeprefix("bin/") in scripts:
            continue
        was, now = before.outside.get(rel), after.outside.get(rel)
        if was is None or now is None or (was.size, was.mtime_ns) != (now.size, now.mtime_ns):
            out.outside.append(rel)
    for rel, was in before.files.items():
        gone = rel not in after.files
        if gone and rel.split("/", 1)[0] not in reinstalled and rel not in owned:
            out.deleted.append((rel, was))
    return out


def _with_bytes(state: EngineState, rel: str, now: FileState) -> FileState:
    """``now`` with its content read (after the run every changed file is read)."""
    if now.sha256 is not None:
        return now
    for site in state.sites:
        full = site / rel
        if full.is_file():
            found = _file_state(str(full), True)
            if found is not None:
                return found
    return now


def keep_bytes(state: EngineState, paths: Iterable[str], cache_dir: Path) -> dict[str, Path]:
    """Copy the files ``paths`` (site-relative) of the engine into the content-addressed
    download cache (``cache_dir/sha256/<sha256>``, where ``apply`` looks for an artifact's
    bytes before it downloads them): an observed file whose origin no statement names can be
    applied again on this machine. Returns path -> cached file; a file that vanished is left
    out.

    Raises:
        OSError: the cache cannot be written.
    """
    store = cache_dir / "sha256"
    store.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for rel in paths:
        source = next((site / rel for site in state.sites if (site / rel).is_file()), None)
        if source is None:
            continue
        data = source.read_bytes()
        final = store / hashlib.sha256(data).hexdigest()
        if not final.is_file():
            fd, tmp = tempfile.mkstemp(dir=store, prefix=".observed-")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, final)
        out[rel] = final
    return out


_TRACE = re.compile(rb"^\++ ?(?P<file>[^\n:]*):(?P<line>\d+): (?P<text>[^\n]*)", re.M)


def shims(python: str, folder: Path) -> Path | None:
    """Write into ``folder`` a shim for each script of the engine's ``bin`` whose ``#!`` line
    names a Python other than ``python`` (a copied virtual environment's ``pip``, ``vllm``,
    ...): ``exec PYTHON SCRIPT "$@"``, so that the script acts on this engine. Returns
    ``folder``, or None when no script needed one."""
    bindir = Path(python).parent
    made = False
    try:
        entries = sorted(bindir.iterdir())
    except OSError:
        return None
    for entry in entries:
        try:
            if not entry.is_file() or not os.access(entry, os.X_OK):
                continue
            with open(entry, "rb") as f:
                first = f.readline(512)
        except OSError:
            continue
        if not first.startswith(b"#!") or b"python" not in first:
            continue
        named = first[2:].split()[0].decode("utf-8", "replace") if first[2:].split() else ""
        if os.path.realpath(os.path.dirname(named)) == str(bindir.resolve()):  # its own
            continue
        folder.mkdir(parents=True, exist_ok=True)
        shim = folder / entry.name
        engine, script = shlex.quote(os.path.abspath(python)), shlex.quote(str(entry))
        shim.write_text(f'#!/bin/sh\nexec {engine} {script} "$@"\n')
        shim.chmod(0o755)
        made = True
    return folder if made else None


def run_script(
    script: Path, python: str, log: Path, *, cwd: Path | None = None, root: Path | None = None
) -> RunResult:
    """Run ``script`` with bash, the engine interpreter's folder first on ``PATH``, tracing
    every command's file and line (see the module docstring); its output goes to ``log``.
    With ``root``, that tree comes first on ``PYTHONPATH`` (``find_spec("vllm")`` finds it).

    Raises:
        InputError: bash cannot be started.
    """
    env = dict(os.environ)
    bindir = str(Path(python).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    shimdir = shims(python, log.with_name(log.name + ".shims"))
    if shimdir is not None:
        env["PATH"] = str(shimdir) + os.pathsep + env["PATH"]
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    # bash takes no PS4 from the environment when run as root: a start-up file sets it
    startup = log.with_suffix(".bashenv")
    startup.write_text("PS4='+${BASH_SOURCE[0]:-?}:${LINENO}: '\n")
    env["BASH_ENV"] = str(startup)
    with tempfile.TemporaryFile() as trace:
        fd = trace.fileno()
        env["BASH_XTRACEFD"] = str(fd)
        try:
            with open(log, "wb") as sink:
                done = progress.run(
                    ["bash", "-x", str(script)],
                    title=f"run {script.name}",
                    log=log,
                    sink=sink,
                    env=env,
                    cwd=cwd,
                    pass_fds=(fd,),
                )
        except OSError as exc:
            raise InputError(f"the script cannot be run: {exc}", file=script) from None
        trace.seek(0)
        data = trace.read()
    traced = [
        (m["file"].decode("utf-8", "replace"), int(m["line"]), m["text"].decode("utf-8", "replace"))
        for m in _TRACE.finditer(data)
    ]
    return RunResult(done.returncode, log, traced)


__all__ = [
    "Changes",
    "Distribution",
    "EngineState",
    "FileState",
    "RunResult",
    "compare",
    "keep_bytes",
    "run_script",
    "scope_of",
    "shims",
    "take_state",
]
