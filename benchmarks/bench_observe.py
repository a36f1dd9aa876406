"""Import by observation, measured: what the run changed, what became patches, what is listed,
and where the static reading and the run disagree (issue 22's closing figures).

Two bodies of scripts:

- the **self-written corpus** ``tests/corpus/observe`` (one class of change each, labelled by
  reading: :mod:`observe_corpus`), run against a copy of a real venv with the demo engine
  installed by pip, a wheel folder and a download host on 127.0.0.1;
- the **real Kimi-K3 container script** (``../shared/mission``), run against a venv with real
  vLLM 0.27.0 and aiter files installed by pip, a wheel folder standing in for its indexes
  (``PIP_NO_INDEX``/``PIP_FIND_LINKS``; nothing reaches the network); skipped when
  ``../shared`` is absent.

For each script it prints: changes **observed** (patches written plus changes listed as not
convertible), **converted** (patches), **listed**, the patches **found only by running** (no
statement of the static reading predicted them: the analyser's misses) and the predictions the
run did **not make** (branches not taken, failed alternatives, steps after a failure), then
whether the imported patchset, applied to a fresh copy, gives the script's tree byte for byte,
re-applies as a no-op and reverts to pristine (``-`` where a change was listed: the patchset
cannot hold it). For the corpus it also scores the patches against the labels.

Run from the repository root: ``.venv/bin/python benchmarks/bench_observe.py`` (about a minute;
no network). Exit 1 when a corpus label is missed or a tree is not reproduced.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from conftest import build_wheel, make_engine, run_cli  # noqa: E402
from observe_corpus import (  # noqa: E402
    OBSERVE,
    PINS,
    SCRIPT,
    CaseRun,
    ObserveCase,
    build_k3_engine,
    load_cases,
    run_case,
    tinypkg_wheels,
)
from servers import Response, Server  # noqa: E402


def _row(name: str, run: CaseRun) -> tuple[str, ...]:
    observed = len(run.patches) + len(run.listed)
    if run.mismatched is None:
        tree = "-"
    elif run.mismatched:
        tree = f"NO ({len(run.mismatched)} files)"
    else:
        tree = "yes" if run.reapply_noop and run.reverted else "tree yes, re-run/revert NO"
    return (
        name,
        str(observed),
        str(len(run.patches)),
        str(len(run.listed)),
        str(run.by_running),
        str(len(run.unobserved)),
        tree,
    )


def _table(rows: list[tuple[str, ...]]) -> None:
    head = ("script", "observed", "converted", "listed", "by running", "not made", "reproduced")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def _score(case: ObserveCase, run: CaseRun) -> list[str]:
    misses = []
    for kind, files in sorted(case.patches - run.patches, key=str):
        misses.append(f"{case.name}: labelled {kind} {' '.join(sorted(files))} not made")
    for kind, files in sorted(run.patches - case.patches, key=str):
        misses.append(f"{case.name}: made {kind} {' '.join(sorted(files))}, not labelled")
    if sorted(run.listed) != sorted(case.listed):
        misses.append(f"{case.name}: listed {run.listed}, labelled {list(case.listed)}")
    if sorted(run.unobserved) != sorted(case.unobserved):
        misses.append(f"{case.name}: not made {run.unobserved}, labelled {list(case.unobserved)}")
    return misses


def corpus(work: Path) -> tuple[list[tuple[str, ...]], list[str], bool]:
    """Every case of the corpus: its row, the label misses, and whether every tree that
    could be reproduced was."""
    demo = build_wheel(REPO / "demo" / "engine", work / "demo-wheel")
    template = make_engine(work / "template", demo, with_pip=True).prefix
    wheels = tinypkg_wheels(work)
    rows, misses, good = [], [], True
    with Server() as server:
        for path in (OBSERVE / "downloads").rglob("*"):
            if path.is_file():
                rel = path.relative_to(OBSERVE / "downloads").as_posix()
                server.routes[f"/{rel}"] = [Response(body=path.read_bytes())]
        env = {"WHEELHOUSE": str(wheels), "DOWNLOADS": server.url}
        for case in load_cases():
            folder = work / case.name
            folder.mkdir()
            run = run_case(case, template, folder, env, run_cli)
            rows.append(_row(case.name, run))
            misses += _score(case, run)
            good = good and (run.mismatched is None or not run.mismatched)
            good = good and (run.mismatched is None or bool(run.reapply_noop and run.reverted))
    return rows, misses, good


def k3(work: Path) -> tuple[tuple[str, ...], bool] | None:
    """The real K3 script's row and whether its tree was reproduced; None without it."""
    if not SCRIPT.is_file():
        return None
    built = build_k3_engine(work / "k3")
    script = work / SCRIPT.name
    shutil.copy(SCRIPT, script)
    case = ObserveCase(script, frozenset(), (), ())
    saved = dict(os.environ)
    os.environ.update(
        {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(built["index"]), "WS": str(work / "ws")}
    )
    try:
        folder = work / "k3-run"
        folder.mkdir()
        run = run_case(case, built["template"], folder, {}, run_cli, keep_listed=True)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    pins = sum(kind == "pin" for kind, _ in run.patches)
    label = f"{SCRIPT.name} ({pins} of {len(PINS)} pins)"
    return _row(label, run), bool(run.mismatched == [] and run.reapply_noop and run.reverted)


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="bench-observe-"))
    try:
        rows, misses, good = corpus(work)
        print("self-written corpus (tests/corpus/observe):")
        _table(rows)
        total = [sum(int(r[i]) for r in rows) for i in range(1, 6)]
        print(
            f"total: {total[0]} observed, {total[1]} converted, {total[2]} listed; "
            f"{total[3]} found only by running, {total[4]} predicted but not made"
        )
        labelled = sum(len(c.patches) + len(c.listed) for c in load_cases())
        print(f"labels: {labelled - len(misses)}/{labelled} as labelled")
        for miss in misses:
            print(f"  MISS {miss}")
        real = k3(work)
        if real is None:
            print("\nthe real K3 script: skipped (../shared/mission is absent)")
        else:
            print("\nthe real Kimi-K3 container script:")
            _table([real[0]])
            good = good and real[1]
        ok = good and not misses
        print("\n" + ("PASS" if ok else "MISS") + ": every reproducible tree reproduced")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
