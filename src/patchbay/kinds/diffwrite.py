"""Writing a pending diff's planned results to the target tree, as ``git apply`` leaves it.

The inspection of a diff (:mod:`patchbay.kinds.diff`) holds the exact bytes of every file it
changes, with its hunks at the places patchbay found; this module only puts them on disk,
through the path gate (:meth:`patchbay.environment.tree.Tree.resolve`), one file at a time, each
written in full under a temporary name and renamed into place (a new inode, as git's own writes: the
journal's hard links to the originals stay intact). What git does that a reader of the tree
can see is kept, from git's ``apply.c`` (run in the target root):

- a new file is created with 0666, or 0777 when its mode is ``100755``, less the umask
  (``try_create_file``), its missing folders with 0777 less the umask;
- a deleted file is unlinked, then every folder it left empty, up to but not including the
  target root (``remove_path``, which stops at the folder git runs in);
- a renamed file is created under its new name with the mode the patch gives it, else with the
  executable bit of the old one (git's index modes: only the owner's ``x`` counts), and the old
  name is deleted as above;
- every deletion (and the old name of every rename) is done before any file is written
  (``write_out_results``' two phases), and a new file takes the place of a folder that is
  empty by then (``create_one_file`` removes it): one patch may replace a folder by a file of
  its name, or a file by a folder.

Where patchbay departs from git on purpose: a patched file keeps its own permission bits (a
0444 file stays 0444; git would leave 0644), and only an ``old mode``/``new mode`` change turns
its executable bits on (where it is readable, as ``chmod +x``; a file readable by nobody gets
git's 0777 less the umask) or off.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..apply.journal import fault_point, write_atomic

if TYPE_CHECKING:
    from ..environment.tree import Tree


class FileWrite(NamedTuple):
    """How one pending file patch is written (root-relative paths, checked by the path gate).

    Attributes:
        old: the file's name before the patch (None: a new file).
        new: its name after it (None: deleted; the same as ``old`` when not renamed).
        after: the bytes it then holds (None: deleted).
        mode: the git mode the patch gives it (``new file mode``, or ``new mode`` when it
            differs from ``old mode``), e.g. ``"100755"``; None: the patch does not say.
    """

    old: str | None
    new: str | None
    after: bytes | None
    mode: str | None


def write_results(tree: Tree, target: str, writes: list[FileWrite], umask: int) -> None:
    """Write ``writes`` (file patches of ``target``, in order: each may start from the result
    of one before it) to the tree.

    Args:
        tree: the run's tree (its roots and path gate); every path was journaled before.
        target: the target every path is relative to.
        writes: the file patches' results, in the order the patches come.
        umask: the process's umask (:func:`process_umask`), read once per run.

    Raises:
        OSError: a write failed; its ``filename`` is the real path of the file being written
            (:meth:`Tree.location`, as the engine names the file and its patch), whatever
            step failed (a folder that cannot be made, a temporary file, the rename).
    """
    root = tree.roots[target]
    # git's two phases (write_out_results): first every deletion and the old name of every
    # rename, then every new content, so that a new file may take the place of a folder the
    # deletions emptied, and a folder's file the place of a file deleted
    renamed: dict[int, tuple[int, tuple[int, int]]] = {}  # the old names' bits and owners
    for i, write in enumerate(writes):
        if write.old is None or write.new == write.old:
            continue
        with _naming(tree, target, write.old):
            old = tree.resolve(target, write.old)
            if write.new is not None:  # a rename keeps the old file's bits and owner, as mv
                st = os.stat(old)
                mode = permissions(stat.S_IMODE(st.st_mode), write.mode, umask)
                renamed[i] = (mode, (st.st_uid, st.st_gid))
            _delete(old, root)
    for i, write in enumerate(writes):
        if write.new is None:
            continue
        path = tree.resolve(target, write.new)
        with _naming(tree, target, write.new):
            if write.old == write.new:
                st = os.stat(path)
                mode = permissions(stat.S_IMODE(st.st_mode), write.mode, umask)
                # it keeps its owner too (run as root), as an edit in place does
                _write_file(path, write.after or b"", mode, True, (st.st_uid, st.st_gid))
                continue
            owner = None
            if i in renamed:
                mode, owner = renamed[i]
            else:
                executable = write.mode is not None and bool(int(write.mode, 8) & stat.S_IXUSR)
                mode = (0o777 if executable else 0o666) & ~umask
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)  # a folder emptied before (git's create_one_file removes it)
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_file(path, write.after or b"", mode, False, owner)


def permissions(before: int, mode: str | None, umask: int = 0o022) -> int:
    """The permission bits a patched file gets: its own (``before``, e.g. 0o444), with the
    executable bits turned on where it is readable (as ``chmod +x``) or off, only when the
    patch's git ``mode`` (``"100755"``/``"100644"``, None: not changed) asks for the other
    state than the file is in; never the set-user-ID and set-group-ID bits, which Linux clears
    when an unprivileged process writes such a file (and git, which writes 0644 or 0755,
    drops): patched content, or a file made executable, is no privileged program.

    A file readable by nobody (0000, 0200) has nowhere to turn the bits on: made executable,
    it gets what ``git apply`` leaves, 0777 less ``umask`` (git writes the file anew), so
    that it is executable afterwards as the patch says.
    """
    before &= ~(stat.S_ISUID | stat.S_ISGID)
    if mode is None:
        return before
    executable = bool(int(mode, 8) & 0o111)
    if executable == bool(before & 0o111):
        return before
    if executable:
        if not before & 0o444:
            return 0o777 & ~umask
        return before | ((before & 0o444) >> 2)
    return before & ~0o111


def process_umask() -> int:
    """The process's umask (git creates files and folders through it): read where Linux shows
    it (``/proc/self/status``, no change to the process), else set and put back at once."""
    status = "/proc/self/status"
    with contextlib.suppress(OSError, ValueError, IndexError), open(status, "rb") as fh:
        for line in fh:
            if line.startswith(b"Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_file(
    path: Path, data: bytes, mode: int, replacing: bool, owner: tuple[int, int] | None = None
) -> None:
    """Write ``data`` to ``path`` with permission bits ``mode`` through
    :func:`~patchbay.apply.journal.write_atomic`: complete under a temporary name first, then
    under its own (``replacing``: after the old file is unlinked, as ``git apply`` does), so no
    reader sees a half-written file and the old inode (the journal's hard link to the
    original) is never written to.

    Raises:
        OSError: as :func:`~patchbay.apply.journal.write_atomic`.
    """
    write_atomic(path, data, mode=mode, unlink_first=replacing, owner=owner)


def _delete(path: Path, root: Path) -> None:
    """Unlink ``path`` and then every folder above it it left empty, up to but not including
    ``root`` (git's ``remove_path``, from the folder it runs in)."""
    os.unlink(path)
    folder = path.parent
    while folder != root and len(folder.parts) > len(root.parts):
        try:
            os.rmdir(folder)
        except OSError:  # not empty (or not ours to remove): git stops there too
            break
        folder = folder.parent
    fault_point("file-deleted")


@contextlib.contextmanager
def _naming(tree: Tree, target: str, rel: str) -> Iterator[None]:
    """Give an OSError raised in the block the real path of ``rel`` as its ``filename``: the
    engine names the file and the patch it belongs to from it (a temporary file's or a
    folder's name would name neither)."""
    try:
        yield
    except OSError as exc:
        where = tree.location(target, rel)
        if exc.filename == where:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), where) from None
