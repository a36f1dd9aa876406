"""Run a command in a process group of its own, and leave no process of it behind.

A command patch may start processes of its own (``cmd & wait``, a build server, a compiler
driver); killing only the process patchbay started would let the rest go on writing into the
engine after a rollback said the files were restored. So every command runs under a small
guard (:mod:`patchbay.apply._group_guard`) that leads a new session and process group, and:

- on a timeout, an interrupt (SIGINT, SIGTERM) or any other exception while it runs, the whole
  group gets SIGTERM, :data:`GRACE_S` seconds to leave, then SIGKILL, and patchbay waits until
  the group is empty before it returns (before any rollback begins);
- when the command exits, whatever it left running in its group is killed the same way;
- when patchbay itself dies (even by SIGKILL, which no handler sees) the kernel closes the
  guard's control pipe and the guard kills the group at once.

A process that leaves the group on purpose (``setsid``, a daemon's double fork) escapes all
of this, as it escapes a shell's job control.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

GUARD = Path(__file__).with_name("_group_guard.py")
# seconds a group has between SIGTERM and SIGKILL
GRACE_S = 2.0
# seconds to wait for a killed group's last processes to be gone (reaped by init)
EMPTY_WAIT_S = 10.0


def run_in_group(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdout: IO[bytes],
    timeout: float | None,
) -> int:
    """Run ``argv`` in its own process group; return its exit status once no process of the
    group is left (negative: killed by that signal, as :class:`subprocess.Popen` reports).

    Args:
        argv: the command (an argument list; ``argv[0]`` is searched in ``env``'s PATH).
        cwd: its working folder.
        env: its whole environment.
        stdout: where its standard output and error go (standard input is ``/dev/null``).
        timeout: seconds before the group is killed; None: no limit.

    Raises:
        OSError: the command could not be started (``FileNotFoundError``,
            ``PermissionError``...); nothing of it runs.
        subprocess.TimeoutExpired: it ran longer than ``timeout``; the group was killed.
        BaseException: whatever interrupted the wait (``KeyboardInterrupt``...), after the
            group was killed.
    """
    import subprocess  # here: the transaction imports this module for signals_held alone

    control_r, control_w = os.pipe()
    status_r, status_w = os.pipe()
    try:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(GUARD), str(control_r), str(status_w), *argv],
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=subprocess.STDOUT,
                pass_fds=(control_r, status_w),
                start_new_session=True,
            )
        finally:
            os.close(control_r)
            os.close(status_w)
        try:
            if not _wait_exit(proc.pid, timeout):
                raise subprocess.TimeoutExpired(argv, timeout or 0)
        finally:
            with signals_held():  # a second Ctrl-C must not leave the group running
                _kill_group(proc)
        failure = os.read(status_r, 64)
        if failure:
            code = int(failure)
            raise OSError(code, os.strerror(code), argv[0])
        return proc.returncode
    finally:
        os.close(status_r)
        os.close(control_w)


def _wait_exit(pid: int, timeout: float | None) -> bool:
    """Wait until ``pid`` (a child) has exited, without reaping it (its pid, which is also its
    group's id, stays reserved); False when ``timeout`` seconds passed first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pidfd = None
    with contextlib.suppress(AttributeError, OSError):  # Linux 5.3+: wake up on the exit
        pidfd = os.pidfd_open(pid)
    try:
        while True:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is not None:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            if pidfd is not None:
                select.select([pidfd], [], [], left)
            else:
                time.sleep(0.02 if left is None else min(0.02, left))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the group while its leader runs, :data:`GRACE_S` to leave, SIGKILL to what
    is left; reap the leader, then wait until the group is empty."""
    pgid = proc.pid
    if not _wait_exit(pgid, 0):
        _signal_group(pgid, signal.SIGTERM)
        _wait_exit(pgid, GRACE_S)
    _signal_group(pgid, signal.SIGKILL)  # the unreaped leader keeps the group id ours
    proc.wait()
    deadline = time.monotonic() + EMPTY_WAIT_S
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs; zombies do not count (in a container whose
    first process reaps nothing, a killed orphan stays a zombie for good)."""
    if not _signal_group(pgid, 0):
        return False
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        # after the command name: state, ppid, pgrp (proc(5))
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the group; False when no process of it is left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member changed its user: nothing more patchbay can do
        return False
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            return False
        raise
    return True


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back for the block (main thread only); they are delivered at
    its end."""
    held = {signal.SIGINT, signal.SIGTERM}
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
