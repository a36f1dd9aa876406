"""The real ``patchbay`` command line, run in this process (no interpreter start per call).

``run_main`` goes through :func:`patchbay.cli.main` exactly as the console script does, with
stdout and stderr swapped for buffers (neither is a terminal, as in CI). An exception that
escapes (a bug: :func:`patchbay.cli.main` prints its traceback and returns
:data:`patchbay.cli.entry.INTERNAL_ERROR`) is kept in ``Result.crash`` (what it printed on stderr).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from patchbay.cli.entry import INTERNAL_ERROR, main


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
    out, err = io.StringIO(), io.StringIO()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:
                code = exc.code
            except Exception:
                crash = traceback.format_exc()
                sys.stderr.write(crash)
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
    finally:
        os.chdir(old)
    code = 0 if code is None else code if isinstance(code, int) else 1
    if crash is None and code == INTERNAL_ERROR:
        crash = err.getvalue()
    return Result(code, out.getvalue(), err.getvalue(), crash)
