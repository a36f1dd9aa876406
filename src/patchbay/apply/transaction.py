"""All-or-nothing writes: a journal of every path a run changes, restored on any failure.

Before a run changes a path it calls :meth:`Transaction.save`, which keeps the original where a
rename can put it back without needing any new space: a hard link in the journal folder (free,
and exact: writers here replace files by a new inode, as ``git apply`` does), or, when the
journal sits on another filesystem (``--state-dir`` elsewhere) or the file cannot be linked, a
link or an fsynced copy beside the file itself (``.patchbay-<journal id>-<n>``, same folder, so
same filesystem). A restore is then always one ``rename`` on one filesystem, also on a full
disk. The manifest (``journal.jsonl``) is written before each change and fsynced before each
batch of writes, so a run killed outright (SIGKILL, power loss) is rolled back by the next run
that takes the lock (:func:`recover`), as quilt's ``.pc`` folder lets it pop what it pushed.

When the caller keeps a content-addressed store of originals anyway (the ledger's blobs,
named by their sha256), :meth:`Transaction.save` given the file's ``digest`` keeps the original
*as* that store's entry: a hard link ``<store>/<digest>``, journaled first as a new file of the
run. Commit then leaves nothing to delete and no original is copied; a rollback renames the
link back, as for one in the journal folder, and then drops the new store entry. The manifest
header names the store (a folder under one of the roots), so recovery finds it without the
caller; a journal of format 1 has no such entries and is recovered as before, one of a format
newer than :data:`JOURNAL_FORMAT` is refused whole.

New content is written under a temporary name beside its file (:func:`staging_file`:
``.<name>.<journal id>.patchbay`` while a journal is open, the journal id being 8 random hex
digits) and renamed into place once complete; a run killed in between leaves that file, and
recovery removes exactly that name beside every journaled file of the run, and an in-process
rollback the ones the process made and has not renamed yet, so that a file of the user's of the
same shape is never touched. (A journal of format 2 or older did not name its temporary files
by its id: they are found by their shape, as that patchbay did.)

Rollback restores only what changed (each file is compared with its original first), goes on
past a file it cannot restore, and reports every such file with the place its original is kept;
the journal then stays, and the next run tries again.

Commit, with respect to the ledger, is three durable steps: the caller writes the new ledger
(fsynced, after the store's folder), :meth:`Transaction.commit` appends a ``committed`` record
to the manifest (fsynced), then deletes the originals it kept and the manifest. Recovery of a
committed journal only finishes that deletion; it never rolls back a run whose ledger was
written. (Engine files and blobs written as copies are not fsynced, as ``git apply`` does not
fsync what it writes: against a power loss the order of ledger, mark and deletion holds, and
the names of the store's entries, but the contents of files written just before may not.)

Recovery trusts nothing in the journal it did not check: every path must lie under one of the
environment's roots (:func:`patchbay.environment.paths.contained`), and originals are found by names
derived from the entry number (or the sha256 of a store entry), never by a name read from the file.

Fault injection (tests only): ``PATCHBAY_TEST_FAULT="kill@<point>[:<n>],fail@<point>[:<n>]"``
kills the process with SIGKILL (or raises an ``OSError``) the ``n``-th time (default 1) it
reaches the named :func:`fault_point`; ``PATCHBAY_TEST_FAULT_LOG=<file>`` appends every point
reached, so a sweep can list them. Neither is read unless set; ``benchmarks/fault_matrix.py``
and ``tests/test_faults.py`` use them.
"""

from __future__ import annotations

import contextlib
import errno
import filecmp
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import msgspec

from ..environment.paths import contained
from ..errors import ApplyFailed, Interrupted, PatchbayError, RefusedError, Terminated
from .childgroup import signals_held

