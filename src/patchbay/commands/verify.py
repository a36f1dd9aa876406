"""``patchbay verify``: every patch present and every touched Python file compiles."""

from __future__ import annotations

from pathlib import Path

from ..engine import verify_patchset
from .common import console, environment, err_console, load, print_json


def run(
    patchset_arg: str,
    *,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    as_json: bool,
) -> int:
    """Exit 0 when verified, 1 otherwise (each problem printed on one line)."""
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, state_dir)
    result = verify_patchset(patchset, env)
    if as_json:
        print_json({"ok": result.ok, "problems": result.problems, "compiled": result.compiled})
    elif result.ok:
        console.print(
            f"verified: {len(result.plan.reports)} patch(es) present, "
            f"{len(result.compiled)} Python file(s) compile"
        )
    else:
        for problem in result.problems:
            err_console.print(f"patchbay: verify: {problem}")
    return 0 if result.ok else 1
