"""A command patch's processes never outlive the run: timeout, SIGINT, SIGTERM, SIGKILL.

Each test runs the real ``patchbay`` console script on a real engine environment. The command
starts a background writer that records its pid and waits for a ``go`` file before it appends
to an engine file; the test stops patchbay, checks the writer is gone, then creates ``go`` and
checks no engine file changed (a surviving writer would have written by then).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import PATCHBAY, Engine, diff_patch, run_cli, snapshot, write_patchset


def _writer_patchset(tmp_path: Path, engine: Engine, *, timeout: float = 60) -> Path:
    text = (engine.pkg / "worker.py").read_text()
    late = tmp_path / "go"
    pidfile = tmp_path / "writer.pid"
    script = (
        f"(sh -c 'echo $$ > {pidfile}.tmp && mv {pidfile}.tmp {pidfile}; "
        f"while [ ! -e {late} ]; do sleep 0.05; done; "
        "echo LATE >> demo_engine/worker.py') & wait; echo ok > demo_engine/built.txt"
    )
    return write_patchset(
        tmp_path / "ps",
        [
            {"id": "w", "kind": "diff", "file": "w.patch"},
            {
                "id": "build",
                "kind": "command",
                "after": ["w"],
                "argv": ["/bin/sh", "-c", script],
                "timeout": timeout,
            },
        ],
        files={"w.patch": diff_patch("demo_engine/worker.py", text, text + "# patched\n")},
    )


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its reaper is not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z"


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)


def _assert_nothing_left(tmp_path: Path, engine: Engine, before: object) -> None:
    pid = int((tmp_path / "writer.pid").read_text())
    assert not _running(pid), "the command's background process survived the run"
    (tmp_path / "go").touch()
    time.sleep(0.5)  # a surviving writer would append now
    assert snapshot(engine.site) == before


def test_a_timed_out_command_leaves_no_process_behind(tmp_path: Path, engine: Engine) -> None:
    ps = _writer_patchset(tmp_path, engine, timeout=1)
    before = snapshot(engine.site)
    res = run_cli("apply", ps, "--python", engine.python, "--quiet")
    assert res.code == 1
    assert "command timed out after 1 s; its process group was killed" in res.err
    assert len(res.err.strip().splitlines()) == 1
    _assert_nothing_left(tmp_path, engine, before)


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [
        (signal.SIGINT, 130, "interrupted"),
        (signal.SIGTERM, 143, "terminated by SIGTERM"),
        (signal.SIGKILL, -9, None),
    ],
)
def test_a_stopped_run_kills_its_command_group(
    tmp_path: Path, engine: Engine, signum: int, code: int, said: str | None
) -> None:
    ps = _writer_patchset(tmp_path, engine)
    before = snapshot(engine.site)
    proc = subprocess.Popen(
        [str(PATCHBAY), "apply", str(ps), "--python", str(engine.python), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: a shell without job control starts background jobs with SIGINT
        # ignored, and the test suite may run under one (python keeps an ignored SIGINT)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    _wait_for(tmp_path / "writer.pid", proc)
    proc.send_signal(signum)
    _out, err = proc.communicate()
    assert proc.returncode == code, err
    if said is not None:
        assert err.startswith(f"patchbay: error: {said}; every file patchbay journaled was")
        assert "not what command build wrote outside its declared output" in err
        assert len(err.strip().splitlines()) == 1
        _assert_nothing_left(tmp_path, engine, before)
        return
    # SIGKILL: no handler ran; the guard saw its control pipe close and killed the group
    pid = int((tmp_path / "writer.pid").read_text())
    deadline = time.monotonic() + 30
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid)
    (tmp_path / "go").touch()
    time.sleep(0.5)
    assert "LATE" not in (engine.pkg / "worker.py").read_text()
    res = run_cli("revert", ps, "--python", engine.python)  # the next run recovers the journal
    assert res.code == 0, res.err
    assert snapshot(engine.site) == before


def test_a_failing_command_does_not_claim_its_own_writes_were_undone(
    tmp_path: Path, engine: Engine
) -> None:
    text = (engine.pkg / "worker.py").read_text()
    ps = write_patchset(
        tmp_path / "ps",
        [
            {"id": "w", "kind": "diff", "file": "w.patch"},
            {
                "id": "build",
                "kind": "command",
                "after": ["w"],
                "argv": ["/bin/sh", "-c", "echo stray > demo_engine/stray.txt; exit 4"],
            },
        ],
        files={"w.patch": diff_patch("demo_engine/worker.py", text, text + "# patched\n")},
    )
    res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 1
    assert "command exited with status 4" in res.err
    assert "every file this run touched was restored" not in res.err
    assert (
        "every file patchbay journaled was restored, but not what command build wrote outside "
        "its declared output (its remove paths come back as they were, but with anything it "
        "added in them) (patchbay does not track it)"
    ) in res.err
    assert (engine.pkg / "worker.py").read_text() == text
    assert (engine.pkg / "stray.txt").exists()  # the honest part: it is still there


def test_a_command_killed_by_a_signal_is_named(tmp_path: Path, engine: Engine) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "build",
                "kind": "command",
                "argv": ["/bin/sh", "-c", "kill -KILL $$"],
                "output": "demo_engine/built.txt",
            }
        ],
    )
    res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 1
    assert "command was killed by SIGKILL" in res.err
    assert os.path.exists(engine.pkg) and not (engine.pkg / "built.txt").exists()
