"""One file never takes down the audit: faults and bounds of the walk become that file's finding.

Issue 21, part 1. The walk of one file is bounded in statements and in unrolled alternatives
(:mod:`patchbay.analysis.budget`); a fault of the analyser in one file is a PB412 finding at the
line it reached, and every other file is still judged (and cached); a FIFO or an unreadable
file that the globs name is a PB413 note, never a hang.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inprocess import run_main
from patchbay.analysis import analyse_shell
from patchbay.analysis import budget as budget_module
from patchbay.analysis.commands import HANDLERS
from patchbay.analysis.engines import EngineNames
from patchbay.audit.scanner import scan_tree

SITE = "SITE=$(python3 -c \"import sysconfig; print(sysconfig.get_paths()['purelib'])\")\n"
SCRIPTS = ["**/*.sh"]


def _nested_loops(depth: int) -> str:
    heads = "".join(f"for v{k} in a b; do\n" for k in range(depth))
    tails = "done\n" * depth
    return SITE + heads + 'cp k.py "$SITE/vllm/kernels/k.py"\n' + tails


@pytest.mark.parametrize("depth", [6, 30, 40])
def test_nested_loops_cost_linear_steps_and_are_summarised(depth: int) -> None:
    """Depth 30 took 19 s and depth 40 over a minute when every loop was unrolled into every
    alternative; past the bound a loop is walked once, its variable unknown, and the
    modification inside says so."""
    analyses = [analyse_shell(_nested_loops(d), "loops.sh") for d in (depth, depth + 1, depth + 2)]
    analysis = analyses[0]
    copies = [m for m in analysis.modifications if m.mechanism.value == "copy"]
    assert [m.line for m in copies] == [depth + 2]
    assert analysis.incomplete is None
    first, second, third = (a.steps for a in analyses)
    if 2**depth > budget_module.MAX_ALTERNATIVES:
        # past the bound each more level costs the same: linear in depth, not doubling
        assert third - second == second - first
        assert any("walked once with its variable unknown" in n for _, n in analysis.notes)
        assert "walked once" in str(copies[0].details.get("summarised"))
    else:
        assert third - second == 2 * (second - first)  # below it, every item is walked
        assert not analysis.notes
        assert "summarised" not in copies[0].details


def test_the_step_bound_stops_the_walk_with_pb412_at_the_line_reached(tmp_path: Path) -> None:
    filler = "echo step $x\n" * (budget_module.MAX_STEPS + 10)
    (tmp_path / "long.sh").write_text(
        SITE + 'sed -i s/a/b/ "$SITE/vllm/envs.py"\n' + filler + 'cp x.py "$SITE/vllm/x.py"\n'
    )
    findings = scan_tree(tmp_path, SCRIPTS, [], EngineNames.build())
    by_code = {f.code: f for f in findings}
    assert by_code["PB402"].line == 2  # found before the bound: kept
    stop = by_code["PB412"]
    assert stop.severity.value == "error"
    assert stop.path == "long.sh"
    lines = (tmp_path / "long.sh").read_text().splitlines()
    assert lines[stop.line - 1] == "echo step $x"  # the statement the bound ran out at
    assert "statements, its bound" in stop.message and "nothing after it" in stop.message
    assert "PB404" not in by_code  # the copy after the bound is not judged, and it says so


BROKEN = "sed -i s/a/b/ /usr/lib/python3/dist-packages/vllm/envs.py\n"
GOOD = "cp x.py /usr/lib/python3/dist-packages/vllm/x.py\n"


def test_a_fault_of_the_analyser_is_a_finding_of_that_file_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handler that raises (a bug no real input reaches today: there is nothing real that
    fails on purpose, so one handler is replaced) costs that file, never the run."""

    def broken(w: object, cmd: object) -> None:
        raise AttributeError("'NoneType' object has no attribute 'text'")

    monkeypatch.setitem(HANDLERS, "sed", broken)
    (tmp_path / "a.sh").write_text("#!/bin/sh\necho start\n" + BROKEN + GOOD)
    (tmp_path / "b.sh").write_text(GOOD)
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("PATCHBAY_NO_CACHE", raising=False)
    result = run_main("audit", tmp_path, "--format", "json")
    assert result.crash is None, result.crash
    assert result.code == 1
    findings = {(f["path"], f["line"], f["code"]) for f in json.loads(result.out)["findings"]}
    assert ("a.sh", 3, "PB412") in findings  # at the statement that failed
    assert ("b.sh", 1, "PB404") in findings  # the other file is judged
    assert ("a.sh", 4, "PB404") not in findings  # nothing after the fault is
    message = next(f["message"] for f in json.loads(result.out)["findings"] if f["code"] == "PB412")
    assert "AttributeError" in message and "please report it" in message
    # the files that finished were cached: a second run analyses nothing again
    assert any(cache.rglob("scripts-*.json"))


@pytest.mark.parametrize(
    "script",
    [
        "uv pip install -e .\n",
        "python3 -m pip install -e . --no-build-isolation\n",
        "pip install -e '.[dev]'\n",
        'cd "$(mktemp -d)"\nuv pip install --system -e .\n',
        "cd -\npip install -e .\n",
        'source "$GITHUB_WORKSPACE/.venv/bin/activate"\nuv pip install -e .\n',
    ],
)
def test_an_editable_install_in_an_unknown_folder_is_no_crash_and_no_finding(
    tmp_path: Path, script: str
) -> None:
    """The crash the real benchmark repository hit at 9 of 10 commits: ``pip install -e .``
    where the working folder is not known (the script's own start)."""
    (tmp_path / "run.sh").write_text("#!/bin/bash\n" + script)
    assert scan_tree(tmp_path, SCRIPTS, [], EngineNames.build()) == []


