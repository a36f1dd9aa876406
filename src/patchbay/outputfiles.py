"""Checking the output paths a user names (``-o FILE``, ``--out DIR``, ``--record FILE``...)
before a command does any work, so a path that cannot be written is one line and exit 2, not
a traceback after the work (``NotADirectoryError``, ``FileExistsError``, ``IsADirectoryError``).

Each error names the option as the user gave it (``option``), the path, and the problem:

- ``OPTION cannot be created: P is not a folder``: some existing ancestor of the path is a file;
- ``OPTION names a folder, not a file`` / ``OPTION names a file, not a folder``;
- ``OPTION names something that is not a regular file`` (a FIFO or a device would block or
  never end);
- ``OPTION cannot be written: <reason>``: the nearest existing folder is not writable.

Nothing is created by a check: a refused command leaves the disk as it was.

The rule of every result file (``audit -o``, ``report -o``, ``waiver new -o``, the
``--record`` of ``apply``/``status``/``verify``): it is checked by :func:`check_output_file`
before the command's work, and written by :func:`write_output_file` after it, which creates the
missing folders above it (as ``mkdir -p``) and replaces the file in one rename.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import InputError


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (``lexists``: a dangling link counts)."""
    here = Path(os.path.abspath(path))
    while not os.path.lexists(here) and here != here.parent:
        here = here.parent
    return here


def _check_ancestors(path: Path, option: str) -> Path:
    """Refuse a path under a file; return the nearest existing folder above ``path``."""
    parent = _nearest_existing(Path(os.path.abspath(path)).parent)
    if not parent.is_dir():
        raise InputError(f"{option} cannot be created: {parent} is not a folder", file=path)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{option} cannot be written: {parent} is not writable", file=path)
    return parent


def check_output_file(path: Path, option: str) -> None:
    """Make sure a file can be written at ``path`` (its folders created as needed).

    Args:
        path: the file the user named; it may exist (whether replacing it is allowed, e.g.
            without ``--force``, is the caller's rule).
        option: the option as the user gave it, for the message (``-o``, ``--record``).

    Raises:
        InputError: (exit 2) an ancestor is a file, the path is a folder or not a regular
            file, or the nearest existing folder is not writable.
    """
    if os.path.isdir(path):
        raise InputError(f"{option} names a folder, not a file", file=path)
    if os.path.lexists(path) and not os.path.isfile(path):
        if os.path.islink(path) and not os.path.exists(path):
            raise InputError(f"{option} names a dangling symbolic link", file=path)
        raise InputError(f"{option} names something that is not a regular file", file=path)
    _check_ancestors(path, option)


def write_output_file(path: Path, data: str | bytes) -> None:
    """Write a result file the user named (checked by :func:`check_output_file` before the
    work): the missing folders above it are created, and the file is replaced through a
    temporary file and a rename (a reader never sees half of it); ``str`` is written as UTF-8
    (its file names made printable by :func:`patchbay.printable.printable`).

    Raises:
        OSError: the folder or the file could not be written (the caller names the option).
    """
    from .apply.journal import write_atomic
    from .printable import printable

    if isinstance(data, str):
        data = printable(data).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, mode=0o644)


def check_output_folder(path: Path, option: str, *, exist_ok: bool = True) -> None:
    """Make sure a folder can be created (or written into) at ``path``.

    Args:
        path: the folder the user named.
        option: the option as the user gave it, for the message (``--out``, ``OUT``).
        exist_ok: an existing folder is fine (False: refuse it; whether its content may be
            replaced is the caller's rule otherwise).

    Raises:
        InputError: (exit 2) the path or an ancestor is a file, the folder exists and
            ``exist_ok`` is false, or it cannot be written.
    """
    if os.path.lexists(path) and not os.path.isdir(path):
        raise InputError(f"{option} names a file, not a folder", file=path)
    if os.path.isdir(path):
        if not exist_ok:
            raise InputError(f"{option} already exists", file=path)
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError(f"{option} cannot be written: {path} is not writable", file=path)
        return
    _check_ancestors(path, option)


def check_input_folder(path: Path, option: str) -> None:
    """Make sure a folder the user named as input exists and is a folder.

    Raises:
        InputError: (exit 2) it does not exist, or is not a folder.
    """
    if not os.path.exists(path):
        raise InputError(f"{option} names a folder that does not exist", file=path)
    if not os.path.isdir(path):
        raise InputError(f"{option} names a file, not a folder", file=path)
