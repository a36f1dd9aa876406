"""``status`` of an applied tree answered from the output kept for its applied identity
(patchbay.cli.replay): printed again only while the identity verifies by content."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import run_cli, write_patchset


def _applied(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    root = tmp_path / "tree"
    (root / "demo_engine").mkdir(parents=True)
    (root / "demo_engine" / "b.py").write_text("def f():\n    return 1\n")
    diff = (
        "--- a/demo_engine/b.py\n+++ b/demo_engine/b.py\n@@ -1,2 +1,2 @@\n"
        " def f():\n-    return 1\n+    return 2\n"
    )
    ps = write_patchset(
        tmp_path / "ps", [{"id": "two", "kind": "diff", "file": "b.patch"}], files={"b.patch": diff}
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    res = run_cli("apply", ps, "--root", root, env=env)
    assert res.code == 0 and "1 applied" in res.out
    return root, ps, env


def _kept(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "cache" / "patchbay" / "status"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_a_second_status_prints_the_kept_output_while_the_identity_verifies(
    tmp_path: Path,
) -> None:
    root, ps, env = _applied(tmp_path)
    first = run_cli("status", ps, "--root", root, "--format", "json", env=env)
    assert first.code == 0
    assert json.loads(first.out)["patches"][0]["status"] == "applied"
    [kept] = _kept(tmp_path)
    doc = json.loads(kept.read_text())
    assert (doc["code"], doc["out"]) == (0, first.out)
    second = run_cli("status", ps, "--root", root, "--format", "json", env=env)
    assert (second.code, second.out) == (first.code, first.out)
    # it is the kept output that is printed: a marked copy shows through
    kept.write_text(json.dumps({**doc, "out": doc["out"].replace("applied", "APPLIED-KEPT")}))
    marked = run_cli("status", ps, "--root", root, "--format", "json", env=env)
    assert "APPLIED-KEPT" in marked.out
    # another format is another kept output
    concise = run_cli("status", ps, "--root", root, "--format", "concise", env=env)
    assert concise.out == "two: applied\n" and len(_kept(tmp_path)) == 2


def test_a_changed_file_or_patchset_is_judged_in_full_again(tmp_path: Path) -> None:
    root, ps, env = _applied(tmp_path)
    first = run_cli("status", ps, "--root", root, "--format", "concise", env=env)
    assert first.out == "two: applied\n"
    target = root / "demo_engine" / "b.py"
    target.write_text(target.read_text() + "# edited by hand\n")
    again = run_cli("status", ps, "--root", root, "--format", "concise", env=env)
    assert "changed since patchbay wrote it" in again.out
    target.write_text("def f():\n    return 1\n")  # back to pristine: pending again
    pending = run_cli("status", ps, "--root", root, "--format", "concise", env=env)
    assert "pending" in pending.out
    assert len(_kept(tmp_path)) == 1  # nothing kept for what no identity verifies


def test_a_damaged_kept_output_or_an_unusual_command_line_runs_the_full_status(
    tmp_path: Path,
) -> None:
    root, ps, env = _applied(tmp_path)
    first = run_cli("status", ps, "--root", root, "--format", "concise", env=env)
    [kept] = _kept(tmp_path)
    kept.write_text("{not json")
    again = run_cli("status", ps, "--root", root, "--format", "concise", env=env)
    assert (again.code, again.out) == (0, first.out)
    assert json.loads(kept.read_text())["out"] == first.out  # kept again, whole
    doc = json.loads(kept.read_text())
    kept.write_text(json.dumps({**doc, "out": "KEPT\n"}))
    other = run_cli(
        "status", ps, "--root", root, "--format", "concise", "--probe-timeout", "9", env=env
    )
    assert other.out == first.out  # not the plainest form: judged in full
