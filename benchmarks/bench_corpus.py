"""Recall and precision of the analyser, the audit and ``patchbay import`` over the corpus.

The corpus (``tests/corpus/scripts``) holds scripts written in the style of benchmark teams'
patch scripts, each with the modifications a reader finds in it (line and mechanism; see
``tests/corpus_expectations.py``). For each consumer this prints, over every expected
modification:

- **analyser**: a modification found at the expected line with the expected mechanism;
- **audit**: a PB401-PB408 finding at the expected line of the expected file (a
  rebuild counts through the write of its build output);
- **import** (shell scripts only): recall counts an expected modification that became a patch
  (its script lines cover the line) or is listed as not converted with its lines in
  ``IMPORT-NOTES.md`` (never dropped); how many became patches is printed after the table;
  precision counts engine patches that cover an expected line (pinned harness packages, which
  the import imports and flags as "not an engine package", are counted apart); a script is
  *wrongly complete* when the import says complete while an expected modification is not
  converted.

Targets: recall >= 98%, precision >= 98%, no script wrongly complete (PASS or MISS each).

Then the **real corpus**: scripts no one here wrote, read where they are in ``../shared/`` (the
benchmark repository ``inferencex-c9d4a624f`` and the ``mission`` patch scripts), with the
labels of ``tests/corpus/real`` (:mod:`real_labels`), and every shell script the machine's
packages installed (:mod:`system_scripts`, none of which patches an engine). Each is audited by
``run_audit`` (``script_cache=False``; the source's globs through a configuration file, the
system scripts with the default ones) in a child process with a time bound. It prints recall and
precision of the PB401-PB408 findings against the labels (targets >= 95% each), the findings at
labels that are not counted (stack, harness), every missed label and every false finding; then
crashes (PB412 "the analyser failed", or an exception escaping the audit), hangs (an audit that
outlives ``--timeout``), messages with placeholders, and findings on the system scripts
(targets: 0 each). Skipped, with a note, when ``../shared`` is absent.

Run from the repository root: ``.venv/bin/python benchmarks/bench_corpus.py`` (a few seconds for
the self-written corpus, about half a minute with the real one; no network). Exit 1 when a
target is missed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from corpus_expectations import CORPUS, Case, load_cases  # noqa: E402
from patchbay.analysis import EngineNames, analyse  # noqa: E402
from patchbay.audit.scanner import scan_tree  # noqa: E402
from patchbay.errors import InputError  # noqa: E402
from real_labels import SHARED, SOURCES, load_labels, score  # noqa: E402
from system_scripts import copy_system_scripts  # noqa: E402

TARGET = 0.98
REAL_TARGET = 0.95
PLACEHOLDER = re.compile(r"/@\w+|<temporary folder>|<script folder>")
"""An internal name where a message should show a path (issue 21: never shown)."""


def _ratio(a: int, b: int) -> float:
    return a / b if b else 1.0


def analyser_and_audit(cases: list[Case]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(true positives, expected, found) for the analyser (each script analysed) and for the
    audit (:func:`~patchbay.audit.scanner.scan_tree` over the corpus folder, its file gate
    included; a finding is keyed by its file and line)."""
    engines = EngineNames.build()
    a_tp = a_exp = a_found = 0
    want_lines: set[tuple[str, int]] = set()
    for case in cases:
        if case.error_line is not None:
            continue
        analysis = analyse(case.script.read_text(), case.rel, case.kind, engines, CORPUS)
        want = {(e.path or case.rel, e.line, e.mechanism) for e in case.expected}
        got = {
            (m.chain[-1] if m.chain else case.rel, m.line, m.mechanism.value)
            for m in analysis.modifications
        }
        a_tp += len(want & got)
        a_exp += len(want)
        a_found += len(got)
        # the audit reports a clone only at a moving ref (PB406): pinned builds are not its
        want_lines |= {
            (e.path or case.rel, e.line) for e in case.expected if "pinned" not in e.flags
        }
    scripts = ["**/*.sh", "**/Dockerfile*", "**/*.py"]
    findings = scan_tree(CORPUS, scripts, [], engines)
    # PB409-PB414 say something else than "this statement changes an engine"
    found = {(f.path, f.line) for f in findings if f.code <= "PB408"}
    u_tp = len(want_lines & found)
    unresolved = {(f.path, f.line) for f in findings if f.code == "PB414"}
    want_gaps = {(p or c.rel, n) for c in cases for p, n in c.unresolved}
    print(
        f"audit PB414 (code it cannot see): {len(want_gaps & unresolved)}/{len(want_gaps)} "
        f"expected found, {len(unresolved - want_gaps)} unexpected"
    )
    return (a_tp, a_exp, a_found), (u_tp, len(want_lines), len(found))


