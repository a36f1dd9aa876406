"""The full fault matrix: a real ``patchbay apply`` (and ``revert``) killed at every fault point,
and at random moments, on one filesystem and with the state folder on another (/dev/shm).

Run from the repository root as ``.venv/bin/python benchmarks/fault_matrix.py`` (a few minutes
on two cores; ``--timed N`` sets the randomly timed kills of apply per filesystem, default 20,
half as many of revert; ``--seed`` their seed, ``--keep`` keeps the temporary folder). Every
scenario is judged as ``tests/faults.py`` describes (pristine or applied after recovery with a
matching ledger; the next apply, status and revert right; no traceback; no hang). It prints one
line per scenario that went wrong, then the figures: runs, killed, half trees, unrecovered,
tracebacks, hangs; it exits 1 when any of the last four is not zero.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, find_cli

sys.path.insert(0, str(REPO / "tests"))

from faults import (  # tests/ is put on the path just above
    Fixture,
    Outcome,
    kill_faults,
    rollback_faults,
    run_scenario,
)


def _clean_duration(fx: Fixture, work: Path, other_fs: bool, command: str) -> float:
    """Seconds a clean run of ``command`` takes (timed kills fall inside it)."""
    root, state = fx.fresh(work, other_fs=other_fs, applied=command == "revert")
    args = [fx.patchbay, command, str(fx.patchset), "--root", str(root), "--state-dir", str(state)]
    start = time.perf_counter()
    subprocess.run(args, env=fx.environment(), capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if other_fs:
        shutil.rmtree(state, ignore_errors=True)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timed", type=int, default=20, help="random-time kills per filesystem")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="patchbay-faults-"))
    try:
        fx = Fixture.create(tmp / "fixture", find_cli("fault_matrix"))
        shm = Path("/dev/shm")
        layouts = [False]
        if shm.is_dir() and os.stat(shm).st_dev != os.stat(tmp).st_dev:
            layouts.append(True)
        else:
            print("note: /dev/shm is missing or on the same filesystem; one layout only")
        outcomes: list[Outcome] = []
        rng = random.Random(args.seed)
        n = 0
        for other_fs in layouts:
            layout = "state on /dev/shm" if other_fs else "one filesystem"
            for command in ("apply", "revert"):
                where = tmp / f"points-{command}-{other_fs}"
                points = fx.points(where, other_fs=other_fs, command=command)
                faults = kill_faults(points) + rollback_faults(
                    fx, tmp / f"rollback-{command}-{other_fs}", other_fs=other_fs, command=command
                )
                clean = _clean_duration(fx, tmp / f"clean-{command}-{other_fs}", other_fs, command)
                timed = args.timed if command == "apply" else args.timed // 2
                print(f"{layout}, {command}: {len(faults)} fault points, {timed} timed kills")
                delays = [rng.uniform(0.0, clean) for _ in range(timed)]
                for fault, delay in [(f, None) for f in faults] + [("", d) for d in delays]:
                    n += 1
                    work = tmp / f"s{n}"
                    outcomes.append(
                        run_scenario(
                            fx,
                            work,
                            fault=fault,
                            delay=delay,
                            other_fs=other_fs,
                            recover_first=n % 2,
                            command=command,
                        )
                    )
                    shutil.rmtree(work, ignore_errors=True)
        for o in outcomes:
            if not o.ok:
                print(f"FAIL {o.name}: {o.half_tree or o.unrecovered or o.traceback or 'hang'}")
        figures = {
            "runs": len(outcomes),
            "killed": sum(o.killed for o in outcomes),
            "half trees": sum(bool(o.half_tree) for o in outcomes),
            "unrecovered": sum(bool(o.unrecovered) for o in outcomes),
            "tracebacks": sum(bool(o.traceback) for o in outcomes),
            "hangs": sum(o.hang for o in outcomes),
        }
        print(", ".join(f"{k}: {v}" for k, v in figures.items()))
        bad = sum(v for k, v in figures.items() if k not in ("runs", "killed"))
        return 1 if bad else 0
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
