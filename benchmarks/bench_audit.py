"""Benchmark ``patchbay audit`` against ``grep -rE`` of the scanner's patterns, on a large tree.

What is measured, and why
-------------------------
Reviewers look for undeclared engine patching today with ``grep -rE`` over the benchmark scripts.
``patchbay audit`` does more (it parses the lines grep would show, follows variables and working
folders, judges heredocs, and checks every patchset and waiver), so it should not be much slower:
the target is within 3x of the grep baseline.

In a temporary folder the benchmark generates a repository of ``--scripts`` script files (shell
run scripts of 60-180 lines built from the lines real ones contain: exports, server launches,
client sweeps, harness ``pip install``s, results copies; one in ten is a Python harness file and
one in forty a Dockerfile), ``--patches`` patches in patchsets of ten (diff files and replace
edits) and ``--waivers`` waivers with front matter, each covering two patches. One script in
twenty gets one to three undeclared engine modifications (``sed -i`` into site-packages, a ``cp``
over an installed file, ``git apply`` after ``cd "$SITE"``, ``pip install`` of a fork, a
``PYTHONPATH`` hook), one of them reviewed with an annotation.

It then times, ``--repeat`` times after one untimed warm-up of each:

- ``grep -rE``: ``grep -rEn PATTERN ROOT`` with :data:`patchbay.audit.scanner.GREP_PATTERN`, the
  scanner's trigger substrings as one extended regex, over the same tree;
- ``in-process, no cache``: :func:`patchbay.audit.run_audit` with ``script_cache=False`` (every
  script that passes the gate is parsed and walked; imports done);
- ``in-process, cold cache``: ``run_audit`` with an empty cache folder each run (the walk, and
  the cache file written);
- ``in-process, warm cache``: ``run_audit`` with the cache the warm-up filled (no script
  changed: every entry reused);
- ``scripts only, no cache`` and ``scripts only, warm cache``: the script rules alone
  (:func:`patchbay.audit.scanner.scan_tree` with the audit's engine names: listing, reading,
  the gate, the analysis or the cache), the part of the audit that reads what grep reads;
- ``CLI, no cache`` and ``CLI, warm cache``: ``patchbay audit ROOT --format json`` (wall time,
  start-up included) with ``PATCHBAY_NO_CACHE=1``, and with the warm cache (``XDG_CACHE_HOME``
  points into the benchmark's folder either way: the user's cache is not touched);
- ``CLI start-up (version)``: ``patchbay version``, the interpreter's start-up and the CLI's
  imports with no audit, and ``python -c "import patchbay.audit.run"``, the audit's imports
  in a fresh interpreter: how much of the CLI's time is start-up rather than the audit.

They are timed in rounds (one run of each per round) so that other load on the machine weighs on
all of them alike, and each run is compared with grep's run of the same round. It prints each
one's times (median, min..max) and its ratios to grep (median, min..max over the rounds; target
<= 3.0 on the median, PASS or MISS), and exits 1 when a correctness check fails: every variant
must report exactly the planted modifications (file and line, the reviewed one suppressed) and
no other finding, the CLI must agree, and every generated waiver must parse the same with the
plain front matter and Markdown paths of the waiver parser as with PyYAML and markdown-it. How
many planted lines grep matches is printed (it cannot follow ``$SITE``). ``--profile`` adds a
cProfile of one in-process audit without the cache and one with the warm cache.

Run it as ``.venv/bin/python benchmarks/bench_audit.py`` from the repository root; no network.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from patchbay.analysis import EngineNames
from patchbay.audit import AuditResult, run_audit
from patchbay.audit.cache import ScriptCache
from patchbay.audit.config import load_config
from patchbay.audit.run import find_patchsets
from patchbay.audit.scanner import GREP_PATTERN, scan_tree
from patchbay.waivers import parse_waiver

TARGET = 3.0
PATCHBAY = Path(sys.executable).with_name("patchbay")

SHELL_LINES = [
    "export VLLM_USE_V1=1",
    "export HIP_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
    "MODEL=${MODEL:-deepseek-ai/DeepSeek-R1}",
    "PORT=${PORT:-8000}",
    'echo "starting server for $MODEL on port $PORT"',
    "vllm serve $MODEL --tensor-parallel-size 8 --max-model-len 8192 \\\n"
    "  --port $PORT --gpu-memory-utilization 0.9 &",
    "SERVER_PID=$!",
    "for c in 1 2 4 8 16 32 64; do\n"
    "  python3 benchmarks/benchmark_serving.py --model $MODEL --concurrency $c \\\n"
    "    --num-prompts $((c * 10)) --result-dir results/ --save-result\n"
    "done",
    "pip install --quiet tabulate==0.9.0 datasets",
    "until curl -s localhost:$PORT/health > /dev/null; do sleep 5; done",
    "kill $SERVER_PID",
    "# run the client sweep and collect the results",
    "cp results/*.json /workspace/results/",
    'sed -i "s/^model:.*/model: $MODEL/" configs/run.yaml',
    'if [ "$TP" -gt 4 ]; then\n  EXTRA_ARGS="--enable-expert-parallel"\nfi',
    "python3 -m sglang.launch_server --model-path $MODEL --tp $TP --port $PORT &",
    "rocm-smi --showuse",
    "mkdir -p results logs",
    'tee -a logs/run.log <<< "run $RUN_ID"',
    "cat > configs/client.yaml <<EOF\nmodel: $MODEL\nconcurrency: 64\nEOF",
    "python3 utils/summarize.py results/ > results/summary.md",
    'export PYTHONPATH="${PYTHONPATH:-}"',
    "wait",
]
PLANTED = [
    ('sed -i "s/MAX_BATCH = 256/MAX_BATCH = 512/" "$SITE/vllm/envs.py"', "PB402"),
    ('cp overrides/attention.py "$SITE/vllm/attention/backends/rocm.py"', "PB404"),
    ('cd "$SITE" && git apply /workspace/patches/fix.patch', "PB401"),
    ('pip install "git+https://github.com/example-fork/vllm@fast-decode"', "PB405"),
    ("export PYTHONPATH=/workspace/hooks:${PYTHONPATH:-}", "PB407"),
]
SITE_LINE = "SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"
PYTHON_FILE = '''"""Summarise a benchmark run."""
import json
import subprocess
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    rows = [json.loads(p.read_text()) for p in sorted((HERE / "results").glob("*.json"))]
    with open(HERE / "summary.json", "w") as fh:
        json.dump(rows, fh)
    subprocess.run(["pip", "install", "tabulate"], check=True)


if __name__ == "__main__":
    main()
'''
DOCKERFILE = """FROM rocm/vllm:nightly
RUN pip install --no-cache-dir tabulate datasets
COPY configs/ /workspace/configs/
WORKDIR /workspace
ENV HF_HOME=/workspace/hf
"""
WAIVER = """---
id: {id}
patches: [{a}, {b}]
owner: "@bench"
filed: 2026-01-01
review_by: 2099-01-01
status: approved
approval: https://example.invalid/bench/pull/{n}#review
---