def importer(cases: list[Case]) -> dict[str, object]:
    """``patchbay import`` over the shell scripts: expected modifications converted into patches
    and accounted for (a patch, or listed with its lines), engine patches and those covering an
    expected line, harness pins, and the scripts wrongly reported complete."""
    from patchbay.importer import import_script

    n_conv = n_accounted = n_exp = n_good = n_patches = n_harness = 0
    wrongly: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="bench-corpus-"))
    try:
        for n, case in enumerate(cases):
            if case.kind != "shell" or case.error_line is not None:
                continue
            own = [e for e in case.expected if not e.path]
            try:
                result = import_script(case.script, work / f"out{n}", force=True)
            except InputError:
                n_exp += len(own)
                continue
            engine = [d for d in result.patches if not getattr(d, "harness", False)]
            n_harness += len(result.patches) - len(engine)
            spans = [span for d in engine for span in d.spans]
            lines = {e.line for e in own}
            converted = {line for line in lines if any(a <= line <= b for a, b in spans)}
            listed = {
                line for line in lines for o in result.unconverted if o.start <= line <= o.end
            }
            n_conv += len(converted)
            n_accounted += len(converted | listed)
            n_exp += len(lines)
            n_patches += len(engine)
            n_good += sum(
                1 for d in engine if any(a <= line <= b for a, b in d.spans for line in lines)
            )
            if not result.partial and (converted != lines or any(e.path for e in case.expected)):
                wrongly.append(case.rel)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "converted": n_conv,
        "accounted": n_accounted,
        "expected": n_exp,
        "good": n_good,
        "patches": n_patches,
        "harness": n_harness,
        "wrongly": wrongly,
    }


def self_written() -> bool:
    """Print the self-written corpus's table; returns whether every target passed."""
    cases = load_cases()
    scripts = len(cases)
    silent = sum(1 for c in cases if not c.expected and c.error_line is None)
    print(f"corpus: {scripts} scripts ({silent} silent), "
          f"{sum(len(c.expected) for c in cases)} expected modifications")  # fmt: skip
    (a_tp, a_exp, a_found), (u_tp, u_exp, u_found) = analyser_and_audit(cases)
    imp = importer(cases)
    wrongly: list[str] = imp["wrongly"]  # type: ignore[assignment]
    ok = True
    rows = [
        ("analyser", a_tp, a_exp, a_tp, a_found),
        ("audit", u_tp, u_exp, u_tp, u_found),
        ("import", imp["accounted"], imp["expected"], imp["good"], imp["patches"]),
    ]
    print(f"{'':10} {'recall':>16} {'':5} {'precision':>16}")
    for name, r_num, r_den, p_num, p_den in rows:
        recall, precision = _ratio(r_num, r_den), _ratio(p_num, p_den)
        r_frac, p_frac = f"{r_num}/{r_den}", f"{p_num}/{p_den}"
        r_mark = "PASS" if recall >= TARGET else "MISS"
        p_mark = "PASS" if precision >= TARGET else "MISS"
        ok = ok and r_mark == p_mark == "PASS"
        print(
            f"{name:10} {recall:7.1%} {r_frac:>8} {r_mark}  {precision:7.1%} {p_frac:>8} {p_mark}"
        )
    print(
        f"import: {imp['converted']}/{imp['expected']} of the expected modifications became "
        "patches; the rest are listed with their lines in IMPORT-NOTES.md; "
        f"{imp['harness']} pinned harness package(s) imported and flagged (not counted above)"
    )
    mark = "PASS" if not wrongly else "MISS"
    ok = ok and not wrongly
    print(f"import: scripts wrongly reported complete: {len(wrongly)} {mark}"
          + (f" ({', '.join(wrongly)})" if wrongly else ""))  # fmt: skip
    return ok


def _audit_child(folder: Path, globs: list[str]) -> None:
    """In the child: audit ``folder`` (with ``globs``, else the default ones) and print its
    findings as JSON lines ``[path, line, code, message]``, then the audit's CPU seconds."""
    from patchbay.audit.run import run_audit

    config = None
    work = Path(tempfile.mkdtemp(prefix="bench-corpus-config-"))
    try:
        if globs:
            config = work / "patchbay.toml"
            config.write_text(f"scripts = {json.dumps(globs)}\n")
        start = time.process_time()
        result = run_audit(folder, config_file=config, script_cache=False)
        cpu = time.process_time() - start
    finally:
        shutil.rmtree(work, ignore_errors=True)
    findings = [[f.path, f.line, f.code, f.message] for f in result.findings]
    print(json.dumps({"findings": findings, "cpu": cpu}))


class Audited:
    """One audit run in a child process: its findings, or why there are none.

    Attributes:
        findings: ``(path, line, code, message)`` tuples.
        wall: seconds the child ran.
        cpu: seconds of CPU the audit itself took (the child's imports aside).
        crash: the end of the child's stderr when an exception escaped (or it printed no
            result).
        hang: the child outlived the bound and was killed.
    """

    def __init__(self, folder: Path, globs: list[str], timeout: float) -> None:
        self.findings: list[tuple[str, int | None, str, str]] = []
        self.cpu = 0.0
        self.crash: str | None = None
        self.hang = False
        args = [sys.executable, __file__, "--child", str(folder), "--globs", *globs]
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                args, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            self.hang = True
            self.wall = time.perf_counter() - start
            return
        self.wall = time.perf_counter() - start
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            self.crash = tail[0]
            return
        data = json.loads(lines[-1])
        self.findings = [tuple(f) for f in data["findings"]]  # type: ignore[misc]
        self.cpu = data["cpu"]

    @property
    def failures(self) -> list[tuple[str, int | None, str, str]]:
        """PB412 findings that say the analyser failed on a file."""
        return [f for f in self.findings if f[2] == "PB412" and "analyser failed" in f[3]]

    @property
    def placeholders(self) -> list[tuple[str, int | None, str, str]]:
        return [f for f in self.findings if PLACEHOLDER.search(f[3])]


