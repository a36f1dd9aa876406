"""What the benchmarks share: timing, checked commands, the patchbay executable, the tables.

Imported as ``from _common import ...``: a benchmark runs as ``python benchmarks/NAME.py``, so
this folder is first on ``sys.path``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parent.parent
T = TypeVar("T")


class CheckFailed(Exception):
    """A correctness check of a benchmark failed (the run exits 1)."""


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """Wall time of ``fn()`` in ms, and its result."""
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1000.0, result


def run_checked(
    args: list[str], env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command; a non-zero exit is a failed check."""
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    if proc.returncode != 0:
        raise CheckFailed(f"{args[0]} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc


def install_patchbay(work: Path, source_tree: Path = REPO) -> Path:
    """patchbay installed as a user installs it, into a fresh virtual environment under
    ``work``: a regular (non-editable) install of this checkout, bytecode compiled by pip at
    install time, dependencies from the configured index; returns its ``bin/patchbay``.

    The checkout's (``source_tree``, default this one) ``src/``, ``pyproject.toml`` and
    ``README.md`` are copied first, so that the build leaves nothing (``build/``,
    ``*.egg-info``) in the checkout.
    """
    source = work / "patchbay-source"
    shutil.copytree(
        source_tree / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(source_tree / name, source / name)
    venv = work / "patchbay-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    proc = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--compile",
            "--disable-pip-version-check",
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise CheckFailed(f"pip install of patchbay failed: {proc.stderr.strip()[-2000:]}")
    return venv / "bin" / "patchbay"


def find_cli(bench: str) -> str:
    """The ``patchbay`` script of the repository's .venv, else the one next to this Python."""
    for candidate in (
        REPO / ".venv" / "bin" / "patchbay",
        Path(sys.executable).parent / "patchbay",
    ):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("patchbay")
    if found is None:
        sys.exit(f"{bench}: no patchbay executable; run scripts/setup")
    return found


def print_times(times: dict[str, list[float]]) -> dict[str, float]:
    """Print each measurement's median and spread; returns the medians."""
    med = {k: statistics.median(v) for k, v in times.items()}
    width = max(len(k) for k in times)
    print(f"{'measurement':<{width}}  {'median ms':>10}  {'min..max ms':>17}")
    print(f"{'-' * width}  {'-' * 10}  {'-' * 17}")
    for k, v in times.items():
        spread = f"{min(v):.1f}..{max(v):.1f}"
        print(f"{k:<{width}}  {med[k]:>10.1f}  {spread:>17}")
    print()
    return med


def print_ratios(rows: list[tuple[str, float, float]]) -> None:
    """Print ``(name, ratio, target)`` rows with PASS (ratio <= target) or MISS."""
    width = max(len(r[0]) for r in rows)
    print(f"{'ratio':<{width}}  {'value':>6}  {'target':>8}  result")
    print(f"{'-' * width}  {'-' * 6}  {'-' * 8}  ------")
    for name, value, target in rows:
        verdict = "PASS" if value <= target else "MISS"
        print(f"{name:<{width}}  {value:>6.2f}  {'<= ' + format(target, '.1f'):>8}  {verdict}")


def print_round_ratios(
    times: dict[str, list[float]], rows: list[tuple[str, str, str, float | None]]
) -> bool:
    """Print ``(name, measured, baseline, target)`` rows: the ratio ``measured / baseline`` of
    each round (the two were timed in the same round, so load on the machine weighs on both
    alike), its median, min and max, and PASS (median <= target) or MISS. Returns whether
    every row passed (a row with target None is shown without a verdict)."""
    width = max(len(r[0]) for r in rows)
    print(f"{'ratio (per round)':<{width}}  {'median':>6}  {'min..max':>11}  {'target':>7}  result")
    print(f"{'-' * width}  {'-' * 6}  {'-' * 11}  {'-' * 7}  ------")
    ok = True
    for name, measured, baseline, target in rows:
        ratios = [a / b for a, b in zip(times[measured], times[baseline], strict=True)]
        med = statistics.median(ratios)
        spread = f"{min(ratios):.2f}..{max(ratios):.2f}"
        if target is None:
            print(f"{name:<{width}}  {med:>6.2f}  {spread:>11}  {'-':>7}")
            continue
        verdict = "PASS" if med <= target else "MISS"
        ok = ok and med <= target
        goal = f"<= {target:g}"
        print(f"{name:<{width}}  {med:>6.2f}  {spread:>11}  {goal:>7}  {verdict}")
    return ok
