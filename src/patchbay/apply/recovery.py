"""Recovery of the journal a killed run left, and the restore of journaled entries it shares with
an in-process rollback (:meth:`patchbay.apply.transaction.Transaction.rollback`).

:func:`recover` reads the manifest (:mod:`patchbay.apply.journal`) back under the lock: a
committed journal is only deleted (its ledger was written, it is never rolled back), any other
is rolled back and its journaled undos run, then deleted once nothing of it is left to undo.

Rollback restores only what changed (each file is compared with its original first), goes on
past a file it cannot restore, and reports every such file with the place its original is kept
(:class:`Rollback`); the journal then stays, and the next run tries again.

Recovery trusts nothing in the journal it did not check: every path must lie under one of the
environment's roots (:func:`patchbay.environment.paths.contained`), and originals are found by names
derived from the entry number (or the sha256 of a store entry), never by a name read from the file.
"""

from __future__ import annotations

import contextlib
import errno
import filecmp
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

from ..environment.paths import contained
from .childgroup import signals_held
from .journal import (
    _LIVE_STAGING,
    JOURNAL_FORMAT,
    MANIFEST,
    _backup_path,
    _is_digest,
    _mode_and_ids_ok,
    _remove_staging_files,
    _staging_name,
    fault_point,
    folder_item_ok,
    fsync_dir,
    put_folder_back,
)


class Rollback(msgspec.Struct):
    """What a rollback (or a recovery) did.

    Attributes:
        restored: paths put back as they were (only those that had changed).
        failed: ``(path, reason, original)`` for every path that could not be put back;
            ``original`` is where its original bytes are kept (None: it did not exist).
        refused: ``(line, reason)`` of every journal record not acted on (outside the
            environment's roots, or malformed).
        journal: the manifest the entries came from (for messages).
        undo_problems: effects beyond files whose undo failed (a package install).
    """

    restored: list[Path] = msgspec.field(default_factory=list)
    failed: list[tuple[Path, str, Path | None]] = msgspec.field(default_factory=list)
    refused: list[tuple[int, str]] = msgspec.field(default_factory=list)
    undo_problems: list[str] = msgspec.field(default_factory=list)
    journal: Path | None = None

    @property
    def complete(self) -> bool:
        """Every file is as it was before the run (and nothing was refused)."""
        return not self.failed and not self.refused

    def problems(self) -> list[str]:
        """One line per file not restored, journal entry refused, or undo that failed."""
        lines = []
        for path, why, original in self.failed:
            where = (
                f"; its original is kept at {original}"
                if original is not None
                else "; it did not exist before the run"
            )
            lines.append(f"not restored: {path}: {why}{where}")
        refused = [f"{self.journal}:{line}: {why}" for line, why in self.refused]
        return [*lines, *refused, *self.undo_problems]


