"""Waivers that cover patch scripts: adoption before migration.

A benchmark repository that has not moved to patchsets keeps its patch scripts, and waivers
named after the pull requests that added them (``docs/waiver/2508.md``) whose text names the
script ("**Patch script:** `benchmarks/.../apply_k3_container_patches.sh`"), or the benchmark
script that runs it. Such a waiver covers the script's findings (PB401-PB409): they are
reported as *waived*, with the waiver's id, at severity ``note``, and do not count; a script
finding that no waiver covers stays what its rule says. That is the manual review ("does this
PR patch the engine, and is there a waiver?") as a CI check, before ``patchbay import`` turns
the scripts into patchsets.

A finding is covered when its file, or any script of its ``chain`` (the scripts through which
the scanner reached it, ``bash path``), is a script a waiver links.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..waivers import Waiver
from ..waivers.paths import NamedPath
from .config import SKIPPED_DIRS, AuditConfig, matches_any
from .rules import Finding, Severity, WaivedBy

WAIVABLE = frozenset(f"PB40{n}" for n in range(1, 10))
"""The scanner's rules of engine patching (PB401-PB409); PB410, an annotation without a
reason, is about the annotation and is never waived."""

_SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh")


@dataclass(frozen=True)
class ScriptLink:
    """A script of the repository that a waiver names.

    Attributes:
        path: the script, relative to the audited root, with ``/``.
        line: the line of the waiver that names it.
        text: the path as the waiver writes it.
    """

    path: str
    line: int
    text: str


@dataclass
class ScriptLinks:
    """The scripts each waiver links.

    Attributes:
        by_waiver: waiver id -> the scripts it names, in order of appearance.
        waivers: waiver id -> the waiver.
    """

    by_waiver: dict[str, list[ScriptLink]] = field(default_factory=dict)
    waivers: dict[str, Waiver] = field(default_factory=dict)

    def covering(self) -> dict[str, tuple[Waiver, ScriptLink]]:
        """Script path -> the first waiver (in waiver order) that links it, with the link."""
        out: dict[str, tuple[Waiver, ScriptLink]] = {}
        for wid, links in self.by_waiver.items():
            for link in links:
                out.setdefault(link.path, (self.waivers[wid], link))
        return out


def _is_skipped(rel: str) -> bool:
    return any(part in SKIPPED_DIRS for part in rel.split("/")[:-1])


def _has_shebang(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(2) == b"#!"
    except OSError:
        return False


class _Resolver:
    """Resolves the paths a waiver writes to scripts of the repository."""

    def __init__(self, root: Path, config: AuditConfig, listing: Callable[[], list[str]]) -> None:
        self.root = root
        self.config = config
        self._listing = listing
        self._scripts: list[str] | None = None
        self._by_name: dict[str, list[str]] | None = None

    def scripts(self) -> list[str]:
        """Every script of the repository (listed once, only when a bare name or an elided
        path needs it)."""
        if self._scripts is None:
            self._scripts = self._listing()
        return self._scripts

    def is_script(self, rel: str) -> bool:
        """An existing file the scanner would read: a ``scripts`` glob and no ``exclude``
        glob, or a file without a suffix that starts with ``#!``."""
        if _is_skipped(rel) or matches_any(rel, self.config.exclude):
            return False
        path = self.root / rel
        if not path.is_file():
            return False
        if matches_any(rel, self.config.scripts):
            return True
        return "." not in rel.rsplit("/", 1)[-1] and _has_shebang(path)

    def resolve(self, named: NamedPath, waiver_path: Path) -> str | None:
        """The script ``named`` names, relative to the root, or None.

        - a Markdown link target is relative to the waiver's folder (``/x`` to the root);
        - other paths are relative to the root (``./`` and ``/`` stripped);
        - ``...`` stands for any folders (``benchmarks/.../apply.sh``);
        - a bare shell script name (``apply_demo3_patches.sh``) names the one script of the
          repository with that name, when there is exactly one.
        """
        text = named.text
        if named.relative_to_file:
            folder = os.path.relpath(waiver_path.parent, self.root).replace(os.sep, "/")
            text = posixpath.join(folder, text)
        rel = posixpath.normpath(text.lstrip("/"))
        if rel.startswith("../") or rel in (".", ".."):
            return None  # outside the repository
        if "..." in rel.split("/"):
            pattern = re.compile(
                "/".join(
                    "(?:[^/]+/)*[^/]+" if part == "..." else re.escape(part)
                    for part in rel.split("/")
                )
                + r"\Z"
            )
            found = [s for s in self.scripts() if pattern.match(s)]
            return found[0] if len(found) == 1 else None
        if "/" not in rel and rel.endswith(_SHELL_SUFFIXES) and not (self.root / rel).is_file():
            if self._by_name is None:
                self._by_name = {}
                for script in self.scripts():
                    self._by_name.setdefault(script.rsplit("/", 1)[-1], []).append(script)
            found = self._by_name.get(rel, [])
            return found[0] if len(found) == 1 else None
        return rel if self.is_script(rel) else None


def script_links(
    waivers: Iterable[Waiver],
    root: Path,
    config: AuditConfig,
    listing: Callable[[], list[str]],
) -> ScriptLinks:
    """The scripts of the repository each waiver names.

    Args:
        waivers: the parsed waivers (their :attr:`~patchbay.waivers.Waiver.paths`).
        root: the audited root.
        config: the audit configuration (``scripts`` and ``exclude`` globs).
        listing: returns every script path of the repository (relative, ``/``); called at
            most once, and only when a waiver writes a bare script name or an elided path.
    """
    resolver = _Resolver(root, config, listing)
    out = ScriptLinks()
    for w in waivers:
        if w.id in out.waivers:
            continue  # a duplicate id (PB208) links nothing
        out.waivers[w.id] = w
        links: list[ScriptLink] = []
        for named in w.paths:
            rel = resolver.resolve(named, w.path)
            if rel is not None and all(link.path != rel for link in links):
                links.append(ScriptLink(rel, named.line, named.text))
        if links:
            out.by_waiver[w.id] = links
    return out


def waive(findings: Iterable[Finding], links: ScriptLinks, root: Path) -> None:
    """Mark the script findings a waiver covers: ``waived_by`` set, severity ``note``.

    A finding is covered when it is of :data:`WAIVABLE`, is not suppressed already (an
    annotation or a configured ignore), and its file or a script of its ``chain`` is linked by
    a waiver (the first one in waiver order). A script that a linked script runs (it follows
    the linked one in some finding's chain) is covered by the same waiver, also where the
    scanner reads it on its own.
    """
    covering = links.covering()
    if not covering:
        return
    findings = list(findings)
    for finding in findings:
        for n, script in enumerate(finding.chain):
            if script in covering:
                for run in (*finding.chain[n + 1 :], finding.path):
                    covering.setdefault(run, covering[script])
                break
    for finding in findings:
        if finding.code not in WAIVABLE or finding.suppression is not None:
            continue
        for script in (finding.path, *finding.chain):
            hit = covering.get(script)
            if hit is not None:
                w, link = hit
                path = os.path.relpath(w.path, root).replace(os.sep, "/")
                finding.waived_by = WaivedBy(w.id, path, w.status, link.path)
                finding.severity = Severity.NOTE
                break
