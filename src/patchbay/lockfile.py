"""The lock file: what ``patchbay vendor`` pinned for a patchset's remote content.

``patchbay.lock`` (JSON) sits in the patchset folder next to ``patchset.yaml``. For every diff
patch with an upstream ``source`` it records the resolved commit (a PR resolves to its head
commit, with its base), the URL the diff came from, the vendored file and its sha256, as
nixpkgs' ``fetchpatch`` pins upstream patches by hash. For artifact files declared without a
hash it records the sha256 and size of what was downloaded. ``apply`` only ever reads vendored
files whose hash matches; it never fetches a moving URL.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputError
from .transaction import write_atomic

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


@dataclass
class LockedArtifact:
    """The hash of an artifact declared without one."""

    sha256: str
    size: int


@dataclass
class Lock:
    """The lock file of one patchset folder."""

    sources: dict[str, LockedSource] = field(default_factory=dict)
    artifacts: dict[str, LockedArtifact] = field(default_factory=dict)  # by URL

    @classmethod
    def load(cls, folder: Path) -> Lock:
        """Read ``folder/patchbay.lock``; an absent file is an empty lock.

        Raises:
            InputError: the file is not a lock this version can read.
        """
        path = folder / LOCK_NAME
        if not path.exists():
            return cls()
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != LOCK_FORMAT:
                raise ValueError(f"format {data.get('format')!r} is not {LOCK_FORMAT}")
            return cls(
                sources={k: LockedSource(**v) for k, v in data.get("sources", {}).items()},
                artifacts={k: LockedArtifact(**v) for k, v in data.get("artifacts", {}).items()},
            )
        except (OSError, ValueError, TypeError) as exc:
            raise InputError(f"unreadable lock file: {exc}", file=path) from None

    def save(self, folder: Path) -> None:
        """Write ``folder/patchbay.lock`` (sorted, so diffs of it stay small)."""
        data = {
            "format": LOCK_FORMAT,
            "sources": {k: asdict(v) for k, v in sorted(self.sources.items())},
            "artifacts": {k: asdict(v) for k, v in sorted(self.artifacts.items())},
        }
        write_atomic(folder / LOCK_NAME, (json.dumps(data, indent=2) + "\n").encode(), mode=0o644)
