"""Verify: every patch of the patchset present in the tree, and every touched ``.py`` compiling
in the engine's own Python."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import msgspec

from ..environment.targets import Environment
from ..environment.tree import NoFileHere, Tree
from ..patchset.model import Patchset
from .ledger import sha256_bytes
from .plan import make_plan
from .results import PatchStatus, Plan

_COMPILE = r"""
import json, sys
errors = {}
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as fh:
            compile(fh.read(), path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, OSError) as exc:
        errors[path] = "%s: %s" % (type(exc).__name__, exc)
print(json.dumps(errors))
"""


class VerifyResult(msgspec.Struct):
    """Outcome of :func:`verify_patchset`."""

    plan: Plan
    problems: list[str]
    compiled: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_patchset(patchset: Patchset, env: Environment) -> VerifyResult:
    """Check that every patch is present and every touched Python file compiles.

    Compilation runs in the engine's interpreter (its Python version decides the syntax), or in
    patchbay's own with ``--root``. A redundant patch counts as present.
    """
    plan = make_plan(patchset, env)
    problems = list(plan.guard.failures)
    for report in plan.reports:
        if report.status not in (PatchStatus.APPLIED, PatchStatus.REDUNDANT):
            problems.append(f"{report.id}: {report.status.value}, not applied")
    tree = Tree(env.roots)
    found: set[str] = set()
    for report in plan.reports:
        for h in report.inspection.hunks:
            if h.file.endswith(".py"):
                # (no file can be under a file: a deleted one whose folder a file replaced)
                with contextlib.suppress(NoFileHere):
                    found.add(str(tree.resolve(report.patch.target, h.file)))
    py_files = [p for p in sorted(found) if os.path.isfile(p)]
    if py_files:
        import subprocess  # verify's compile check only (not the apply path)

        python = env.python or sys.executable
        proc = subprocess.run(
            [python, "-c", _COMPILE, *py_files], capture_output=True, text=True, check=False
        )
        try:
            import json

            errors = json.loads(proc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            errors = {"(interpreter)": proc.stderr.strip() or "compile check failed"}
        problems.extend(f"{path}: does not compile: {msg}" for path, msg in errors.items())
    return VerifyResult(plan, problems, py_files)


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    return sha256_bytes(path.read_bytes())
