"""The audit's cache of script findings: a script analysed once is not analysed again until it,
a file its analysis looked at, the engine names or the analyser change.

Like ruff's cache, an entry is keyed by what decides the result: the script's bytes (SHA-256),
its path relative to the audited root and its kind (:meth:`ScriptCache.key`), in the file of
one analyser digest (:func:`analyser_digest`: the source of :mod:`patchbay.analysis`, of the
scanner and its rules, the grammars' and Python's versions, and the engine names). An entry
also records every repository file the analysis looked at besides the script
(:mod:`patchbay.analysis.inputs`: a ``source``d helper, a patch file, a glob, whether a file
exists), relative to the root (:func:`~patchbay.analysis.inputs.portable`), and is reused only
when each still gives the same answer below the root audited now. Nothing in a key or an entry
says where the repository is, so a second clone of the same commit in another folder (a CI
checkout, a worktree) finds the same entries; the one exception is an entry whose findings
name the root's absolute path, which is bound to that root. A patchset change leaves the
entries valid unless it changes the engine names (its components' distributions and
repositories, its targets' packages): the only part of a patchset the analysis reads.

The same file keeps, per audited root, the scripts the file gate of
:func:`~.scanner.scan_tree` rejected and those it let through (same key), with the answers
those verdicts rested on (whether each script a line runs exists): while every answer holds
they are not judged again. A root audited for the first time starts from the verdicts of the
root audited last (they too hold only while every answer is the same in this tree). Parsed
patchsets and waivers have a file of their own (:mod:`.documents`).

Every entry is sealed with the user's key and bound to the analyser digest, and the folder and
its files are trusted only as ssh trusts its keys (:mod:`.store`): an entry edited by hand is
not believed. The cache lives outside the audited tree, under ``$XDG_CACHE_HOME/patchbay/audit``
(default ``~/.cache/patchbay/audit``): a repository can never ship verdicts about its own
scripts. ``patchbay audit --no-cache``, ``PATCHBAY_NO_CACHE=1`` or
``run_audit(script_cache=False)`` turn it off.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

from ..analysis.engines import EngineNames
from .rules import RULES, Finding, Suppression
from .store import CacheFolder, SealedStore

__all__ = ["FORMAT", "ScriptCache", "analyser_digest", "cache_disabled"]

FORMAT = 3
"""The layout of an entry; a digest over another layout's code names another file."""

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
_LIBRARIES = {
    "tree_sitter": "tree_sitter",
    "tree_sitter_bash": "tree_sitter_bash",
    "tree_sitter_dockerfile": "tree_sitter_dockerfile",
    "packaging": "packaging",
}
"""The libraries the analysis uses: import name -> the name of their ``.dist-info`` folder
(the wheel's spelling of the distribution)."""


def cache_disabled() -> bool:
    """``PATCHBAY_NO_CACHE`` is set to anything but ``""`` or ``0``."""
    return os.environ.get("PATCHBAY_NO_CACHE", "") not in ("", "0")


@cache
def _listing(folder: str) -> tuple[str, ...]:
    try:
        return tuple(os.listdir(folder))
    except OSError:
        return ()


def _library(name: str, dist: str) -> str:
    """The installed version of a library, as the name of its ``.dist-info`` folder (an
    installation's paths and times differ from one environment to the next, its version does
    not); else its file's size and time."""
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
    if not origin:
        return f"{name} missing"
    folder = os.path.dirname(origin)
    site = os.path.dirname(folder) if os.path.basename(origin) == "__init__.py" else folder
    prefix = dist.lower() + "-"
    found = [n for n in _listing(site) if n.lower().startswith(prefix) and n.endswith(".dist-info")]
    if len(found) == 1:
        return found[0]
    st = os.stat(origin)
    return f"{name} {origin} {st.st_size} {st.st_mtime_ns}"


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
    for name, dist in _LIBRARIES.items():
        h.update(_library(name, dist).encode() + b"\0")
    return h.hexdigest()


