"""Benchmark ``patchbay audit`` of the real benchmark repository against shellcheck and grep.

What is measured, and why
-------------------------
Issue 21 asks that a cold audit of a real repository cost no more CPU than a static analyser of
the same shell scripts (at most half of ``shellcheck``'s), that a warm audit after one changed
script stay within 3x ``grep -rE`` of the tree, and that another copy of the same files be warm.
The repository is ``../shared/corpus/inferencex-c9d4a624f`` (real scripts no one here wrote,
read where they are; see ``tests/real_labels.py``). patchbay is measured as users install it: a
regular (non-editable) ``pip install --compile`` of this checkout into a fresh virtual
environment. Every child's CPU time is its user + system time from ``os.wait4``.

- **cold**, in ``--repeat`` rounds, each running both: ``patchbay audit ROOT --format json
  --no-cache`` (``PATCHBAY_NO_CACHE=1`` for a CLI without the option) and ``shellcheck -f gcc
  --norc`` given every ``*.sh`` of the corpus in one invocation (patchbay also reads the
  corpus's Python files and Dockerfiles); the per-round ratio patchbay / shellcheck of CPU
  time, target <= 0.5 on the median. Without ``shellcheck`` (Debian: ``apt-get install -y
  shellcheck``) the ratio is skipped with a note.
- **warm after one changed script**: the corpus is copied to a temporary folder and audited
  once to fill the cache (``XDG_CACHE_HOME`` inside the benchmark's folder, never the user's);
  then each round appends a comment line to one shell script (a different one each round, among
  those ``GREP_PATTERN`` matches, so that the audit must analyse it again rather than only gate
  it) and times ``patchbay audit COPY --format json`` against ``grep -rEn GREP_PATTERN COPY``
  (:data:`patchbay.audit.scanner.GREP_PATTERN`): the per-round ratios of CPU and of wall time,
  target <= 3.0 on the median; and, to say how much of it is start-up, the CPU time of
  ``patchbay version`` (the interpreter and the CLI's imports, no audit) in the same rounds.
- **another copy**: right after the fill, a fresh copy in another folder is audited once with
  the same cache; it is warm (the cache is keyed by repository-relative path and content) when
  its CPU time is at most a quarter of the cold audit's median.

Exit 1 when a correctness check fails: every audit exits 0 or 1 with a JSON report, and every
one of them (cold, the fill, each warm round, the other copy) reports the same findings (path,
line, code); shellcheck exits 0 or 1 and grep 0. A MISS alone does not change the exit status.

Run it as ``.venv/bin/python benchmarks/bench_audit_real.py`` from the repository root (about
four minutes on two cores with the default 5 rounds; no network beyond pip's index for the
install); ``--repeat`` sets the rounds, ``--seed`` the choice of scripts, ``--keep`` keeps the
temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import REPO, CheckFailed, install_patchbay, print_round_ratios, print_times

sys.path.insert(0, str(REPO / "tests"))

from patchbay.audit.scanner import GREP_PATTERN
from real_labels import SOURCES

ROOT = SOURCES["inferencex-c9d4a624f"][0]
COLD_TARGET = 0.5
WARM_TARGET = 3.0
WARM_SHARE = 0.25
"""The other copy is warm when its CPU time is at most this share of the cold median."""


@dataclass
class Child:
    """One finished child process: ``cpu`` and ``wall`` in ms, its exit code and output."""

    cpu: float
    wall: float
    code: int
    out: str
    err: str


def run_child(args: list[str], env: dict[str, str], scratch: Path) -> Child:
    """Run ``args`` to its end; its CPU time (user + system) from ``os.wait4``. Its output goes
    to files in ``scratch`` (a pipe could fill up while the child is waited for)."""
    out_path, err_path = scratch / "child.out", scratch / "child.err"
    with out_path.open("w") as out, err_path.open("w") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = (time.perf_counter() - start) * 1000.0
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return Child(
        (usage.ru_utime + usage.ru_stime) * 1000.0,
        wall,
        proc.returncode,
        out_path.read_text(errors="replace"),
        err_path.read_text(errors="replace"),
    )


def findings_of(run: Child, what: str) -> list[tuple[str, int | None, str]]:
    """The findings of an audit's JSON report, sorted; an exit other than 0 or 1, or no
    report, is a failed check."""
    if run.code not in (0, 1):
        raise CheckFailed(f"{what}: patchbay exited {run.code}: {run.err.strip()[-2000:]}")
    try:
        doc = json.loads(run.out)
    except ValueError as exc:
        raise CheckFailed(f"{what}: no JSON report ({exc}): {run.err.strip()[-500:]}") from exc
    return sorted((f["path"], f["line"], f["code"]) for f in doc["findings"])


def changed_scripts(root: Path, rounds: int, seed: int) -> list[str]:
    """``rounds`` shell scripts of ``root`` (relative paths) that :data:`GREP_PATTERN`
    matches, a different one each round while there are enough, chosen with ``seed``."""
    trigger = re.compile(GREP_PATTERN)
    candidates = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*.sh")
        if p.is_file() and trigger.search(p.read_text(errors="replace"))
    )
    if not candidates:
        raise CheckFailed(f"no shell script of {root} matches the scanner's pattern")
    rng = random.Random(seed)
    picked: list[str] = []
    while len(picked) < rounds:
        picked += rng.sample(candidates, min(len(candidates), rounds - len(picked)))
    return picked


def append_comment(script: Path, n: int) -> None:
    """Append a comment line (no statement: the findings cannot change)."""
    data = script.read_bytes()
    sep = b"" if data.endswith(b"\n") or not data else b"\n"
    script.write_bytes(data + sep + f"# bench_audit_real: round {n}\n".encode())


def cold(
    cli: str, no_cache: list[str], env: dict[str, str], work: Path, repeat: int
) -> tuple[list[tuple[str, int | None, str]], float, bool]:
    """The cold rounds; returns the findings, patchbay's median CPU (ms) and whether the
    ratio to shellcheck passed (True when shellcheck is missing)."""
    shellcheck = shutil.which("shellcheck")
    scripts = sorted(str(p) for p in ROOT.rglob("*.sh") if p.is_file())
    audit = [cli, "audit", str(ROOT), "--format", "json", *no_cache]
    print(f"cold: {' '.join(audit[1:])}")
    if shellcheck is None:
        print("  shellcheck is not installed (Debian: apt-get install -y shellcheck): "
              "the CPU ratio is skipped, patchbay alone is timed")  # fmt: skip
    else:
        version = (
            subprocess.run([shellcheck, "--version"], capture_output=True, text=True, check=False)
            .stdout.split("version:")[-1]
            .split()[0]
        )
        print(f"  against shellcheck {version} -f gcc --norc, the {len(scripts)} *.sh files "
              "in one invocation")  # fmt: skip
    times: dict[str, list[float]] = {"patchbay CPU": [], "patchbay wall": []}
    if shellcheck is not None:
        times.update({"shellcheck CPU": [], "shellcheck wall": []})
    first: list[tuple[str, int | None, str]] | None = None
    for n in range(1, repeat + 1):
        run = run_child(audit, env, work)
        found = findings_of(run, f"cold round {n}")
        if first is not None and found != first:
            raise CheckFailed(f"cold round {n}: findings differ from round 1")
        first = found
        times["patchbay CPU"].append(run.cpu)
        times["patchbay wall"].append(run.wall)
        line = f"  round {n}: patchbay {run.cpu / 1000:.2f} s CPU ({run.wall / 1000:.2f} s wall)"
        if shellcheck is not None:
            sc = run_child([shellcheck, "-f", "gcc", "--norc", *scripts], env, work)
            if sc.code not in (0, 1):
                raise CheckFailed(f"shellcheck exited {sc.code}: {sc.err.strip()[-2000:]}")
            times["shellcheck CPU"].append(sc.cpu)
            times["shellcheck wall"].append(sc.wall)
            line += (
                f", shellcheck {sc.cpu / 1000:.2f} s CPU ({sc.wall / 1000:.2f} s wall, "
                f"{len(sc.out.splitlines())} lines), ratio {run.cpu / sc.cpu:.2f}"
            )
        print(line)
    assert first is not None
    print(f"  patchbay: {len(first)} finding(s), every round the same")
    print()
    print_times(times)
    ok = True
    if shellcheck is not None:
        ok = print_round_ratios(
            times,
            [
                ("patchbay / shellcheck, CPU", "patchbay CPU", "shellcheck CPU", COLD_TARGET),
                ("patchbay / shellcheck, wall", "patchbay wall", "shellcheck wall", None),
            ],
        )
    print()
    return first, statistics.median(times["patchbay CPU"]), ok


def warm(
    cli: str,
    env: dict[str, str],
    work: Path,
    repeat: int,
    seed: int,
    want: list[tuple[str, int | None, str]],
    cold_cpu: float,
) -> bool:
    """The other copy, then the warm rounds; returns whether the ratio to grep passed."""
    copy_a, copy_b = work / "copy-a" / ROOT.name, work / "copy-b" / ROOT.name
    shutil.copytree(ROOT, copy_a, symlinks=True)
    fill = run_child([cli, "audit", str(copy_a), "--format", "json"], env, work)
    if findings_of(fill, "the fill of the cache") != want:
        raise CheckFailed("the audit that filled the cache reported other findings than cold")
    print(f"cache filled from {copy_a}: {fill.cpu / 1000:.2f} s CPU "
          f"({fill.wall / 1000:.2f} s wall)")  # fmt: skip

    shutil.copytree(ROOT, copy_b, symlinks=True)
    other = run_child([cli, "audit", str(copy_b), "--format", "json"], env, work)
    if findings_of(other, "the other copy") != want:
        raise CheckFailed("the audit of the other copy reported other findings than cold")
    share = other.cpu / cold_cpu
    verdict = "warm" if share <= WARM_SHARE else "NOT warm"
    print(f"another copy ({copy_b}), same cache: {other.cpu / 1000:.2f} s CPU "
          f"({other.wall / 1000:.2f} s wall), {share:.0%} of the cold median "
          f"{cold_cpu / 1000:.2f} s: {verdict} (warm: <= {WARM_SHARE:.0%}) "
          f"{'PASS' if share <= WARM_SHARE else 'MISS'}")  # fmt: skip
    print()

    audit = [cli, "audit", str(copy_a), "--format", "json"]
    grep = ["grep", "-rEn", GREP_PATTERN, str(copy_a)]
    print(f"warm after one changed script: audit COPY --format json against grep -rEn "
          f"GREP_PATTERN COPY ({len(GREP_PATTERN)} characters)")  # fmt: skip
    times: dict[str, list[float]] = {
        "patchbay CPU": [],
        "patchbay wall": [],
        "grep CPU": [],
        "grep wall": [],
        "patchbay version CPU": [],
    }
    for n, rel in enumerate(changed_scripts(copy_a, repeat, seed), 1):
        append_comment(copy_a / rel, n)
        run = run_child(audit, env, work)
        if findings_of(run, f"warm round {n}") != want:
            raise CheckFailed(f"warm round {n} ({rel} changed): other findings than cold")
        g = run_child(grep, env, work)
        if g.code != 0:
            raise CheckFailed(f"grep exited {g.code}: {g.err.strip()[-500:]}")
        # grep's CPU can be below the clock's resolution; 1 ms keeps the ratio finite
        g.cpu = max(g.cpu, 1.0)
        for name, value in (("patchbay", run), ("grep", g)):
            times[f"{name} CPU"].append(value.cpu)
            times[f"{name} wall"].append(value.wall)
        times["patchbay version CPU"].append(run_child([cli, "version"], env, work).cpu)
        print(f"  round {n}: {rel} changed; patchbay {run.cpu:.0f} ms CPU ({run.wall:.0f} ms "
              f"wall), grep {g.cpu:.0f} ms CPU ({g.wall:.0f} ms wall, "
              f"{len(g.out.splitlines())} lines)")  # fmt: skip
    print()
    print_times(times)
    ok = print_round_ratios(
        times,
        [
            ("patchbay / grep, CPU", "patchbay CPU", "grep CPU", WARM_TARGET),
            ("patchbay / grep, wall", "patchbay wall", "grep wall", WARM_TARGET),
            ("start-up (patchbay version) / grep, CPU", "patchbay version CPU", "grep CPU", None),
        ],
    )
    return ok and share <= WARM_SHARE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds of each part (default 5)")
    parser.add_argument("--seed", type=int, default=21, help="the choice of changed scripts")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("need --repeat >= 1")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if not ROOT.is_dir():
        print(f"skipped: the real corpus is not at {ROOT} (CI and the project's machines have it)")
        return 0
    n_files = sum(1 for p in ROOT.rglob("*") if p.is_file())
    print(f"corpus: {ROOT} ({n_files} files)")
    work = Path(tempfile.mkdtemp(prefix="bench-audit-real-"))
    started = time.perf_counter()
    try:
        cli = str(install_patchbay(work))
        env = {k: v for k, v in os.environ.items() if k != "PATCHBAY_NO_CACHE"}
        env.update({"XDG_CACHE_HOME": str(work / "cache"), "LC_ALL": "C"})
        usage = subprocess.run(
            [cli, "audit", "-h"], capture_output=True, text=True, check=True
        ).stdout
        if "--no-cache" in usage:
            no_cache, cold_env = ["--no-cache"], env
        else:
            no_cache, cold_env = [], {**env, "PATCHBAY_NO_CACHE": "1"}
            print("(this patchbay has no --no-cache: PATCHBAY_NO_CACHE=1 instead)")
        print(f"patchbay: {cli} (a non-editable pip install --compile of {REPO})")
        print()
        want, cold_cpu, cold_ok = cold(cli, no_cache, cold_env, work, args.repeat)
        warm_ok = warm(cli, env, work, args.repeat, args.seed, want, cold_cpu)
        print()
        total = time.perf_counter() - started
        print(f"cold target {'PASS' if cold_ok else 'MISS'}, warm targets "
              f"{'PASS' if warm_ok else 'MISS'}; total {total:.0f} s")  # fmt: skip
        print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
        print("correctness: OK (every audit exited 0 or 1 with the same findings)")
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
