"""The lock file: what ``patchbay vendor`` pinned for a patchset's remote content.

``patchbay.lock`` (JSON) sits in the patchset folder next to ``patchset.yaml``. For every diff
patch with an upstream ``source`` it records the resolved commit (a PR resolves to its head
commit, with its base; a here-document source records the sha256 of the script it was cut
from too), the URL the diff came from, the vendored file and its sha256, as
nixpkgs' ``fetchpatch`` pins upstream patches by hash, and the diff's identity
(:mod:`patchbay.diff.identity`), so that upstream serving the same diff in another form (``index``
lines abbreviated differently) is no moved pin. For artifact files declared without a
hash it records the sha256 and size of what was downloaded. For every ``pip`` patch built from a
``source`` named by a tag or branch (or the default branch), it records the commit the ref
pointed at (``revisions``). ``apply`` only ever reads vendored files whose hash matches and
builds only locked commits; it never fetches a moving URL or ref.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..apply.journal import write_atomic
from ..errors import InputError
from .inputfiles import MAX_YAML_BYTES, read_input_text
from .model import PipPatch, relative_posix_path

LOCK_NAME = "patchbay.lock"
LOCK_FORMAT = 1


@dataclass
class LockedSource:
    """A vendored upstream diff."""

    repo: str
    ref: str  # owner/repo#N or owner/repo@<sha>, as declared when it was locked
    commit: str  # the commit the content was taken at (a PR's head)
    url: str
    file: str  # relative to the patchset folder
    sha256: str
    base: str | None = None  # a PR's base commit
    paths: list[str] = field(default_factory=list)
    identity: str | None = None  # the diff's identity (patchbay.diff.identity); None: older lock
    # a here-document source: the sha256 of the whole file it was cut from, which a local copy
    # (``vendor --from``) must match
    origin_sha256: str | None = None


@dataclass
class LockedArtifact:
    """The hash of an artifact declared without one."""

    sha256: str
    size: int


@dataclass
class LockedRevision:
    """The commit a source build's tag or branch pointed at when it was vendored."""

    repo: str
    ref: str | None  # as declared; None: the default branch
    commit: str  # 40-hex
    url: str  # the API request that answered
    branch: str | None = None  # the default branch's name, when ``ref`` was not given

    def matches(self, repo: str, ref: str | None) -> bool:
        """Whether this entry pins ``repo`` at ``ref`` (a changed declaration is unlocked)."""
        return self.repo == repo and self.ref == ref


def _source_json(source: LockedSource) -> dict[str, Any]:
    """A source entry as saved; without ``identity`` when it has none (an older lock stays
    byte for byte as it was until vendor locks that source again)."""
    data = asdict(source)
    for key in ("identity", "origin_sha256"):
        if data[key] is None:
            del data[key]
    return data


def _check_types(entry: LockedSource | LockedArtifact | LockedRevision) -> None:
    """Each field of a lock entry holds the type its annotation names (JSON could hold any)."""
    kinds = {"str": (str,), "str | None": (str, type(None)), "int": (int,), "list[str]": (list,)}
    for f in fields(entry):
        value = getattr(entry, f.name)
        if not isinstance(value, kinds[str(f.type)]) or isinstance(value, bool):
            raise ValueError(f"{f.name}: {value!r} is not a {f.type}")
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            raise ValueError(f"{f.name}: {value!r} is not a list of strings")


@dataclass
class Lock:
    """The lock file of one patchset folder."""

    sources: dict[str, LockedSource] = field(default_factory=dict)
    artifacts: dict[str, LockedArtifact] = field(default_factory=dict)  # by URL
    revisions: dict[str, LockedRevision] = field(default_factory=dict)  # by patch id

    @classmethod
    def load(cls, folder: Path) -> Lock:
        """Read ``folder/patchbay.lock``; an absent file is an empty lock.

        Raises:
            InputError: the file is not a lock this version can read.
        """
        path = folder / LOCK_NAME
        if not path.exists() and not path.is_symlink():
            return cls()
        text = read_input_text(path, what="lock file", limit=MAX_YAML_BYTES)
        try:
            data: dict[str, Any] = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            if data.get("format") != LOCK_FORMAT:
                raise ValueError(f"format {data.get('format')!r} is not {LOCK_FORMAT}")
            lock = cls(
                sources={k: LockedSource(**v) for k, v in data.get("sources", {}).items()},
                artifacts={k: LockedArtifact(**v) for k, v in data.get("artifacts", {}).items()},
                revisions={k: LockedRevision(**v) for k, v in data.get("revisions", {}).items()},
            )
            entries = [*lock.sources.values(), *lock.artifacts.values(), *lock.revisions.values()]
            for entry in entries:
                _check_types(entry)
            for revision in lock.revisions.values():
                if not re.fullmatch(r"[0-9a-f]{40}", revision.commit):
                    raise ValueError(f"commit: {revision.commit!r} is not a 40-hex commit id")
            for source in lock.sources.values():
                relative_posix_path(source.file)
            return lock
        except (ValueError, TypeError, AttributeError) as exc:
            raise InputError(f"unreadable lock file: {exc}", file=path) from None

    def source_commit(self, patch: PipPatch) -> str | None:
        """The commit a ``pip`` source build is pinned to: its ``ref`` when that is a full
        commit id, else this lock's entry for the patch when it pins the same repository and
        ref; None when it is not locked (or has no ``source``)."""
        src = patch.source
        if src is None:
            return None
        if src.commit is not None:
            return src.commit
        entry = self.revisions.get(patch.id)
        return entry.commit if entry is not None and entry.matches(src.repo, src.ref) else None

    def save(self, folder: Path) -> None:
        """Write ``folder/patchbay.lock`` (sorted, so diffs of it stay small)."""
        data: dict[str, Any] = {
            "format": LOCK_FORMAT,
            "sources": {k: _source_json(v) for k, v in sorted(self.sources.items())},
            "artifacts": {k: asdict(v) for k, v in sorted(self.artifacts.items())},
        }
        if self.revisions:  # absent when empty: older locks stay byte for byte as they were
            data["revisions"] = {k: asdict(v) for k, v in sorted(self.revisions.items())}
        write_atomic(folder / LOCK_NAME, (json.dumps(data, indent=2) + "\n").encode(), mode=0o644)