def _plain(value: object) -> object:
    """A field of :class:`EngineNames` as sorted JSON data (sets and mappings have no order)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, dict):
        return sorted([k, _plain(v)] for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def analyser_digest(engines: EngineNames, scope: object = None) -> str:
    """The digest (SHA-256, hexadecimal) of everything besides a script and its inputs that
    its findings depend on: the analyser's code (see :data:`_SOURCES`; the libraries'
    versions, Python's) and the engine names (every field of :class:`EngineNames`, which is
    all the analysis is told of the patchsets and the configuration). Nothing else of a
    patchset is in it: renaming a patch or a target, or moving a pin, leaves it the same.
    ``scope`` is what else the walk is told, as JSON data: the scripts' globs (a script that
    sources one the audit reads on its own leaves that one's unused functions to it)."""
    names = {f.name: _plain(getattr(engines, f.name)) for f in dataclasses.fields(engines)}
    blob = json.dumps([_code_digest(), names, scope], sort_keys=True)
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
    """The cached findings of scripts, for the audit of one root.

    Args:
        folder: the cache folder (``~/.cache/patchbay/audit``), or the :class:`~.store.CacheFolder`
            of the run (the one :class:`~.documents.DocumentCache` uses too: its notes are
            the run's); created when first written.
        root: the audited root (the one given to the analysis): what the paths of the
            entries' inputs are relative to.
        engines: what counts as an engine (part of the analyser digest).
        scope: the scripts' include and exclude globs (part of it too).

    Attributes:
        path: the store file of this analyser digest.
        hits, misses: scripts whose findings were, were not taken from the cache.
    """

    def __init__(
        self, folder: Path | CacheFolder, root: Path, engines: EngineNames, scope: object = None
    ) -> None:
        self.folder = folder if isinstance(folder, CacheFolder) else CacheFolder(folder)
        self.root = root
        self.root_text = os.fspath(root.resolve())
        self.analyser = analyser_digest(engines, scope)
        self.store = SealedStore(self.folder, "scripts", self.analyser)
        self.path = self.store.path
        # scripts the gate rejected and let through (keys as :meth:`key`), and the answers
        # about other scripts' existence those verdicts rested on ((folder, word) -> a file?)
        self.harmless: set[str] = set()
        self.harmless_used: set[str] = set()
        self.worthy: set[str] = set()
        self.worthy_used: set[str] = set()
        self._answers: dict[tuple[str, str], object] = {}  # inputs asked this run
        self.gate_probes: dict[tuple[str, str], bool] = {}
        self._gate_key = "gate:" + hashlib.sha256(os.fsencode(self.root_text)).hexdigest()[:24]
        self._gate_dirty = False
        self.hits = 0
        self.misses = 0
        self._load_harmless()

    @property
    def notes(self) -> list[str]:
        """What of the cache was ignored and why (:attr:`.store.CacheFolder.notes`, and the
        entries whose seal did not check), one line each."""
        note = self.store.note
        return [*self.folder.notes, *([note] if note else [])]

    def _load_harmless(self) -> None:
        """The gate's verdicts of this root's last run, else of the root audited last; a
        record of the wrong shape or seal is dropped."""
        others = sorted(
            (k for k in self.store if k.startswith("gate:") and k != self._gate_key),
            key=self.store.last_used,
            reverse=True,
        )
        for key in (self._gate_key, *others):
            record = self.store.get(key)
            if record is None:
                continue
            try:
                self.harmless, self.gate_probes, self.worthy = _gate_of(record)
            except ValueError:
                self.store.drop(key)
                continue
            self._gate_dirty = key != self._gate_key  # this root's own record is written
            return

    def harmless_verdicts(self, is_file: Callable[[str, str], bool]) -> bool:
        """Whether the gate's verdicts of the last run (the scripts it rejected and those it
        let through) still hold: every answer they rested on (``is_file(folder, word)``, the
        gate's own test) is the same today. When one is not, they are all dropped and every
        script goes through the gate again."""
        if not self.harmless and not self.worthy:
            return False
        if all(is_file(folder, word) == seen for (folder, word), seen in self.gate_probes.items()):
            return True
        self.harmless.clear()
        self.worthy.clear()
        self.gate_probes.clear()
        self._gate_dirty = True
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
        self._gate_dirty = True

    def is_worthy(self, key: str) -> bool:
        """The script (its :meth:`key`) went through the gate before (see
        :meth:`harmless_verdicts`): it need not be judged again; it is kept for the next run."""
        if key in self.worthy:
            self.worthy_used.add(key)
            return True
        return False

    def put_worthy(self, key: str) -> None:
        """Record a script the gate let through (see :meth:`gate_answers`)."""
        self.worthy.add(key)
        self.worthy_used.add(key)
        self._gate_dirty = True

    def gate_answers(self, probes: dict[tuple[str, str], bool]) -> None:
        """Record what the gate found out about other scripts' existence this run (its
        verdicts rest on these answers; the ones of earlier runs were checked to hold)."""
        if probes.items() - self.gate_probes.items():
            self.gate_probes.update(probes)
            self._gate_dirty = True

    @staticmethod
    def key(rel: str, kind: str, data: bytes) -> str:
        """The entry of one script: its path relative to the root, its kind and bytes (a
        SHA-256, hexadecimal)."""
        # from the name's bytes: a name that is not UTF-8 has lone surrogates (surrogateescape)
        h = hashlib.sha256(kind.encode() + b"\0" + os.fsencode(rel) + b"\0")
        h.update(data)
        return h.hexdigest()

    def get(self, rel: str, kind: str, data: bytes, key: str | None = None) -> list[Finding] | None:
        """The findings of a script analysed before, or None: not cached, its seal does not
        check, of the wrong shape, bound to another root, or a file its analysis looked at
        gives another answer below this root (``key``: its :meth:`key`, when known)."""
        from ..analysis.inputs import unchanged

        key = key or self.key(rel, kind, data)
        entry = self.store.get(key)
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
            bound = entry.get("root")
            if bound is not None and not isinstance(bound, str):
                raise ValueError("not a root")
        except ValueError:
            self.store.drop(key)
            self.misses += 1
            return None
        if bound is not None and bound != self.root_text:
            self.misses += 1  # another tree's answers: replaced by this one's
            return None
        if not unchanged(probes, self.root, self._answers):
            self.misses += 1  # another tree's answers: replaced by this one's
            return None
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
        """Record the findings of a script just analysed (before anyone changes them), with
        the files its analysis looked at (``inputs``, as the walk records them: made relative
        to the root). An analysis that looked at a path relative to the working folder is not
        recorded (it cannot be asked again)."""
        from ..analysis.inputs import portable

        probes = portable(inputs, self.root)
        if probes is None:
            return
        raw = [_finding_json(f) for f in findings]
        blob = json.dumps(raw)
        named = {os.fspath(self.root), self.root_text}
        bound = self.root_text if any(json.dumps(r)[1:-1] in blob for r in named) else None
        self.store.put(
            self.key(rel, kind, data),
            {"findings": raw, "inputs": [list(p) for p in probes], "root": bound},
        )

    def save(self) -> None:
        """Write the gate's verdicts and the entries, when anything changed (see
        :meth:`.store.SealedStore.save`); a cache that cannot be written is skipped (it is
        only a cache)."""
        used = (self.harmless_used, self.worthy_used)
        if self._gate_dirty or (len(used[0]), len(used[1])) != (
            len(self.harmless),
            len(self.worthy),
        ):
            record = {
                "harmless": sorted(self.harmless_used),
                "worthy": sorted(self.worthy_used),
                "probes": [[f, w, seen] for (f, w), seen in sorted(self.gate_probes.items())],
            }
            if self.store.put(self._gate_key, record):
                self._gate_dirty = False
        else:
            self.store.get(self._gate_key)  # used: kept
        self.store.save()


def _gate_of(record: object) -> tuple[set[str], dict[tuple[str, str], bool], set[str]]:
    """The harmless keys, the gate's answers and the keys it let through, of a record
    :meth:`ScriptCache.save` wrote.

    Raises:
        ValueError: not that shape.
    """
    if not isinstance(record, dict):
        raise ValueError("not a gate record")
    keys, probes = record.get("harmless"), record.get("probes")
    worthy = record.get("worthy", [])
    if not (isinstance(keys, list) and isinstance(probes, list) and isinstance(worthy, list)):
        raise ValueError("not a gate record")
    if not all(isinstance(k, str) for k in (*keys, *worthy)):
        raise ValueError("not keys")
    answers: dict[tuple[str, str], bool] = {}
    for probe in probes:
        if not (
            isinstance(probe, list)
            and len(probe) == 3
            and isinstance(probe[0], str)
            and isinstance(probe[1], str)
            and isinstance(probe[2], bool)
        ):
            raise ValueError("not an answer")
        answers[(probe[0], probe[1])] = probe[2]
    return set(keys), answers, set(worthy)
