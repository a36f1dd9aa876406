"""The real ``patchbay`` command line, run in this process (no interpreter start per call).

``run_main`` goes through typer and :func:`patchbay.cli._run` exactly as the console script
does (typer's own test runner swaps stdin, stdout and stderr); an exception that escapes (a
bug: the console script would print a traceback) is kept in ``Result.crash``.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from patchbay.cli import app

_RUNNER = CliRunner()


@dataclass
class Result:
    code: int
    out: str
    err: str
    crash: str | None = None


def run_main(*args: str | Path, cwd: Path | None = None) -> Result:
    """Run ``patchbay ARGS...`` in-process; returns the exit code and what it printed."""
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        res = _RUNNER.invoke(app, [str(a) for a in args], prog_name="patchbay", color=False)
    finally:
        os.chdir(old)
    crash = None
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        crash = "".join(traceback.format_exception(*res.exc_info))  # type: ignore[misc]
    return Result(res.exit_code, res.stdout, res.stderr, crash)