def test_uninstall_then_editable_install_in_an_unknown_folder_is_the_engine(
    tmp_path: Path,
) -> None:
    (tmp_path / "run.sh").write_text("pip uninstall -y vllm\npip install -e .\n")
    findings = scan_tree(tmp_path, SCRIPTS, [], EngineNames.build())
    assert [(f.line, f.code) for f in findings] == [(2, "PB405")]


def test_a_fifo_named_like_a_script_is_a_note_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.sh")
    os.mkfifo(tmp_path / "noext")  # no suffix: its `#!` line would be read
    (tmp_path / "real.sh").write_text(GOOD)
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from patchbay.analysis.engines import EngineNames\n"
        "from patchbay.audit.scanner import scan_tree\n"
        "fs = scan_tree(Path(sys.argv[1]), ['**/*.sh'], [], EngineNames.build())\n"
        "print(json.dumps([[f.path, f.code, f.severity.value, f.message] for f in fs]))\n"
    )
    # a subprocess with a time-out: a hang fails the test instead of stopping the suite
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got = json.loads(done.stdout)
    assert ["real.sh", "PB404"] in [g[:2] for g in got]
    notes = [g for g in got if g[1] == "PB413"]
    assert [(g[0], g[2]) for g in notes] == [("x.sh", "note")]
    assert "not a regular file" in notes[0][3]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000")
def test_an_unreadable_script_is_a_note(tmp_path: Path) -> None:
    locked = tmp_path / "locked.sh"
    locked.write_text(GOOD)
    locked.chmod(0)
    try:
        findings = scan_tree(tmp_path, SCRIPTS, [], EngineNames.build())
    finally:
        locked.chmod(0o644)
    assert [(f.path, f.code) for f in findings] == [("locked.sh", "PB413")]


def test_a_deeply_nested_script_is_bounded_not_a_crash(tmp_path: Path) -> None:
    """Subshells nested deeper than Python's recursion limit: PB412, not a crash."""
    depth = 3000
    (tmp_path / "deep.sh").write_text("(" * depth + "true" + ")" * depth + "\n" + GOOD)
    findings = scan_tree(tmp_path, SCRIPTS, [], EngineNames.build())
    codes = {f.code for f in findings}
    assert "PB412" in codes or "PB404" in codes
    assert all(f.code in ("PB412", "PB404") for f in findings)


def test_import_refuses_a_script_whose_analysis_stopped(tmp_path: Path) -> None:
    """``patchbay import`` never writes a patchset for half a script that says it is whole."""
    script = tmp_path / "long.sh"
    script.write_text(
        SITE + "echo step $x\n" * (budget_module.MAX_STEPS + 10) + 'cp x.py "$SITE/vllm/x.py"\n'
    )
    result = run_main("import", script, "--out", tmp_path / "out")
    assert result.crash is None, result.crash
    assert result.code != 0
    assert "long.sh:" in result.err and "the analysis stopped" in result.err
    assert not (tmp_path / "out" / "patchset.yaml").exists()


def test_a_fifo_or_a_symlink_loop_as_a_waiver_is_bad_input_not_a_hang(tmp_path: Path) -> None:
    """A waiver is read as every input file is: a FIFO is never opened blocking, a symlink
    loop is named as one (exit 2, not 70)."""
    waivers = tmp_path / "waivers"
    waivers.mkdir()
    os.mkfifo(waivers / "w.md")
    res = run_main("audit", tmp_path)
    assert res.code == 2 and "FIFO" in res.err, res.err
    (waivers / "w.md").unlink()
    (waivers / "w.md").symlink_to("w.md")
    res = run_main("audit", tmp_path)
    assert res.code == 2 and "symlink loop" in res.err, res.err
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    res = run_main("audit", "--repo", loop)
    assert res.code == 2 and "symlink loop" in res.err, res.err


def test_a_remembered_failure_keeps_no_walk_alive() -> None:
    """The memo of :mod:`patchbay.analysis.memo` gives a failure back as an exception, again
    at every equal question; it keeps a bare copy, never the traceback (whose frames would
    keep each walk that met the failure alive for the rest of the run) and never a traceback
    grown by every reuse."""
    from patchbay.analysis.memo import by_code

    class Refused(Exception):
        def __init__(self, reason: str, line: int | None = None) -> None:
            super().__init__(reason)
            self.reason, self.line = reason, line

    @by_code
    def reader(code: str, argv: list[str] | None, getenv: object) -> str:
        raise Refused(f"not {code}", 7)

    depths = []
    for _ in range(3):
        with pytest.raises(Refused) as info:
            reader("x", [])
        assert (info.value.reason, info.value.line) == ("not x", 7)
        depths.append(len(list(_frames(info.value.__traceback__))))
    assert depths[1] == depths[2] <= depths[0]  # a reuse does not grow it
    kept = [cell.cell_contents for cell in reader.__closure__ or () if isinstance(
        cell.cell_contents, dict)]  # fmt: skip
    answers = [a for memo in kept for per_question in memo.values() for a in per_question]
    assert answers and all(a[1].__traceback__ is None for a in answers)


def _frames(tb: object):
    while tb is not None:
        yield tb
        tb = tb.tb_next  # type: ignore[attr-defined]
