"""Benchmark the forge requests of ``patchbay report``: GraphQL, REST sequential and concurrent,
and a re-run over unchanged data.

What is measured, and why
-------------------------
A weekly report asks GitHub about every upstream reference of every carried patch. Over a
network each request costs a round trip, and an unauthenticated client has 60 requests an hour,
so the report must ask little and ask in parallel:

- with a token, the states of all pull requests come from GraphQL, 100 per query (target: at
  most 2 requests for the PR states of 100 references);
- without one, one REST request per reference, sent concurrently (target: the concurrent wall
  time at most a quarter of the sequential one);
- a re-run over unchanged data revalidates its disk cache with ``If-None-Match`` (target: no
  request that is not answered ``304 Not Modified``; GitHub does not count those against the
  rate limit).

The benchmark builds, in a temporary folder, a real git repository ``bench/engine`` with
``--commits`` commits on ``main`` (the pinned image was built from the middle one) and declares
100 pull requests on it: 40 merged before the pin (squash commits), 20 merged after it, 25 open,
10 draft and 5 closed without merge. Two patchsets of 50 patches each carry one reference each.
A GitHub stand-in (``tests/github_standin.py``: a real HTTP server on 127.0.0.1 serving REST and
GraphQL from that repository) adds ``--latency`` seconds (default 50 ms) to every request.

After an untimed warm-up (so the stand-in's git look-ups are memoised for every run alike), it
runs ``build_report`` with a fresh ETag cache each for: GraphQL (token), REST with one worker,
REST with ``--workers`` workers; then a re-run of the REST path and of the GraphQL path over the
cache the first runs left. For each it prints the requests the stand-in received (all, those for
PR states, those answered 304) and the wall time. It exits 1 when a correctness check fails:
every run must give the same verdicts, and they must be the 40 ``remove``, 20 ``bump``, 35
``keep`` and 5 ``attention`` the repository was built to have. A missed target alone prints
MISS and does not change the exit status.

Run it as ``.venv/bin/python benchmarks/bench_report.py`` from the repository root; no network.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from github_standin import GitHubStandIn, Pull  # noqa: E402
from patchbay.patchset.loading import load_patchset  # noqa: E402
from patchbay.upstream.queries import GitHubClient  # noqa: E402
from patchbay.upstream.report import build_report  # noqa: E402

TOKEN = "bench-token"
EXPECTED = {"remove": 40, "bump": 20, "keep": 35, "attention": 5}


def build_history(root: Path, commits: int) -> list[str]:
    """``commits`` commits on main, one file each, in one ``git fast-import`` (fast)."""
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env)
    stream = []
    start = 1_780_000_000
    for n in range(commits):
        message = f"Change number {n} (#{1000 + n})\n".encode()
        data = f"value = {n}\n".encode()
        stream.append(b"commit refs/heads/main\n")
        stream.append(f"mark :{n + 1}\n".encode())
        who = f"dev <dev@example.invalid> {start + n * 3600} +0000\n".encode()
        stream += [b"author " + who, b"committer " + who]
        stream.append(f"data {len(message)}\n".encode() + message)
        if n:
            stream.append(f"from :{n}\n".encode())
        stream.append(f"M 644 inline engine/f{n % 50}.py\ndata {len(data)}\n".encode() + data)
        stream.append(b"\n")
    subprocess.run(
        ["git", "-C", str(root), "fast-import", "--quiet"],
        input=b"".join(stream),
        check=True,
        env=env,
    )
    out = subprocess.run(
        ["git", "-C", str(root), "rev-list", "--reverse", "main"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.split()
    assert len(out) == commits
    return out


def declare_pulls(server: GitHubStandIn, root: Path, shas: list[str]) -> tuple[str, list[int]]:
    """100 pull requests; returns the pinned commit and the PR numbers."""
    repo = server.add_repo("bench/engine", str(root))
    pin_index = len(shas) // 2
    pin = shas[pin_index]
    numbers = []
    for k in range(100):
        n = 1000 + k
        numbers.append(n)
        if k < 40:  # merged before the pin
            i = 1 + k * (pin_index - 1) // 40
            repo.pulls[n] = Pull(
                n,
                f"Change number {i}",
                "closed",
                merged=True,
                merge_commit_sha=shas[i],
                merged_at="2026-07-01T00:00:00Z",
            )
        elif k < 60:  # merged after the pin
            i = pin_index + 1 + (k - 40) * (len(shas) - pin_index - 2) // 20
            repo.pulls[n] = Pull(
                n,
                f"Change number {i}",
                "closed",
                merged=True,
                merge_commit_sha=shas[i],
                merged_at="2026-08-01T00:00:00Z",
            )
        elif k < 85:
            repo.pulls[n] = Pull(n, f"Open work {k}")
        elif k < 95:
            repo.pulls[n] = Pull(n, f"Draft work {k}", draft=True)
        else:
            repo.pulls[n] = Pull(n, f"Abandoned {k}", "closed", closed_at="2026-07-01T00:00:00Z")
    return pin, numbers


def write_patchsets(folder: Path, pin: str, numbers: list[int]) -> list[Path]:
    out = []
    for half in range(2):
        ps = folder / f"bench-{half}"
        ps.mkdir(parents=True)
        lines = [
            "schema: 1",
            f"name: bench-{half}",
            "image: {reference: example.invalid/bench:1}",
            "components:",
            f"  - {{distribution: engine, repository: bench/engine, commit: {pin}}}",
            "targets:",
            "  engine: {package: engine}",
            "patches:",
        ]
        for n in numbers[half * 50 : (half + 1) * 50]:
            lines += [
                f"  - id: pr-{n}",
                "    kind: replace",
                "    target: engine",
                f"    description: backport of {n}",
                f"    upstream: [https://github.com/bench/engine/pull/{n}]",
                f"    edits: [{{file: engine/p{n}.py, old: 'A = 1', new: 'A = 2'}}]",
            ]
        (ps / "patchset.yaml").write_text("\n".join(lines) + "\n")
        out.append(ps)
    return out


def run(server: GitHubStandIn, patchsets: list, cache: Path, **client_args: object) -> dict:
    """One report; the stand-in's log says what was asked."""
    server.clear_log()
    client = GitHubClient(server.url, cache_dir=cache, **client_args)  # type: ignore[arg-type]
    started = time.perf_counter()
    report = build_report(patchsets, client, today=date(2026, 9, 1))
    wall = time.perf_counter() - started
    log = list(server.log)
    return {
        "wall": wall,
        "requests": len(log),
        "pr_states": sum(1 for e in log if e.path.startswith("/graphql") or "/pulls/" in e.path),
        "not_modified": sum(1 for e in log if e.status == 304),
        "graphql": sum(1 for e in log if e.path.startswith("/graphql")),
        "counts": report.counts,
        "verdicts": {row.key: row.assessment.verdict.value for row in report.rows},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds added per request")
    parser.add_argument("--commits", type=int, default=160, help="commits on main")
    parser.add_argument("--workers", type=int, default=8, help="concurrent REST requests")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="patchbay-bench-report-"))
    try:
        shas = build_history(tmp / "engine", args.commits)
        with GitHubStandIn(token=TOKEN) as server:
            pin, numbers = declare_pulls(server, tmp / "engine", shas)
            patchsets = [load_patchset(p) for p in write_patchsets(tmp / "ps", pin, numbers)]
            run(server, patchsets, tmp / "warm-up", workers=args.workers)  # memoise git
            server.latency = args.latency
            gql = {"token": TOKEN, "use_graphql": True, "workers": args.workers}
            rest = {"use_graphql": False}
            results = {
                "GraphQL (token)": run(server, patchsets, tmp / "c-gql", **gql),
                "REST, sequential (1 worker)": run(
                    server, patchsets, tmp / "c-seq", workers=1, **rest
                ),
                f"REST, concurrent ({args.workers} workers)": run(
                    server, patchsets, tmp / "c-rest", workers=args.workers, **rest
                ),
                "re-run, nothing changed (REST)": run(
                    server, patchsets, tmp / "c-rest", workers=args.workers, **rest
                ),
                "re-run, nothing changed (GraphQL)": run(server, patchsets, tmp / "c-gql", **gql),
            }
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"patchbay report: 100 upstream references (2 patchsets), {args.commits} commits, "
        f"{args.latency * 1000:.0f} ms added per request"
    )
    print(f"{'path':38} {'requests':>8} {'PR states':>9} {'304':>5} {'wall':>9}")
    for name, r in results.items():
        print(
            f"{name:38} {r['requests']:8d} {r['pr_states']:9d} {r['not_modified']:5d} "
            f"{r['wall']:8.2f}s"
        )
    names = list(results)
    graphql, seq, conc, rerun, gql_rerun = (results[n] for n in names)
    ratio = conc["wall"] / seq["wall"]
    fresh = rerun["requests"] - rerun["not_modified"]
    checks = [
        (
            "GraphQL path: PR states in <= 2 requests",
            graphql["pr_states"],
            graphql["pr_states"] <= 2,
        ),
        ("REST concurrent / sequential wall time <= 0.25", f"{ratio:.2f}", ratio <= 0.25),
        ("re-run (REST): requests not answered by 304 == 0", fresh, fresh == 0),
    ]
    print("targets:")
    for label, value, ok in checks:
        print(f"  {label}: {value}  {'PASS' if ok else 'MISS'}")
    print(
        f"  (re-run over GraphQL: {gql_rerun['graphql']} GraphQL query, which GitHub cannot "
        f"answer with 304; {gql_rerun['not_modified']} of its "
        f"{gql_rerun['requests'] - gql_rerun['graphql']} REST requests answered 304)"
    )

    failures = []
    first = results[names[0]]["verdicts"]
    for name, r in results.items():
        if r["verdicts"] != first:
            failures.append(f"{name}: verdicts differ from the GraphQL run")
    if graphql["counts"] != EXPECTED:
        failures.append(f"verdict counts {graphql['counts']}, expected {EXPECTED}")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
