"""The lock of an environment's state folder: one ``apply``, ``revert`` or ``adopt`` at a time.

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

from .errors import RefusedError

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
        RefusedError: another patchbay run holds the lock for longer than ``timeout`` seconds.
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
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
