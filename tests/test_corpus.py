"""The analyser against every expectation of the corpus (``tests/corpus``), in-process.

Each script's modifications (line and mechanism, and the flags the sidecar names) must be exactly
the expected ones: nothing missed, nothing extra, and the silent scripts silent. The recall and
precision figures over the same corpus, for the audit too, are printed by
``benchmarks/bench_corpus.py``.
"""

from __future__ import annotations

import pytest

from corpus_expectations import CORPUS, Case, found_of, load_cases
from patchbay.analysis import EngineNames, ShellSyntaxError, analyse

CASES = load_cases()


def test_the_corpus_is_big_enough() -> None:
    """At least 60 scripts, a dozen of them silent, and every mechanism expected somewhere."""
    assert len(CASES) >= 60
    assert sum(1 for c in CASES if not c.expected and c.error_line is None) >= 12
    mechanisms = {e.mechanism for c in CASES for e in c.expected}
    assert mechanisms == {
        "diff", "edit", "write", "copy", "download", "pip", "vcs", "remove", "inject", "rebuild",
    }  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.rel for c in CASES])
def test_analyser_meets_the_expectations(case: Case) -> None:
    text = case.script.read_text()
    engines = EngineNames.build()
    if case.error_line is not None:
        with pytest.raises(ShellSyntaxError) as info:
            analyse(text, case.rel, case.kind, engines, CORPUS)
        assert info.value.line == case.error_line
        assert "here-document" in info.value.reason
        return
    analysis = analyse(text, case.rel, case.kind, engines, CORPUS)
    found = found_of(analysis, case.rel)
    got = {(e.path, e.line, e.mechanism) for e, _ in found}
    want = {(e.path, e.line, e.mechanism) for e in case.expected}
    assert got == want, [m.describe() for _, m in found]
    for exp in case.expected:
        flags = set().union(
            *(
                e.flags
                for e, _ in found
                if (e.path, e.line, e.mechanism) == (exp.path, exp.line, exp.mechanism)
            )
        )
        for flag in ("uncalled", "swallowed"):
            assert (flag in exp.flags) == (flag in flags), (exp, flags)
        alts = {f for f in exp.flags if f.startswith("alt=")}
        assert alts <= flags, (exp, flags)
