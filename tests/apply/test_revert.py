"""``revert`` after a reinstall, ``revert PATCHSET ID...`` (quilt's pop), ``apply --dry-run``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO, Engine, run_cli, snapshot

DEMO = REPO / "patchsets" / "demo"


def _reinstall(engine: Engine, wheel: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(engine.python), "install", "--quiet",
         "--no-index", "--no-deps", "--force-reinstall", str(wheel)],
        check=True,
    )  # fmt: skip


def _contents(root: Path) -> dict[str, bytes]:
    return {k: data for k, (data, _) in snapshot(root).items() if "__pycache__" not in k}


def _status(engine: Engine) -> dict[str, dict]:
    res = run_cli("status", DEMO, "--python", engine.python, "--json")
    return {p["id"]: p for p in json.loads(res.out)["patches"]}


def test_revert_after_a_reinstall_clears_the_ledger(engine: Engine, demo_wheel: Path) -> None:
    pristine = _contents(engine.pkg)
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    _reinstall(engine, demo_wheel)
    assert _contents(engine.pkg) == pristine
    status = _status(engine)
    for patch in status.values():
        assert patch["status"] == "pending"
        assert patch["applied_by"] is None  # never "patchbay" beside "pending"
        assert patch["ledger"]["matches_tree"] is False
    notes = status["envs-asm-padding"]["notes"]
    assert any("back to what they were before it" in n for n in notes), notes
    res = run_cli("revert", DEMO, "--python", engine.python)
    assert res.code == 0, res.err
    assert "cleared mla-fp8-kernel-row: its files were already back" in res.out
    assert "cleared envs-asm-padding" in res.out
    assert _contents(engine.pkg) == pristine
    assert all(p["ledger"] is None for p in _status(engine).values())
    assert "nothing to revert" in run_cli("revert", DEMO, "--python", engine.python).out
    # and the patchset applies again from there
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    assert {p["status"] for p in _status(engine).values()} == {"applied"}


def test_revert_named_patches_pops_down_to_them(engine: Engine) -> None:
    pristine = _contents(engine.pkg)
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    res = run_cli("revert", DEMO, "mla-large-cache", "--python", engine.python)
    assert res.code == 0, res.err
    assert res.out.splitlines() == [
        "reverted mla-fp8-kernel-row",
        "reverted mla-full-graph",
        "reverted mla-large-cache",
    ]
    states = {pid: p["status"] for pid, p in _status(engine).items()}
    assert states == {
        "envs-asm-padding": "applied",
        "scheduler-padding": "applied",
        "mla-large-cache": "pending",
        "mla-full-graph": "pending",
        "mla-fp8-kernel-row": "pending",
    }
    res = run_cli("revert", DEMO, "mla-full-graph", "--python", engine.python)
    assert "nothing to revert" in res.out and "mla-full-graph" in res.out
    res = run_cli("revert", DEMO, "no-such-patch", "--python", engine.python)
    assert res.code == 2 and "no patch no-such-patch in patchset demo" in res.err
    assert run_cli("revert", DEMO, "--python", engine.python).code == 0
    assert _contents(engine.pkg) == pristine


def test_apply_dry_run_prints_the_diff_it_would_write(engine: Engine, tmp_path: Path) -> None:
    before = snapshot(engine.prefix)
    res = run_cli("apply", DEMO, "--python", engine.python, "--dry-run")
    assert res.code == 0, res.err
    assert snapshot(engine.prefix) == before  # nothing written, not even a state folder
    assert "# envs-asm-padding (diff): 1 file(s)" in res.out
    assert "--- a/demo_engine/envs.py\n+++ b/demo_engine/envs.py\n" in res.out
    # the printed diff, handed to git apply in the target root, makes what apply makes
    diff = res.out.split(f"# target engine: {engine.site}\n", 1)[1].split("\n# target ")[0]
    patch = tmp_path / "dry.patch"
    patch.write_text(diff.rstrip("\n") + "\n")
    subprocess.run(["git", "apply", str(patch)], cwd=engine.site, check=True)
    by_git = _contents(engine.pkg)
    subprocess.run(["git", "apply", "-R", str(patch)], cwd=engine.site, check=True)
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    assert _contents(engine.pkg) == by_git
    again = run_cli("apply", DEMO, "--python", engine.python, "--dry-run")
    assert "# nothing to do" in again.out


def test_revert_forget_removes_records_and_writes_no_file(engine: Engine) -> None:
    """``revert --forget``: a tree a newer release was copied over (here: a file patchbay
    wrote, changed by hand) keeps its bytes; the records go, and status judges the patches
    afresh on the files there (issue 28, part 2)."""
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    envs = engine.pkg / "envs.py"
    envs.write_text(envs.read_text() + "# a newer release\n")
    after = _contents(engine.pkg)
    res = run_cli("revert", DEMO, "envs-asm-padding", "--forget", "--python", engine.python)
    assert res.code == 0, res.err
    assert "forgot envs-asm-padding: its record only (no file was written)" in res.out
    assert _contents(engine.pkg) == after
    status = _status(engine)
    assert status["envs-asm-padding"]["ledger"] is None
    assert status["scheduler-padding"]["ledger"] is not None
    res = run_cli("revert", DEMO, "--forget", "--python", engine.python)
    assert res.code == 0 and "forgot" in res.out, res.err
    assert all(p["ledger"] is None for p in _status(engine).values())
    assert _contents(engine.pkg) == after
    again = run_cli("revert", DEMO, "--forget", "--python", engine.python)
    assert again.code == 0 and "nothing to forget" in again.out


def test_revert_forget_refuses_while_a_journal_is_pending(engine: Engine) -> None:
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    from patchbay.apply.journal import MANIFEST

    journal = engine.state_dir / "journal"
    journal.mkdir(exist_ok=True)
    (journal / MANIFEST).write_text("")  # what a run killed mid-write leaves
    res = run_cli("revert", DEMO, "--forget", "--python", engine.python)
    assert res.code != 0 and "journal is pending" in res.err, res.out + res.err
    assert all(p["ledger"] is not None for p in _status(engine).values())
