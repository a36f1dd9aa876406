"""Recall and precision of the analyser, the audit and ``patchbay import`` over the corpus.

The corpus (``tests/corpus/scripts``) holds scripts written in the style of benchmark teams'
patch scripts, each with the modifications a reader finds in it (line and mechanism; see
``tests/corpus_expectations.py``). For each consumer this prints, over every expected
modification:

- **analyser**: a modification found at the expected line with the expected mechanism;
- **audit**: a PB4xx finding (PB409-PB411 aside) at the expected line of the expected file (a
  rebuild counts through the write of its build output);
- **import** (shell scripts only): recall counts an expected modification that became a patch
  (its script lines cover the line) or is listed as not converted with its lines in
  ``IMPORT-NOTES.md`` (never dropped); how many became patches is printed after the table;
  precision counts engine patches that cover an expected line (pinned harness packages, which
  the import imports and flags as "not an engine package", are counted apart); a script is
  *wrongly complete* when the import says complete while an expected modification is not
  converted.

Targets: recall >= 98%, precision >= 98%, no script wrongly complete (PASS or MISS each). Run
from the repository root: ``.venv/bin/python benchmarks/bench_corpus.py`` (a few seconds, no
network). Exit 1 when a target is missed.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from corpus_expectations import CORPUS, Case, load_cases  # noqa: E402
from patchbay.analysis import EngineNames, analyse  # noqa: E402
from patchbay.audit.scanner import scan_tree  # noqa: E402
from patchbay.errors import InputError  # noqa: E402

TARGET = 0.98


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
    found = {
        (f.path, f.line)
        for f in scan_tree(CORPUS, scripts, [], engines)
        if f.code not in ("PB409", "PB410", "PB411")
    }
    u_tp = len(want_lines & found)
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


def main() -> int:
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
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
