"""The lock of an environment's state folder: one ``apply``, ``revert`` or ``adopt`` at a time.

Only a run that writes the state folder takes the lock (an ``apply`` with nothing to do does
not), so taking it is where a state folder this user cannot write is refused, before anything
is changed: the folder itself, the journal folder (an earlier run's journal could be rolled
back but never removed), the saved originals (``blobs/``) and the logs, each named.

An exclusive ``flock(2)`` on ``state_dir/lock``, as ``flock(1)`` and pip's and tox's file locks
take it: the kernel drops it when the holder's descriptor closes, so a killed run never leaves a
stale lock, and the file itself stays (removing it would let two runs lock two files). The
descriptor is not inherited by child processes (PEP 446), so a ``command`` or pip step run under
the lock does not hold it after patchbay exits. POSIX only, as the engines' containers are.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ..environment.paths import unwritable
from ..errors import RefusedError
from .journal import MANIFEST

POLL_SECONDS = 0.05
"""How often a waiting run tries the lock again."""


@contextlib.contextmanager
def state_lock(state_dir: Path, timeout: float) -> Iterator[None]:
    """Hold the environment's lock (``state_dir/lock``, created when missing) for one run.

    Args:
        state_dir: the environment's state folder (created when missing).
        timeout: seconds to wait for another run to release the lock; 0 tries once, a
            negative value waits for as long as it takes.

    Raises:
        RefusedError: another patchbay run holds the lock for longer than ``timeout`` seconds,
            or the state folder cannot be made or written (see :func:`check_writable`), or its
            lock file cannot be opened for writing: one line naming what refused.
    """
    path = state_dir / "lock"
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RefusedError(
            f"the state folder cannot be made ({exc.strerror or exc}): patchbay keeps its "
            "lock, ledger and saved originals there; run as a user who can write there, or "
            "give a --state-dir this user can write",
            file=state_dir,
        ) from None
    check_writable(state_dir)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RefusedError(
            f"the state folder's lock cannot be opened for writing ({exc.strerror or exc}); "
            "make it writable for this user, or run as its owner; nothing was changed",
            file=path,
        ) from None
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if timeout >= 0 else 0))
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RefusedError(
                        "another patchbay run holds the lock of this environment "
                        f"(waited {timeout:g} s)",
                        file=path,
                    ) from None
                time.sleep(POLL_SECONDS)
        yield
    finally:
        os.close(fd)  # releases the lock


def not_entered(state_dir: Path) -> RefusedError:
    """The one-line refusal of a state folder this user cannot look into (no search
    permission): nothing in it, the ledger or a journal, can be read."""
    return RefusedError(
        "the state folder cannot be entered (Permission denied): its ledger and any "
        "journal of an interrupted run cannot be read; run as a user who can, or give "
        "--state-dir; nothing was changed",
        file=state_dir,
    )


WRITTEN = {
    "journal": "the journal folder in the state folder",
    "blobs": "the folder of saved originals in the state folder",
    "logs": "the log folder in the state folder",
}
"""The folders of the state folder a run writes, when they exist, and what they are."""


def check_writable(state_dir: Path) -> None:
    """Refuse a state folder, or one of its :data:`WRITTEN` folders, this user cannot write
    (``os.access``, which also sees a read-only mount and an immutable folder, for root too).

    Raises:
        RefusedError: naming the folder and why (no write permission, a read-only file
            system), with what to do; nothing was changed.
    """
    if os.path.isdir(state_dir) and not os.access(state_dir, os.X_OK):
        raise not_entered(state_dir)
    folders = [(state_dir, "the state folder")]
    folders += [(state_dir / name, what) for name, what in WRITTEN.items()]
    for path, name in folders:
        why = unwritable(path) if path == state_dir or path.is_dir() else None
        if why is None:
            continue
        if path.name == "journal" and (path / MANIFEST).exists():
            name += ", which holds an earlier run's journal to roll back and remove,"
        raise RefusedError(
            f"{name} cannot be written ({why}); make it writable for this user, or run as its "
            "owner; nothing was changed",
            file=path,
        )