MANIFEST = "journal.jsonl"
#: 2: originals may be kept as entries of a content-addressed store (``backup: store``);
#: 3: temporary files are named by the journal's id (:func:`staging_file`); an entry of a file
#: the run may delete has the mode and owner of the folders above it (``folders``), which a
#: rollback gives back to a folder the run removed or made again; 4: a folder may be journaled
#: where the run makes a file (restored in place of that file), and an original kept beside
#: its file may be kept in a folder above it (``beside_in``: a folder the run replaces by a
#: file must be empty), which an older patchbay would not find
JOURNAL_FORMAT = 4
# per journal entry, on the state filesystem: the manifest line and some slack
ENTRY_BYTES = 1024


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
                ``undo`` callback (see :func:`recover`); without it only a rollback of this
                process undoes the effect.
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
        self._write({"committed": True})
        os.fsync(self._manifest.fileno())
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
                are added up. Each entry of the journal counts :data:`ENTRY_BYTES` more.

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


def _beside(path: Path, journal_id: str, n: int, folder: str | None = None) -> Path:
    return (path.parent if folder is None else Path(folder)) / f".patchbay-{journal_id}-{n:06d}"


_DIGEST = re.compile(r"[0-9a-f]{64}")


def _is_digest(text: object) -> bool:
    return isinstance(text, str) and _DIGEST.fullmatch(text) is not None


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _backup_path(
    journal_dir: Path, journal_id: str | None, entry: dict[str, Any], store: Path | None = None
) -> Path | None:
    """Where an entry's original is kept, derived from checked fields only (``store``: the
    store the manifest's header names, checked)."""
    n = entry.get("n")
    where = entry.get("backup")
    if where == "store":
        digest = entry.get("sha256")
        return store / digest if store is not None and _is_digest(digest) else None
    if journal_id is None and isinstance(where, str) and where.isdigit() and len(where) == 6:
        return journal_dir / where  # a journal written before the format had a header
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        return None
    if where == "journal":
        return journal_dir / f"{n:06d}"
    if where == "beside" and journal_id is not None:
        return _beside(Path(entry["path"]), journal_id, n, entry.get("beside_in"))
    return None


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


def folders_above(path: str, root: Path) -> list[list[Any]]:
    """``[folder, mode, uid, gid]`` (absolute path, permission bits, owner) of every folder
    above ``path`` up to, not including, ``root``, deepest first: what a deletion that empties
    them, and removes them as ``git apply`` does, takes away."""
    found = []
    stop = os.path.abspath(root)
    folder = os.path.dirname(path)
    while folder != stop and folder.startswith(stop + os.sep):
        # not there yet (an earlier patch makes it, maybe in place of a file on its way)
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            st = os.lstat(folder)
            if stat.S_ISDIR(st.st_mode):
                found.append([folder, st.st_mode & 0o7777, st.st_uid, st.st_gid])
        folder = os.path.dirname(folder)
    return found


#: the largest uid or gid Linux has ((uid_t)-1 means "no change" to chown)
MAX_ID = 2**32 - 2


def put_folder_back(folder: str, mode: int, uid: int, gid: int, roots: list[Path]) -> bool:
    """Make ``folder`` again with permission bits ``mode`` (not the umask's) and, where this
    process may (root; a failed chown is let go, as without the capability), owner
    ``uid:gid``; when it exists, give it that mode and owner. Checked against ``roots`` right
    before (an earlier step may have put a link on the way): a folder that now leads outside
    them is left alone, as is one whose parent is missing. Returns whether it was acted on."""
    if contained(folder, roots) is None:
        return False
    try:
        os.mkdir(folder)
    except FileExistsError:
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode):
            return False
        if [st.st_mode & 0o7777, st.st_uid, st.st_gid] == [mode, uid, gid]:
            return True
    except FileNotFoundError:
        return False
    os.chmod(folder, mode)
    if os.geteuid() == 0:
        with contextlib.suppress(OSError):
            os.chown(folder, uid, gid, follow_symlinks=False)
            os.chmod(folder, mode)  # chown drops the set-group-ID bit
    return True


def folder_item_ok(item: object, below: str, *, size: int = 4) -> bool:
    """Whether ``item`` has the shape of a :func:`folders_above` item for the file ``below``
    (read back from a journal or a ledger, which may have been edited): ``[folder, mode, uid,
    gid]`` and, with ``size`` 5 (the ledger's), what the run left, with ``folder`` one of the
    folders above ``below`` (the same form: absolute, or root-relative), the mode within
    0..0o7777 and each id a uid Linux can have."""
    if not (isinstance(item, list) and len(item) == size and isinstance(item[0], str)):
        return False
    if not item[0] or not below.startswith(item[0].rstrip("/") + "/"):
        return False
    return _mode_and_ids_ok(item[1:4])


