"""Benchmark ``patchbay apply`` against the shell scripts it replaces, on a large package tree.

What is measured, and why
-------------------------
patchbay replaces patch scripts of the form ``grep -q MARKER FILE || git apply PATCH`` with a
declarative patchset. It does more than those scripts (it classifies every hunk by content,
checks every patch before writing, journals every write, records a ledger), so it should not be
much slower than a plain ``git apply`` loop on a cold tree, and a re-run on an applied tree (the
common case in a container entrypoint) should be no slower than the grep-marker loop.

In a temporary folder the benchmark generates a package ``bigengine`` of ``--files`` files
(nested subpackages, 40-80 lines of Python each), ``--patches`` unified diffs (each changing 1-2
files that no other patch touches, with 1-3 hunks of 3 context lines, and adding a unique marker
comment ``# PATCHBAY-BENCH-MARKER-NNN`` for the grep baseline) and a schema-1 patchset naming
them. It then times, each ``--repeat`` times on a fresh copy of the pristine tree (the copy is
not timed), and reports the median:

- ``patchbay in-process``: ``load_patchset`` + ``resolve_environment(root=...)`` +
  ``apply_patchset``, cold (applies everything) and as a no-op re-run on the applied tree;
- ``patchbay CLI``: ``patchbay apply PATCHSET --root TREE``, cold and no-op (wall time,
  including interpreter start-up), of a regular (non-editable) install of this checkout with
  bytecode compiled, in a fresh virtual environment, as users install it;
- ``grep-loop``: one bash script running ``grep -qF MARKER FILE || git apply -p1 PATCH`` per
  patch, cold (all patches applied) and re-run (every grep hits);
- ``git-apply-loop``: one bash script running ``git apply -p1 PATCH`` per patch, cold;
- the start-up floor, which no Python CLI of a YAML patchset gets under: the CLI's own
  interpreter running ``-c pass``, and ``-c "import yaml, msgspec"`` (the two libraries every
  patchbay run that reads a patchset needs: its parser and its record types), no work;
  and ``_floor_applier.py`` in that interpreter: the least an all-or-nothing applier of the
  YAML patchset does (parse, apply each hunk at its stated line, keep each original in a
  journal with one ``fsync``, rename each new file into place, write a ledger), with none of
  patchbay's checks. Its tree is compared with git's like the others.

The ratios printed are patchbay cold / git-apply-loop (target <= 1.5) and patchbay no-op /
grep-loop re-run (target <= 1.0), in-process and through the CLI; the floor / git-apply-loop
rows (no target) tell how much of the CLI's ratio is spent before patchbay runs at all, and how
much any journaled Python applier spends on this machine's filesystem.

The run also checks correctness and exits 1 when a check fails: after each tool's cold apply
the tree must equal the tree the bare ``git apply`` loop leaves (bytes of every touched file,
and the same set of files), and a patchbay no-op must report nothing to do and rewrite nothing
(touched files and the ledger keep their inode and mtime).

Run it as ``.venv/bin/python benchmarks/bench_apply.py`` from the repository root; no network.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import (
    CheckFailed,
    install_patchbay,
    print_round_ratios,
    print_times,
    run_checked,
    timed,
)
from _generate import PACKAGE, BenchPatch, build_patches, build_tree

from patchbay.apply.engine import apply_patchset
from patchbay.apply.results import ApplyResult
from patchbay.environment.targets import resolve_environment
from patchbay.errors import PatchbayError
from patchbay.patchset.loading import load_patchset

REPO = Path(__file__).resolve().parents[1]
COLD_TARGET = 1.5
BUNDLE_TARGET = 0.8  # issue 26: a cold apply from a bundle's compiled plan
BUNDLE_COLD = "patchbay CLI cold apply from a bundle"
NOOP_TARGET = 1.0
STATUS_TARGET = 1.0  # issue 26: status reads what the no-op reads
# status again on the same applied tree: the output kept for its verified identity (as the
# no-op is timed on its re-run)
STATUS_AGAIN = "patchbay CLI status again (kept output)"
FLOOR_PASS = "floor: CLI's python -c pass"
FLOOR_IMPORTS = "floor: CLI's python -c 'import yaml, msgspec'"
FLOOR_APPLIER = "floor: minimal journaled applier, no checks"
FLOOR_SCRIPT = Path(__file__).resolve().parent / "_floor_applier.py"

BASH_GREP_LOOP = r"""set -eu
cd "$1"
while IFS=$'\t' read -r marker file patch; do
  grep -qF -- "$marker" "$file" || git apply -p1 "$patch"
