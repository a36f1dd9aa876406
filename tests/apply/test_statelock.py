"""The state folder's lock (``patchbay.apply.statelock``): an exclusive ``flock`` that another
process sees, waits for up to the timeout, refuses past it with the lock file named, and that
no child process keeps after the run."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from patchbay.apply.statelock import state_lock
from patchbay.errors import RefusedError

# holds an exclusive flock on argv[1] until its stdin closes; prints "held" once it has it
HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""
# exit 0 when argv[1] can be locked right now, 1 when another process holds it
TRY = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    sys.exit(1)
"""


def _holder(lock: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def _release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=30)


def test_a_lock_another_process_holds_refuses_with_the_file_named(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    holder = _holder(state / "lock")
    try:
        with pytest.raises(RefusedError) as exc, state_lock(state, 0.2):
            pass
    finally:
        _release(holder)
    assert exc.value.file == str(state / "lock")
    assert exc.value.reason == (
        "another patchbay run holds the lock of this environment (waited 0.2 s)"
    )
    with state_lock(state, 0):  # released: free again
        pass


def test_a_waiting_run_gets_the_lock_once_the_other_releases_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    holder = _holder(state / "lock")
    got: list[bool] = []

    def wait() -> None:
        with state_lock(state, 120):
            got.append(True)

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert got == []  # it waits while the other process holds the lock
    _release(holder)
    waiter.join(timeout=120)
    assert got == [True]


def test_a_child_started_under_the_lock_does_not_keep_it(tmp_path: Path) -> None:
    state = tmp_path / "state"  # created by the lock
    with state_lock(state, 0):
        assert subprocess.run([sys.executable, "-c", TRY, str(state / "lock")]).returncode == 1
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                 stdin=subprocess.PIPE)  # fmt: skip
    try:
        # the run is over, its child lives on (a command step's daemon): the lock is free
        assert subprocess.run([sys.executable, "-c", TRY, str(state / "lock")]).returncode == 0
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    assert (state / "lock").is_file()  # kept: removing it would let two runs lock two files