# Waiver {id}

## What is patched

| patch | file |
|---|---|
| `{a}` | bigengine/mod_{n}_a.py |
| `{b}` | bigengine/mod_{n}_b.py |

## Why the unmodified image cannot run the benchmark

The pinned image crashes during graph capture at batch 256 on this configuration.

## Upstream

- https://github.com/example/bigengine/pull/{n}
- example/bigengine#{m}

## Removal plan

Drop both patches when the image contains example/bigengine#{m}.
"""


def generate(root: Path, scripts: int, patches: int, waivers: int, seed: int) -> list[tuple]:
    """Write the repository; return the planted findings as (path, line, code, suppressed)."""
    rng = random.Random(seed)
    planted: list[tuple] = []
    for n in range(scripts):
        group = root / "benchmarks" / f"group{n % 40:02d}"
        group.mkdir(parents=True, exist_ok=True)
        if n % 40 == 39:
            (group / f"Dockerfile.{n:04d}").write_text(DOCKERFILE)
            continue
        if n % 10 == 9:
            (group / f"summarize_{n:04d}.py").write_text(PYTHON_FILE)
            continue
        snippets = ["#!/usr/bin/env bash", "set -euo pipefail"]
        snippets += [rng.choice(SHELL_LINES) for _ in range(rng.randint(30, 90))]
        rel = f"benchmarks/group{n % 40:02d}/run_{n:04d}.sh"
        if n % 20 == 3:
            snippets.insert(2, SITE_LINE)
            picks = rng.sample(range(len(PLANTED)), rng.randint(1, 3))
            for k, pick in enumerate(picks):
                text = PLANTED[pick][0]
                if k == 0 and n % 60 == 3:
                    text += "  # patchbay-reviewed: measured with and without, see waiver W-1"
                snippets.insert(rng.randint(3, len(snippets)), text)  # between snippets
        lines = "\n".join(snippets).split("\n")
        for i, line in enumerate(lines, start=1):
            for text, code in PLANTED:
                if line.startswith(text):
                    planted.append((rel, i, code, "patchbay-reviewed" in line))
        (root / rel).write_text("\n".join(lines) + "\n")
    per_set = 10
    for s in range(patches // per_set):
        folder = root / "patchsets" / f"set{s:02d}"
        (folder / "patches").mkdir(parents=True)
        entries = []
        for k in range(per_set):
            n = s * per_set + k
            pid = f"p{n:03d}"
            waiver = f"w{n // 2:03d}" if n // 2 < waivers else None
            entry = [
                f"  - id: {pid}",
                "    target: engine",
                f"    description: Fix {n} in the big engine.",
                f"    upstream: [example/bigengine#{1000 + n}]",
            ]
            if waiver:
                entry.append(f"    waiver: {waiver}")
            if k % 2:
                entry += [
                    "    kind: replace",
                    "    edits:",
                    f"      - {{file: bigengine/mod_{n}.py, old: 'A = 1\\n', new: 'A = 2\\n'}}",
                ]
            else:
                (folder / "patches" / f"{pid}.patch").write_text(
                    f"--- a/bigengine/mod_{n}.py\n+++ b/bigengine/mod_{n}.py\n"
                    "@@ -1 +1 @@\n-A = 1\n+A = 2\n"
                )
                entry += ["    kind: diff", f"    file: patches/{pid}.patch"]
            entries.append("\n".join(entry))
        (folder / "patchset.yaml").write_text(
            f"schema: 1\nname: set{s:02d}\nimage: {{reference: example.invalid/big:1}}\n"
            "components:\n  - {distribution: bigengine, repository: example/bigengine}\n"
            "targets:\n  engine: {package: bigengine}\npatches:\n" + "\n".join(entries) + "\n"
        )
    (root / "waivers").mkdir()
    for n in range(waivers):
        (root / "waivers" / f"w{n:03d}.md").write_text(
            WAIVER.format(id=f"w{n:03d}", a=f"p{2 * n:03d}", b=f"p{2 * n + 1:03d}", n=n, m=2000 + n)
        )
    return sorted(planted)


def timed(
    fns: dict[str, Callable[[], object]], repeat: int
) -> dict[str, tuple[list[float], object]]:
    """Time each function ``repeat`` times after one untimed warm-up (file cache, imports, the
    warm cache), in rounds (one run of each per round), so that a change of load on the machine
    while the benchmark runs weighs on all of them alike.

    Returns:
        name -> (wall times, round by round; the last result).
    """
    out: dict[str, tuple[list[float], object]] = {}
    for name, fn in fns.items():
        out[name] = ([], fn())
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            result = fn()
            out[name][0].append(time.perf_counter() - start)
            out[name] = (out[name][0], result)
    return out


def scripts_only(root: Path) -> Callable[[Path | None], list]:
    """``scan_tree`` as :func:`run_audit` calls it (its engine names, includes and excludes),
    with a cache in the given folder (None: no cache)."""
    root = root.resolve()
    cfg = load_config(root, None).config
    patchsets = find_patchsets(root, cfg.patchsets, explicit=False)
    components = [c for ps in patchsets for c in ps.spec.components]
    engines = EngineNames.build(
        cfg.engine_names(c.distribution for c in components),
        [t.package for ps in patchsets for t in ps.spec.targets.values()],
        [c.repository for c in components if c.repository],
    )

    def scan(folder: Path | None) -> list:
        cache = None if folder is None else ScriptCache(folder / "audit", root, engines)
        return scan_tree(root, cfg.scripts, cfg.exclude, engines, cache)

    return scan


def plain_paths_agree(root: Path) -> bool:
    """True when the plain front matter and Markdown paths of the waiver parser give the same
    waivers as PyYAML and markdown-it on the generated ones."""
    for path in sorted((root / "waivers").glob("*.md")):
        if parse_waiver(path) != parse_waiver(path, plain=False):
            print(f"FAIL: {path.name} parses differently without markdown-it and PyYAML")
            return False
    return True


def profile(root: Path, cache_dir: Path) -> None:
    """cProfile of one in-process audit without the cache and one with the warm cache: the 25
    functions with the most time of their own."""
    for label, kwargs in (
        ("no cache", {"script_cache": False}),
        ("warm cache", {"cache_dir": cache_dir}),
    ):
        print(f"-- profile: in-process, {label}")
        profiler = cProfile.Profile()
        profiler.runcall(run_audit, root, **kwargs)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def fmt(times: list[float]) -> str:
    return (
        f"{statistics.median(times) * 1000:8.1f} ms  "
        f"({min(times) * 1000:.1f}..{max(times) * 1000:.1f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--scripts", type=int, default=500)
    parser.add_argument("--patches", type=int, default=100)
    parser.add_argument("--waivers", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="keep the generated tree")
    parser.add_argument(
        "--profile", action="store_true", help="print a cProfile of one in-process audit"
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    root = work / "repo"
    root.mkdir()
    try:
        planted = generate(root, args.scripts, args.patches, args.waivers, args.seed)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        print(
            f"tree: {args.scripts} scripts, {args.patches} patches, {args.waivers} waivers, "
            f"{size / 1e6:.1f} MB; {len(planted)} planted modifications"
        )
        grep = ["grep", "-rEn", GREP_PATTERN, str(root)]
        cli = [str(PATCHBAY), "audit", str(root), "--format", "json"]
        warm = work / "cache"
        cli_env = {**os.environ, "XDG_CACHE_HOME": str(work / "cli-cache")}
        no_cache_env = {**cli_env, "PATCHBAY_NO_CACHE": "1"}

        def fresh_cache() -> Path:
            return Path(tempfile.mkdtemp(prefix="cold-", dir=work))

        scan = scripts_only(root)

        def run_cli(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
            return subprocess.run(cli, capture_output=True, text=True, check=False, env=env)

        variants: dict[str, Callable[[], object]] = {
            "grep": lambda: (
                subprocess.run(grep, capture_output=True, text=True, check=False).stdout
            ),
            "in-process, no cache": lambda: run_audit(root, script_cache=False),
            "in-process, cold cache": lambda: run_audit(root, cache_dir=fresh_cache()),
            "in-process, warm cache": lambda: run_audit(root, cache_dir=warm),
            "scripts only, no cache": lambda: scan(None),
            "scripts only, warm cache": lambda: scan(warm),
            "CLI, no cache": lambda: run_cli(no_cache_env),
            "CLI, warm cache": lambda: run_cli(cli_env),
            "CLI start-up (version)": lambda: subprocess.run(
                [str(PATCHBAY), "version"], capture_output=True, text=True, check=True
            ),
            "import patchbay.audit.run": lambda: subprocess.run(
                [sys.executable, "-c", "import patchbay.audit.run"], check=True
            ),
        }
        runs = timed(variants, args.repeat)
        t_grep, grep_out = runs["grep"]
        assert isinstance(grep_out, str)

        ok = plain_paths_agree(root)
        for name, (_times, result) in runs.items():
            if name.startswith(("in-process", "scripts only")):
                findings = result.findings if isinstance(result, AuditResult) else result
                assert isinstance(findings, list)
                found = sorted(
                    (f.path, f.line, f.code, f.suppression is not None) for f in findings
                )
                if found != planted:
                    ok = False
                    print(f"FAIL: {name}: audit findings differ from the planted modifications")
                    for item in sorted(set(found) ^ set(planted))[:10]:
                        print("  ", "found" if item in found else "missed", item)
            elif name.startswith("CLI") and "start-up" not in name:
                assert isinstance(result, subprocess.CompletedProcess)
                doc = json.loads(result.stdout)
                got = sorted(
                    (f["path"], f["line"], f["code"], f["suppressed"] is not None)
                    for f in doc["findings"]
                )
                if got != planted or result.returncode != 1:
                    ok = False
                    print(
                        f"FAIL: {name}: {len(got)} finding(s), exit {result.returncode}, "
                        f"not the {len(planted)} planted"
                    )
        grep_hits = {
            (line.split(":", 2)[0], int(line.split(":", 2)[1])) for line in grep_out.splitlines()
        }
        seen = sum((str(root / p[0]), p[1]) in grep_hits for p in planted)
        print(
            f"grep: {len(grep_hits)} line(s) matched, {seen} of the {len(planted)} planted ones "
            f"(a line using $SITE has no pattern to match); audit: the {len(planted)} planted "
            "finding(s) and no other" + ("" if ok else " NOT in every variant")
        )
        for name, (times, _result) in runs.items():
            print(f"{name:26s} {fmt(times)}")
        for name, (times, _result) in runs.items():
            if name == "grep":
                continue
            per_round = [t / g for t, g in zip(times, t_grep, strict=True)]
            median = statistics.median(per_round)
            mark = "PASS" if median <= TARGET else "MISS"
            print(
                f"ratio {name} / grep: {median:.2f} ({min(per_round):.2f}..{max(per_round):.2f}) "
                f"(target <= {TARGET}) {mark}"
            )
        startup = statistics.median(runs["CLI start-up (version)"][0])
        imports = statistics.median(runs["import patchbay.audit.run"][0])
        for name in ("CLI, no cache", "CLI, warm cache"):
            total = statistics.median(runs[name][0])
            print(
                f"{name}: of its median {total * 1000:.0f} ms, `patchbay version` (start-up "
                f"and the CLI's imports) is {startup / total:.0%}, a fresh interpreter's import "
                f"of patchbay.audit.run {imports / total:.0%}"
            )
        if args.profile:
            profile(root, warm)
        return 0 if ok else 1
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