def recover(
    journal_dir: Path,
    roots: Iterable[Path],
    undo: Callable[[str, dict[str, Any]], None] | None = None,
) -> Rollback:
    """Finish the journal a killed run left: roll it back, or, when it was committed, delete it.

    Call with the lock held.

    Args:
        journal_dir: the journal folder.
        roots: the folders the environment's runs may change (target roots, state folder);
            an entry naming anything else is refused, never restored or deleted.
        undo: called as ``undo(kind, data)`` for each undo the run journaled
            (:meth:`~patchbay.apply.transaction.Transaction.on_rollback` with ``journal``),
            newest first, after every file is restored; it raises to say the effect could not
            be undone. None: such an undo is reported as not done.

    Returns:
        The :class:`Rollback`; empty when there is no journal. When it is not complete, or
        an undo failed (``undo_problems``), the journal stays for the next try, and its
        problems say why.
    """
    manifest = journal_dir / MANIFEST
    if not manifest.exists():
        if journal_dir.is_dir():  # a deletion cut short, or a run killed before its first save
            shutil.rmtree(journal_dir, ignore_errors=True)
        return Rollback()
    roots = [Path(os.path.abspath(r)) for r in roots]
    outcome = Rollback(journal=manifest)
    entries: list[dict[str, Any]] = []
    journal_id: str | None = None
    version: object = None
    store: Path | None = None
    committed = False
    undos: list[tuple[str, str, dict[str, Any]]] = []
    lines = manifest.read_bytes().decode("utf-8", "replace").split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number >= len(lines) - 1:  # a torn last line: that change never began
                continue
            outcome.refused.append((number, "not a journal record"))
            continue
        if number == 1 and isinstance(record, dict) and "journal" in record:
            jid = record.get("id")
            journal_id = jid if isinstance(jid, str) and jid.isalnum() and len(jid) <= 16 else None
            version = record.get("journal")
            if (
                not isinstance(version, int)
                or isinstance(version, bool)
                or version > JOURNAL_FORMAT
            ):
                outcome.refused.append(
                    (
                        number,
                        f"journal format {version!r} is not one this patchbay reads (up to "
                        f"{JOURNAL_FORMAT}): recover it with the patchbay that wrote it; "
                        "nothing in it was acted on",
                    )
                )
                return outcome
            named = record.get("store")
            if named is not None:
                if isinstance(named, str) and contained(named, roots) is not None:
                    store = Path(named)
                else:
                    outcome.refused.append(
                        (
                            number,
                            f"header names the store {named!r}, "
                            "outside this environment's roots; not used",
                        )
                    )
            continue
        if isinstance(record, dict) and record.get("committed") is True:
            committed = True
            continue
        if isinstance(record, dict) and "undo" in record:
            what, kind, data = record.get("what"), record["undo"], record.get("data")
            if isinstance(what, str) and isinstance(kind, str) and isinstance(data, dict):
                undos.append((what, kind, data))
            else:
                outcome.refused.append((number, "an undo record without 'what' or 'data'"))
            continue
        problem = _entry_problem(record, roots, Path(os.path.abspath(journal_dir)).parent)
        if problem is not None:
            outcome.refused.append((number, f"{problem}; not acted on"))
            continue
        entries.append(record)
    if store is None and any(e.get("backup") == "store" for e in entries):
        # their originals are in a store this journal does not name (safely): touch nothing
        outcome.refused.append(
            (
                1,
                "entries keep their originals in a store the header does "
                "not name; nothing in it was acted on",
            )
        )
        return outcome
    with signals_held():
        if committed:
            _discard(journal_dir, journal_id, entries)
            return Rollback()
        staged = None  # format 2 and older: found by their shape
        if isinstance(version, int) and version >= 3:
            if journal_id is None:  # its temporary files are known by its id only
                outcome.refused.append((1, "a journal of format 3 without a valid 'id'"))
                return outcome
            staged = [_staging_name(e["path"], journal_id) for e in entries]
        restored = _restore(journal_dir, journal_id, entries, store, staged=staged, roots=roots)
        outcome.restored, outcome.failed = restored.restored, restored.failed
        if outcome.complete:
            for what, kind, data in reversed(undos):
                if undo is None:
                    outcome.undo_problems.append(f"could not undo {what}: not done here")
                    continue
                try:
                    undo(kind, data)
                except Exception as exc:  # report every undo that failed, then go on
                    outcome.undo_problems.append(f"could not undo {what}: {exc}")
        if outcome.complete and not outcome.undo_problems:
            _discard(journal_dir, journal_id, entries)
    return outcome