def _mark(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def _show(f: tuple[str, int | None, str, str]) -> str:
    return f"{f[0]}:{f[1] if f[1] is not None else '-'} {f[2]} {f[3]}"


def real_corpus(timeout: float) -> bool:
    """Print the real corpus's scores and the crash/hang counts; returns whether every target
    passed (True, with a note, when ``../shared`` is absent)."""
    print()
    if not SHARED.is_dir():
        print(f"real corpus: skipped, {SHARED} is absent (CI and the project's machines have it)")
        return True
    runs: dict[str, Audited] = {}
    ok = True
    print(f"real corpus (labels: tests/corpus/real; scripts read in place in {SHARED})")
    print(f"{'':22} {'recall':>15} {'':4} {'precision':>15}  neutral  audit")
    for name, (folder, globs, files) in SOURCES.items():
        if not folder.is_dir():
            print(f"{name:22} skipped: {folder} is absent")
            continue
        run = runs[name] = Audited(folder, globs, timeout)
        if run.hang or run.crash is not None:
            ok = False
            print(f"{name:22} no result: " + ("hang" if run.hang else f"crash: {run.crash}"))
            continue
        s = score(run.findings, load_labels(files))
        (r_num, r_den), (p_num, p_den) = s.recall, s.precision
        recall, precision = _ratio(r_num, r_den), _ratio(p_num, p_den)
        r_ok, p_ok = recall >= REAL_TARGET, precision >= REAL_TARGET
        ok = ok and r_ok and p_ok
        r_frac, p_frac = f"{r_num}/{r_den}", f"{p_num}/{p_den}"
        print(
            f"{name:22} {recall:7.1%} {r_frac:>7} {_mark(r_ok)}  {precision:7.1%} {p_frac:>7} "
            f"{_mark(p_ok)}  {len(s.neutral):>7}  {run.cpu:.1f} s CPU, {run.wall:.1f} s wall"
        )
        unseen = {(f[0], f[1]) for f in run.findings if f[2] == "PB414"}
        for label in s.missed:
            said = any((label.path, n) in unseen for n in label.lines)
            flag = " [PB414 at its line: the audit says it cannot see that code]" if said else ""
            print(f"  missed: {label.path}:{label.line} {label.mechanism}{flag}  # {label.note}")
        for path, line, code, message in s.false:
            print(f"  false:  {path}:{line} {code} {message}")
    print(f"targets: recall and precision >= {REAL_TARGET:.0%} each; 'neutral' counts findings "
          "at labels recorded but not counted (stack, harness)")  # fmt: skip

    tree = Path(tempfile.mkdtemp(prefix="bench-corpus-system-"))
    try:
        copied = copy_system_scripts(tree / "tree")
        runs["system scripts"] = system = Audited(tree / "tree", [], timeout)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    print()
    print(f"system scripts: {len(copied)} copied from /usr, /etc, /var/lib/dpkg/info; "
          f"audit {system.cpu:.1f} s CPU, {system.wall:.1f} s wall")  # fmt: skip

    crashes = [(n, r.crash) for n, r in runs.items() if r.crash is not None]
    failures = [(n, f) for n, r in runs.items() for f in r.failures]
    hangs = [n for n, r in runs.items() if r.hang]
    placeholders = [(n, f) for n, r in runs.items() for f in r.placeholders]
    n_crashes = len(crashes) + len(failures)
    counts = [
        ("crashes", n_crashes),
        (f"hangs (an audit over {timeout:g} s)", len(hangs)),
        ("messages with placeholders", len(placeholders)),
        ("findings on the system scripts", len(system.findings)),
    ]
    for what, n in counts:
        ok = ok and n == 0
        print(f"{what}: {n} {_mark(n == 0)} (target 0)")
    for name, why in crashes:
        print(f"  crash: {name}: {why}")
    for name, f in failures:
        print(f"  crash: {name}: {_show(f)}")
    for name in hangs:
        print(f"  hang: {name}: killed after {timeout:g} s")
    for name, f in placeholders:
        print(f"  placeholder: {name}: {_show(f)}")
    for f in system.findings:
        print(f"  system: {_show(f)}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds one audit of the real corpus may take before it counts as a hang "
        "(default 300)",
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--globs", nargs="*", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _audit_child(args.child, args.globs)
        return 0
    ok = self_written()
    ok = real_corpus(args.timeout) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
