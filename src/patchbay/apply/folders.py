"""What a write or a revert does around a file: its mode and owner before and after, the folders
above it that a run makes, replaces or must make again, stale byte-code beside a changed ``.py``,
and the disk space a batch of writes needs."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..environment.paths import PathRejected, resolve_under
from ..environment.targets import Environment
from ..kinds.base import FileChange
from ..kinds.diffwrite import permissions, process_umask
from .journal import ENTRY_BYTES, MAX_ID, folder_item_ok, folders_above, put_folder_back
from .ledger import FileRecord, Ledger
from .transaction import Transaction


def space_needed(
    env: Environment, ledger: Ledger, changes: list[tuple[Path, bytes | None, bytes | None]]
) -> list[tuple[Path, int]]:
    """What a run will write, by folder (for :meth:`Transaction.check_space`): the new
    contents beside the originals (kept as links, so they keep their space), the originals in
    the blob store, the journal and a new ledger. An estimate that errs on the large side."""
    needs = [(path.parent, len(after or b"")) for path, _, after in changes]
    needs += [(ledger.blob_dir, len(before)) for _, before, _ in changes if before is not None]
    try:
        ledger_size = ledger.path.stat().st_size
    except OSError:
        ledger_size = 0
    journal = ENTRY_BYTES * (len(changes) + 8)
    needs.append((env.state_dir, journal + ledger_size + ENTRY_BYTES * len(changes)))
    return needs


def mode_and_owner(path: Path | str) -> tuple[int, list[int]] | None:
    """Permission bits and ``[uid, gid]`` of the file ``path`` (None: absent, or a folder
    stands there that a new file replaces)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISDIR(st.st_mode):
        return None
    return st.st_mode & 0o7777, [st.st_uid, st.st_gid]


def mode_after(
    change: FileChange, before: tuple[int, list[int]] | None, path: str
) -> tuple[int, list[int]] | None:
    """The permission bits and owner ``change`` left its file with, which the next patch of
    the same file starts from (its record's ``mode_before``): a change of the content alone
    keeps both (every writer keeps them), one of git's mode flips the executable bits as the
    diff writer does; else (a file made or replaced whole) what is on disk now, after every
    write of the run (a later patch of the same file may have changed it since: the best
    known)."""
    if change.before is not None and change.after is not None and before is not None:
        if change.executable is None:
            return before
        want = "100755" if change.executable[1] else "100644"
        flipped = permissions(before[0], want, process_umask())
        return flipped, before[1]
    return mode_and_owner(path)


def owner_of(rec: FileRecord) -> tuple[int, int] | None:
    """The ``(uid, gid)`` a revert gives the file back: its recorded owner, when this process
    may set it (root) and the record holds one a uid can be (an edited ledger's is not)."""
    owner = rec.owner_before
    if os.geteuid() != 0 or not isinstance(owner, list) or len(owner) != 2:
        return None
    if not all(type(v) is int and 0 <= v <= MAX_ID for v in owner):
        return None
    return owner[0], owner[1]


def mode_before(rec: FileRecord) -> int | None:
    """The permission bits a revert gives the file back (None: write_atomic's default): the
    recorded ones, when they are permission bits (an edited ledger's may not be)."""
    mode = rec.mode_before
    return mode if type(mode) is int and 0 <= mode <= 0o7777 else None


def folder_items_above(path: Path, root: Path) -> list[list[Any]]:
    """:func:`~patchbay.apply.journal.folders_above`, root-relative (as the ledger keeps
    paths)."""
    cut = len(str(root).rstrip(os.sep)) + 1
    return [[f[cut:], *rest] for f, *rest in folders_above(str(path), root)]


def left_by_the_run(folders: list[list[Any]], root: Path, journal_id: str) -> list[list[Any]]:
    """Of ``folders`` (:func:`folder_items_above` of a file the run deleted, as they were before
    it), the ones the run removed or changed, each with what it left: ``[rel, mode, uid, gid,
    left]``, ``left`` None when the folder is gone (or holds only this run's originals, kept
    beside their files, and goes with them at the commit), else its ``[mode, uid, gid]`` now
    (a later write made it again through the umask)."""
    out: list[list[Any]] = []
    going: set[str] = set()  # folders that hold nothing but what goes at the commit
    for rel, mode, uid, gid in folders:  # deepest first
        folder = os.path.join(root, rel)
        try:
            st = os.lstat(folder)
            kept = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            out.append([rel, mode, uid, gid, None])
            continue
        if all(
            name.startswith(f".patchbay-{journal_id}-") or os.path.join(folder, name) in going
            for name in kept
        ):
            going.add(folder)
            out.append([rel, mode, uid, gid, None])
        elif (left := [st.st_mode & 0o7777, st.st_uid, st.st_gid]) != [mode, uid, gid]:
            out.append([rel, mode, uid, gid, left])
    return out


