"""Recording in the ledger a patch that was made in the tree itself.

``capture`` turns hand edits into a patch and ``refresh`` rewrites a patch from the tree: in
both, the files already hold the patch's result, so nothing under the target roots is written.
What changes is the patchset (a patch file, ``patchset.yaml``) and the ledger, which must then
say that patchbay applied this very patch content, starting from the given originals, so that
``status`` reports it ``applied`` and ``revert`` restores the originals. Both go into one
journaled transaction under the environment's lock (see transaction.py): a failure leaves the
patchset and the ledger as they were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .. import __version__
from ..apply.interrupted import finish_journal
from ..apply.journal import write_atomic
from ..apply.ledger import FileRecord, Ledger, LedgerEntry, sha256_or_none
from ..apply.statelock import state_lock
from ..apply.transaction import Transaction


@dataclass
class MadeFile:
    """One file of a patch made in the tree.

    Attributes:
        target, path: the target and the path relative to its root.
        before: the bytes the patch starts from (None: the patch creates the file).
        after: the bytes the file holds now (None: the patch deletes it).
        mode_before: the permission bits before (restored by a revert).
        created_dirs: folders creating the file also created (removed again by a revert).
    """

    target: str
    path: str
    before: bytes | None
    after: bytes | None
    mode_before: int | None = None
    created_dirs: list[str] = field(default_factory=list)


def record_made_patch(
    patchset_name: str,
    state_dir: Path,
    *,
    patch_id: str,
    sha256: str,
    identity: str,
    files: list[MadeFile],
    writes: dict[Path, bytes | None],
    keep_position: bool = False,
    lock_timeout: float = 0.0,
    roots: list[Path] | None = None,
    source: Path | None = None,
) -> None:
    """Write ``writes`` (patchset files: bytes, or None to delete) and record ``patch_id`` as
    applied with ``sha256`` and ``identity`` (the hashes ``load`` computed from the patch file
    written: :attr:`LoadedPatch.sha256` and :attr:`LoadedPatch.identity`), all in one
    transaction.

    Args:
        patchset_name: the patchset the ledger files the entry under.
        state_dir: the environment's state folder.
        patch_id: the patch.
        sha256: the patch file's raw sha256; identity: its identity (:mod:`patchbay.diff.identity`).
        files: what the patch changed, with the originals kept as blobs.
        writes: absolute path -> new bytes (None: delete), e.g. the patch file and the YAML.
        keep_position: replace an existing entry where it stands (a refresh in the middle of a
            stack) instead of appending.
        lock_timeout: seconds to wait for another run's lock.
        roots: the environment's target roots (a journal a killed apply left names files
            there; recovery acts only on paths under known roots).
        source: the patchset's ``patchset.yaml``, recorded as the entries' source.

    Raises:
        RefusedError: the lock is held, or a journal left by an earlier run cannot be
            recovered.
        OSError: a write failed (everything was restored).
    """
    folders = sorted({path.parent for path in writes})
    known = [*(roots or []), state_dir, *folders]
    with state_lock(state_dir, lock_timeout):
        finish_journal(state_dir, known)
        ledger = Ledger(state_dir)
        with Transaction(state_dir / "journal", known) as txn:
            for path in writes:
                txn.save(path)
            txn.sync()
            for path, data in writes.items():
                if data is None:
                    path.unlink(missing_ok=True)
                else:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_atomic(path, data, durable=True)
            records = []
            for f in files:
                before = None if f.before is None else ledger.store_blob(f.before, txn)
                records.append(
                    FileRecord(
                        f.target,
                        f.path,
                        before,
                        sha256_or_none(f.after),
                        f.created_dirs,
                        f.mode_before,
                    )
                )
            entry = LedgerEntry(
                patch_id=patch_id,
                kind="diff",
                patch_sha256=sha256,
                patch_identity=identity,
                applied_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                tool_version=__version__,
                files=records,
            )
            if keep_position:
                ledger.replace_entry(patchset_name, entry)
            else:
                ledger.put(patchset_name, entry)
            if source is not None:
                ledger.set_source(patchset_name, source)
            txn.doing = "writing the ledger"
            ledger.save(txn)
            txn.commit()
        ledger.prune_blobs()
