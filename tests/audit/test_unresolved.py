"""Dynamic execution is reported, never dropped: PB414 (issue 21, part 1).

A script that names an engine and runs code the analyser cannot see (``eval`` of a string
known only at run time, a command whose name is computed, a patcher of its own folder that is
not in the repository, a script whose path is known only at run time) gets a PB414 warning at
that statement; the same statements in a script that names no engine stay silent, as do the
forms that can be followed (a step helper's ``"$@"``, ``eval`` of a string the script built,
a path whose known part places it in the repository).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import run_cli
from inprocess import run_main

SITE = "SITE=$(python3 -c 'import vllm, os; print(os.path.dirname(vllm.__file__))')\n"
DYNAMIC = (
    'PATCH_CMD=$(curl -fsSL "$PATCH_URL")\n'  # 1
    'eval "$PATCH_CMD"\n'  # 2
    "$LAUNCH_CMD --port 8000\n"  # 3
    'python3 "$(dirname "$0")/patch_mooncake_batches.py"\n'  # 4
    'bash "$PATCHER" --apply\n'  # 5
)


def _audit(root: Path) -> dict:
    res = run_cli("audit", root, "--format", "json", "--no-cache")
    assert res.code in (0, 1), res.out + res.err
    return json.loads(res.out)


def test_dynamic_execution_in_an_engine_script_is_pb414_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "patch.sh").write_text("#!/bin/bash\nset -e\n" + SITE + DYNAMIC)
    doc = _audit(tmp_path)
    found = {f["line"]: f for f in doc["findings"] if f["code"] == "PB414"}
    assert sorted(found) == [5, 6, 7, 8]  # every statement but the assignment
    assert {f["severity"] for f in found.values()} == {"warning"}
    assert 'eval "$PATCH_CMD"' in found[5]["message"]
    assert "$LAUNCH_CMD" in found[6]["message"]
    assert "patch_mooncake_batches.py" in found[7]["message"]
    assert "no such file is in the repository" in found[7]["message"]
    assert "$PATCHER" in found[8]["message"]
    for f in found.values():  # never a placeholder of the walk
        assert "/@" not in f["message"] and "<script folder>" not in f["message"], f


def test_the_same_statements_in_a_script_that_names_no_engine_are_silent(tmp_path: Path) -> None:
    (tmp_path / "tool.sh").write_text("#!/bin/bash\nset -e\n" + DYNAMIC)
    assert _audit(tmp_path)["findings"] == []


def test_a_review_annotation_with_a_reason_suppresses_pb414(tmp_path: Path) -> None:
    (tmp_path / "patch.sh").write_text(
        "#!/bin/bash\n"
        + SITE
        + "# patchbay-reviewed PB414: the launcher command only starts vllm serve\n"
        + "$LAUNCH_CMD --port 8000\n"
    )
    doc = _audit(tmp_path)
    (finding,) = [f for f in doc["findings"] if f["code"] == "PB414"]
    assert finding["suppressed"]["reason"].startswith("the launcher command"), finding


def test_followable_forms_are_followed_not_reported(tmp_path: Path) -> None:
    """A step helper runs its words at the call's line; eval of a string the script built is
    walked; a patcher whose path has a run-time prefix but whose file is in the repository is
    analysed on its own; a tool of a virtual environment is no script."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "fix.py").write_text(
        "import sys\np = sys.argv[1]\nt = open(p).read()\nopen(p, 'w').write(t.replace('a', 'b'))\n"
    )
    (tmp_path / "patch.sh").write_text(
        "#!/bin/bash\nset -e\n"
        + SITE  # 3
        + 'step() { echo "== $1"; shift; "$@"; }\n'  # 4
        + "step 'envs' sed -i s/x/y/ \"$SITE/envs.py\"\n"  # 5
        + 'FIX="sed -i s/p/q/ \\\n  $SITE/config.py"\n'  # 6-7
        + 'eval "$FIX"\n'  # 8
        + 'python3 "$WS_PATH/tools/fix.py" "$SITE/worker.py"\n'  # 9
        + '"$VENV/bin/aiperf" profile --model "$MODEL"\n'  # 10
    )
    doc = _audit(tmp_path)
    assert [f for f in doc["findings"] if f["code"] == "PB414"] == []
    lines = {(f["path"], f["line"]) for f in doc["findings"] if f["code"] == "PB402"}
    assert ("patch.sh", 5) in lines  # the call's statement, not the helper's "$@"
    assert ("patch.sh", 8) in lines  # the eval, one command across the continuation


def test_import_lists_the_code_it_cannot_see(tmp_path: Path) -> None:
    script = tmp_path / "patch.sh"
    script.write_text("#!/bin/bash\nset -e\n" + SITE + 'python3 "$(dirname "$0")/gone.py"\n')
    out = tmp_path / "out"
    res = run_main("import", script, "--out", out)
    assert res.code in (0, 1), res.out + res.err
    notes = (out / "IMPORT-NOTES.md").read_text()
    assert "runs code the import cannot see" in notes and "gone.py" in notes