def _mode_and_ids_ok(values: object) -> bool:
    """``[mode, uid, gid]``: permission bits and two ids Linux can have."""
    if not (isinstance(values, list) and len(values) == 3):
        return False
    mode = values[0]
    return all(type(v) is int and 0 <= v <= MAX_ID for v in values) and mode <= 0o7777


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


def _existing_ancestor(folder: Path) -> Path:
    folder = Path(os.path.abspath(folder))
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


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
            (:meth:`Transaction.on_rollback` with ``journal``), newest first, after every
            file is restored; it raises to say the effect could not be undone. None: such
            an undo is reported as not done.

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
    """Put every entry's path back, newest first (see :meth:`Transaction.rollback`), after
    removing the run's temporary files: the paths ``staged``, or, None (a journal of format 2
    or older), every name of the shape those formats used beside a journaled file.

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


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def fsync_dir(folder: Path) -> None:
    """fsync a folder, so that renames and new names in it are durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fault_point(name: str) -> None:
    """A named place where the fault-injection tests may kill this run or make it fail.

    Does nothing unless ``PATCHBAY_TEST_FAULT`` or ``PATCHBAY_TEST_FAULT_LOG`` is set (see
    the module docstring); they are set only by the test suite and the fault-matrix benchmark.

    Raises:
        OSError: ``fail@<name>:<n>`` was asked for and this is the ``n``-th time here.
    """
    spec = os.environ.get("PATCHBAY_TEST_FAULT")
    log = os.environ.get("PATCHBAY_TEST_FAULT_LOG")
    if not spec and not log:
        return
    n = _FAULT_HITS[name] = _FAULT_HITS.get(name, 0) + 1
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{name}:{n}\n")
    for item in (spec or "").split(","):
        action, _, where = item.strip().partition("@")
        point, _, count = where.partition(":")
        if point != name or int(count or 1) != n:
            continue
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if action == "fail":
            raise OSError(errno.EIO, f"injected fault at {name}:{n}")


_FAULT_HITS: dict[str, int] = {}


# a file's new content is written first under ".<name>.<8 hex digits>.patchbay" in its folder;
# the digits are the open journal's id (format 3), else random
_STAGING = re.compile(r"\.(?P<name>.+)\.[0-9a-f]{8}\.patchbay")
_STAGING_ID: list[str | None] = [None]  # the id of the journal open in this process
_LIVE_STAGING: set[str] = set()  # temporary files this process made and has not renamed yet


def _release_staging_id(journal_id: str) -> None:
    if _STAGING_ID[0] == journal_id:
        _STAGING_ID[0] = None


def staging_file(path: Path) -> tuple[int, str]:
    """Create the temporary file ``path``'s new content is written to before it is renamed
    into place, in ``path``'s folder, new (``O_EXCL``), mode 0600: while a
    :class:`Transaction` has its journal open, ``.<name>.<journal id>.patchbay``, the one name
    recovery removes (:func:`recover`) when the run is killed before the rename; else
    ``.<name>.<8 random hex digits>.patchbay``.

    Returns:
        ``(descriptor, path)``, the descriptor open for writing.

    Raises:
        OSError: the folder refuses a new file; or (``EEXIST``) a file of the run's own
            temporary name is already there, which is none of this run's (each of its
            temporary files is renamed or removed before the next is made): it is left alone.
    """
    journal_id = _STAGING_ID[0]
    while True:
        name = _staging_name(path, journal_id or os.urandom(4).hex())
        _LIVE_STAGING.add(name)  # before it exists: a signal in between leaves no stray file
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), name
        except FileExistsError:
            _LIVE_STAGING.discard(name)
            if journal_id is None:
                continue  # 1 in 4 billion: another name
            raise OSError(
                errno.EEXIST,
                f"a file named as patchbay's temporary file for it exists ({name}); it is not "
                "this run's and is left alone: move it away and run again",
                str(path),
            ) from None
        except OSError:  # not made (a signal's exception may come after it was: kept)
            _LIVE_STAGING.discard(name)
            raise


