"""The audit's cache of script findings: a script analysed once is not analysed again until it,
a file its analysis looked at, the engine names or the analyser change.

Like ruff's cache, an entry is keyed by what decides the result: the script's bytes (SHA-256),
its path and kind, and a digest of the analyser (the source of :mod:`patchbay.analysis`, of the
scanner and its rules, the grammars' and Python's versions) and of the engine names
(:func:`analyser_digest`). An entry also records every repository file the analysis looked at
besides the script (:mod:`patchbay.analysis.inputs`: a ``source``d helper, a patch file, a glob,
whether a file exists) and is reused only when each still gives the same answer.

The same file keeps the scripts the file gate of :func:`~.scanner.scan_tree` rejected (same
key), with the answers those verdicts rested on (whether each script a line runs exists): while
every answer holds they are not judged again. Parsed patchsets and waivers have a file of their
own (:mod:`.documents`).

The cache lives outside the audited tree, under ``$XDG_CACHE_HOME/patchbay/audit`` (default
``~/.cache/patchbay/audit``): a repository can never ship verdicts about its own scripts. There
is one file per audited root, rewritten (atomically) only when an entry was added or dropped;
a file that does not parse, or an entry of the wrong shape, is ignored and replaced, never
trusted. ``PATCHBAY_NO_CACHE=1`` (or ``run_audit(script_cache=False)``) turns it off.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ..analysis.engines import EngineNames
from .rules import RULES, Finding, Suppression

__all__ = ["FORMAT", "ScriptCache", "analyser_digest", "cache_disabled", "write_json"]

FORMAT = 2
"""The layout of a cache file; a file of another layout is ignored."""

_KEEP_SECONDS = 30 * 24 * 3600
"""Cache files of roots not audited for this long are removed when another is written."""

_PACKAGE = Path(__file__).resolve().parent.parent
_SOURCES = (
    "analysis",
    "audit/scanner.py",
    "audit/rules.py",
    "audit/cache.py",
    "audit/config.py",
    "patchset/placeholders.py",
)
"""What the findings of a script depend on besides its inputs: their source is in the digest."""
_LIBRARIES = ("tree_sitter", "tree_sitter_bash", "tree_sitter_dockerfile", "packaging")


def cache_disabled() -> bool:
    """``PATCHBAY_NO_CACHE`` is set to anything but ``""`` or ``0``."""
    return os.environ.get("PATCHBAY_NO_CACHE", "") not in ("", "0")


@cache
def _code_digest() -> str:
    from .. import __version__

    h = hashlib.sha256(f"format {FORMAT} patchbay {__version__} {sys.version_info[:2]}".encode())
    for entry in _SOURCES:
        path = _PACKAGE / entry
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            h.update(file.relative_to(_PACKAGE).as_posix().encode() + b"\0")
            h.update(file.read_bytes())
    for name in _LIBRARIES:  # an upgrade rewrites the files: their size and time change
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        stat = os.stat(origin) if origin else None
        h.update(f"{name} {origin} {stat and (stat.st_size, stat.st_mtime_ns)}".encode())
    return h.hexdigest()


def analyser_digest(engines: EngineNames) -> str:
    """The digest of everything besides a script and its inputs that its findings depend on:
    the analyser's code (see :data:`_SOURCES`, the grammars, Python) and the engine names."""
    names = {
        "distributions": sorted(engines.distributions),
        "imports": sorted(engines.imports),
        "upstreams": sorted(engines.upstreams.items()),
    }
    blob = json.dumps([_code_digest(), names], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _finding_json(f: Finding) -> list[object]:
    s = f.suppression
    suppression = None if s is None else [s.kind, s.justification]
    return [f.code, f.path, f.line, f.message, f.end_line, list(f.chain), suppression]


def _finding_of(item: object) -> Finding:
    """A finding back from its JSON form.

    Raises:
        ValueError: not the shape :func:`_finding_json` writes.
    """
    if not isinstance(item, list) or len(item) != 7:
        raise ValueError("not a finding")
    code, path, line, message, end_line, chain, suppression = item
    if not (isinstance(code, str) and code in RULES and isinstance(path, str)):
        raise ValueError("not a finding")
    if not isinstance(message, str) or not isinstance(chain, list):
        raise ValueError("not a finding")
    for number in (line, end_line):
        if number is not None and (type(number) is not int or number < 1):
            raise ValueError("not a line")
    if not all(isinstance(c, str) for c in chain):
        raise ValueError("not a chain")
    finding = Finding.of(code, path, line, message, end_line)
    finding.chain = tuple(chain)
    if suppression is not None:
        if not (
            isinstance(suppression, list)
            and len(suppression) == 2
            and all(isinstance(s, str) for s in suppression)
        ):
            raise ValueError("not a suppression")
        finding.suppression = Suppression(suppression[0], suppression[1])
    return finding


def _probes_of(item: object) -> list[tuple[str, str, object]]:
    if not isinstance(item, list):
        raise ValueError("not inputs")
    out = []
    for probe in item:
        if not (isinstance(probe, list) and len(probe) == 3 and isinstance(probe[0], str)):
            raise ValueError("not an input")
        out.append((probe[0], probe[1], probe[2]))
    return out


class ScriptCache:
    """The cached findings of one audited root (one file under ``folder``).

    Args:
        folder: the cache folder (``~/.cache/patchbay/audit``); created when first written.
        root: the audited root; its resolved path names the cache file (the paths an analysis
            looked at are resolved ones: a root that now points elsewhere has another file).
        engines: what counts as an engine (part of every key).
    """

    def __init__(self, folder: Path, root: Path, engines: EngineNames) -> None:
        self.folder = folder
        self.root = str(root.resolve())
        digest = hashlib.sha256(os.fsencode(self.root)).hexdigest()[:24]
        self.path = folder / f"scripts-{digest}.json"
        self.analyser = analyser_digest(engines)
        self.entries: dict[str, dict[str, object]] = {}
        self.used: set[str] = set()
        # scripts the file gate rejected (keys as :meth:`key`), and the answers about other
        # scripts' existence those verdicts rested on ((folder, word) -> a file?)
        self.harmless: set[str] = set()
        self.harmless_used: set[str] = set()
        self.gate_probes: dict[tuple[str, str], bool] = {}
        self.dirty = False
        self.hits = 0
        self.misses = 0
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        doc = read_json(self.path, {"format": FORMAT, "analyser": self.analyser, "root": self.root})
        if doc is not None:
            self.entries = doc["entries"]
            self._load_harmless(doc.get("harmless"), doc.get("gate_probes"))
        else:
            self.dirty = True  # another analyser's (or a broken) file: replace it

    def _load_harmless(self, keys: object, probes: object) -> None:
        """The gate's verdicts of the last run, when of the right shape (else dropped)."""
        if not (isinstance(keys, list) and isinstance(probes, list)):
            self.dirty = True
            return
        if not all(isinstance(k, str) for k in keys):
            self.dirty = True
            return
        answers: dict[tuple[str, str], bool] = {}
        for probe in probes:
            if not (
                isinstance(probe, list)
                and len(probe) == 3
                and isinstance(probe[0], str)
                and isinstance(probe[1], str)
                and isinstance(probe[2], bool)
            ):
                self.dirty = True
                return
            answers[(probe[0], probe[1])] = probe[2]
        self.harmless = set(keys)
        self.gate_probes = answers

    def harmless_verdicts(self, is_file: Callable[[str, str], bool]) -> bool:
        """Whether the gate's verdicts of the last run still hold: every answer they rested
        on (``is_file(folder, word)``, the gate's own test) is the same today. When one is
        not, they are all dropped and every script goes through the gate again."""
        if not self.harmless:
            return False
        if all(is_file(folder, word) == seen for (folder, word), seen in self.gate_probes.items()):
            return True
        self.harmless.clear()
        self.gate_probes.clear()
        self.dirty = True
        return False

    def is_harmless(self, key: str) -> bool:
        """The script (its :meth:`key`) was rejected by the gate before (see
        :meth:`harmless_verdicts`); it is kept for the next run."""
        if key in self.harmless:
            self.harmless_used.add(key)
            return True
        return False

    def put_harmless(self, key: str) -> None:
        """Record a script the gate rejected (see :meth:`gate_answers`)."""
        self.harmless.add(key)
        self.harmless_used.add(key)
        self.dirty = True

    def gate_answers(self, probes: dict[tuple[str, str], bool]) -> None:
        """Record what the gate found out about other scripts' existence this run (its
        verdicts rest on these answers; the ones of earlier runs were checked to hold)."""
        if probes.items() - self.gate_probes.items():
            self.gate_probes.update(probes)
            self.dirty = True

    @staticmethod
    def key(rel: str, kind: str, data: bytes) -> str:
        """The entry of one script: its path, kind and bytes."""
        # from the name's bytes: a name that is not UTF-8 has lone surrogates (surrogateescape)
        h = hashlib.sha256(kind.encode() + b"\0" + os.fsencode(rel) + b"\0")
        h.update(data)
        return h.hexdigest()

    def get(self, rel: str, kind: str, data: bytes, key: str | None = None) -> list[Finding] | None:
        """The findings of a script analysed before, or None: not cached, of the wrong shape,
        or a file its analysis looked at changed (``key``: its :meth:`key`, when known)."""
        from ..analysis.inputs import unchanged

        key = key or self.key(rel, kind, data)
        entry = self.entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        try:
            if not isinstance(entry, dict):
                raise ValueError("not an entry")
            probes = _probes_of(entry.get("inputs"))
            raw = entry.get("findings")
            if not isinstance(raw, list):
                raise ValueError("not findings")
            findings = [_finding_of(item) for item in raw]
            if not unchanged(probes):
                raise ValueError("an input changed")
        except ValueError:
            del self.entries[key]
            self.dirty = True
            self.misses += 1
            return None
        self.used.add(key)
        self.hits += 1
        return findings

    def put(
        self,
        rel: str,
        kind: str,
        data: bytes,
        findings: list[Finding],
        inputs: list[tuple[str, str, object]],
    ) -> None:
        """Record the findings of a script just analysed (before anyone changes them)."""
        key = self.key(rel, kind, data)
        self.entries[key] = {
            "findings": [_finding_json(f) for f in findings],
            "inputs": [list(p) for p in inputs],
        }
        self.used.add(key)
        self.dirty = True

    def save(self) -> None:
        """Write the entries this run used (others are dropped), when anything changed; a
        cache that cannot be written is skipped silently (it is only a cache)."""
        if (
            not self.dirty
            and len(self.used) == len(self.entries)
            and len(self.harmless_used) == len(self.harmless)
        ):
            return
        doc = {
            "format": FORMAT,
            "analyser": self.analyser,
            "root": self.root,
            "entries": {k: v for k, v in self.entries.items() if k in self.used},
            "harmless": sorted(self.harmless_used),
            "gate_probes": [[f, w, seen] for (f, w), seen in sorted(self.gate_probes.items())],
        }
        if write_json(self.folder, self.path, doc):
            self.dirty = False


def read_json(path: Path, header: Mapping[str, object]) -> dict[str, Any] | None:
    """The cache file ``path`` as written by :func:`write_json`, when it parses, is an object
    whose ``header`` keys hold exactly those values and whose ``entries`` is an object; None
    otherwise (missing, broken, or another format, analyser or root: to be replaced)."""
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if (
        isinstance(doc, dict)
        and all(doc.get(k) == v for k, v in header.items())
        and isinstance(doc.get("entries"), dict)
    ):
        return doc
    return None


def write_json(folder: Path, path: Path, doc: object) -> bool:
    """Write ``doc`` to the cache file ``path`` in ``folder`` atomically (a temporary file
    renamed over it), then remove the cache files of roots not audited for
    :data:`_KEEP_SECONDS`. A cache that cannot be written is skipped (it is only a cache).

    Returns:
        True when the file was written.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".cache-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, separators=(",", ":"))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(folder)
    except OSError:
        return False
    return True


def _prune(folder: Path) -> None:
    """Remove the cache files of roots not audited for :data:`_KEEP_SECONDS`."""
    cutoff = time.time() - _KEEP_SECONDS
    with os.scandir(folder) as it:
        for entry in it:
            if entry.name.startswith(("scripts-", "documents-")) and entry.name.endswith(".json"):
                try:
                    if entry.stat().st_mtime < cutoff:
                        os.unlink(entry.path)
                except OSError:
                    continue
