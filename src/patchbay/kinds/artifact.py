"""The ``artifact`` kind: binary files (GPU kernels, tables) placed under a target, pinned by
sha256.

A file is applied when the destination already holds bytes with the pinned hash, pending
otherwise. Preflight fetches what is missing into the content-addressed cache (or takes it from
the bundle) and verifies it before anything in the tree is written; the write itself goes
through a temporary file beside the destination and a rename. A file declared without a hash is
*unlocked*: ``patchbay vendor`` records its hash in the lock file, and ``apply`` refuses it until
then.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..apply.journal import write_atomic
from ..apply.ledger import sha256_bytes
from ..carry.fetch import cached, fetch_pinned
from ..diff.hunks import HunkResult, HunkState
from ..errors import InputError
from ..patchset.lockfile import Lock
from ..patchset.model import ArtifactPatch
from .base import ContentState, FileChange, FileKind, Inspection, LoadedPatch, PendingPatch

if TYPE_CHECKING:
    from ..apply.transaction import Transaction
    from ..environment.tree import Tree
    from ..patchset.model import Patchset


class ArtifactKind(FileKind):
    """Implements :class:`~patchbay.kinds.base.PatchKind` for ``kind: artifact``."""

    name = "artifact"
    recheck = False  # the result is the pinned bytes by construction

    def load(self, patch: ArtifactPatch, patchset: Patchset, index: int) -> LoadedPatch:
        lock = Lock.load(patchset.folder)
        pinned = []
        unlocked = []
        for n, f in enumerate(patch.files):
            locked = lock.artifacts.get(f.url)
            if f.sha256 and locked and locked.sha256 != f.sha256:
                raise InputError(
                    f"{f.url}: the patchset pins sha256 {f.sha256} but the lock file has "
                    f"{locked.sha256}",
                    file=patchset.path,
                    line=patchset.patch_line(index, "files", n, "sha256"),
                    patch_id=patch.id,
                )
            sha = f.sha256 or (locked.sha256 if locked else None)
            if sha is None:
                unlocked.append(f.url)
            pinned.append((f, sha))
        canonical = json.dumps([(f.url, f.dest, sha) for f, sha in pinned], sort_keys=True)
        reason = None
        if unlocked:
            reason = (
                f"{len(unlocked)} artifact(s) have no sha256 yet ({', '.join(unlocked)}): run "
                f"`patchbay vendor {patchset.folder}` with network access to lock them"
            )
        return LoadedPatch(
            sha256=sha256_bytes(canonical.encode()), source=None, data=pinned, unlocked=reason
        )

    def describe(self, patch: ArtifactPatch, loaded: LoadedPatch) -> str:
        return f"{len(patch.files)} file(s) into {', '.join(sorted({f.dest for f in patch.files}))}"

    def inspect(self, patch: ArtifactPatch, loaded: LoadedPatch, tree: Tree) -> Inspection:
        results, changes, missing = [], [], []
        for n, (f, sha) in enumerate(loaded.data, start=1):
            current = tree.read(patch.target, f.dest)  # type: ignore[arg-type]
            unit = HunkResult(file=f.dest, index=n, declared_line=0, state=HunkState.PENDING)
            results.append(unit)
            if current is not None and sha256_bytes(current) == sha:
                unit.state = HunkState.APPLIED
                continue
            unit.detail = "absent" if current is None else "holds other bytes"
            hit = cached(tree.options, sha)
            if hit is not None:
                changes.append(FileChange(patch.target, f.dest, current, hit.read_bytes()))  # type: ignore[arg-type]
            else:
                missing.append((n, current))
        # files are independent and pinned by hash: the missing ones are simply written
        state = ContentState.PENDING if changes or missing else ContentState.APPLIED
        return Inspection(state=state, hunks=results, changes=changes, data=missing)

    def preflight(self, item: PendingPatch, tree: Tree) -> None:
        patch: ArtifactPatch = item.patch
        for n, current in item.inspection.data or []:
            f, sha = item.loaded.data[n - 1]
            path, _ = fetch_pinned(f.url, sha, tree.options, size=f.size)
            item.inspection.changes.append(
                FileChange(patch.target, f.dest, current, path.read_bytes())  # type: ignore[arg-type]
            )
        item.inspection.data = []

    def apply(self, batch: list[PendingPatch], tree: Tree, txn: Transaction) -> None:
        for item in batch:
            for change in item.inspection.changes:
                path = tree.resolve(change.target, change.path)
                path.parent.mkdir(parents=True, exist_ok=True)
                assert change.after is not None
                # a new artifact is 0644; one replaced keeps its mode (a 0755 kernel stays
                # executable, a 0640 one private) and, run as root, its owner
                write_atomic(path, change.after)
