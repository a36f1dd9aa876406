"""Patch kinds through the library API on plain folders (``root=``): diff file operations,
binary git patches, ambiguity, and the replace kind."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import diff_patch, run_cli, snapshot, write_patchset
from patchbay.apply.engine import apply_patchset
from patchbay.apply.plan import make_plan
from patchbay.apply.results import PatchStatus
from patchbay.apply.revert import revert_patchset
from patchbay.environment.targets import resolve_environment
from patchbay.errors import RefusedError
from patchbay.patchset.loading import load_patchset


def _run(ps: Path, root: Path):
    patchset = load_patchset(ps)
    env = resolve_environment(patchset, root=root)
    return patchset, env


def statuses(ps: Path, root: Path) -> dict[str, PatchStatus]:
    patchset, env = _run(ps, root)
    return {r.id: r.status for r in make_plan(patchset, env).reports}


def apply(ps: Path, root: Path):
    patchset, env = _run(ps, root)
    return apply_patchset(patchset, env)


def git_diff(tmp_path: Path, before: Path, after: Path) -> bytes:
    """A real ``git diff --binary`` (renames detected) from folder ``before`` to ``after``."""
    repo = tmp_path / "repo"
    shutil.copytree(before, repo)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "before"], check=True)
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    shutil.copytree(after, repo, dirs_exist_ok=True)
    subprocess.run([*git, "add", "-A"], check=True)
    proc = subprocess.run(
        [*git, "diff", "--cached", "--binary", "--full-index", "-M"],
        capture_output=True,
        check=True,
    )
    return proc.stdout


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    old, new = tmp_path / "old", tmp_path / "new"
    for t in (old, new):
        (t / "pkg").mkdir(parents=True)
    (old / "pkg" / "keep.py").write_text("A = 1\n")
    (old / "pkg" / "gone.py").write_text("B = 2\n")
    (old / "pkg" / "moved.py").write_text("C = 3\n" * 5)
    (old / "pkg" / "kernel.co").write_bytes(bytes(range(256)) * 4)
    (new / "pkg" / "keep.py").write_text("A = 10\n")
    (new / "pkg" / "sub").mkdir()
    (new / "pkg" / "sub" / "added.py").write_text("D = 4\n")
    (new / "pkg" / "renamed.py").write_text("C = 3\n" * 5)
    (new / "pkg" / "kernel.co").write_bytes(bytes(range(255, -1, -1)) * 4)
    return old, new


def test_new_deleted_renamed_and_binary_files(tmp_path: Path, trees: tuple[Path, Path]) -> None:
    old, new = trees
    diff = git_diff(tmp_path, old, new)
    root = tmp_path / "root"
    subprocess.run(["cp", "-a", str(old), str(root)], check=True)
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "all", "kind": "diff", "file": "all.patch"}],
        targets={"engine": {"package": "pkg"}},
        files={"all.patch": diff},
    )
    assert statuses(ps, root) == {"all": PatchStatus.PENDING}
    result = apply(ps, root)
    assert result.applied == ["all"]
    assert snapshot_bytes(root / "pkg") == snapshot_bytes(new / "pkg")
    assert statuses(ps, root) == {"all": PatchStatus.APPLIED}
    assert apply(ps, root).nothing_to_do
    patchset, env = _run(ps, root)
    assert revert_patchset(patchset, env).ids == ["all"]
    assert snapshot_bytes(root / "pkg") == snapshot_bytes(old / "pkg")
    assert not (root / "pkg" / "sub").exists()  # the folder the patch created is gone too


def snapshot_bytes(root: Path) -> dict[str, bytes]:
    return {k: v[0] for k, v in snapshot(root).items()}


def test_binary_patch_against_other_content_conflicts(
    tmp_path: Path, trees: tuple[Path, Path]
) -> None:
    old, new = trees
    diff = git_diff(tmp_path, old, new)
    root = tmp_path / "root"
    subprocess.run(["cp", "-a", str(old), str(root)], check=True)
    (root / "pkg" / "kernel.co").write_bytes(b"other kernel")
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "all", "kind": "diff", "file": "all.patch"}],
        targets={"engine": {"package": "pkg"}},
        files={"all.patch": diff},
    )
    patchset, env = _run(ps, root)
    report = make_plan(patchset, env).reports[0]
    assert report.status is PatchStatus.CONFLICT
    assert any("binary file has other content" in h.detail for h in report.inspection.hunks)


def test_duplicated_context_is_ambiguous_and_never_applied(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    block = "def f(x):\n    y = x\n    z = y\n    return z\n\n\n"
    (root / "pkg" / "dup.py").write_text("import os\n\n\n" + block + "X = 1\n\n\n" + block)
    patch = (
        "--- a/pkg/dup.py\n+++ b/pkg/dup.py\n@@ -4,4 +4,4 @@\n def f(x):\n     y = x\n"
        "-    z = y\n+    z = y + 1\n     return z\n"
    )
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "dup", "kind": "diff", "file": "d.patch"}],
        targets={"engine": {"package": "pkg"}},
        files={"d.patch": patch},
    )
    patchset, env = _run(ps, root)
    report = make_plan(patchset, env).reports[0]
    assert report.status is PatchStatus.AMBIGUOUS
    assert report.inspection.hunks[0].candidates == [4, 13]
    before = snapshot(root)
    with pytest.raises(RefusedError, match="ambiguous"):
        apply_patchset(patchset, env)
    assert snapshot(root) == before


def _replace_ps(tmp_path: Path, edits: list[dict[str, object]]) -> Path:
    return write_patchset(
        tmp_path / "ps",
        [{"id": "r", "kind": "replace", "edits": edits}],
        targets={"engine": {"package": "pkg"}},
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "m.py").write_text("a = 1\nb = 1\nc = 2\n")
    return root


def test_replace_applies_once_and_is_idempotent(tmp_path: Path, root: Path) -> None:
    ps = _replace_ps(
        tmp_path,
        [
            {"file": "pkg/m.py", "old": "c = 2\n", "new": "c = 3\n"},
            {"file": "pkg/m.py", "old": "= 1\n", "new": "= 1  # one\n", "count": 2},
        ],
    )
    assert statuses(ps, root) == {"r": PatchStatus.PENDING}
    assert apply(ps, root).applied == ["r"]
    assert (root / "pkg/m.py").read_text() == "a = 1  # one\nb = 1  # one\nc = 3\n"
    assert statuses(ps, root) == {"r": PatchStatus.APPLIED}
    assert apply(ps, root).nothing_to_do


def test_replace_refuses_a_different_match_count(tmp_path: Path, root: Path) -> None:
    ps = _replace_ps(tmp_path, [{"file": "pkg/m.py", "old": "= 1\n", "new": "= 9\n"}])
    patchset, env = _run(ps, root)
    report = make_plan(patchset, env).reports[0]
    assert report.status is PatchStatus.CONFLICT
    assert "old text found 2 time(s), expected 1" in report.inspection.hunks[0].detail
    with pytest.raises(RefusedError):
        apply_patchset(patchset, env)
    assert (root / "pkg/m.py").read_text() == "a = 1\nb = 1\nc = 2\n"


def test_replace_that_extends_its_old_text(tmp_path: Path, root: Path) -> None:
    """new contains old (an insertion after a line): applied is still told from pending."""
    ps = _replace_ps(tmp_path, [{"file": "pkg/m.py", "old": "c = 2\n", "new": "c = 2\nd = 4\n"}])
    assert statuses(ps, root) == {"r": PatchStatus.PENDING}
    apply(ps, root)
    assert statuses(ps, root) == {"r": PatchStatus.APPLIED}
    assert (root / "pkg/m.py").read_text().count("d = 4") == 1


SCHED = (
    "def can_decode(num_decode_tokens):\n"
    "    if num_decode_tokens:\n"
    "        return num_decode_tokens == 1\n"
    "    return False\n"
)


def test_replace_with_a_typo_in_old_is_a_conflict_not_redundant(tmp_path: Path) -> None:
    """old mistyped (absent), new present elsewhere by chance: not evidence it was applied."""
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/s.py").write_text(SCHED)
    edit = {"file": "pkg/s.py", "old": "return num_decode_tokns == 1", "new": "return False"}
    ps = _replace_ps(tmp_path, [edit])
    patchset, env = _run(ps, root)
    report = make_plan(patchset, env).reports[0]
    assert report.status is PatchStatus.CONFLICT
    assert "old text not found, but line 3 is close to it" in report.inspection.hunks[0].detail
    with pytest.raises(RefusedError):
        apply_patchset(patchset, env)
    assert (root / "pkg/s.py").read_text() == SCHED
    res = run_cli("status", ps, "--root", root)
    assert res.code == 1 and "redundant" not in res.out


def test_replace_whose_new_text_is_there_too_often_is_a_conflict(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/s.py").write_text(SCHED + "def other():\n    return False\n")
    ps = _replace_ps(tmp_path, [{"file": "pkg/s.py", "old": "raise Stop()", "new": "return False"}])
    report = make_plan(*_run(ps, root)).reports[0]
    assert report.status is PatchStatus.CONFLICT
    assert "new text found 2 time(s), expected 1" in report.inspection.hunks[0].detail


def test_replace_already_made_upstream_is_redundant(tmp_path: Path) -> None:
    """The image ships the edit (a small one: new is close to old, and stands where old was)."""
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/s.py").write_text(SCHED.replace("== 1", "== 2"))
    edit = {
        "file": "pkg/s.py",
        "old": "return num_decode_tokens == 1",
        "new": "return num_decode_tokens == 2",
    }
    ps = _replace_ps(tmp_path, [edit])
    assert statuses(ps, root) == {"r": PatchStatus.REDUNDANT}


def test_replace_applied_by_patchbay_is_applied(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/s.py").write_text(SCHED)
    edit = {"file": "pkg/s.py", "old": "return num_decode_tokens == 1", "new": "return True"}
    ps = _replace_ps(tmp_path, [edit])
    assert apply(ps, root).applied == ["r"]
    assert statuses(ps, root) == {"r": PatchStatus.APPLIED}


def test_replace_in_crlf_file_keeps_crlf(tmp_path: Path, root: Path) -> None:
    (root / "pkg/m.py").write_bytes(b"a = 1\r\nb = 2\r\n")
    ps = _replace_ps(tmp_path, [{"file": "pkg/m.py", "old": "a = 1\nb", "new": "a = 5\nb"}])
    apply(ps, root)
    assert (root / "pkg/m.py").read_bytes() == b"a = 5\r\nb = 2\r\n"


def test_upgrade_reverts_a_patch_removed_from_the_patchset(tmp_path: Path, root: Path) -> None:
    ps = _replace_ps(tmp_path, [{"file": "pkg/m.py", "old": "c = 2\n", "new": "c = 3\n"}])
    apply(ps, root)
    write_patchset(ps, [], targets={"engine": {"package": "pkg"}})
    patchset, env = _run(ps, root)
    assert [e.patch_id for e in make_plan(patchset, env).stale] == ["r"]
    with pytest.raises(RefusedError, match="--upgrade"):
        apply_patchset(patchset, env)
    result = apply_patchset(patchset, env, upgrade=True)
    assert result.reverted == ["r"]
    assert (root / "pkg/m.py").read_text() == "a = 1\nb = 1\nc = 2\n"


def test_later_patch_builds_on_an_earlier_one_in_the_same_file(tmp_path: Path) -> None:
    """Patch 2's context contains the line patch 1 adds: it is pending only after patch 1,
    and both land through one git run."""
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    base = "".join(f"line{i}\n" for i in range(1, 11))
    step1 = base.replace("line5\n", "line5\nadded1\n")
    step2 = step1.replace("added1\nline6\n", "added1\nadded2\nline6\n")
    ps = write_patchset(
        tmp_path / "ps",
        [
            {"id": "one", "kind": "diff", "file": "1.patch"},
            {"id": "two", "kind": "diff", "file": "2.patch"},
            {"id": "new", "kind": "diff", "file": "3.patch"},
        ],
        targets={"engine": {"package": "pkg"}},
        files={
            "1.patch": diff_patch("pkg/f.txt", base, step1),
            "2.patch": diff_patch("pkg/f.txt", step1, step2),
            "3.patch": "--- /dev/null\n+++ b/pkg/new/mod.py\n@@ -0,0 +1 @@\n+X = 1\n",
        },
    )
    (root / "pkg" / "f.txt").write_text(base)
    assert statuses(ps, root) == dict.fromkeys(("one", "two", "new"), PatchStatus.PENDING)
    assert apply(ps, root).applied == ["one", "two", "new"]
    assert (root / "pkg" / "f.txt").read_text() == step2
    assert (root / "pkg" / "new" / "mod.py").read_text() == "X = 1\n"
    assert statuses(ps, root) == dict.fromkeys(("one", "two", "new"), PatchStatus.APPLIED)
    patchset, env = _run(ps, root)
    assert revert_patchset(patchset, env).ids == ["new", "two", "one"]
    assert (root / "pkg" / "f.txt").read_text() == base
    assert not (root / "pkg" / "new").exists()
