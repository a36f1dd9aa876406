"""Revert: undo what the ledger records, newest first, inside one transaction (with patch ids:
those and the patches applied after them), refusing a file changed since patchbay wrote it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import msgspec

from ..environment.owners import Owners, Replacement, replaced_since
from ..environment.targets import Environment
from ..environment.tree import Tree
from ..errors import ApplyFailed, PatchbayError, RefusedError
from ..kinds import KINDS
from ..options import RunOptions
from ..patchset.model import Patchset
from .folders import (
    beside_replaced,
    drop_bytecode,
    folders_made_above,
    make_folders_again,
    mode_before,
    owner_of,
    replaced_folders,
    space_needed,
)
from .interrupted import interrupted, journal_roots, recover_interrupted
from .journal import write_atomic
from .ledger import FileRecord, Ledger, LedgerEntry, sha256_or_none
from .statelock import state_lock
from .transaction import Transaction


class RevertResult(msgspec.Struct):
    """What a revert did.

    Attributes:
        ids: every patch id taken off the ledger, newest first.
        cleared: those whose files were already back to what they were before the patch
            (the package was reinstalled): their ledger entries were removed, nothing written.
        recovered: files restored from the journal of an interrupted earlier run, before
            the revert itself (as :attr:`ApplyResult.recovered`).
    """

    ids: list[str] = msgspec.field(default_factory=list)
    cleared: list[str] = msgspec.field(default_factory=list)
    recovered: list[Path] = msgspec.field(default_factory=list)
    replaced: list[Replacement] = msgspec.field(default_factory=list)

    @property
    def superseded(self) -> list[str]:
        """The ids whose records a newer build of their distribution made stale: dropped
        without a write (the files there are that build's), newest first."""
        stale = {pid for r in self.replaced for pid in r.patch_ids}
        return [pid for pid in self.ids if pid in stale]

    @property
    def reverted(self) -> list[str]:
        """The ids whose recorded files were restored, newest first."""
        return [pid for pid in self.ids if pid not in self.cleared]


def entries_to_revert(ledger: Ledger, patchset: str, stale: list[LedgerEntry]) -> list[LedgerEntry]:
    """Stale entries and every entry recorded after the oldest of them (they may build on it)."""
    entries = ledger.entries(patchset)
    ids = {e.patch_id for e in stale}
    first = next(i for i, e in enumerate(entries) if e.patch_id in ids)
    return entries[first:]


def revert_entries(
    patchset: str,
    entries: list[LedgerEntry],
    env: Environment,
    ledger: Ledger,
    txn: Transaction,
    options: RunOptions | None = None,
) -> RevertResult:
    """Undo ``entries`` newest first, restoring recorded bytes (and, through the kind, effects
    beyond files, e.g. a package version); every file is checked before anything is written.

    A file already back to what it was before (its recorded ``before``, or the original the
    oldest of these entries started from: a reinstall put the pristine file back) is left as
    it is; an entry whose every file is back is cleared from the ledger without a write, as
    quilt would not pop what is no longer pushed.
    """
    tree = Tree(env.roots, env, options)
    originals: dict[object, str | None] = {}
    for entry in entries:
        for rec in entry.files:
            originals.setdefault(tree.location_of(rec.target, rec.path), rec.before)
    # each write with its path as resolved when staged: a file put back under a folder
    # that a file of a later entry had taken goes through that file staged as deleted then
    steps: list[tuple[LedgerEntry, list[tuple[FileRecord, bytes | None, Path]]]] = []
    result = RevertResult(ids=[e.patch_id for e in reversed(entries)])
    for entry in reversed(entries):
        writes = []
        back = 0
        for rec in reversed(entry.files):
            if rec.target not in env.roots:
                raise RefusedError(
                    f"ledger names unknown target {rec.target!r}",
                    patch_id=entry.patch_id,
                    file=ledger.path,
                )
            try:
                current = sha256_or_none(tree.read(rec.target, rec.path))
            except PatchbayError as exc:  # a folder on its way cannot be entered now
                exc.patch_id = exc.patch_id or entry.patch_id
                raise
            if current != rec.after:
                if current in (rec.before, originals[tree.location_of(rec.target, rec.path)]):
                    back += 1  # already as it was before patchbay wrote it
                    continue
                later = _written_over(ledger, patchset, tree, rec, current)
                if later is not None:
                    name, patch_id, source = later
                    where = f" ({source})" if source is not None else ""
                    reason = (
                        f"{rec.path} was changed since by patch {patch_id} of patchset "
                        f"{name}{where}, applied on top of this patch; reverting here would "
                        f"undo that patchset's change too; nothing was changed. Revert "
                        f"{patch_id} of patchset {name} first"
                    )
                else:
                    original = ledger.blob_dir / rec.before if rec.before else None
                    hint = f"; its original is kept at {original}" if original else ""
                    reason = (
                        f"{rec.path} changed since patchbay wrote it (sha256 "
                        f"{current or 'absent'}, recorded {rec.after or 'absent'}, and not what "
                        f"it was before either); refusing to revert over it; nothing was "
                        f"changed. Undo the edit by hand (or reinstall the package){hint}; if a "
                        f"newer release was installed over the patch, `revert --forget` clears "
                        f"its record without writing a file"
                    )
                raise RefusedError(
                    reason, file=tree.resolve(rec.target, rec.path), patch_id=entry.patch_id
                )
            before = None
            if rec.before is not None:
                before = ledger.blob(rec.before)
                if before is None:
                    raise RefusedError(
                        f"the ledger's copy of {rec.path} before this patch is missing or "
                        f"damaged ({ledger.blob_dir / rec.before})",
                        patch_id=entry.patch_id,
                        file=ledger.path,
                    )
            writes.append((rec, before, tree.resolve(rec.target, rec.path)))
            tree.stage(rec.target, rec.path, before)
        if entry.files and back == len(entry.files):
            result.cleared.append(entry.patch_id)
        else:
            steps.append((entry, writes))
    flat = [(path, data) for _, writes in steps for _, data, path in writes]
    txn.check_space(space_needed(env, ledger, [(p, None, d) for p, d in flat]))
    txn.doing = "journaling the files this run changes"
    # the folders each file's patch made, which the revert removes once empty: folders above
    # the file's path, which passed the gate (one that is not above it: the ledger was
    # edited, and nothing outside the root is removed); not resolved on their own, since a
    # file a later entry made in place of one of them is deleted first
    made: dict[int, list[str]] = {}
    # (a file the patch deleted is absent now: a folder may stand in its place)
    replaced = replaced_folders(
        (path, None if r.after is None else b"", data)
        for _, writes in steps
        for r, data, path in writes
    )
    for _, writes in steps:
        for rec, data, path in writes:
            folders = made[id(rec)] = []
            if data is None and isinstance(rec.created_dirs, list):
                folders.extend(folders_made_above(path, rec.path, rec.created_dirs))
            txn.save(path, then_remove=folders, beside_in=beside_replaced(path, replaced))
    txn.sync()
    txn.doing = "reverting"
    try:
        for entry, writes in steps:
            kind = KINDS.get(entry.kind)
            if kind is not None:
                kind.revert(entry, tree, txn)
            for rec, data, path in writes:
                root = env.roots[rec.target]
                if data is None:
                    path.unlink(missing_ok=True)
                    for folder in made[id(rec)]:
                        with contextlib.suppress(OSError):  # not empty: something else is there
                            os.rmdir(folder)
                else:
                    make_folders_again(root, rec.path, rec.folders_before)
                    if path.is_dir() and not path.is_symlink():
                        path.rmdir()  # a folder that replaced the file, emptied just before
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_atomic(path, data, mode=mode_before(rec), owner=owner_of(rec))
                drop_bytecode(path, txn)
    except OSError as exc:
        raise ApplyFailed(f"write failed: {exc.strerror or exc}", file=exc.filename) from None
    for entry in entries:
        ledger.remove(patchset, entry.patch_id)
    return result


def _written_over(
    ledger: Ledger, patchset: str, tree: Tree, rec: FileRecord, current: str | None
) -> tuple[str, str, Path | None] | None:
    """The patch of another patchset that started from what ``rec`` recorded, on a file that
    is no longer that (``current``, its sha256): ``(patchset name, patch id, its patchset
    file)``, or None."""
    where = tree.location_of(rec.target, rec.path)
    for name, entries in ledger.all_entries().items():
        if name == patchset:
            continue
        for entry in entries:
            for other in entry.files:
                if other.target not in tree.roots:
                    continue
                if tree.location_of(other.target, other.path) != where:
                    continue
                if other.before == rec.after and current != rec.after:
                    return name, entry.patch_id, ledger.source(name)
    return None


def revert_patchset(
    patchset: Patchset,
    env: Environment,
    patch_ids: list[str] | None = None,
    *,
    lock_timeout: float = 0.0,
    options: RunOptions | None = None,
) -> RevertResult:
    """Undo what the ledger records for ``patchset``, newest first, as one transaction.

    Args:
        patchset: the loaded patchset.
        env: the resolved environment.
        patch_ids: None: everything the ledger records; else these patches and every entry
            recorded after the oldest of them (they may build on it), as quilt's ``pop`` down
            to a patch. Ids the ledger does not record are ignored.
        lock_timeout: seconds to wait for another run's lock.
        options: network and bundle options (a package pin's previous version).

    Returns:
        The :class:`RevertResult` (empty: nothing recorded). Entries whose files a reinstall
        already put back are cleared, not refused; so are records that a newer build of their
        distribution was installed over (:mod:`patchbay.environment.owners`): the files are
        that build's now, and writing the recorded originals would put the old release back.

    Raises:
        RefusedError: a file changed since patchbay wrote it into something that is neither
            its recorded result nor its original (named), a recorded original is missing, or
            the lock is held; nothing changed.
        ApplyFailed: a write failed; every file touched was restored.
    """
    with state_lock(env.state_dir, lock_timeout):
        recovered = recover_interrupted(env, patchset)
        ledger = Ledger(env.state_dir)
        entries = ledger.entries(patchset.name)
        if patch_ids is not None:
            wanted = set(patch_ids)
            chosen = [e for e in entries if e.patch_id in wanted]
            entries = entries_to_revert(ledger, patchset.name, chosen) if chosen else []
        if not entries:
            return RevertResult(recovered=recovered)
        owners = Owners(env.roots, patchset.spec.targets)
        replaced = replaced_since(entries, owners)
        stale = {pid for r in replaced for pid in r.patch_ids}
        live = [e for e in entries if e.patch_id not in stale]
        with Transaction(env.state_dir / "journal", journal_roots(env, patchset)) as txn:
            result = (
                revert_entries(patchset.name, live, env, ledger, txn, options)
                if live
                else RevertResult()
            )
            for pid in stale:
                ledger.remove(patchset.name, pid)
            result.ids = [e.patch_id for e in reversed(entries)]
            result.cleared += [pid for pid in result.ids if pid in stale]
            result.replaced = replaced
            result.recovered = recovered
            txn.doing = "writing the ledger"
            ledger.save(txn)
            txn.commit()
        ledger.prune_blobs()
    return result


def forget_records(
    patchset: Patchset,
    env: Environment,
    patch_ids: list[str] | None = None,
    *,
    lock_timeout: float = 0.0,
) -> list[str]:
    """Remove ledger records without writing any engine file (``revert --forget``): for a
    tree a newer distribution was installed over, whose records no longer describe it, so that
    ``status`` and ``apply`` judge the patches afresh on the files there now. The records'
    backups go with them (blobs no record names are pruned).

    Args:
        patchset: the loaded patchset.
        env: the resolved environment.
        patch_ids: the records to remove; None: every record of the patchset. Ids with no
            record are ignored.
        lock_timeout: seconds to wait for another run's lock.

    Returns:
        The ids removed, in the ledger's order.

    Raises:
        RefusedError: an interrupted run's journal is pending (the next ``apply`` or
            ``revert`` rolls it back first: forgetting now would lose what it restores), or the
            lock is held; nothing changed.
    """
    with state_lock(env.state_dir, lock_timeout):
        if interrupted(env):
            raise RefusedError(
                f"an interrupted run's journal is pending in {env.state_dir / 'journal'}: run "
                "`patchbay apply` or `revert` first (they roll it back), then forget"
            )
        ledger = Ledger(env.state_dir)
        entries = ledger.entries(patchset.name)
        wanted = set(patch_ids) if patch_ids is not None else None
        gone = [e.patch_id for e in entries if wanted is None or e.patch_id in wanted]
        if not gone:
            return []
        for pid in gone:
            ledger.remove(patchset.name, pid)
        with Transaction(env.state_dir / "journal", journal_roots(env, patchset)) as txn:
            txn.doing = "writing the ledger"
            ledger.save(txn)
            txn.commit()
        ledger.prune_blobs()
    return gone
