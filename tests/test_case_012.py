"""Shared case 012: the fix landed upstream, then a refactor moved its context.

The hunk's added lines are in the file as one block, anchored by the same leading context, but
its trailing context moved above them: neither ``git apply`` nor ``git apply -R`` accepts the
hunk. patchbay calls it upstream (present, context moved, lines named) in ``status``,
``check`` and ``apply``; variants with weak evidence (only some added lines, generic added
lines, added lines that occur twice) stay a conflict.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import CASES, run_cli, snapshot, write_patchset
from patchbay.diff.hunks import HunkState, LineIndex, classify_hunk, is_generic, moved_context
from patchbay.diff.parse import parse_diff

CASE = CASES / "012-fix-landed-context-moved"
DECODE = "demo_engine/decode.py"


def _setup(tmp_path: Path, patch: bytes | None = None) -> tuple[Path, Path]:
    root = tmp_path / "tree"
    shutil.copytree(CASE / "tree", root)
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "int64-strides", "kind": "diff", "file": "fix.patch"}],
        files={"fix.patch": patch if patch is not None else (CASE / "fix.patch").read_bytes()},
    )
    return root, ps


def test_git_accepts_the_hunk_neither_way(tmp_path: Path) -> None:
    root, _ = _setup(tmp_path)
    for reverse in ([], ["-R"]):
        proc = subprocess.run(
            ["git", "apply", "--check", *reverse, str(CASE / "fix.patch")],
            cwd=root,
            capture_output=True,
            check=False,
        )
        assert proc.returncode != 0


def test_status_calls_the_hunk_upstream_with_its_lines(tmp_path: Path) -> None:
    root, ps = _setup(tmp_path)
    res = run_cli("status", ps, "--root", root, "--json")
    assert res.code == 0, res.err
    patch = json.loads(res.out)["patches"][0]
    assert patch["status"] == "redundant" and patch["applied_by"] == "image"
    (hunk,) = patch["hunks"]
    assert hunk["state"] == "upstream"
    assert hunk["moved"] == {"first_line": 12, "last_line": 16}
    assert hunk["detail"] == "context moved: lines 12-16"
    assert patch["hunk_counts"] == {"upstream": 1}
    table = run_cli("status", ps, "--root", root)
    assert "redundant" in table.out
    assert f"{DECODE} hunk 1: upstream at lines 12-16 (context moved)" in table.out


def test_check_says_upstream_and_droppable(tmp_path: Path) -> None:
    root, ps = _setup(tmp_path)
    res = run_cli("check", ps, "--root", root)
    assert res.code == 0, res.out
    assert f"{DECODE} hunk 1: upstream at lines 12-16 (context moved)" in res.out
    assert "1 patch(es) can be dropped with this image: int64-strides" in res.out
    doc = json.loads(run_cli("check", ps, "--root", root, "--json").out)
    assert doc["patches"][0]["verdict"] == "upstream"
    assert doc["droppable"] == ["int64-strides"]


def test_apply_writes_nothing_and_reports_no_conflict(tmp_path: Path) -> None:
    root, ps = _setup(tmp_path)
    before = snapshot(root)
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 0, res.err
    assert "conflict" not in res.out + res.err
    assert "1 patch(es) redundant" in res.out
    assert f"note: int64-strides: {DECODE} hunk 1: upstream at lines 12-16" in res.out
    assert "nothing to do" in res.out
    assert snapshot(root) == before
    # never reverse-applied on a guess: revert has nothing recorded to undo
    assert "nothing to revert" in run_cli("revert", ps, "--root", root).out
    assert snapshot(root) == before


def _variant(tree_text: str, patch_text: str, tmp_path: Path) -> dict:
    root, ps = _setup(tmp_path, patch_text.encode())
    (root / DECODE).write_text(tree_text)
    res = run_cli("status", ps, "--root", root, "--json")
    return json.loads(res.out)["patches"][0]


def test_only_some_added_lines_present_stays_a_conflict(tmp_path: Path) -> None:
    text = (CASE / "tree" / DECODE).read_text()
    partial = text.replace("        stride_pe = int(stride_pe)\n", "")
    patch = _variant(partial, (CASE / "fix.patch").read_text(), tmp_path)
    assert patch["status"] == "conflict"
    assert patch["hunks"][0]["state"] == "conflict"


def test_added_lines_that_occur_twice_never_count(tmp_path: Path) -> None:
    text = (CASE / "tree" / DECODE).read_text()
    block = "    if not within_2gb:\n        stride_kv = int(stride_kv)\n"
    twice = text + "\n\ndef again(within_2gb, stride_kv, stride_pe):\n" + block
    twice += "        stride_pe = int(stride_pe)\n    # >2GB KV cache: widen strides to int64 "
    twice += "so offsets don't overflow int32.\n"
    patch = _variant(twice, (CASE / "fix.patch").read_text(), tmp_path)
    assert patch["hunks"][0]["state"] == "conflict"


def test_generic_added_lines_are_no_evidence(tmp_path: Path) -> None:
    # a hunk that adds a blank line and a lone `return` after the same context, which moved
    patch_text = (
        "--- a/demo_engine/decode.py\n+++ b/demo_engine/decode.py\n"
        "@@ -4,6 +4,8 @@\n"
        " def plan_splits(seq_lens, block_n, within_2gb, stride_kv, stride_pe):\n"
        "     num_blocks = math.ceil(max(seq_lens) / block_n)\n"
        "     start = 0\n"
        "+    return\n"
        "+\n"
        "     # early return for an empty batch\n"
        "     if not seq_lens:\n"
        "         return []\n"
    )
    tree = (
        "import math\n\n\n"
        "def plan_splits(seq_lens, block_n, within_2gb, stride_kv, stride_pe):\n"
        "    num_blocks = math.ceil(max(seq_lens) / block_n)\n"
        "    # early return for an empty batch\n"
        "    if not seq_lens:\n"
        "        return []\n"
        "    start = 0\n"
        "    return\n"
        "\n"
    )
    patch = _variant(tree, patch_text, tmp_path)
    assert patch["hunks"][0]["state"] == "conflict"


def test_removed_lines_still_nearby_are_no_evidence() -> None:
    parsed = parse_diff(
        b"--- a/f.py\n+++ b/f.py\n@@ -1,4 +1,4 @@\n"
        b" def scale(values, factor):\n"
        b"     checked = validate(values)\n"
        b"-    return [v * factor for v in checked]\n"
        b"+    return [v * factor * SCALE_UNIT for v in checked]\n"
        b"     # end of scale\n",
        source=Path("f.patch"),
    )
    (hunk,) = parsed.files[0].hunks
    both = [
        "def scale(values, factor):\n",
        "    # end of scale\n",
        "    checked = validate(values)\n",
        "    return [v * factor * SCALE_UNIT for v in checked]\n",
        "    return [v * factor for v in checked]\n",
    ]
    assert moved_context(LineIndex(both), hunk) is None
    only_new = [line for line in both if "SCALE_UNIT" in line or "factor):" in line]
    only_new.insert(1, "    # end of scale\n")
    result = classify_hunk(LineIndex(only_new), hunk, "f.py")
    assert result.state is HunkState.UPSTREAM and result.moved == (3, 3)


@pytest.mark.parametrize(
    ("line", "generic"),
    [
        ("\n", True),
        ("        return\n", True),
        ("    return []\n", True),
        ("    }\n", True),
        ("    ),\n", True),
        ("else:\n", True),
        ("x = 1\n", True),
        ("    return stride\n", False),
        ("        stride_kv = int(stride_kv)\n", False),
    ],
)
def test_generic_lines(line: str, generic: bool) -> None:
    assert is_generic(line) is generic
