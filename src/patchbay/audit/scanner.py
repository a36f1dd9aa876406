"""The audit's script rules (PB401-PB414): modifications of the engine that no patchset declares.

Which statements change the installed engine is the analyser's question
(:mod:`patchbay.analysis`: one parse with tree-sitter, one symbolic walk, shared with
``patchbay import``). This module only turns its :class:`~patchbay.analysis.Modification` values
into findings: one rule per mechanism (PB401 diffs, PB402 in-place edits, PB403 inline scripts
that rewrite a file, PB404 file writes, copies, downloads and removals, PB405/PB408 package
installs, PB406 clones at a moving ref that are built, PB407 module injection), PB409 when a
failure is swallowed, and the ``patchbay-reviewed`` annotations (PB410 without a reason). A
``patchbay apply`` call is declared patching and never a finding.

A reviewed line carries an annotation that gives a reason, on the line or on a comment line
right above it::

    cp k/*.co "$SITE/aiter_meta/"  # patchbay-reviewed PB404: kernels the image lacks, see W-12

Files that name none of :data:`MARKERS` (nor an engine folder, a helper function, a
``PYTHONPATH`` addition, an engine ``pip install`` or another script) cannot change an engine
and are not parsed; the rest are analysed whole.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from pathlib import Path
from typing import Literal

from .. import progress
from ..analysis.engines import EngineNames
from ..analysis.model import Incomplete, Mechanism, Modification, ScriptAnalysis
from ..analysis.values import display
from ..errors import InputError
from .cache import ScriptCache
from .config import SKIPPED_DIRS, globs_regex, normalise_name
from .rules import Finding, Suppression

__all__ = [
    "GREP_PATTERN",
    "MARKERS",
    "TRIGGERS",
    "EngineNames",
    "findings_of",
    "scan_tree",
    "script_files",
]

ScriptKind = Literal["shell", "dockerfile", "python"]

MARKERS = (
    "site-packages",
    "dist-packages",
    "purelib",
    "platlib",
    "sitepackages",
    "get_python_lib",
    "find_spec",
    "customize",
    ".pth",
    "git+",
    ".whl",
    "LD_PRELOAD",
    "pip show",
    "pip3 show",
    "uninstall",
    "clone",
    "fetch",
    "apply",
    "patch",
)
"""Substrings without which a file can neither reach an install root nor change an engine
(with the engine folders ``name/``, ``PYTHONPATH`` additions, ``pip`` installs of engines, and
other scripts run or sourced)."""

TRIGGERS = (
    *MARKERS[:12],
    "__file__",
    "__path__",
    "PYTHONPATH",
    "pip",
    "source",
    "bash",
    "COPY",
    "ADD",
)
GREP_PATTERN = "|".join(re.escape(t).replace("\\-", "-") for t in TRIGGERS)
"""The triggers as one POSIX extended regex (``grep -rE``, the benchmark's baseline)."""

_NEEDLES = ("pip", "PYTHONPATH", "source", ". ", "bash ", "sh ", "python")
"""Substrings of the lines that may install an engine, add to ``PYTHONPATH`` or run another
script (judged one distinct line at a time)."""
_MODULE_FILE = re.compile(r"\w\.__(?:file|path)__")
"""A module's ``__file__``/``__path__`` (``vllm.__file__``); a script's own ``__file__`` is not
an install root."""
_FOLLOWS = re.compile(r"(?:^|[\s;&|(])(?:source|\.|bash|sh|python3?)\s+[^\s-]")
_PYTHONPATH_SELF = re.compile(r"\$\{PYTHONPATH[^}]*\}|\$PYTHONPATH\b")
_PIP_SOURCE = re.compile(r"(?:\s-e\s|--editable|@|://|\./|\s/|\$)")


class _Gate:
    """Which files are worth analysing: a conservative test of each distinct line of the run.

    A file is worth it when one of its lines names a marker (:data:`MARKERS`, an engine folder
    ``name/``, a module's ``__file__``), defines a shell helper (its arguments may carry
    anything), or installs an engine, adds to ``PYTHONPATH`` or runs another script of the tree.
    Every test looks inside one line, so the run judges each distinct line once (per kind of
    file) and a file costs one split into lines and two set operations in C: the lines judged
    harmless before are never looked at again, and a line judged worth it decides at once.
    A line that runs another script is worth it only when that script exists, which depends on
    the folder of the file (``bash helper.sh``): those are judged per folder.
    """

    def __init__(self, engines: EngineNames, root: Path) -> None:
        self.engines = engines
        self.root = root
        self.folders = tuple(f"{name}/" for name in sorted(engines.imports))
        self.verdicts: dict[tuple[str, bytes], bool | str] = {}  # (kind, line) -> judge()
        self.worth: dict[str, set[bytes]] = {}  # kind -> lines that make any file worth it
        self.never: dict[tuple[str, str], set[bytes]] = {}  # (kind, folder) -> harmless lines
        self.files: dict[tuple[str, str], bool] = {}  # (script folder, word) -> a file?

    def __call__(self, data: bytes, rel: str, kind: str) -> bool:
        """Whether the file ``rel`` (its bytes, newlines as :func:`read_bytes` reads them)
        may change an engine."""
        lines = data.split(b"\n")  # no set: the first two tests walk the list in C
        folder = os.path.dirname(rel)
        never = self.never.get((kind, folder))
        if never is None:
            never = self.never[(kind, folder)] = set()
        elif never.issuperset(lines):
            return False
        worth = self.worth.get(kind)
        if worth is None:
            worth = self.worth[kind] = set()
        elif not worth.isdisjoint(lines):
            return True
        for raw in set(lines) - never:
            verdict = self.verdicts.get((kind, raw))
            if verdict is None:
                verdict = self.verdicts[(kind, raw)] = self.judge(
                    raw.decode("utf-8", "replace"), kind
                )
            if verdict is True:
                worth.add(raw)
                return True
            if verdict is not False and self.is_file(folder, verdict):
                return True
            never.add(raw)
        return False

    def judge(self, line: str, kind: str) -> bool | str:
        """True: the line makes any file of ``kind`` worth analysing; False: never; a word:
        when the script that word names exists next to the file or in the tree."""
        if kind == "dockerfile" and ("COPY" in line or "ADD" in line):
            return True
        if any(m in line for m in MARKERS) or any(f in line for f in self.folders):
            return True
        if "__" in line and _MODULE_FILE.search(line):
            return True
        if kind == "shell" and ("()" in line or "function " in line):
            return True  # shell helpers: their arguments may carry anything
        if not any(n in line for n in _NEEDLES) or not self.judge_needle(line):
            return False
        m = _FOLLOWS.search(line)
        if m is None or "pip" in line or "PYTHONPATH" in line:
            return True
        word = line[m.end() - 1 :].split()[0].strip("\"'")
        return True if "$" in word else word

    def is_file(self, folder: str, word: str) -> bool:
        """A line that runs another script counts only when that script is in the tree."""
        key = (folder, word)
        known = self.files.get(key)
        if known is None:
            known = self.files[key] = any(
                os.path.isfile(os.path.join(self.root, base, word)) for base in (folder, "")
            )
        return known

    def judge_needle(self, line: str) -> bool:
        code = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
        if "PYTHONPATH" in code and re.search(r"PYTHONPATH[=\s]+['\"]?[^\s'\":;&|]",
                                              _PYTHONPATH_SELF.sub("", code)):  # fmt: skip
            return True
        if "pip" in code and (
            _PIP_SOURCE.search(code) or self.engines.pattern.search(code) is not None
        ):
            return True
        m = _FOLLOWS.search(code)
        return m is not None and not re.search(r"python3?\s+-m\s", code)


# -- modifications -> findings ------------------------------------------------------------------


def _where(mod: Modification) -> str:
    """Where a modification writes, for a reader: the resolved path (site-packages named as
    such), then how the script wrote it and where that came from; a path the walk could not
    resolve is shown as written, with why (never a placeholder of the walk)."""
    t = mod.target
    if t is None:
        return ""
    path = posixpath.normpath(t.path) if "/." in t.path and "$" not in t.path else t.path
    resolved = display(path)  # `$SITE/..` is site-packages' folder, named once
    written = t.written or resolved
    if _PLACEHOLDER.search(resolved) or "$" in resolved:
        resolved = written  # part of it is known only at run time
    notes = []
    if written != resolved:
        notes.append(f"written {written}")
    if t.how and t.how not in (written, resolved):
        notes.append(t.how)
    if t.origin and t.origin not in t.how:
        notes.append(t.origin)
    return f"{resolved} ({'; '.join(notes)})" if notes else resolved


_REVISION = re.compile(r"/([0-9a-f]{40})(?:/|$)")
"""A commit in a download URL (``raw.githubusercontent.com/o/r/<sha>/...``, a gist's
``raw/<sha>/``): the bytes are those of that revision, though no hash is checked."""
_PLACEHOLDER = re.compile(r"/@\w+|<temporary folder>|<script folder>")
"""What :func:`~patchbay.analysis.values.display` leaves of a folder made at run time."""


def _pip_message(mod: Modification) -> tuple[str, str]:
    d = mod.details
    engine = normalise_name(str(d.get("engine", "")))
    source = d.get("source")
    if source == "vcs":
        detail = []
        if d.get("fork"):
            detail.append(f"on a fork ({d['fork']}; upstream {d.get('upstream')})")
        if mod.ref is None:
            detail.append("at the default branch (moving)")
        elif not mod.pinned:
            detail.append(f"at a moving ref ({mod.ref})")
        text = f"pip install of engine package {engine} from a VCS URL"
        return "PB405", text + (" " + " ".join(detail) if detail else "")
    if source in ("wheel-url", "archive-url"):
        kind = "a wheel URL" if source == "wheel-url" else "an archive URL"
        return "PB405", f"pip install of engine package {engine} from {kind} ({mod.url})"
    if source == "wheel":
        return "PB405", f"pip install of engine package {engine} from a local wheel ({mod.content})"
    if source == "local":
        replaced = d.get("replaces")
        extra = f", replacing the one uninstalled at line {replaced}" if replaced else ""
        return "PB405", (
            f"pip install of an engine from a local source tree ({d.get('folder')}){extra}"
        )
    return "PB408", (
        f"pip install replaces engine package {engine} ({d.get('pin')}) of the image from an index"
    )


def rule_of(mod: Modification) -> tuple[str, str] | None:
    """The rule and message for one modification (None: no rule looks at it)."""
    m = mod.mechanism
    where = _where(mod)
    python = "python" in mod.details
    if m is Mechanism.INJECT:
        if mod.target is None:
            variable = mod.details.get("variable", "PYTHONPATH")
            return "PB407", (
                f"{variable} injection of {display(str(mod.content))}"
                + (
                    f" (unresolved: {mod.details['unresolved']})"
                    if mod.details.get("unresolved")
                    else ""
                )
                + " (can shadow or monkey-patch engine modules)"
            )
        base = mod.target.path.rsplit("/", 1)[-1]
        return "PB407", (
            f"{mod.tool} writes {where}: {base} is imported at start-up and can monkey-patch "
            "engine modules"
        )
    if m is Mechanism.DIFF:
        return "PB401", f"{mod.tool} into {where}"
    if m is Mechanism.PIP:
        return _pip_message(mod)
    if m is Mechanism.VCS:
        built = mod.details.get("built_at")
        if mod.pinned or built is None:
            return None
        branch = mod.details.get("branch") or mod.ref
        ref = f"branch {branch}" if branch else "the default branch"
        engine = mod.target.engine if mod.target else "?"
        return "PB406", (
            f"{mod.tool} of engine {engine} at a moving ref ({ref}, no commit pinned), built or "
            f"installed at line {built}"
        )
    if m is Mechanism.REBUILD:
        removed = ", after removing the built module" if mod.details.get("remove") else ""
        return "PB403", f"{mod.tool} rebuilds engine code: {where}{removed}"
    if python:
        inline = "inline Python heredoc" if mod.details.get("inline") else "Python"
        return "PB403", f"{inline} writes an installed file: {where}"
    if m is Mechanism.EDIT:
        return "PB402", f"in-place edit ({mod.tool}) of an installed file: {where}"
    if m is Mechanism.WRITE:
        if mod.details.get("heredoc"):
            return "PB403", f"heredoc ({mod.tool.rstrip(' >')}) rewrites an installed file: {where}"
        return "PB404", f"{mod.tool} writes into an installed location: {where}"
    if m is Mechanism.DOWNLOAD:
        revision = _REVISION.search(mod.url or "")
        pinned = (
            f"pinned to revision {revision.group(1)[:12]} by its URL, no hash checked"
            if revision
            else "unpinned, no hash checked"
        )
        return "PB404", f"download ({mod.tool}) into an installed location: {where}; {pinned}"
    if m is Mechanism.COPY:
        return "PB404", f"{mod.tool} writes into an installed location: {where}"
    if m is Mechanism.REMOVE:
        return "PB404", f"{mod.tool} deletes from an installed location: {where}"
    return None


def findings_of(analysis: ScriptAnalysis) -> list[Finding]:
    """The PB4xx findings of one analysed file (annotations applied).

    Only modifications the walk resolved to the engine (or that name engine files) count;
    those in functions the script never calls count too (the code is there to be called).
    """
    out: list[Finding] = []
    seen: set[tuple[str, str, int]] = set()
    others = _other_targets(analysis)
    for mod in analysis.modifications:
        if mod.target is not None and mod.target.root == "unknown":
            continue
        rule = rule_of(mod)
        if rule is None:
            continue
        code, message = rule
        if mod.details.get("summarised"):
            message += f"; {mod.details['summarised']}"
        path = mod.chain[-1] if mod.chain else analysis.path
        hits = [(code, message)]
        if mod.swallowed:
            name = mod.tool.split()[0]
            hits.append(("PB409", f"the failure of {name} is ignored (|| {mod.swallowed})"))
        for code, message in hits:
            if (path, code, mod.line) in seen:
                continue
            seen.add((path, code, mod.line))
            end = mod.end_line if mod.end_line != mod.line and code != "PB409" else None
            # a value from an inlined string (`bash -c`, eval) may still hold the walk's own
            # names for computed folders: a reader sees them named, never as placeholders
            if code != "PB409" and (path, mod.line) in others:
                more = [t for t in others[(path, mod.line)] if t not in message]
                if more:  # a loop over several files: one finding, every file named
                    shown = ", ".join(more[:5]) + (", ..." if len(more) > 5 else "")
                    message += f"; and {len(more)} more: {shown}"
            finding = Finding.of(code, path, mod.line, display(message), end)
            # the scripts it was reached through, outermost first, without its own file
            finding.chain = tuple(mod.chain[:-1]) if mod.chain else ()
            finding.suppression = _reviewed(analysis, path, mod.line, code)
            out.append(finding)
    for gap in analysis.unresolved:
        if (gap.path, "PB414", gap.line) in seen:
            continue
        seen.add((gap.path, "PB414", gap.line))
        why = f" ({gap.why})" if gap.why else ""
        message = display(
            f"runs code the audit cannot see: {gap.what}{why}; what it changes is not judged"
        )
        finding = Finding.of("PB414", gap.path, gap.line, message)
        if gap.path != analysis.path:
            finding.chain = (analysis.path,)
        finding.suppression = _reviewed(analysis, gap.path, gap.line, "PB414")
        out.append(finding)
    if analysis.incomplete is not None:
        out.append(incomplete_finding(analysis.path, analysis.incomplete))
    for _line, (_codes, why, at) in sorted(analysis.annotations.items()):
        if not _real_reason(why):
            out.append(
                Finding.of(
                    "PB410",
                    analysis.path,
                    at,
                    "`patchbay-reviewed` needs a reason "
                    "(# patchbay-reviewed: why this change to the engine is fine)",
                )
            )
    return out


def _other_targets(analysis: ScriptAnalysis) -> dict[tuple[str, int], list[str]]:
    """(file, line) -> the paths its modifications change, when one statement changes several
    (a loop over literal items unrolled into one modification per item)."""
    paths: dict[tuple[str, int], list[str]] = {}
    for mod in analysis.modifications:
        if mod.target is None or mod.target.root == "unknown" or rule_of(mod) is None:
            continue
        key = (mod.chain[-1] if mod.chain else analysis.path, mod.line)
        shown = display(mod.target.path)
        if shown not in paths.setdefault(key, []):
            paths[key].append(shown)
    return {key: found for key, found in paths.items() if len(found) > 1}


def _reviewed(analysis: ScriptAnalysis, path: str, line: int, code: str) -> Suppression | None:
    """The suppression a ``patchbay-reviewed`` annotation with a real reason gives the finding
    ``code`` at ``path:line`` (the analysed file's annotations, or those of a file it followed),
    or None."""
    notes = (
        analysis.annotations
        if path == analysis.path
        else analysis.followed_annotations.get(path, {})
    )
    note = notes.get(line)
    if note is not None and (not note[0] or code in note[0]) and _real_reason(note[1]):
        return Suppression("inSource", note[1])
    return None


def incomplete_finding(rel: str, stop: Incomplete) -> Finding:
    """PB412 for a file whose walk stopped before its end (:class:`~patchbay.analysis.model.
    Incomplete`): at the file and line the walk reached, saying why and that nothing after it
    was judged (a fault of the analyser asks to be reported)."""
    where = f"line {stop.line}" if stop.line else "its start"
    if stop.kind == "error":
        why = f"the analyser failed ({stop.reason}); please report it"
    else:
        why = stop.reason
    message = f"the analysis stopped at {where}: {why}; nothing after it was judged"
    finding = Finding.of("PB412", stop.path, stop.line, message)
    if stop.path != rel:
        finding.chain = (rel,)
    return finding


def _real_reason(reason: str) -> bool:
    from ..patchset.placeholders import placeholder_in

    return len(reason.split()) >= 2 and placeholder_in(reason) is None


_SHEBANG = re.compile(rb"^#!\s*\S*?(?:\b(?:env\s+)?)(?P<interp>ba|z|k|da)?(?P<name>sh|python3?)\b")


def script_kind(rel: str, head: bytes | None = None) -> ScriptKind | None:
    """How to read a file: by name (``*.py``, ``Dockerfile*``, ``*.sh``...) or, for a file
    without a suffix, by its ``#!`` line."""
    name = rel.rsplit("/", 1)[-1]
    lower = name.lower()
    if lower.endswith(".py"):
        return "python"
    if lower.startswith(("dockerfile", "containerfile")) or lower.endswith(".dockerfile"):
        return "dockerfile"
    if lower.endswith((".sh", ".bash", ".zsh", ".ksh")):
        return "shell"
    if head is not None and "." not in name and head.startswith(b"#!"):
        first = head.split(b"\n", 1)[0]
        if b"python" in first:
            return "python"
        if re.search(rb"\b(?:ba|z|k|da)?sh\b", first):
            return "shell"
    return None


def script_files(
    root: Path,
    include: list[str],
    exclude: list[str],
    skipped: list[tuple[str, str]] | None = None,
) -> list[tuple[str, ScriptKind]]:
    """The files the scanner reads: ``include`` globs, and files without a suffix that start
    with a shell or Python ``#!``; never ``exclude`` globs or :data:`SKIPPED_DIRS`.

    Folders are walked as :func:`os.walk` does (symbolic links to folders are not followed,
    unreadable folders are skipped). Only regular files are read: a FIFO, socket or device
    that an ``include`` glob names is appended to ``skipped`` as ``(path, why)`` (opening a
    FIFO would wait for a writer).

    Returns:
        (path relative to ``root`` with ``/``, kind), sorted by path.
    """
    included = globs_regex(tuple(include))
    excluded = globs_regex(tuple(exclude))
    out: list[tuple[str, ScriptKind]] = []
    folders = [(os.fspath(root), "")]
    while folders:
        folder, prefix = folders.pop()
        if excluded is not None and prefix and excluded.match(prefix[:-1]):
            continue
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if name in SKIPPED_DIRS or name.endswith(".egg-info"):
                    continue
                try:
                    link = entry.is_symlink()
                except OSError:
                    link = False
                if not link:
                    folders.append((entry.path, f"{prefix}{name}/"))
                continue
            rel = prefix + name
            if excluded is not None and excluded.match(rel):
                continue
            try:
                regular = entry.is_file()
            except OSError:
                regular = False
            kind: ScriptKind | None = None
            if included is not None and included.match(rel):
                if not regular:
                    if skipped is not None:
                        skipped.append((rel, "not a regular file (a FIFO, a socket or a device)"))
                    continue
                kind = script_kind(rel) or "shell"
            elif "." not in name and regular:
                try:
                    with open(entry.path, "rb") as fh:
                        head = fh.read(128)
                except OSError:
                    continue
                kind = script_kind(rel, head)
            if kind is not None:
                out.append((rel, kind))
    out.sort()
    return out


def read_bytes(path: str) -> bytes | None:
    """A file's bytes with universal newlines (``\\r\\n`` and ``\\r`` become ``\\n``, as
    ``open()`` in text mode reads them), or None when it cannot be read or is not a regular
    file (a FIFO, a socket, a device: opened without blocking, never read); one ``os.read``
    for a file under 64 KiB."""
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None  # a FIFO, a socket or a device: never read
        data = os.read(fd, 1 << 16)
        if len(data) == 1 << 16:
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            data = b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data


def read_script(path: str) -> str | None:
    """A file's text as ``open(path, encoding="utf-8", errors="replace")`` reads it (universal
    newlines), or None when it cannot be read; one read of the bytes, one decode."""
    data = read_bytes(path)
    return None if data is None else data.decode("utf-8", "replace")


def _first(item: tuple[str, str]) -> str:
    return item[0]


def scan_tree(
    root: Path,
    include: list[str],
    exclude: list[str],
    engines: EngineNames,
    cache: ScriptCache | None = None,
) -> list[Finding]:
    """The PB4xx findings of every script under ``root`` (see :func:`script_files`).

    Each file is read once; one that names no trigger is skipped (or, with ``cache``, one the
    gate rejected before with the same bytes, while every other script whose existence that
    verdict rested on is still there or still missing); the rest are analysed (following
    ``source``/``bash`` into scripts of ``root``), or their findings taken from ``cache`` when
    neither they nor a file their analysis looked at changed (the cache is saved at the end).
    A statement reached from several scripts (a sourced helper) is one finding, at its own
    file and line, with the chain of the first script that reached it.

    Returns:
        Findings of PB401-PB413, annotated ones carrying their suppression.
    """
    found: dict[tuple[str, int | None, str], Finding] = {}
    base = os.path.join(os.fspath(root), "")
    gate = _Gate(engines, root)
    verdicts = cache is not None and cache.harmless_verdicts(gate.is_file)
    skipped: list[tuple[str, str]] = []
    files = script_files(root, include, exclude, skipped)
    standalone = frozenset(rel for rel, kind in files if kind == "shell")
    for rel, kind in progress.each(files, "audit: scripts", _first):  # after 2 s on a terminal
        data = read_bytes(base + rel)
        if data is None:
            skipped.append((rel, "it cannot be read (no permission, or it vanished)"))
            continue
        key = None
        worthy = False  # let through before, and nothing the verdict rested on changed
        if cache is not None:
            key = cache.key(rel, kind, data)
            if verdicts and cache.is_harmless(key):
                continue  # rejected before, and nothing the verdict rested on changed
            worthy = verdicts and cache.is_worthy(key)
        if not worthy:
            if not gate(data, rel, kind):
                if cache is not None and key is not None:
                    cache.put_harmless(key)
                continue
            if cache is not None and key is not None:
                cache.put_worthy(key)
        findings = cache.get(rel, kind, data, key) if cache is not None else None
        if findings is None:
            from ..analysis import analyse  # the parser and the walk, when a file needs them

            try:
                text = data.decode("utf-8", "replace")
                analysis = analyse(text, rel, kind, engines, root, standalone)
            except InputError as exc:  # not cached: it is cheap, and rare
                found[(rel, exc.line, "PB400")] = _unreadable(rel, exc)
                continue
            except Exception as exc:  # a fault outside the walk: this file's finding
                stop = Incomplete(rel, None, f"{type(exc).__name__}: {exc}", "error")
                analysis = ScriptAnalysis(rel, kind, incomplete=stop)
            findings = findings_of(analysis)
            if cache is not None:
                cache.put(rel, kind, data, findings, analysis.inputs)
        for finding in findings:
            key = (finding.path, finding.line, finding.code)
            old = found.get(key)
            if old is None or len(finding.chain) > len(old.chain):
                found[key] = finding
    if cache is not None:
        cache.gate_answers(gate.files)
        cache.save()
    for rel, why in skipped:
        found[(rel, None, "PB413")] = Finding.of("PB413", rel, None, f"not analysed: {why}")
    return [f for f in found.values() if f is not None]


def _unreadable(rel: str, exc: InputError) -> Finding:
    return Finding.of("PB411", rel, exc.line, f"the script cannot be read: {exc.reason}")