def _entry_problem(record: object, roots: list[Path], state: Path) -> str | None:
    """Why a journal record cannot be acted on, or None (``state``: the state folder, which
    holds the journal)."""
    if not isinstance(record, dict):
        return "not a journal entry"
    path = record.get("path")
    if not isinstance(path, str):
        return "entry without a path"
    if contained(path, roots) is None:
        return f"entry names {path!r}, outside this environment's roots"
    existed = record.get("existed")
    if not isinstance(existed, bool):
        return f"entry for {path} lacks 'existed'"
    if "folder" in record:
        if not _mode_and_ids_ok(record["folder"]) or _in_state_folder(path, state):
            return f"entry for the folder {path} has no valid 'folder'"
        return None
    if existed:
        mode, times = record.get("mode"), record.get("times")
        if not isinstance(mode, int) or not 0 <= mode <= 0o7777:
            return f"entry for {path} has no valid 'mode'"
        if not (isinstance(times, list) and len(times) == 2 and all(type(t) is int for t in times)):
            return f"entry for {path} has no valid 'times'"
        if not isinstance(record.get("backup"), str):
            return f"entry for {path} does not say where its original is"
        if record["backup"] == "store" and not _is_digest(record.get("sha256")):
            return f"entry for {path} keeps its original in the store without a valid 'sha256'"
        beside_in = record.get("beside_in")
        if beside_in is not None and not _folder_ok(beside_in, path, roots, state):
            return f"entry for {path} has no valid 'beside_in'"
        rmdirs = record.get("rmdirs", [])
        if not isinstance(rmdirs, list) or not all(
            _folder_ok(f, path, roots, state) for f in rmdirs
        ):
            return f"entry for {path} has no valid 'rmdirs'"
        if not _valid_folders(record.get("folders", []), path, roots, state):
            return f"entry for {path} has no valid 'folders'"
    folders = record.get("created_dirs", [])
    if not isinstance(folders, list) or any(
        not isinstance(f, str) or contained(f, roots) is None for f in folders
    ):
        return f"entry for {path} names folders outside this environment's roots"
    return None


def _valid_folders(folders: object, below: str, roots: list[Path], state: Path) -> bool:
    return isinstance(folders, list) and all(
        folder_item_ok(item, below) and _folder_ok(item[0], below, roots, state) for item in folders
    )


def _folder_ok(folder: object, below: str, roots: list[Path], state: Path) -> bool:
    """Whether ``folder``, read back from a journal, is one a run may make again or remove
    for the file ``below``: a folder above it, under the roots, not in the state folder."""
    return (
        isinstance(folder, str)
        and below.startswith(folder.rstrip("/") + "/")
        and contained(folder, roots) is not None
        and not _in_state_folder(folder, state)
    )


def _in_state_folder(path: str, state: Path) -> bool:
    """Whether ``path`` is the state folder (the journal folder's parent) or in it: no folder
    a run removes lies there, and its modes are patchbay's own."""
    folder = str(state).rstrip("/")
    return path == folder or path.startswith(folder + "/")


def _unchanged(path: Path, backup: Path, entry: dict[str, Any]) -> bool:
    """Whether ``path`` still is what ``backup`` kept (bytes, mode and mtime)."""
    try:
        st = os.lstat(path)
        kept = os.stat(backup)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    if st.st_mode & 0o7777 != entry["mode"] or st.st_mtime_ns != entry["times"][1]:
        return False
    if (st.st_dev, st.st_ino) == (kept.st_dev, kept.st_ino):
        return True
    return st.st_size == kept.st_size and filecmp.cmp(path, backup, shallow=False)


