"""Which installed distribution owns a patched file, and whether it was installed again since.

A wheel installs its files into one folder (site-packages, or an unpacked ``--root`` tree) and
lists each of them, relative to that folder, in ``<name>-<version>.dist-info/RECORD`` (the
binary distribution format, PEP 376/627). So the distribution a patched file belongs to is the
one whose RECORD lists it, or, for a file a patch adds, the one whose RECORD lists files of the
same top-level folder (its package). The ledger keeps, for each applied patch, the name, version
and RECORD sha256 of those distributions (:func:`written_against`); when ``pip install -U`` or
an image rebuild installs another build over the patched files, the version or the RECORD
differs, and the record no longer describes the tree (:func:`replaced_since`): ``status``,
``apply`` and ``revert`` then judge the patch afresh on the files that are there.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from ..apply.ledger import FileRecord, LedgerEntry
    from ..patchset.model import Target


class Installed(msgspec.Struct, frozen=True):
    """One installed distribution: its ``Name`` and ``Version`` (core metadata) and the sha256
    of its RECORD file (None: no RECORD, a legacy ``.egg-info``)."""

    name: str
    version: str | None
    record: str | None


class Replacement(msgspec.Struct):
    """A distribution installed over recorded patches since they were applied.

    Attributes:
        name: the distribution.
        was: its version when the patches were applied.
        now: its version now (None: no longer installed).
        same_version: the version is the same but the RECORD differs (another build of it).
        patch_ids: the patches whose records it made stale, in the ledger's order.
    """

    name: str
    was: str | None
    now: str | None
    same_version: bool = False
    patch_ids: list[str] = msgspec.field(default_factory=list)

    def sentence(self, then: str = "judged afresh on the files there") -> str:
        """One line for ``status``, ``apply`` and ``revert``, e.g. ``aiter 0.1.4 → 0.1.5 was
        installed over 2 patches (a, b): their records are stale, and <then>``."""
        n = len(self.patch_ids)
        over = f"{n} patch{'es' if n != 1 else ''} ({', '.join(self.patch_ids)})"
        their = "their records are" if n != 1 else "its record is"
        if self.now is None:
            what = f"{self.name} {self.was or ''} was uninstalled under {over}".replace("  ", " ")
        elif self.same_version:
            what = f"{self.name} {self.now} was installed again (another RECORD) over {over}"
        else:
            what = f"{self.name} {self.was} → {self.now} was installed over {over}"
        return f"{what}: {their} stale, and {then}"


def name_and_version(dist_info: Path, default: str) -> tuple[str, str | None]:
    """A ``.dist-info`` folder's ``Name`` and ``Version`` from its METADATA headers (core
    metadata: the first block, up to the first empty line); ``default`` and None for what it
    does not say (or when it cannot be read)."""
    name, version = default, None
    try:
        with (dist_info / "METADATA").open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break
                if line.startswith("Name:"):
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("Version:"):
                    version = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return name, version


class _DistInfo:
    """One ``.dist-info`` folder; its RECORD and METADATA read at first use."""

    def __init__(self, folder: Path, key: str) -> None:
        self.folder = folder
        self.key = key  # canonical name, from the folder's name
        self._files: set[str] | None = None
        self._tops: set[str] | None = None
        self._installed: Installed | None = None

    def files(self) -> set[str]:
        if self._files is None:
            self._files, self._tops = set(), set()
            try:
                text = (self.folder / "RECORD").read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            for row in csv.reader(io.StringIO(text)):
                if not row or not row[0]:
                    continue
                rel = os.path.normpath(row[0]).replace(os.sep, "/")
                if rel.startswith("../") or rel.startswith("/"):
                    continue  # a script or header installed outside the folder
                self._files.add(rel)
                top = rel.split("/", 1)[0]
                if "/" in rel and not top.endswith((".dist-info", ".data")):
                    self._tops.add(top)
        return self._files

    def tops(self) -> set[str]:
        self.files()
        assert self._tops is not None
        return self._tops

    def installed(self) -> Installed:
        if self._installed is None:
            name, version = name_and_version(self.folder, self.key)
            try:
                record: str | None = hashlib.sha256(
                    (self.folder / "RECORD").read_bytes()
                ).hexdigest()
            except OSError:
                record = None
            self._installed = Installed(name, version, record)
        return self._installed


def _canonical(name: str) -> str:
    """PEP 503 normalisation (as ``packaging.utils.canonicalize_name``, without importing it on
    the apply path)."""
    out = name.lower()
    for ch in "_.":
        out = out.replace(ch, "-")
    while "--" in out:
        out = out.replace("--", "-")
    return out


class Owners:
    """The distributions installed in each target's folder, read lazily, once per run.

    Args:
        roots: target name -> root folder (``Environment.roots``).
        targets: the patchset's targets (a target with ``path`` lies below the folder its
            package is installed in; a ``home`` target belongs to no distribution).
    """

    def __init__(self, roots: Mapping[str, Path], targets: Mapping[str, Target]) -> None:
        self._roots = roots
        self._targets = targets
        self._sites: dict[Path, list[_DistInfo]] = {}
        self._current: dict[tuple[str, tuple[str, ...]], Installed | None] = {}

    def _site_of(self, target: str) -> tuple[Path, str] | None:
        """The folder the target's package is installed in, and the target root's path
        relative to it (``""``, or the target's ``path``)."""
        spec = self._targets.get(target)
        root = self._roots.get(target)
        if spec is None or root is None or spec.package is None:
            return None
        below = (spec.path or "").strip("/")
        site = Path(root)
        for _ in Path(below).parts if below else ():
            site = site.parent
        return site, below

    def _dists(self, site: Path) -> list[_DistInfo]:
        found = self._sites.get(site)
        if found is None:
            try:
                names = sorted(os.listdir(site))
            except OSError:
                names = []
            found = self._sites[site] = [
                _DistInfo(site / n, _canonical(n[: -len(".dist-info")].split("-", 1)[0]))
                for n in names
                if n.endswith(".dist-info")
            ]
        return found

    def owner(self, target: str, path: str) -> Installed | None:
        """The distribution that installed ``path`` (relative to ``target``'s root), or, for a
        file none lists, the one that installed its package folder; None for neither."""
        where = self._site_of(target)
        if where is None:
            return None
        site, below = where
        rel = f"{below}/{path}" if below else path
        dists = self._dists(site)
        for dist in dists:
            if rel in dist.files():
                return dist.installed()
        top = rel.split("/", 1)[0]
        for dist in dists:
            if top in dist.tops():
                return dist.installed()
        return None

    def current(self, name: str, targets: Iterable[str]) -> Installed | None:
        """``name`` as installed now in the folder of any of ``targets``, or None."""
        key = _canonical(name)
        memo = (key, tuple(targets))
        if memo not in self._current:
            self._current[memo] = self._find(key, memo[1])
        return self._current[memo]

    def _find(self, key: str, targets: tuple[str, ...]) -> Installed | None:
        seen: set[Path] = set()
        for target in targets:
            where = self._site_of(target)
            if where is None or where[0] in seen:
                continue
            seen.add(where[0])
            for dist in self._dists(where[0]):
                if dist.key == key:
                    return dist.installed()
        return None

    def written_against(self, files: Iterable[FileRecord]) -> dict[str, dict[str, Any]]:
        """For a ledger entry: ``{name: {"version": ..., "record": ...}}`` of every
        distribution owning one of ``files`` (what :func:`replaced_since` compares with)."""
        out: dict[str, dict[str, Any]] = {}
        for rec in files:
            found = self.owner(rec.target, rec.path)
            if found is not None and found.name not in out:
                out[found.name] = {"version": found.version, "record": found.record}
        return out


def replaced_since(entries: Iterable[LedgerEntry], owners: Owners) -> list[Replacement]:
    """The distributions installed over ``entries`` since they were recorded: one
    :class:`Replacement` per distribution (and recorded version), naming its entries.

    An entry recorded without distributions (an older patchbay, a home folder) is never
    stale."""
    found: dict[tuple[str, str | None], Replacement] = {}
    for entry in entries:
        if not entry.distributions:
            continue
        targets = sorted({rec.target for rec in entry.files})
        for name, was in entry.distributions.items():
            now = owners.current(name, targets)
            if now is not None and (now.version, now.record) == (
                was.get("version"),
                was.get("record"),
            ):
                continue
            key = (name, was.get("version"))
            rep = found.get(key)
            if rep is None:
                rep = found[key] = Replacement(
                    name,
                    was.get("version"),
                    None if now is None else now.version,
                    same_version=now is not None and now.version == was.get("version"),
                )
            if entry.patch_id not in rep.patch_ids:
                rep.patch_ids.append(entry.patch_id)
    return list(found.values())