def make_folders_again(root: Path, below: str, folders: list[list[Any]]) -> None:
    """Give back the folders a record's ``folders_before`` says the apply removed or made
    again (:func:`left_by_the_run`), outermost first: a missing one is made with its own
    mode and owner, and one still as the apply left it gets them back; one made or changed
    since by someone else is theirs and left alone. An item that is malformed, is no folder
    above the record's file ``below``, or that the path gate refuses (the ledger was edited)
    is skipped: nothing outside the root is ever made or changed."""
    for item in reversed(folders if isinstance(folders, list) else []):
        if folder_item_ok(item, below):  # as recorded before what the run left was
            item = [*item, None]
        if not folder_item_ok(item, below, size=5):
            continue
        rel, mode, uid, gid, left = item
        if left is not None and not (isinstance(left, list) and len(left) == 3):
            continue
        try:
            folder = str(resolve_under(root, rel))
        except PathRejected:
            continue
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            put_folder_back(folder, mode, uid, gid, [root])
            continue
        if left is not None and [st.st_mode & 0o7777, st.st_uid, st.st_gid] == left:
            put_folder_back(folder, mode, uid, gid, [root])


def replaced_folders(
    changes: Iterable[tuple[Path, bytes | None, bytes | None]],
) -> list[str]:
    """The folders that stand where a run writes a new file (``(path, before, after)`` of
    each change; only a file absent before can have one): the run's deletions empty them
    first, and the file takes their place (as ``git apply`` does)."""
    return [
        str(path)
        for path, before, after in changes
        if before is None and after is not None and path.is_dir() and not path.is_symlink()
    ]


def folders_made_above(path: Path, rel: str, created: list[Any]) -> list[str]:
    """The absolute folders of ``created`` (root-relative, as a ledger record's
    ``created_dirs``) that are folders above ``rel``, whose absolute path (through the path
    gate) is ``path``, in their order; any other entry is left out."""
    parts = rel.split("/")
    out = []
    for folder in created:
        if not isinstance(folder, str):
            continue
        depth = folder.count("/") + 1
        if depth < len(parts) and parts[:depth] == folder.split("/"):
            out.append(str(path.parents[len(parts) - depth - 1]))
    return out


def beside_replaced(path: Path, replaced: list[str]) -> Path | None:
    """Where the original of ``path`` goes when it must be kept beside its file
    (:meth:`Transaction.save`'s ``beside_in``): beside the outermost of the ``replaced``
    folders that holds it, which must be empty when its file is written; None: beside it."""
    outer = [f for f in replaced if str(path).startswith(f + os.sep)]
    return Path(os.path.dirname(min(outer, key=len))) if outer else None


def missing_parents(path: Path, root: Path, existing: set[str] | None = None) -> list[str]:
    """Root-relative folders above ``path`` that do not exist yet, deepest first.
    ``existing``: folders found to exist so far, kept by the caller while nothing is written
    (filled as a side effect)."""
    missing = []
    prefix = str(root).rstrip(os.sep) + os.sep
    folder = os.path.dirname(str(path))
    while folder.startswith(prefix) and len(folder) > len(prefix):
        if existing is not None and folder in existing:
            break
        if os.path.isdir(folder):  # (a file where a folder goes is deleted first)
            if existing is not None:
                existing.add(folder)
            break
        missing.append(folder[len(prefix) :])
        folder = os.path.dirname(folder)
    return missing


def drop_bytecode(
    path: Path | str, txn: Transaction, caches: dict[str, bool] | None = None
) -> None:
    """Remove ``__pycache__/<name>.*.pyc`` of a changed ``.py`` file: hash-based pyc files are
    not invalidated by the source's mtime and would keep the old code running. ``caches``:
    which ``__pycache__`` folders exist, kept by the caller for one run (nothing it writes
    makes one)."""
    if not str(path).endswith(".py"):
        return
    folder = os.path.join(os.path.dirname(path), "__pycache__")
    there = None if caches is None else caches.get(folder)
    if there is None:
        there = os.path.isdir(folder)
        if caches is not None:
            caches[folder] = there
    if not there:
        return
    path, cache = Path(path), Path(folder)
    for pyc in cache.glob(f"{path.stem}.*.pyc"):
        txn.save(pyc)
        pyc.unlink()