done < "$2"
"""

BASH_GIT_LOOP = r"""set -eu
cd "$1"
for patch in "$2"/*.patch; do
  git apply -p1 "$patch"
done
"""


# -- measuring ----------------------------------------------------------------------------------


def patchbay_in_process(patchset_dir: Path, tree: Path, state_dir: Path) -> ApplyResult:
    """The three library calls an apply makes."""
    patchset = load_patchset(patchset_dir)
    env = resolve_environment(patchset, root=tree, state_dir=state_dir)
    return apply_patchset(patchset, env)


def signature(tree: Path, files: list[str]) -> dict[str, tuple[int, int]]:
    """(inode, mtime) of ``files``: a rewrite changes at least one of them."""
    out = {}
    for rel in files:
        st = os.stat(tree / rel)
        out[rel] = (st.st_ino, st.st_mtime_ns)
    return out


def listing(tree: Path) -> set[str]:
    """Every file under the package (state folders such as ``.patchbay`` are outside it)."""
    return {str(p.relative_to(tree)) for p in (tree / PACKAGE).rglob("*") if not p.is_dir()}


def compare_trees(name: str, tree: Path, reference: Path, touched: list[str]) -> list[str]:
    """Differences between ``tree`` (after ``name``) and the git-apply-loop tree."""
    problems = []
    for rel in touched:
        if (tree / rel).read_bytes() != (reference / rel).read_bytes():
            problems.append(f"{name}: {rel} differs from the git apply result")
    extra, missing = listing(tree) - listing(reference), listing(reference) - listing(tree)
    if extra:
        problems.append(f"{name}: files git apply did not leave: {sorted(extra)[:5]}")
    if missing:
        problems.append(f"{name}: files missing: {sorted(missing)[:5]}")
    return problems


@dataclass
class Bench:
    """The generated inputs and where to put working copies."""

    work: Path
    pristine: Path
    patchset: Path
    patches: list[BenchPatch]
    cli: str
    env: dict[str, str]
    copies: int = 0

    @property
    def touched(self) -> list[str]:
        return [rel for bp in self.patches for rel in bp.touched]

    @property
    def python(self) -> str:
        """The interpreter the CLI runs on: its console script's ``#!`` line (pip writes
        the environment's python there), else this one."""
        with open(self.cli, "rb") as fh:
            first = fh.readline()
        if first.startswith(b"#!") and b" " not in first.strip():
            return first[2:].strip().decode()
        return sys.executable

    def fresh_tree(self, label: str) -> Path:
        """An untimed copy of the pristine tree, flushed to disk.

        Without the flush, the copy's 5,000 dirty files would be written back during the next
        measurement, and an ``fsync`` there (patchbay's journal) would wait for them.
        """
        self.copies += 1
        dest = self.work / f"tree-{label}-{self.copies}"
        shutil.copytree(self.pristine, dest, symlinks=True)
        os.sync()
        return dest


def measure(bench: Bench, repeat: int) -> tuple[dict[str, list[float]], list[str]]:
    """Every measurement ``repeat`` times; the timings (ms) and failed checks."""
    times: dict[str, list[float]] = {
        k: []
        for k in (
            "patchbay in-process cold apply",
            "patchbay in-process no-op re-run",
            "patchbay CLI cold apply",
            "patchbay CLI no-op re-run",
            "patchbay CLI status (applied tree)",
            STATUS_AGAIN,
            BUNDLE_COLD,
            "grep-loop cold (applies all)",
            "grep-loop re-run (all greps hit)",
            "git-apply-loop cold",
            FLOOR_PASS,
            FLOOR_IMPORTS,
            FLOOR_APPLIER,
        )
    }
    problems: list[str] = []
    n = len(bench.patches)
    manifest = bench.work / "grep-loop.tsv"
    manifest.write_text(
        "".join(f"{bp.marker}\t{bp.touched[0]}\t{bp.file}\n" for bp in bench.patches)
    )
    patch_dir = str(bench.patchset / "patches")
    pristine_sig = signature(bench.pristine, bench.touched)

    # warm-up (untimed): page cache, the git binary
    warm = bench.fresh_tree("warm")
    patchbay_in_process(bench.patchset, warm, bench.work / "state-warm")
    shutil.rmtree(warm)
    warm = bench.fresh_tree("warm")
    run_checked(["bash", "-c", BASH_GIT_LOOP, "bench", str(warm), patch_dir], bench.env)
    shutil.rmtree(warm)

    # the bundle a container would be given (untimed): made on the pristine tree
    bundle = bench.work / "bundle"
    if not bundle.exists():
        made = run_checked(
            [bench.cli, "bundle", str(bench.patchset), str(bundle), "--root", str(bench.pristine),
             "--without-patchbay"],
            bench.env,
        )  # fmt: skip
        if f"compiled plan: {n} of {n}" not in made.stdout:
            problems.append(f"bundle said: {made.stdout.strip()[-300:]}")

    kept: dict[str, Path] = {}
    for rep in range(repeat):
        # git apply loop first: its tree is the reference for the others
        tree = bench.fresh_tree("git")
        ms, _ = timed(
            lambda t=tree: run_checked(
                ["bash", "-c", BASH_GIT_LOOP, "bench", str(t), patch_dir], bench.env
            )
        )
        times["git-apply-loop cold"].append(ms)
        kept.setdefault("git-apply-loop", tree)

        tree = bench.fresh_tree("grep")
        args = ["bash", "-c", BASH_GREP_LOOP, "bench", str(tree), str(manifest)]
        ms, _ = timed(lambda a=args: run_checked(a, bench.env))
        times["grep-loop cold (applies all)"].append(ms)
        ms, _ = timed(lambda a=args: run_checked(a, bench.env))
        times["grep-loop re-run (all greps hit)"].append(ms)
        kept.setdefault("grep-loop", tree)

        tree = bench.fresh_tree("inproc")
        state = bench.work / f"state-inproc-{rep}"
        ms, result = timed(lambda t=tree, s=state: patchbay_in_process(bench.patchset, t, s))
        times["patchbay in-process cold apply"].append(ms)
        if len(result.applied) != n:
            problems.append(f"in-process cold apply applied {len(result.applied)} of {n}")
        if (state / "journal").exists():
            problems.append("in-process cold apply left its journal behind")
        before = signature(tree, bench.touched)
        ledger = state / "ledger.json"
        ledger_before = signature(ledger.parent, [ledger.name])
        ms, result = timed(lambda t=tree, s=state: patchbay_in_process(bench.patchset, t, s))
        times["patchbay in-process no-op re-run"].append(ms)
        if not result.nothing_to_do:
            problems.append(f"in-process re-run was not a no-op: applied {result.applied}")
        if signature(tree, bench.touched) != before:
            problems.append("in-process no-op re-run rewrote a patched file")
        if signature(ledger.parent, [ledger.name]) != ledger_before:
            problems.append("in-process no-op re-run rewrote the ledger")
        kept.setdefault("patchbay in-process", tree)

        tree = bench.fresh_tree("cli")
        args = [bench.cli, "apply", str(bench.patchset), "--root", str(tree)]
        ms, proc = timed(lambda a=args: run_checked(a, bench.env))
        times["patchbay CLI cold apply"].append(ms)
        if f"{n} applied" not in proc.stdout:
            problems.append(f"CLI cold apply said: {proc.stdout.strip().splitlines()[-1:]}")
        before = signature(tree, bench.touched)
        ms, proc = timed(lambda a=args: run_checked(a, bench.env))
        times["patchbay CLI no-op re-run"].append(ms)
        if "nothing to do" not in proc.stdout:
            problems.append(f"CLI re-run was not a no-op: {proc.stdout.strip()[-300:]}")
        if signature(tree, bench.touched) != before:
            problems.append("CLI no-op re-run rewrote a patched file")
        args = [bench.cli, "status", str(bench.patchset), "--root", str(tree), "--format", "json"]
        ms, proc = timed(lambda a=args: run_checked(a, bench.env))
        times["patchbay CLI status (applied tree)"].append(ms)
        states = {p["status"] for p in json.loads(proc.stdout)["patches"]}
        if states != {"applied"}:
            problems.append(f"CLI status of the applied tree said: {sorted(states)}")
        first = proc.stdout
        ms, proc = timed(lambda a=args: run_checked(a, bench.env))
        times[STATUS_AGAIN].append(ms)
        if proc.stdout != first:
            problems.append("CLI status again printed other output than the first")
        kept.setdefault("patchbay CLI", tree)

        tree = bench.fresh_tree("bundle")
        args = [bench.cli, "apply", str(bundle / "patchset"), "--root", str(tree), "--bundle",
                str(bundle), "--offline"]  # fmt: skip
        ms, proc = timed(lambda a=args: run_checked(a, bench.env))
        times[BUNDLE_COLD].append(ms)
        if f"{n} applied" not in proc.stdout:
            problems.append(f"CLI apply from the bundle said: {proc.stdout.strip()[-300:]}")
        kept.setdefault("patchbay CLI from a bundle", tree)

        for label, code in ((FLOOR_PASS, "pass"), (FLOOR_IMPORTS, "import yaml, msgspec")):
            ms, _ = timed(lambda c=code: run_checked([bench.python, "-c", c], bench.env))
            times[label].append(ms)
        tree = bench.fresh_tree("floor")
        args = [bench.python, str(FLOOR_SCRIPT), str(bench.patchset), str(tree)]
        ms, _ = timed(lambda a=args: run_checked(a, bench.env))
        times[FLOOR_APPLIER].append(ms)
        kept.setdefault("floor applier", tree)

        for t in bench.work.glob("tree-*"):
            if t not in kept.values():
                shutil.rmtree(t)

    reference = kept["git-apply-loop"]
    if signature(bench.pristine, bench.touched) != pristine_sig:
        problems.append("the pristine tree was modified")
    for rel in bench.touched:
        if (reference / rel).read_bytes() == (bench.pristine / rel).read_bytes():
            problems.append(f"git apply loop left {rel} unchanged")
    for bp in bench.patches:
        if bp.marker not in (reference / bp.touched[0]).read_text():
            problems.append(f"git apply loop: {bp.marker} missing from {bp.touched[0]}")
    for name in ("grep-loop", "patchbay in-process", "patchbay CLI", "patchbay CLI from a bundle",
                 "floor applier"):  # fmt: skip
        problems += compare_trees(name, kept[name], reference, bench.touched)
    return times, problems


def profile(bench: Bench, top: int) -> None:
    """cProfile of one in-process cold apply and one no-op re-run, by cumulative time."""
    tree = bench.fresh_tree("profile")
    state = bench.work / "state-profile"
    for label in ("cold apply", "no-op re-run"):
        prof = cProfile.Profile()
        prof.enable()
        patchbay_in_process(bench.patchset, tree, state)
        prof.disable()
        print(f"\n== cProfile: patchbay in-process {label} (top {top} by cumtime) ==")
        pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(top)
    shutil.rmtree(tree)


def report(times: dict[str, list[float]], bench: Bench, repeat: int) -> None:
    """The table of medians and the target ratios."""
    n_files = len(listing(bench.pristine))
    n_touched = len(bench.touched)
    print(
        f"patchbay apply benchmark: {n_files} files in {PACKAGE}/, {len(bench.patches)} patches "
        f"touching {n_touched} files; median of {repeat} runs (min..max), fresh tree per run"
    )
    print()
    print_times(times)
    noop_base = "grep-loop re-run (all greps hit)"
    print_round_ratios(
        times,
        [
            ("in-process cold / git-apply-loop cold", "patchbay in-process cold apply",
             "git-apply-loop cold", COLD_TARGET),
            ("CLI cold / git-apply-loop cold", "patchbay CLI cold apply", "git-apply-loop cold",
             COLD_TARGET),
            ("CLI cold from a bundle / git-apply-loop cold", BUNDLE_COLD, "git-apply-loop cold",
             BUNDLE_TARGET),
            ("in-process no-op / grep-loop re-run", "patchbay in-process no-op re-run",
             noop_base, NOOP_TARGET),
            ("CLI no-op / grep-loop re-run", "patchbay CLI no-op re-run", noop_base,
             NOOP_TARGET),
            ("CLI status, first / grep-loop re-run", "patchbay CLI status (applied tree)",
             noop_base, None),
            ("CLI status again / grep-loop re-run", STATUS_AGAIN, noop_base, STATUS_TARGET),
            ("floor python -c pass / git-apply-loop cold", FLOOR_PASS, "git-apply-loop cold",
             None),
            ("floor import yaml, msgspec / git-apply-loop cold", FLOOR_IMPORTS,
             "git-apply-loop cold", None),
            ("floor minimal journaled applier / git-apply-loop cold", FLOOR_APPLIER,
             "git-apply-loop cold", None),
        ],
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=5000, help="files in the generated tree")
    parser.add_argument("--patches", type=int, default=50, help="patches in the patchset")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (median)")
    parser.add_argument("--seed", type=int, default=20240601, help="generator seed")
    parser.add_argument(
        "--profile", action="store_true", help="also print a cProfile of the in-process apply"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument(
        "--source",
        type=Path,
        default=REPO,
        help="the checkout to install (default: this one; another gives a before/after)",
    )
    parser.add_argument(
        "--cli",
        help="the patchbay executable to time (default: a fresh non-editable install of this "
        "checkout, as users install it)",
    )
    args = parser.parse_args(argv)
    if args.files < 200 or args.patches < 1 or args.repeat < 1:
        parser.error("need --files >= 200, --patches >= 1, --repeat >= 1")

    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="patchbay-bench-"))
    env = {
        **os.environ,
        "GIT_CEILING_DIRECTORIES": str(work),  # the trees are plain folders, not a repository
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
        "XDG_CACHE_HOME": str(work / "cache"),  # status's kept outputs: this run's own
    }
    try:
        cli = args.cli or str(install_patchbay(work, args.source))
        pristine = work / "pristine"
        started = time.perf_counter()
        modules = build_tree(pristine, args.files, rng)
        patchset = work / "patchset"
        patches = build_patches(pristine, patchset, modules, args.patches, rng)
        bench = Bench(work, pristine, patchset, patches, cli, env)
        generated = time.perf_counter() - started
        times, problems = measure(bench, args.repeat)
        report(times, bench, args.repeat)
        print()
        print(
            f"(generation {generated:.1f} s, total {time.perf_counter() - started:.1f} s; "
            f"patchbay CLI: {bench.cli})"
        )
        if args.profile:
            profile(bench, top=30)
        if problems:
            print("\ncorrectness: FAILED", file=sys.stderr)
            for problem in problems:
                print(f"  {problem}", file=sys.stderr)
            return 1
        print(
            "correctness: OK (every tool's cold apply left the git-apply-loop tree; "
            "patchbay re-runs were no-ops that rewrote nothing)"
        )
        return 0
    except (CheckFailed, PatchbayError) as exc:
        print(f"correctness: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
