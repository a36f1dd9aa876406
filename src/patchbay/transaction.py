"""All-or-nothing writes: a journal of every path a run changes, restored on any failure.

Before a run changes a path it calls :meth:`Transaction.save`, which keeps the original: a hard
link to the file (free, and exact: writers here always replace files by a new inode, as
``git apply`` does) or a copy when the journal sits on another filesystem. The journal manifest
is written before each change (and fsynced before each batch of writes), so a run killed outright
(SIGKILL, power loss) is rolled back by the next run that takes the lock (:func:`recover`), as
quilt's ``.pc`` folder lets it pop what it pushed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from .errors import RefusedError

MANIFEST = "journal.jsonl"


class Transaction:
    """Journal of changed paths under ``journal_dir``; use as a context manager.

    Leaving the ``with`` block by any exception (including ``KeyboardInterrupt``) rolls back;
    call :meth:`commit` at the end of a successful run.
    """

    def __init__(self, journal_dir: Path) -> None:
        self.dir = journal_dir
        self._entries: dict[str, dict[str, object]] = {}
        self._undo: list[tuple[str, Callable[[], None]]] = []
        self.rollback_problems: list[str] = []
        self._done = False
        journal_dir.mkdir(parents=True, exist_ok=True)
        self._manifest = open(journal_dir / MANIFEST, "a", encoding="utf-8")  # noqa: SIM115

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._done:
            self.rollback()
            if self.rollback_problems and exc is not None and hasattr(exc, "details"):
                exc.details.extend(self.rollback_problems)
                # the run's message must not claim a restore that did not fully happen
                exc.reason = exc.reason.replace(  # type: ignore[attr-defined]
                    "every file this run touched was restored",
                    "every file this run touched was restored, but not everything else (below)",
                )

    @property
    def paths(self) -> list[Path]:
        """Every path saved so far, in order."""
        return [Path(p) for p in self._entries]

    def save(self, path: Path) -> None:
        """Keep ``path``'s current state (content, mode, times, or absence) before a change."""
        key = str(path)
        if key in self._entries:
            return
        entry: dict[str, object] = {"path": key}
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            entry["existed"] = False
            created = []
            parent = path.parent
            while not parent.exists():
                created.append(str(parent))
                parent = parent.parent
            entry["created_dirs"] = created
        else:
            backup = self.dir / f"{len(self._entries):06d}"
            try:
                os.link(path, backup)
            except OSError:
                shutil.copy2(path, backup)
            entry.update(
                existed=True,
                backup=backup.name,
                mode=st.st_mode & 0o7777,
                times=[st.st_atime_ns, st.st_mtime_ns],
            )
        self._manifest.write(json.dumps(entry) + "\n")
        self._manifest.flush()  # enough for a killed process; sync() makes it durable
        self._entries[key] = entry

    def sync(self) -> None:
        """Make the journal durable (fsync); call once after saving a batch, before writing."""
        os.fsync(self._manifest.fileno())

    def on_rollback(self, what: str, undo: Callable[[], None]) -> None:
        """Register an undo for an effect the journal cannot restore byte for byte (a package
        install); undos run newest first, after the files are restored. ``what`` names the
        effect in the report when its undo fails."""
        self._undo.append((what, undo))

    def commit(self) -> None:
        """Forget the originals: the run succeeded."""
        self._done = True
        self._manifest.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def rollback(self) -> list[Path]:
        """Restore every saved path; returns them. Safe to call once.

        SIGINT and SIGTERM are held back while restoring (a second Ctrl-C must not leave the
        tree half restored); they are delivered when the restore is complete.
        """
        self._done = True
        self._manifest.close()
        with _signals_held():
            restored = _restore(self.dir, list(self._entries.values()))
            shutil.rmtree(self.dir, ignore_errors=True)
            for what, undo in reversed(self._undo):
                try:
                    undo()
                except Exception as exc:  # report every undo that failed, then go on
                    self.rollback_problems.append(f"could not undo {what}: {exc}")
        return restored


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    held = {signal.SIGINT, signal.SIGTERM}
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def recover(journal_dir: Path) -> list[Path]:
    """Roll back a journal left by a run that was killed; returns the restored paths.

    Call with the lock held. Returns an empty list when there is no journal.
    """
    manifest = journal_dir / MANIFEST
    if not manifest.exists():
        return []
    entries = []
    for n, line in enumerate(manifest.read_text(encoding="utf-8").splitlines(), start=1):
        with contextlib.suppress(json.JSONDecodeError):  # a torn last line: that change never began
            entry = json.loads(line)
            whole = isinstance(entry, dict)
            needed = {"path", "existed"} | (
                {"backup", "mode", "times"} if whole and entry.get("existed") else set()
            )
            if not whole or not needed <= entry.keys():
                raise RefusedError(
                    "a journal entry of an interrupted run lacks a key (path, existed, backup, "
                    "mode, times): its files cannot be restored safely; restore them by hand, "
                    "then delete the journal",
                    file=manifest,
                    line=n,
                )
            entries.append(entry)
    with _signals_held():
        restored = _restore(journal_dir, entries)
        shutil.rmtree(journal_dir, ignore_errors=True)
    return restored


def _restore(journal_dir: Path, entries: list[dict[str, object]]) -> list[Path]:
    restored = []
    for entry in reversed(entries):
        path = Path(str(entry["path"]))
        if entry["existed"]:
            backup = journal_dir / str(entry["backup"])
            if not backup.exists():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)  # a removed folder comes back too
            os.replace(backup, path)
            os.chmod(path, int(entry["mode"]))  # type: ignore[arg-type]
            atime, mtime = entry["times"]  # type: ignore[misc]
            os.utime(path, ns=(atime, mtime))
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            for folder in entry.get("created_dirs", []):  # type: ignore[union-attr]
                with contextlib.suppress(OSError):
                    os.rmdir(folder)
        restored.append(path)
    return restored


def write_atomic(
    path: Path, data: bytes, *, mode: int | None = None, durable: bool = False
) -> None:
    """Replace ``path`` with ``data`` through a temporary file and a rename (a new inode).

    Args:
        path: destination; its folder must exist.
        data: the new bytes.
        mode: permission bits; default: those of the file being replaced, else 0o644.
        durable: fsync the data before the rename (for the ledger; engine files are covered
            by the journal, as git apply's own writes are).
    """
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".patchbay")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
