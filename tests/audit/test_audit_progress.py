"""An audit that runs long shows progress on a terminal, and only there (issue 21, part 5).

The audit's stderr is a real pseudo-terminal (:mod:`pty`); ``PATCHBAY_PROGRESS_AFTER`` sets
the seconds before the line appears (2 by default), so that a test need not be slow to see it.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

SITE = "SITE=$(python3 -c 'import vllm, os; print(os.path.dirname(vllm.__file__))')\n"


def _tree(root: Path) -> None:
    for k in range(6):
        (root / f"launch_{k}.sh").write_text(f'#!/bin/bash\n{SITE}cp f.py "$SITE/f{k}.py"\n')


def _audit_on_a_terminal(root: Path, after: str) -> tuple[int, str]:
    """Run the audit with its stderr on a pseudo-terminal; what the terminal received."""
    master, slave = pty.openpty()
    env = {**os.environ, "PATCHBAY_PROGRESS_AFTER": after, "COLUMNS": "120", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "patchbay", "audit", str(root), "--no-cache"],
        stdout=subprocess.DEVNULL,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    return proc.wait(timeout=60), seen.decode("utf-8", "replace")


def test_progress_shows_files_done_of_total_and_the_current_file(tmp_path: Path) -> None:
    _tree(tmp_path)
    code, seen = _audit_on_a_terminal(tmp_path, after="0")
    assert code == 1  # the six copies are findings
    assert "audit: scripts" in seen
    assert "/6" in seen  # n of m
    assert "launch_" in seen  # the current file


def test_a_short_run_on_a_terminal_shows_no_progress(tmp_path: Path) -> None:
    _tree(tmp_path)
    code, seen = _audit_on_a_terminal(tmp_path, after="3600")
    assert code == 1
    assert "audit: scripts" not in seen


def test_no_progress_off_a_terminal(tmp_path: Path) -> None:
    _tree(tmp_path)
    env = {**os.environ, "PATCHBAY_PROGRESS_AFTER": "0"}
    res = subprocess.run(
        [sys.executable, "-m", "patchbay", "audit", str(tmp_path), "--no-cache"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert res.returncode == 1
    assert "audit: scripts" not in res.stderr
