"""All-or-nothing writes: a journal of every path a run changes, restored on any failure.

Before a run changes a path it calls :meth:`Transaction.save`, which keeps the original where a
rename can put it back without needing any new space: a hard link in the journal folder (free,
and exact: writers here replace files by a new inode, as ``git apply`` does), or, when the
journal sits on another filesystem (``--state-dir`` elsewhere) or the file cannot be linked, a
link or an fsynced copy beside the file itself (``.patchbay-<journal id>-<n>``, same folder, so
same filesystem). A restore is then always one ``rename`` on one filesystem, also on a full
disk. The manifest (``journal.jsonl``) is written before each change and fsynced before each
batch of writes, so a run killed outright (SIGKILL, power loss) is rolled back by the next run
that takes the lock (:func:`~patchbay.apply.recovery.recover`), as quilt's ``.pc`` folder lets
it pop what it pushed.

When the caller keeps a content-addressed store of originals anyway (the ledger's blobs,
named by their sha256), :meth:`Transaction.save` given the file's ``digest`` keeps the original
*as* that store's entry: a hard link ``<store>/<digest>``, journaled first as a new file of the
run. Commit then leaves nothing to delete and no original is copied; a rollback renames the
link back, as for one in the journal folder, and then drops the new store entry. The manifest
header names the store (a folder under one of the roots), so recovery finds it without the
caller; a journal of format 1 has no such entries and is recovered as before, one of a format
newer than :data:`~patchbay.apply.journal.JOURNAL_FORMAT` is refused whole.

Commit, with respect to the ledger, is three durable steps: the caller writes the new ledger
(fsynced, after the store's folder), :meth:`Transaction.commit` appends a ``committed`` record
to the manifest (fsynced), then deletes the originals it kept and the manifest. Recovery of a
committed journal only finishes that deletion; it never rolls back a run whose ledger was
written. (Engine files and blobs written as copies are not fsynced, as ``git apply`` does not
fsync what it writes: against a power loss the order of ledger, mark and deletion holds, and
the names of the store's entries, but the contents of files written just before may not.)

The manifest's format, the names of kept originals and temporary files,
:func:`~patchbay.apply.journal.write_atomic` and the fault points are
:mod:`patchbay.apply.journal`'s; the restore of journaled entries, and the recovery of a killed
run's journal, :mod:`patchbay.apply.recovery`'s.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import stat
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from ..environment.paths import contained
from ..errors import ApplyFailed, Interrupted, PatchbayError, RefusedError, Terminated
from .childgroup import signals_held
from .journal import (
    _LIVE_STAGING,
    _STAGING_ID,
    JOURNAL_FORMAT,
    MANIFEST,
    _beside,
    _is_digest,
    _release_staging_id,
    fault_point,
    folders_above,
    fsync_dir,
)
from .recovery import Rollback, _discard, _restore

# the ids of the transactions this process committed, in order: what the command line says
# of a Ctrl-C that reaches it outside a transaction depends on it (see cli/entry.py)
COMMITTED: list[str] = []


class Transaction:
    """Journal of changed paths under ``journal_dir``; use as a context manager.

    Args:
        journal_dir: the journal folder (``<state dir>/journal``); created at the first save.
        roots: every folder the run may change (target roots and the state folder); a path
            outside them is never journaled, and recovery refuses one.
        store: a folder under one of the roots whose files are named by the sha256 of their
            content and kept after the run (the ledger's blobs); originals saved with a
            ``digest`` are kept there (see the module docstring). None: no such store.

    Leaving the ``with`` block by any exception (including ``KeyboardInterrupt``) rolls back
    and completes the error: an ``OSError`` becomes one :class:`~patchbay.errors.ApplyFailed`
    naming the step (:attr:`doing`), and the message says whether every file was restored or
    lists each one that was not. Call :meth:`commit` at the end of a successful run, after the
    ledger was written durably.
    """

    def __init__(
        self, journal_dir: Path, roots: Iterable[Path], *, store: Path | None = None
    ) -> None:
        self.dir = journal_dir
        self.roots = [Path(os.path.abspath(r)) for r in roots]
        self.store = None if store is None else Path(os.path.abspath(store))
        self.doing = "writing"
        self.id = os.urandom(4).hex()  # os.urandom, as secrets does (it costs 3 ms to import)
        self._entries: dict[str, dict[str, Any]] = {}
        self._undo: list[tuple[str, Callable[[], None]]] = []
        self._done = False
        self._manifest: Any = None
        self._real: dict[str, str] = {}  # realpath cache of the run (roots and folders)
        self._journal_dev: int | None = None
        self._store_dev: int | None = None
        self._store_made = False
        self.outcome: Rollback | None = None
        self._untracked: list[str] = []
        self._previous_sigterm: Any = None

    def __enter__(self) -> Transaction:
        if threading.current_thread() is threading.main_thread():
            self._previous_sigterm = signal.signal(signal.SIGTERM, _raise_terminated)
        return self

    def note_untracked(self, what: str) -> None:
        """Record an effect of the run the journal cannot see (what a command wrote beyond
        its declared paths); a rollback's message then names it instead of claiming every
        change was undone."""
        if what not in self._untracked:
            self._untracked.append(what)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._finish(exc)
        finally:
            if self._previous_sigterm is not None:
                signal.signal(signal.SIGTERM, self._previous_sigterm)
                self._previous_sigterm = None

    def _finish(self, exc: BaseException | None) -> None:
        if self._done:
            return
        outcome = self.rollback()
        if exc is None:
            return
        if isinstance(exc, PatchbayError):
            error: PatchbayError = exc
        elif isinstance(exc, OSError):
            error = ApplyFailed(f"{self.doing} failed: {exc.strerror or exc}", file=exc.filename)
        elif isinstance(exc, Terminated):
            error = Interrupted("terminated by SIGTERM", signum=signal.SIGTERM)
        elif isinstance(exc, KeyboardInterrupt):
            error = Interrupted("interrupted", signum=signal.SIGINT)
        else:
            if not outcome.complete and isinstance(exc, Exception):
                for line in outcome.problems():
                    exc.add_note(line)
            return  # a bug keeps its traceback; a clean Ctrl-C is reported by the CLI
        self._describe(outcome, error)
        if error is not exc:
            raise error from None

    def _describe(self, outcome: Rollback, error: PatchbayError) -> None:
        if not outcome.complete:
            n = len(outcome.failed) + len(outcome.refused)
            error.reason += (
                f"; {n} file(s) could not be restored (listed below; the journal {self.dir} "
                "keeps their originals and the next apply or revert tries again)"
            )
        elif "nothing was changed" not in error.reason and self._untracked:
            error.reason += (
                "; every file patchbay journaled was restored, but not "
                + " nor ".join(self._untracked)
                + " (patchbay does not track it)"
            )
            if outcome.undo_problems:
                error.reason += ", nor everything else (below)"
        elif "nothing was changed" not in error.reason:
            error.reason += "; every file this run touched was restored"
            if outcome.undo_problems:
                error.reason += ", but not everything else (below)"
        elif outcome.undo_problems:
            error.reason += "; not everything this run changed was undone (below)"
        error.details.extend(outcome.problems())

    @property
    def paths(self) -> list[Path]:
        """Every path saved so far, in order."""
        return [Path(p) for p in self._entries]

    def _open(self) -> None:
        if self._manifest is not None:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        if (self.dir / MANIFEST).exists():
            raise RefusedError(
                "an earlier run's journal is still open (recover it first)", file=self.dir
            )
        for leftover in self.dir.iterdir():  # a deletion that was cut short: no manifest
            _remove_quietly(leftover)
        self._manifest = open(self.dir / MANIFEST, "x", encoding="utf-8")  # noqa: SIM115
        header: dict[str, Any] = {"journal": JOURNAL_FORMAT, "id": self.id}
        if self.store is not None:
            header["store"] = str(self.store)
        self._write(header)
        fsync_dir(self.dir)
        _STAGING_ID[0] = self.id  # from now on, temporary files carry the journal's id

    def _write(self, record: dict[str, Any]) -> None:
        self._manifest.write(json.dumps(record) + "\n")
        self._manifest.flush()  # enough for a killed process; sync() makes it durable

    def save(
        self,
        path: Path,
        *,
        copy: bool = False,
        digest: str | None = None,
        deleting: bool = False,
        then_remove: list[str] | None = None,
        beside_in: Path | None = None,
    ) -> None:
        """Keep ``path``'s current state (content, mode, times, or absence) before a change.

        Args:
            path: a file under one of the roots (or a folder a new file replaces once the
                run's deletions, journaled before, have emptied it: journaled as
                :meth:`save_folder` does, and made again in place of that file).
            copy: keep a copy rather than a hard link (for a path a writer may change in
                place, such as a command's output: a link would change with it).
            digest: the hex sha256 of the bytes the caller read from ``path``; when the
                transaction has a ``store`` on the file's filesystem that lacks this digest,
                the original is kept as the store's entry (a link, checked to hold these
                bytes), else as without it.
            deleting: the run may delete the file, and with it the folders it leaves empty
                (as ``git apply`` does): the permission bits and owner of every folder above
                it, up to its root, are journaled too, so that a rollback makes a removed
                folder again as it was rather than through the umask.
            then_remove: folders above ``path`` (absolute, deepest first) the run removes once
                the file is gone and they are empty (a revert's folders that the patch made);
                with the original kept beside the file they are not empty until the commit,
                which removes them then.
            beside_in: a folder above ``path`` (absolute) where an original kept beside its
                file goes instead of the file's own folder: the parent of a folder the run
                replaces by a file, which must be empty by then (journaled as ``beside_in``).

        Raises:
            ApplyFailed: the original cannot be kept (no space, no permission) or the path is
                outside the roots; the path has not been changed.
        """
        key = os.path.abspath(path)
        if key in self._entries:
            return
        root = contained(key, self.roots, real=self._real)
        if root is None:
            raise ApplyFailed(f"refusing to journal {key}: outside the environment's roots")
        try:
            self._open()
            try:
                st = os.lstat(key)
            except (FileNotFoundError, NotADirectoryError):  # (a file the run deletes first)
                self._record(key, existed=False, created_dirs=_missing_dirs(Path(key)))
            else:
                if stat.S_ISDIR(st.st_mode):
                    # a folder that a new file replaces once the run's deletions empty it (they
                    # are journaled before): made again as it was, in place of that file
                    self._record_folder(key, st)
                    fault_point("journal-saved")
                    return
                kept = (
                    None
                    if copy or digest is None or not stat.S_ISREG(st.st_mode)
                    else self._keep_in_store(Path(key), st, digest)
                )
                if kept is not None:
                    fields: dict[str, Any] = {"backup": "store", "sha256": kept}
                else:
                    where = None if beside_in is None else os.path.abspath(beside_in)
                    if where is not None and not key.startswith(where.rstrip("/") + "/"):
                        where = None  # no folder above it: kept beside it, as without
                    n = len(self._entries)
                    fields = {"backup": self._keep(Path(key), n, st, copy, where)}
                    if where is not None and fields["backup"] == "beside":
                        fields["beside_in"] = where
                if deleting:
                    fields["folders"] = folders_above(key, root)
                if then_remove:
                    fields["rmdirs"] = list(then_remove)
                self._record(
                    key,
                    existed=True,
                    **fields,
                    mode=st.st_mode & 0o7777,
                    times=[st.st_atime_ns, st.st_mtime_ns],
                )
        except OSError as exc:
            raise ApplyFailed(
                f"cannot keep the original of {key} before changing it: {exc.strerror or exc}",
                file=key,
            ) from None
        fault_point("journal-saved")

    def save_folder(self, folder: Path) -> None:
        """Journal a folder the run is about to remove (with what is in it: journal each file
        with :meth:`save` and each folder below it with this first, deepest first), so that
        a rollback makes it again with its permission bits and owner, empty or not.

        Raises:
            ApplyFailed: the folder is outside the roots, or cannot be read; nothing changed.
        """
        key = os.path.abspath(folder)
        if key in self._entries:
            return
        if contained(key, self.roots, real=self._real) is None:
            raise ApplyFailed(f"refusing to journal {key}: outside the environment's roots")
        try:
            self._open()
            st = os.lstat(key)
        except OSError as exc:
            raise ApplyFailed(
                f"cannot journal the folder {key} before removing it: {exc.strerror or exc}",
                file=key,
            ) from None
        self._record_folder(key, st)
        fault_point("journal-saved")

    def _record_folder(self, key: str, st: os.stat_result) -> None:
        self._record(
            key,
            existed=True,
            folder=[st.st_mode & 0o7777, st.st_uid, st.st_gid],
            mode=st.st_mode & 0o7777,
            times=[st.st_atime_ns, st.st_mtime_ns],
        )

    def _record(self, key: str, **fields: Any) -> dict[str, Any]:
        """Write (and flush) the next manifest entry, for the path ``key``."""
        entry: dict[str, Any] = {"n": len(self._entries), "path": key, **fields}
        self._write(entry)
        self._entries[key] = entry
        return entry

    def _keep_in_store(self, path: Path, st: os.stat_result, digest: str) -> str | None:
        """Keep the original as ``<store>/<digest>``, a new entry of the store journaled as a
        file this run creates; returns the digest, or None when it cannot (no store, another
        filesystem, the entry exists, the bytes are not those of ``digest``), after which
        nothing of it is left."""
        if self.store is None or not _is_digest(digest):
            return None
        blob = self.store / digest
        if str(blob) in self._entries or os.path.lexists(blob):
            return None  # an entry that exists is no original of this run's to rename back
        if self._store_dev is None:  # the store is checked once: its entries are hex names
            inside = contained(str(self.store), self.roots, real=self._real) is not None
            self._store_dev = os.stat(_existing_ancestor(self.store)).st_dev if inside else -1
        if self._store_dev != st.st_dev:
            return None
        self._record(str(blob), existed=False, created_dirs=_missing_dirs(blob))
        fault_point("store-entry-journaled")
        try:
            if not self._store_made:
                self.store.mkdir(parents=True, exist_ok=True)
                self._store_made = True
            os.link(path, blob, follow_symlinks=False)
        except OSError:
            return None  # an immutable store, a file that cannot be linked: the journal keeps it
        fault_point("store-entry-linked")
        if _sha256_file(blob) != digest:  # changed since the caller read it: not an original
            os.unlink(blob)
            return None
        return digest

    def _keep(
        self, path: Path, n: int, st: os.stat_result, copy: bool, beside_in: str | None = None
    ) -> str:
        """Keep the original where a rename can restore it; returns ``journal`` or
        ``beside`` (see the module docstring; ``beside_in``: the folder for the latter, when
        not the file's own)."""
        in_journal = self.dir / f"{n:06d}"
        beside = _beside(path, self.id, n, beside_in)
        if self._journal_dev is None:
            self._journal_dev = os.stat(self.dir).st_dev
        same_fs = self._journal_dev == st.st_dev
        if not copy:
            with contextlib.suppress(OSError):  # another filesystem, an immutable file...
                os.link(path, in_journal if same_fs else beside, follow_symlinks=False)
                return "journal" if same_fs else "beside"
        _copy_durably(path, in_journal if same_fs else beside)
        return "journal" if same_fs else "beside"

    def sync(self) -> None:
        """Make the journal durable (fsync); call once after saving a batch, before writing."""
        if self._manifest is not None:
            os.fsync(self._manifest.fileno())
        fault_point("journal-synced")

    def on_rollback(
        self,
        what: str,
        undo: Callable[[], None],
        *,
        journal: tuple[str, dict[str, Any]] | None = None,
    ) -> None:
        """Register an undo for an effect the journal cannot restore byte for byte (a package
        install); undos run newest first, after the files are restored. ``what`` names the
        effect in the report when its undo fails.

        Args:
            journal: ``(kind, data)`` to make the undo survive the process: written to the
                journal durably (fsync) before this returns, so call it before the effect
                begins. A run killed outright (SIGKILL, a power cut) is then undone by the
                next run's recovery, which hands ``kind`` and ``data`` (JSON values) to its
                ``undo`` callback (see :func:`~patchbay.apply.recovery.recover`); without it
                only a rollback of this process undoes the effect.
        """
        self._undo.append((what, undo))
        if journal is not None:
            kind, data = journal
            self._open()
            self._write({"undo": kind, "what": what, "data": data})
            os.fsync(self._manifest.fileno())
            fault_point("undo-journaled")

    def commit(self) -> None:
        """Mark the run committed (durably), then forget the originals.

        Call after the new ledger was written durably: from the mark on, recovery only
        deletes this journal. Failing to delete it does not fail the run (the next run does).
        """
        self._done = True
        if self._manifest is None:
            return
        _release_staging_id(self.id)
        # the mark, what this process says of it and the journal's removal go together: a
        # Ctrl-C in between would be reported as a rollback of a run that recovery then finds
        # committed, or leave a committed journal that makes status call the run interrupted
        with signals_held():
            self._write({"committed": True})
            os.fsync(self._manifest.fileno())
            COMMITTED.append(self.id)
            self._manifest.close()
            fault_point("journal-committed")
            _discard(self.dir, self.id, list(self._entries.values()))

    def rollback(self) -> Rollback:
        """Restore every saved path that changed, newest first; safe to call once.

        SIGINT and SIGTERM are held back while restoring (a second Ctrl-C must not leave the
        tree half restored); they are delivered when the restore is complete.
        """
        self._done = True
        outcome = Rollback()
        if self._manifest is not None:
            _release_staging_id(self.id)
            self._manifest.close()
        with signals_held():
            if self._manifest is not None:
                # this process's own temporary files still there (a write cut short by a
                # signal); a file of the same name the run did not make is no business of it
                staged = sorted(_LIVE_STAGING)
                outcome = _restore(
                    self.dir,
                    self.id,
                    list(self._entries.values()),
                    self.store,
                    staged=staged,
                    roots=self.roots,
                )
            for what, undo in reversed(self._undo):
                try:
                    undo()
                except Exception as exc:  # report every undo that failed, then go on
                    outcome.undo_problems.append(f"could not undo {what}: {exc}")
            # only now: a run killed while undoing a package install leaves the journal (and
            # its journaled undo) for the next run's recovery
            if self._manifest is not None and outcome.complete:
                _discard(self.dir, self.id, list(self._entries.values()))
        self.outcome = outcome
        return outcome

    def check_space(self, needs: Iterable[tuple[Path, int]]) -> None:
        """Refuse the run before its first write when a filesystem lacks the space it needs.

        Args:
            needs: ``(folder, bytes)`` pairs: what will be written under each folder (new
                file contents, saved originals, blobs, the ledger); pairs on one filesystem
                are added up. Each entry of the journal counts
                :data:`~patchbay.apply.journal.ENTRY_BYTES` more.

        Raises:
            RefusedError: some filesystem has less free space than needed; nothing changed.
        """
        by_folder: dict[Path, int] = {}
        for folder, size in needs:  # many files share a folder: look at each folder once
            by_folder[folder] = by_folder.get(folder, 0) + size
        by_device: dict[int, list[Any]] = {}
        for folder, size in by_folder.items():
            existing = _existing_ancestor(folder)
            dev = os.stat(existing).st_dev
            slot = by_device.setdefault(dev, [existing, 0])
            slot[1] += size
        for folder, size in by_device.values():
            free = shutil.disk_usage(folder).free
            if free < size:
                raise RefusedError(
                    f"not enough free space: this run needs about {size} bytes on the "
                    f"filesystem of {folder} (new file contents, the journal, saved originals "
                    f"and the ledger), {free} are free; nothing was changed",
                    file=folder,
                )


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _copy_durably(src: Path, dest: Path) -> None:
    """Copy ``src`` to ``dest`` (a new file), contents fsynced, mode and times kept."""
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with open(src, "rb") as fin, os.fdopen(fd, "wb") as fout:
            shutil.copyfileobj(fin, fout)
            fout.flush()
            os.fsync(fout.fileno())
        shutil.copystat(src, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(dest)
        raise


def _missing_dirs(path: Path) -> list[str]:
    """The folders above ``path`` a run makes to write it, deepest first: the missing ones,
    and one where a file stands (which the run deletes first)."""
    created = []
    parent = path.parent
    while not parent.is_dir():
        created.append(str(parent))
        parent = parent.parent
    return created


def _existing_ancestor(folder: Path) -> Path:
    folder = Path(os.path.abspath(folder))
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated
