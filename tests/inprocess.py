"""The real ``patchbay`` command line, run in this process (no interpreter start per call).

``run_main`` goes through typer, click and :func:`patchbay.cli._run` exactly as the console
script does, with stdin, stdout and stderr swapped by typer's test runner; the click command is
built from the typer app once (building it costs more than most commands). An exception that
escapes (a bug: the console script would print a traceback) is kept in ``Result.crash``.
"""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import typer
from typer.testing import CliRunner

from patchbay.cli import app

_RUNNER = CliRunner()
_COMMAND = typer.main.get_command(app)


@dataclass
class Result:
    code: int
    out: str
    err: str
    crash: str | None = None


def run_main(*args: str | Path, cwd: Path | None = None) -> Result:
    """Run ``patchbay ARGS...`` in-process; returns the exit code and what it printed."""
    old = os.getcwd()
    crash = None
    code: object = 0
    try:
        if cwd is not None:
            os.chdir(cwd)
        with _RUNNER.isolation() as streams:
            try:
                _COMMAND.main(args=[str(a) for a in args], prog_name="patchbay")
            except SystemExit as exc:
                code = exc.code
            except Exception:
                crash = traceback.format_exc()
                sys.stderr.write(crash)
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            out, err = streams[0].getvalue(), streams[1].getvalue()
    finally:
        os.chdir(old)
    code = 0 if code is None else code if isinstance(code, int) else 1
    return Result(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), crash)