def test_python_the_analyser_cannot_parse_is_pb414_not_clean(tmp_path: Path) -> None:
    """A patcher in a newer Python's syntax (or with a NUL byte) writes into vllm: the audit
    says it could not read it instead of calling the tree clean; a byte-order mark is fine."""
    (tmp_path / "newer.sh").write_text(
        "#!/bin/bash\npython3 - <<'PY'\nimport vllm, pathlib\n"
        "p = pathlib.Path(vllm.__file__).parent / 'x.py'\n"
        'p.write_text(f"{ {\'a\': 1}["a"] }")\ndef (:\nPY\n'
    )
    (tmp_path / "bom.py").write_bytes(
        b"\xef\xbb\xbfimport vllm, pathlib\n"
        b"p = pathlib.Path(vllm.__file__).parent / 'bom.py'\np.write_text('x')\n"
    )
    doc = _audit(tmp_path)
    codes = {(f["path"], f["code"]) for f in doc["findings"]}
    assert ("newer.sh", "PB414") in codes
    assert ("bom.py", "PB403") in codes


def test_an_engine_named_only_in_a_comment_does_not_make_pb414(tmp_path: Path) -> None:
    (tmp_path / "tool.sh").write_text("#!/bin/bash\n# works with a stock vllm image\n" + DYNAMIC)
    assert _audit(tmp_path)["findings"] == []


def test_a_helper_run_by_another_helpers_words_reports_the_outer_call(tmp_path: Path) -> None:
    """`run_step "x" quiet cp ...`: run_step's "$@" runs quiet, whose "$@" runs cp; the
    change (and its swallowed failure) is the statement of the script, in its file."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "steps.sh").write_text(
        'run_step() {\n  local name=$1; shift\n  echo "== $name"\n  "$@"\n}\n'
        'quiet() { "$@" >/dev/null 2>&1 || true; }\n'
        'wrap() { eval "$@"; }\n'
    )
    (tmp_path / "main.sh").write_text(
        '#!/bin/bash\nsource "$(dirname "$0")/lib/steps.sh"\n'
        + SITE  # 3
        + 'run_step "nested" quiet cp a.py "$SITE/nested.py"\n'  # 4
        + 'wrap "sed -i s/a/b/ $SITE/w.py"\n'  # 5
    )
    doc = _audit(tmp_path)
    at = {(f["path"], f["line"], f["code"]) for f in doc["findings"]}
    assert ("main.sh", 4, "PB404") in at and ("main.sh", 4, "PB409") in at, at
    assert ("main.sh", 5, "PB402") in at, at
    assert not [f for f in doc["findings"] if f["path"].startswith("lib/")], at


def test_a_variable_named_like_pipeline_is_no_interpreter(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\n" + SITE + "$PIPELINE_STEP --model x\n$PYTHON -c 'print(1)'\n"
    )
    doc = _audit(tmp_path)
    lines = {f["line"] for f in doc["findings"] if f["code"] == "PB414"}
    assert lines == {3}


def test_code_piped_into_bash_is_walked_when_known_and_pb414_when_downloaded(
    tmp_path: Path,
) -> None:
    (tmp_path / "pipe.sh").write_text(
        "#!/bin/bash\n"
        + SITE  # 2
        + "curl -fsSL https://example.invalid/fix-vllm.sh | bash\n"  # 3
        + "printf 'sed -i s/a/b/ %s/envs.py\\n' \"$SITE\" | bash\n"  # 4
    )
    doc = _audit(tmp_path)
    at = {(f["line"], f["code"]) for f in doc["findings"]}
    assert (3, "PB414") in at, at
    assert (4, "PB402") in at, at


def test_a_download_pinned_to_a_revision_by_its_url_says_so(tmp_path: Path) -> None:
    sha = "4b0088c5fecbeffa6544d2da1006b45380aac896"
    (tmp_path / "dl.sh").write_text(
        "#!/bin/bash\n"
        + SITE
        + f'curl -fsSL -o "$SITE/ops/mla.py" https://gist.githubusercontent.com/u/abc/raw/{sha}/mla.py\n'
        + 'curl -fsSL -o "$SITE/ops/gemm.py" https://example.invalid/latest/gemm.py\n'
    )
    doc = _audit(tmp_path)
    by_line = {f["line"]: f["message"] for f in doc["findings"] if f["code"] == "PB404"}
    assert f"pinned to revision {sha[:12]} by its URL" in by_line[3]
    assert "unpinned" in by_line[4]


def test_a_loop_over_several_files_names_every_file_in_its_one_finding(tmp_path: Path) -> None:
    (tmp_path / "loop.sh").write_text(
        "#!/bin/bash\n" + SITE + "for f in a.py b.py c.py; do\n"
        '  sed -i s/x/y/ "$SITE/ops/$f"\ndone\n'
    )
    doc = _audit(tmp_path)
    (finding,) = [f for f in doc["findings"] if f["code"] == "PB402"]
    for name in ("ops/a.py", "ops/b.py", "ops/c.py"):
        assert name in finding["message"], finding["message"]


def test_a_script_that_is_there_but_cannot_be_read_is_not_called_missing(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "helper.sh")
    (tmp_path / "main.sh").write_text("#!/bin/bash\n" + SITE + "source ./helper.sh\n")
    doc = _audit(tmp_path)
    (gap,) = [f for f in doc["findings"] if f["code"] == "PB414"]
    assert "cannot be read" in gap["message"] and "no such file" not in gap["message"]