def _restore(
    journal_dir: Path,
    journal_id: str | None,
    entries: list[dict[str, Any]],
    store: Path | None = None,
    *,
    staged: list[str] | None,
    roots: list[Path],
) -> Rollback:
    """Put every entry's path back, newest first (see
    :meth:`~patchbay.apply.transaction.Transaction.rollback`), after removing the run's
    temporary files: the paths ``staged``, or, None (a journal of format 2 or older), every
    name of the shape those formats used beside a journaled file.

    Each path (and each folder made or removed for it) is checked against ``roots`` again
    right before it is acted on, not only when the journal was read: an earlier restore (or
    the run itself) may have put a link where a later path's folder is, and nothing is ever
    written through one. A restored link keeps its own times and is never chmodded (that
    would change what it points to)."""
    outcome = Rollback()
    if staged is None:
        _remove_staging_files(entries)
    for name in staged or ():
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            os.unlink(name)
        _LIVE_STAGING.discard(name)
    still_needed: set[Path] = set()  # store entries that keep an original not put back
    for entry in reversed(entries):
        path = Path(entry["path"])
        backup = _backup_path(journal_dir, journal_id, entry, store) if entry["existed"] else None
        if path in still_needed:
            continue  # the journal stays: the next try restores the file, then drops this
        try:
            if contained(str(path), roots) is None:
                raise OSError(errno.EXDEV, "its folder now leads outside the roots (a link)")
            if "folder" in entry:  # a folder the run removed: made again as it was
                if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
                    path.unlink()  # the file the run made in its place
                if not put_folder_back(str(path), *entry["folder"], roots):
                    _make_parents(path / "_", roots)  # its parent was not journaled
                    put_folder_back(str(path), *entry["folder"], roots)
                continue
            if entry["existed"]:
                if backup is None:
                    raise OSError(errno.ENOENT, "the journal does not say where its original is")
                if not os.path.lexists(backup):
                    continue  # put back by an earlier try (a restore renames the original)
                if _unchanged(path, backup, entry):
                    continue
                # a folder the run removed, or made again through the umask, as it was
                for folder, mode, uid, gid in reversed(entry.get("folders", [])):
                    put_folder_back(folder, mode, uid, gid, roots)
                if not path.parent.is_dir():  # (journals of format < 3)
                    _make_parents(path, roots)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                os.replace(backup, path)
                if not os.path.islink(path):
                    os.chmod(path, entry["mode"])
                os.utime(path, ns=tuple(entry["times"]), follow_symlinks=False)
            else:
                if not os.path.lexists(path):
                    _remove_created_dirs(entry, roots)
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    path.unlink()
                _remove_created_dirs(entry, roots)
        except OSError as exc:
            outcome.failed.append((path, exc.strerror or str(exc), backup))
            if backup is not None and entry.get("backup") == "store":
                still_needed.add(backup)
            continue
        outcome.restored.append(path)
        fault_point("file-restored")
    return outcome


def _remove_created_dirs(entry: dict[str, Any], roots: list[Path]) -> None:
    for folder in entry.get("created_dirs", []):
        if contained(folder, roots) is None:
            continue  # its parent now leads outside the roots: nothing there is ours
        with contextlib.suppress(OSError):  # not empty: something else lives there
            os.rmdir(folder)


def _make_parents(path: Path, roots: list[Path]) -> None:
    """Make the missing folders above ``path``, outermost first, each checked against the
    roots right before it is made (through the umask: their modes were not journaled)."""
    missing = []
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        if contained(str(folder), roots) is None:
            raise OSError(errno.EXDEV, "its folder now leads outside the roots (a link)")
        folder.mkdir(exist_ok=True)


def _discard(journal_dir: Path, journal_id: str | None, entries: list[dict[str, Any]]) -> None:
    """Delete a finished journal: the originals kept beside files first, then the manifest
    (after which nothing refers to them), then the folder. Errors are left for the next run."""
    for entry in entries:
        if entry.get("existed") and entry.get("backup") == "beside":
            backup = _backup_path(journal_dir, journal_id, entry)
            if backup is not None:
                with contextlib.suppress(OSError):
                    os.unlink(backup)
                # a file the run deleted: its original kept its folders from being emptied,
                # which git's rule removes (a rollback has put the file back: none is empty)
                emptied = entry.get("rmdirs") or [f[0] for f in entry.get("folders", [])]
                for folder in emptied:
                    try:
                        os.rmdir(folder)
                    except OSError:  # not empty (or not ours): git stops there too
                        break
    fault_point("backups-removed")
    with contextlib.suppress(OSError):
        os.unlink(journal_dir / MANIFEST)
        fsync_dir(journal_dir)
    shutil.rmtree(journal_dir, ignore_errors=True)