def _staging_name(path: str | Path, journal_id: str) -> str:
    """``.<name>.<journal_id>.patchbay`` beside ``path``; for a name too long to take the 19
    more bytes (NAME_MAX is 255 on Linux filesystems), ``.<sha256 of the name, 16 hex>``
    instead of the name, derived the same way by recovery."""
    folder, name = os.path.split(path)
    if len(os.fsencode(name)) > 200:
        name = hashlib.sha256(os.fsencode(name)).hexdigest()[:16]
    return os.path.join(folder, f".{name}.{journal_id}.patchbay")


def _remove_staging_files(entries: list[dict[str, Any]]) -> None:
    """Remove the temporary files a killed run of a journal of format 2 or older left beside
    the files it journaled (their names carry random digits, not the journal's id): each
    folder is listed once, and every name of that shape for a journaled file's name goes."""
    names: dict[str, set[str]] = {}
    for entry in entries:
        folder, name = os.path.split(entry["path"])
        names.setdefault(folder, set()).add(name)
    for folder, wanted in names.items():
        try:
            listing = os.listdir(folder)
        except OSError:  # gone, or no folder: nothing staged in it
            continue
        for item in listing:
            m = _STAGING.fullmatch(item)
            if m and m["name"] in wanted:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(folder, item))


def write_atomic(
    path: Path,
    data: bytes | Iterable[bytes],
    *,
    mode: int | None = None,
    durable: bool = False,
    unlink_first: bool = False,
    owner: tuple[int, int] | None = None,
) -> None:
    """Replace ``path`` with ``data`` through a temporary file and a rename (a new inode).

    Args:
        path: destination; its folder must exist.
        data: the new bytes, or pieces of them written in order (a large document, such as
            the ledger, need not be joined in memory first).
        mode: permission bits; default: those of the file being replaced, else 0o644.
        durable: fsync the data before the rename and the folder after it (for the ledger;
            engine files and blobs are covered by the journal against a killed run, and are
            not fsynced, as git apply's own writes are not).
        unlink_first: unlink the old file just before the rename, as ``git apply`` does,
            rather than renaming over it: on ext4 a rename over an existing file starts the new
            data's writeback at once (``auto_da_alloc``), which doubles a write's cost; a
            crash in between is the journal's to undo (for the diff writer's many files).
        owner: ``(uid, gid)`` the new file gets before it is renamed into place (a revert
            giving a file back to its owner), when the process may chown (a failed chown is
            let go); None: run as root, that of the file being replaced (else the
            process's).

    Raises:
        OSError: the write failed (no space, no permission, an immutable file); its
            ``filename`` is ``path`` (not the temporary file, which is removed).
    """
    if mode is None or (owner is None and os.geteuid() == 0):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            pass
        else:
            mode = st.st_mode & 0o7777 if mode is None else mode
            # run as root, a file replaced keeps its owner, as an edit in place (and GNU
            # patch) keeps it: a service's own file stays readable to it
            if owner is None:
                owner = (st.st_uid, st.st_gid)
    if mode is None:
        mode = 0o644
    fd, tmp = staging_file(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, bytes):
                fh.write(data)
            else:
                fh.writelines(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        if owner is not None:  # also our own ids: a set-group-ID folder gives its group
            with contextlib.suppress(OSError):  # uid 0 without CAP_CHOWN (rootless): let go
                os.chown(tmp, *owner)
        os.chmod(tmp, mode)  # after chown, which drops the set-user-ID and set-group-ID bits
        fault_point("file-staged")  # complete under its temporary name (recovery removes it)
        if unlink_first:
            os.unlink(path)
        os.replace(tmp, path)
        _LIVE_STAGING.discard(tmp)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        _LIVE_STAGING.discard(tmp)
        if isinstance(exc, OSError) and exc.filename != str(path):
            # name the file being replaced, not the temporary one (which is gone)
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        raise
    if durable:
        fsync_dir(path.parent)
    fault_point("file-written")
