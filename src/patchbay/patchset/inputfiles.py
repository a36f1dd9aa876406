"""Reading the files a patchset consists of: ``patchset.yaml``, patch files, vendored diffs,
``patchbay.lock``. One function, so every kind gets the same checks.

A file is read only when it is a regular file (a symlink is followed, and its target must be
one) of at most a bounded size: a link to ``/dev/zero`` would never end, a FIFO would block
until a writer comes, a device could be anything. The type is checked with ``stat`` before
opening, the file is opened with ``O_NONBLOCK`` (opening a FIFO then returns at once) and
checked again on the open descriptor, so a file swapped in between is caught too.
"""

from __future__ import annotations

import errno
import os
import stat

from ..errors import InputError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (apply's no-op check)
if TYPE_CHECKING:
    from pathlib import Path

PATCHSET_FILENAMES = ("patchset.yaml", "patchset.yml")  # tried in this order in a folder


def patchset_location(arg: str, repo: str = "") -> str:
    """A PATCHSET argument: a folder holding ``patchset.yaml``, a YAML file, or a bare name
    under ``./patchsets`` (``REPO/patchsets`` with ``repo``; tried when ``arg`` itself is no
    patchset, e.g. ``demo`` beside a ``demo/`` folder of other files). The one rule of every
    command (``report`` too)."""

    def holds(folder: str) -> bool:
        return any(os.path.isfile(os.path.join(folder, n)) for n in PATCHSET_FILENAMES)

    is_patchset = os.path.isfile(arg) or holds(arg)
    named = os.path.join(repo, "patchsets", arg)
    if not is_patchset and "/" not in arg and holds(named):
        return named
    return arg


MAX_PATCH_BYTES = 64 << 20  # a patch file, a vendored diff
MAX_YAML_BYTES = 8 << 20  # patchset.yaml, patchbay.lock

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def patchset_side(folder: str | os.PathLike[str]) -> str:
    """Where a write of a patchset's own files (``rebase --write``) keeps its lock and journal:
    ``.<folder name>.patchbay`` beside the patchset folder (outside it, so that the patchset
    never lists its own journal); see apply/interrupted.py."""
    folder = os.path.abspath(folder)
    return os.path.join(os.path.dirname(folder), f".{os.path.basename(folder)}.patchbay")


def _what(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def read_input(
    path: Path,
    *,
    what: str = "file",
    limit: int = MAX_PATCH_BYTES,
    file: str | os.PathLike[str] | None = None,
    line: int | None = None,
    patch_id: str | None = None,
) -> bytes:
    """The bytes of the input file ``path``.

    Args:
        path: the file (a symlink is followed; what it names must be a regular file).
        what: how messages name it, e.g. ``patch file patches/01.patch`` (the message reads
            "<what> not found", "<what> is a FIFO (named pipe), not a regular file", ...).
        limit: the largest size accepted, in bytes.
        file, line, patch_id: where the error points (default: ``path`` itself).

    Raises:
        InputError: missing, not a regular file (a folder, a FIFO, a device, a socket, a link
            to one of them), larger than ``limit``, or unreadable; one line naming it.
    """

    def fail(problem: str) -> InputError:
        if file is None:
            return InputError(f"{what} {problem}", file=path, patch_id=patch_id)
        at = "looked at" if problem.startswith("not found") else "at"
        reason = f"{what} {problem} ({at} {path})"
        return InputError(reason, file=file, line=line, patch_id=patch_id)

    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise fail(f"is a dangling symlink (to {os.readlink(path)})") from None
        raise fail("not found") from None
    except NotADirectoryError:
        raise fail("not found (a parent is a file, not a folder)") from None
    except OSError as exc:
        raise fail(_problem(exc)) from None
    except ValueError:  # a NUL in the path
        raise fail("the path holds a NUL character") from None
    if not stat.S_ISREG(st.st_mode):
        raise fail(f"is {_what(st.st_mode)}, not a regular file")
    if st.st_size > limit:
        raise fail(f"is {_size(st.st_size)}, larger than the {_size(limit)} accepted")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise fail(_problem(exc)) from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):  # swapped after the first look
            raise fail(f"is {_what(st.st_mode)}, not a regular file")
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise fail(_problem(exc)) from None
    if len(data) > limit:
        raise fail(f"is larger than the {_size(limit)} accepted")
    return data


def read_input_text(
    path: Path,
    *,
    what: str = "file",
    limit: int = MAX_YAML_BYTES,
    file: str | os.PathLike[str] | None = None,
    line: int | None = None,
    patch_id: str | None = None,
) -> str:
    """:func:`read_input` decoded as UTF-8.

    Raises:
        InputError: as :func:`read_input`, or the bytes are not UTF-8 (the byte offset named).
    """
    data = read_input(path, what=what, limit=limit, file=file, line=line, patch_id=patch_id)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{what} is not UTF-8 text (byte {exc.start}: {exc.reason})",
            file=file if file is not None else path,
            line=line,
            patch_id=patch_id,
        ) from None


def _problem(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symlink loop"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "cannot be read: permission denied"
    return f"cannot be read: {exc.strerror or exc}"
