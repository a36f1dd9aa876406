"""A file a patch edits that upstream moved: the conflict names where it went, found by the
patch's own hunks in the file of the same name (status and check say it)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import diff_patch, run_cli, write_patchset

MODULE = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(30))


def _patchset(tmp_path: Path) -> Path:
    after = MODULE.replace("    return x + 7\n", "    return x + 7  # patched\n")
    return write_patchset(
        tmp_path / "ps",
        [{"id": "moved", "kind": "diff", "file": "m.patch"}],
        files={"m.patch": diff_patch("demo_engine/ops/gluon/mla.py", MODULE, after)},
    )


def test_a_file_moved_upstream_is_named_in_the_conflict(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "demo_engine" / "ops" / "attention").mkdir(parents=True)
    (root / "demo_engine" / "ops" / "attention" / "mla.py").write_text(MODULE)
    (root / "demo_engine" / "other").mkdir()
    (root / "demo_engine" / "other" / "mla.py").write_text("unrelated = True\n")
    ps = _patchset(tmp_path)
    res = run_cli("status", ps, "--root", root, "--format", "json")
    assert res.code == 1
    (hunk,) = json.loads(res.out)["patches"][0]["hunks"]
    assert hunk["state"] == "conflict"
    assert "demo_engine/ops/gluon/mla.py does not exist" in hunk["detail"]
    assert "demo_engine/ops/attention/mla.py holds every hunk's context" in hunk["detail"]
    res = run_cli("check", ps, "--root", root)
    assert "demo_engine/ops/attention/mla.py holds every hunk's context" in res.out


def test_no_hint_when_no_file_or_two_files_hold_the_hunks(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "demo_engine" / "a").mkdir(parents=True)
    (root / "demo_engine" / "a" / "mla.py").write_text("unrelated = True\n")
    ps = _patchset(tmp_path)
    res = run_cli("status", ps, "--root", root, "--format", "json")
    (hunk,) = json.loads(res.out)["patches"][0]["hunks"]
    assert hunk["detail"] == "demo_engine/ops/gluon/mla.py does not exist"
    (root / "demo_engine" / "b").mkdir()
    (root / "demo_engine" / "a" / "mla.py").write_text(MODULE)
    (root / "demo_engine" / "b" / "mla.py").write_text(MODULE)  # which one? no guess
    res = run_cli("status", ps, "--root", root, "--format", "json")
    (hunk,) = json.loads(res.out)["patches"][0]["hunks"]
    assert hunk["detail"] == "demo_engine/ops/gluon/mla.py does not exist"
