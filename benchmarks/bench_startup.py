"""Benchmark patchbay's start-up, as a user installs it, against a bare interpreter start.

What is measured, and why
-------------------------
Every small run pays the start-up before any work: ``patchbay --help``, ``--version``, a
usage error, ``validate``. patchbay is installed as users install it (a regular, non-editable
install with bytecode compiled, into a fresh virtual environment: ``_common.install_patchbay``)
and each command is timed, in rounds (one run of each per round, so that other load on the
machine weighs on all alike), against ``VENV/bin/python -c pass`` of the same environment.
Printed: the median (and min..max) of each, and the ratios of the medians to ``python -c pass``
(target for ``--help``: <= 4x).

It also checks the import graph of each command (exit 1 when a check fails): ``--help``,
``--version``, ``COMMAND -h``, a usage error and ``completion bash`` import neither pydantic,
rich, typer, click, GitPython, PyYAML nor the patch kinds; ``validate`` imports no rich, no
GitPython and no engine probe; ``validate`` and a cold ``apply --root`` of a diff-only
patchset (a generated tree of 200 files, 5 diffs) import none of pydantic (not a dependency
any more), packaging (loaded for pins only), filelock (the state lock is ``flock``), rich (off a
terminal), GitPython, requests, subprocess (patchbay writes diffs itself, and a run with
``--root`` probes no interpreter) and dataclasses (the records on that path are msgspec Structs:
a dataclass costs about 0.8 ms to create at import, a Struct a few microseconds).

Run it as ``.venv/bin/python benchmarks/bench_startup.py`` from the repository root (about a
minute, most of it the install; the install's dependencies come from the configured index).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import (
    REPO,
    CheckFailed,
    install_patchbay,
    print_round_ratios,
    print_times,
    run_checked,
    timed,
)
from _generate import build_patches, build_tree

HELP_TARGET = 4.0
HEAVY = (
    "pydantic",
    "rich",
    "typer",
    "click",
    "git",
    "yaml",
    "patchbay.kinds",
    "patchbay.patchset.model",
)
# what validate and a cold apply of a patchset of diffs never need (off a terminal)
NOT_FOR_DIFFS = (
    "pydantic", "packaging", "filelock", "rich", "git", "requests", "dataclasses", "subprocess"
)  # fmt: skip

# which modules a command line imports, printed as JSON by the interpreter of the install
_IMPORTS = r"""
import contextlib, io, json, sys
from patchbay.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def imported(python: Path, args: list[str], env: dict[str, str]) -> set[str]:
    """Top-level names (and patchbay's modules) imported by ``patchbay ARGS``."""
    proc = run_checked([str(python), "-c", _IMPORTS, *args], env)
    names = json.loads(proc.stdout.strip().splitlines()[-1])
    return {n for n in names}


def heavy_in(modules: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(f for f in forbidden if any(m == f or m.startswith(f + ".") for m in modules))


def _diff_only(folder: Path) -> tuple[Path, Path]:
    """A generated package tree and a patchset of diffs on it (``_generate``, as bench_apply
    makes them, smaller): returns (tree, patchset folder)."""
    rng = random.Random(7)
    tree = folder / "tree"
    modules = build_tree(tree, 200, rng)
    build_patches(tree, folder / "patchset", modules, 5, rng)
    return tree, folder / "patchset"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="rounds (median)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument(
        "--source",
        type=Path,
        default=REPO,
        help="the checkout to install (default: this one; another gives a before/after)",
    )
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="patchbay-startup-"))
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": str(work)}
    problems: list[str] = []
    try:
        cli = install_patchbay(work, args.source)
        python = cli.parent / "python"
        demo = str(REPO / "patchsets" / "demo")
        runs = {
            "python -c pass": [str(python), "-c", "pass"],
            "patchbay --version": [str(cli), "--version"],
            "patchbay --help": [str(cli), "--help"],
            "patchbay apply -h": [str(cli), "apply", "-h"],
            "patchbay (usage error)": [str(cli), "apply"],
            "patchbay validate demo": [str(cli), "validate", demo],
        }
        for cmd in runs.values():  # warm-up: page cache
            subprocess.run(cmd, capture_output=True, env=env, check=False)
        times: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(args.repeat):
            for name, cmd in runs.items():
                ms, proc = timed(
                    lambda c=cmd: subprocess.run(c, capture_output=True, env=env, check=False)
                )
                times[name].append(ms)
                expected = 2 if "usage" in name else 0
                if proc.returncode != expected:
                    problems.append(f"{name} exited {proc.returncode}: {proc.stderr[-300:]!r}")
        print(
            f"patchbay start-up benchmark: non-editable install in {work / 'patchbay-venv'}; "
            f"median of {args.repeat} rounds (min..max)"
        )
        print()
        print_times(times)
        print_round_ratios(
            times,
            [
                (f"{name} / python -c pass", name, "python -c pass",
                 HELP_TARGET if "help" in name else None)
                for name in runs
                if name != "python -c pass"
            ],
        )  # fmt: skip
        fastest = min(times["patchbay --help"]) / min(times["python -c pass"])
        print(f"\nfastest runs: --help / python -c pass = {fastest:.2f}")
        spread = {k: statistics.pstdev(v) for k, v in times.items()}
        print(
            "(standard deviation ms: " + ", ".join(f"{k} {v:.1f}" for k, v in spread.items()) + ")"
        )

        light = [
            ["--help"],
            ["--version"],
            ["apply", "-h"],
            ["status", "-h"],
            ["apply"],
            ["completion", "bash"],
        ]
        for cmd in light:
            found = heavy_in(imported(python, cmd, env), HEAVY)
            if found:
                problems.append(f"patchbay {' '.join(cmd)} imports {', '.join(found)}")
        found = heavy_in(
            imported(python, ["validate", demo], env), ("rich", "git", "typer", "click")
        )
        if found:
            problems.append(f"patchbay validate imports {', '.join(found)}")
        tree, diffs = _diff_only(work / "diff-only")
        for cmd in (["validate", str(diffs)], ["apply", str(diffs), "--root", str(tree)]):
            found = heavy_in(imported(python, cmd, env), NOT_FOR_DIFFS)
            if found:
                problems.append(f"patchbay {cmd[0]} of diffs imports {', '.join(found)}")
        if not (tree / ".patchbay").is_dir():
            problems.append("the cold apply of the diff-only patchset wrote no ledger")
        if problems:
            print("\ncorrectness: FAILED", file=sys.stderr)
            for p in problems:
                print(f"  {p}", file=sys.stderr)
            return 1
        print(
            "correctness: OK (every run exited as expected; --help, --version, -h, a usage "
            "error and completion import none of " + ", ".join(HEAVY) + "; validate imports "
            "no rich or GitPython; validate and a cold apply of diffs import none of "
            + ", ".join(NOT_FOR_DIFFS)
            + ")"
        )
        return 0
    except CheckFailed as exc:
        print(f"correctness: FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
