"""The journal's on-disk format and the durable-file primitives a run's writes go through.

A journal folder (``<state dir>/journal``) holds the manifest (:data:`MANIFEST`, one JSON record a
line: a header with the format, :data:`JOURNAL_FORMAT`, the journal's id and the store, then an
entry per saved path, undo records and the ``committed`` mark) and the originals kept in it
(``<n:06d>``); an original kept beside its file is ``.patchbay-<journal id>-<n>`` there, one kept
in a content-addressed store ``<store>/<sha256>``. :func:`_backup_path` derives every such name
from the entry's checked fields, never from a name read from the manifest.

New content is written under a temporary name beside its file (:func:`staging_file`:
``.<name>.<journal id>.patchbay`` while a journal is open, the journal id being 8 random hex
digits) and renamed into place once complete (:func:`write_atomic`); a run killed in between
leaves that file, and recovery removes exactly that name beside every journaled file of the run,
and an in-process rollback the ones the process made and has not renamed yet, so that a file of
the user's of the same shape is never touched. (A journal of format 2 or older did not name its
temporary files by its id: they are found by their shape, as that patchbay did.)

Fault injection (tests only): ``PATCHBAY_TEST_FAULT="kill@<point>[:<n>],fail@<point>[:<n>]"``
kills the process with SIGKILL (or raises an ``OSError``; ``int@``: sends it SIGINT, a Ctrl-C
landing there) the ``n``-th time (default 1) it reaches the named :func:`fault_point`;
``PATCHBAY_TEST_FAULT_LOG=<file>`` appends every point reached, so a sweep can list them.
Neither is read unless set; ``benchmarks/fault_matrix.py`` and ``tests/apply/test_faults.py``
use them.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import signal
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..environment.paths import contained
from ..patterns import pattern

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


def _beside(path: Path, journal_id: str, n: int, folder: str | None = None) -> Path:
    return (path.parent if folder is None else Path(folder)) / f".patchbay-{journal_id}-{n:06d}"


_DIGEST = pattern(r"[0-9a-f]{64}")


def _is_digest(text: object) -> bool:
    return isinstance(text, str) and _DIGEST.fullmatch(text) is not None


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
        if action == "int":  # a Ctrl-C that lands here
            os.kill(os.getpid(), signal.SIGINT)
        if action == "fail":
            raise OSError(errno.EIO, f"injected fault at {name}:{n}")


_FAULT_HITS: dict[str, int] = {}


# a file's new content is written first under ".<name>.<8 hex digits>.patchbay" in its folder;
# the digits are the open journal's id (format 3), else random
_STAGING = pattern(r"\.(?P<name>.+)\.[0-9a-f]{8}\.patchbay")
_STAGING_ID: list[str | None] = [None]  # the id of the journal open in this process
_LIVE_STAGING: set[str] = set()  # temporary files this process made and has not renamed yet


def _release_staging_id(journal_id: str) -> None:
    if _STAGING_ID[0] == journal_id:
        _STAGING_ID[0] = None


def staging_file(path: Path) -> tuple[int, str]:
    """Create the temporary file ``path``'s new content is written to before it is renamed
    into place, in ``path``'s folder, new (``O_EXCL``), mode 0600: while a
    :class:`~patchbay.apply.transaction.Transaction` has its journal open,
    ``.<name>.<journal id>.patchbay``, the one name recovery removes
    (:func:`~patchbay.apply.recovery.recover`) when the run is killed before the rename; else
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
