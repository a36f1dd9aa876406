"""The analyser against every expectation of the corpus (``tests/corpus``), in-process.

Each script's modifications (line and mechanism, and the flags the sidecar names) and the
statements it runs that the analyser cannot see must be exactly the expected ones: nothing
missed, nothing extra, and the silent scripts silent. The recall and
precision figures over the same corpus, for the audit too, are printed by
``benchmarks/bench_corpus.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from corpus_expectations import CORPUS, Case, found_of, load_cases, unresolved_of
from inprocess import run_main
from patchbay.analysis import EngineNames, ShellSyntaxError, analyse
from patchbay.importer import import_script

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
    assert unresolved_of(analysis, case.rel) == case.unresolved, analysis.unresolved
    for exp in case.expected:
        flags = set().union(
            *(
                e.flags
                for e, _ in found
                if (e.path, e.line, e.mechanism) == (exp.path, exp.line, exp.mechanism)
            )
        )
        for flag in ("uncalled", "swallowed", "pinned"):
            assert (flag in exp.flags) == (flag in flags), (exp, flags)
        alts = {f for f in exp.flags if f.startswith("alt=")}
        assert alts <= flags, (exp, flags)


SHELL = [c for c in CASES if c.kind == "shell" and c.error_line is None]


def test_import_lists_every_modification_and_is_never_wrongly_complete(tmp_path: Path) -> None:
    """``patchbay import`` of every corpus shell script: each expected modification becomes a
    patch or is listed (with its lines) as not converted; a script with anything left out (a
    change in a function never called) is partial; the notes show no internal placeholder and
    no control byte. A change in a script it runs (a ``.py``
    patcher) is a patch or leaves the import partial."""
    for n, case in enumerate(SHELL):
        result = import_script(case.script, tmp_path / f"out{n}", force=True)
        lines = {e.line for e in case.expected if not e.path}
        spans = [s for d in result.patches if not getattr(d, "harness", False) for s in d.spans]
        converted = {line for line in lines if any(a <= line <= b for a, b in spans)}
        listed = {line for line in lines for o in result.unconverted if o.start <= line <= o.end}
        assert lines <= converted | listed, (case.rel, sorted(lines - converted - listed))
        if converted != lines:
            assert result.partial, case.rel
        if any(e.path for e in case.expected) and not result.partial:
            assert result.patches, case.rel  # a change in a script it runs became a patch
        notes = (tmp_path / f"out{n}" / "IMPORT-NOTES.md").read_text()
        assert "/@" not in notes and not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", notes), case.rel


def test_audit_findings_of_followed_scripts_carry_their_chain() -> None:
    """A statement of a sourced (or `bash`-run) script is one finding at its own file and line,
    with the script that reached it as its chain (the waiver coverage reads it)."""
    from patchbay.audit.scanner import scan_tree

    found = scan_tree(CORPUS, ["**/*.sh"], [], EngineNames.build())
    by_place = {(f.path, f.line): f for f in found if f.code != "PB409"}
    assert by_place[("lib/rocm-helpers.sh", 5)].chain == ("o01-source-lib.sh",)
    assert by_place[("lib/apply-kernels.sh", 4)].chain == ("o02-bash-other.sh",)
    assert by_place[("a01-comment-heredoc.sh", 5)].chain == ()


def test_annotations_are_comments_never_strings(tmp_path: Path) -> None:
    """`patchbay-reviewed` counts in a comment (shell or Python), never inside a string: a
    Python module that names the annotation in a regex or a docstring has no PB410."""
    from patchbay.audit.scanner import scan_tree

    (tmp_path / "tool.py").write_text(
        "import re, sysconfig\n"
        'ANNOTATION = re.compile(r"patchbay-reviewed\\b(.*)")\n'
        'site = sysconfig.get_paths()["purelib"]\n'
        "# patchbay-reviewed PB403: measured with and without it, see waiver W-7\n"
        'open(site + "/vllm/envs.py", "w").write("X = 1\\n")\n'
    )
    (tmp_path / "run.sh").write_text(
        'echo "usage: add # patchbay-reviewed PBxxx: why"\n'
        'SITE=$(python3 -c "import site; print(site.getsitepackages()[0])")\n'
        'cp x.py "$SITE/vllm/x.py"  # patchbay-reviewed\n'
    )
    found = {
        (f.path, f.line, f.code): f
        for f in scan_tree(tmp_path, ["*.py", "*.sh"], [], EngineNames.build())
    }
    assert set(found) == {("tool.py", 5, "PB403"), ("run.sh", 3, "PB404"), ("run.sh", 3, "PB410")}
    assert found[("tool.py", 5, "PB403")].suppression is not None
    assert found[("run.sh", 3, "PB404")].suppression is None


def test_import_counts_the_blanks_validate_lists(tmp_path: Path) -> None:
    """For every corpus shell script, the "to fill" count ``import`` prints is the number of
    ``TO FILL`` lines ``validate`` prints for the draft it wrote (one function counts both)."""
    checked = 0
    for n, case in enumerate(SHELL):
        out = tmp_path / f"out{n}"
        result = import_script(case.script, out, force=True)
        res = run_main("validate", out)
        if res.code != 0:
            continue  # a draft validate refuses (an unknown target...) says so itself
        listed = [line for line in res.out.splitlines() if line.startswith("TO FILL: ")]
        assert len(listed) == len(result.todo), (case.rel, listed, result.todo)
        checked += 1
    assert checked >= len(SHELL) // 2
