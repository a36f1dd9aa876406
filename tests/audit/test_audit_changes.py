"""`patchbay audit --changed-since REF`: a pull request's audit, on real git repositories in
temporary folders (a base commit on main, a pull request branch on top, uncommitted changes).

Script findings are limited to the files the change touches; PB107 asks a waiver of the change
itself for the patching it adds (named after the pull request with ``change-waiver``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli, write_patchset
from patchbay.audit import AuditResult, run_audit
from patchbay.audit.changes import pull_request_number, read_change
from patchbay.errors import InputError

SITE = "/usr/lib/python3/site-packages"
SED = f'sed -i "s/a/b/" {SITE}/vllm/envs.py\n'
CP = f"cp fix.py {SITE}/vllm/fix.py\n"
HARNESS = "#!/bin/sh\npython3 -m bench --out results\n"
K3 = "#!/bin/bash\n" + SED + "".join(f"echo 'step {n} of the image set-up'\n" for n in range(8))
CONFIG = '[tool.patchbay]\nchange-waiver = "docs/waiver/{pr}.md"\n'


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    res = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def waiver(wid: str, script: str | None = None, patches: tuple[str, ...] = ()) -> str:
    """A complete waiver: for a patch script, in the benchmark repositories' layout (no front
    matter, the script named in the text); for patches, with front matter listing them."""
    body = (
        "## What is patched\nThe env reader.\n\n"
        "## Why the unmodified image cannot run the benchmark\nIt crashes.\n\n"
        "## Upstream\n- vllm-project/vllm#1\n\n## Removal plan\nDrop it at the next image.\n"
    )
    if script is not None:
        return (
            f"# Engine patch waiver — PR #{wid}\n\n- **Status:** approved\n"
            f"- **Patch script:** `{script}`\n\n{body}"
        )
    return (
        f"---\nid: '{wid}'\npatches: [{', '.join(patches)}]\nowner: '@bench'\n"
        "filed: 2029-01-01\nreview_by: 2099-01-01\nstatus: approved\n"
        f"approval: https://example.invalid/review/1\n---\n\n{body}"
    )


def write(root: Path, files: dict[str, str | None]) -> None:
    """Write (text) or delete (None) files under ``root``."""
    for rel, text in files.items():
        path = root / rel
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: a harness script, a patch script that waiver 100 covers, an old patch script no
    waiver covers, the naming of pull request waivers; then a branch ``pr`` checked out."""
    root = tmp_path / "bench"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(
        root,
        {
            "pyproject.toml": CONFIG,
            "benchmarks/run.sh": HARNESS,
            "benchmarks/apply_k3.sh": K3,
            "benchmarks/legacy.sh": "#!/bin/bash\n" + CP,
            "docs/waiver/100.md": waiver("100", "benchmarks/apply_k3.sh"),
        },
    )
    commit(root, "base")
    git(root, "checkout", "-q", "-b", "pr")
    return root


def audit(root: Path, pr: int | None = 7, since: str = "main") -> AuditResult:
    return run_audit(root, changed_since=since, pull_request=pr)


def codes(result: AuditResult, path: str) -> list[tuple[str, int | None, bool]]:
    """(code, line, waived) of the findings of ``path`` that count or are waived."""
    return [(f.code, f.line, f.waived_by is not None) for f in result.shown if f.path == path]


def pb107(result: AuditResult) -> list[tuple[str, int | None]]:
    return [(f.path, f.line) for f in result.active if f.code == "PB107"]


def test_a_pull_request_adding_a_patch_script_without_its_waiver_fails(repo: Path) -> None:
    write(repo, {"benchmarks/apply_new.sh": "#!/bin/bash\necho start\n" + SED})
    commit(repo, "patch the env reader")
    result = audit(repo)
    assert codes(result, "benchmarks/apply_new.sh") == [("PB107", 3, False), ("PB402", 3, False)]
    (message,) = [f.message for f in result.active if f.code == "PB107"]
    assert "PB402 at line 3" in message
    assert "pull request #7 files no waiver docs/waiver/7.md that names this script" in message
    # the scripts the pull request does not touch are not audited here
    assert codes(result, "benchmarks/legacy.sh") == []
    assert result.failing(result.config.config.severity_of("PB107"))


def test_a_pull_request_filing_its_waiver_passes(repo: Path) -> None:
    write(
        repo,
        {
            "benchmarks/apply_new.sh": "#!/bin/bash\n" + SED + CP,
            "docs/waiver/7.md": waiver("7", "benchmarks/apply_new.sh"),
        },
    )
    commit(repo, "patch the env reader, with its waiver")
    result = audit(repo)
    assert codes(result, "benchmarks/apply_new.sh") == [("PB402", 2, True), ("PB404", 3, True)]
    assert pb107(result) == []
    assert [f.code for f in result.active if f.severity.value == "error"] == []


def test_a_waiver_not_named_after_the_pull_request_does_not_count(repo: Path) -> None:
    write(
        repo,
        {
            "benchmarks/apply_new.sh": "#!/bin/bash\n" + SED,
            "docs/waiver/k3-env.md": waiver("k3-env", "benchmarks/apply_new.sh"),
        },
    )
    commit(repo, "patch, waiver under another name")
    named = audit(repo, pr=7)
    assert pb107(named) == [("benchmarks/apply_new.sh", 2)]
    assert codes(named, "benchmarks/apply_new.sh")[-1] == ("PB402", 2, True)  # still waived
    (message,) = [f.message for f in named.active if f.code == "PB107"]
    assert message.endswith(
        "pull request #7 files no waiver docs/waiver/7.md that names this script (waiver "
        "k3-env covers the script, but it is not the pull request's)"
    )
    # no pull request number (a developer's machine): any waiver of the change counts
    assert pb107(audit(repo, pr=None)) == []
    # the pull request's waiver, naming another script
    write(repo, {"docs/waiver/7.md": waiver("7", "benchmarks/run.sh")})
    commit(repo, "a waiver for the harness")
    (message,) = [f.message for f in audit(repo, pr=7).active if f.code == "PB107"]
    assert "and docs/waiver/7.md, the waiver of pull request #7, does not name this script (" in (
        message
    )


def test_new_patching_in_a_script_an_old_waiver_covers_needs_the_change_s_waiver(
    repo: Path,
) -> None:
    write(repo, {"benchmarks/apply_k3.sh": K3.replace(SED, SED + CP)})
    commit(repo, "one more patch")
    result = audit(repo)
    # line 2 was waived before this change; line 3 is new
    assert codes(result, "benchmarks/apply_k3.sh") == [
        ("PB402", 2, True),
        ("PB107", 3, False),
        ("PB404", 3, True),
    ]
    (message,) = [f.message for f in result.active if f.code == "PB107"]
    assert "waiver 100 covers the script, but this change does not touch docs/waiver/100.md" in (
        message
    )
    write(repo, {"docs/waiver/7.md": waiver("7", "benchmarks/apply_k3.sh")})
    commit(repo, "its waiver")
    assert pb107(audit(repo)) == []


def test_a_renamed_script_is_compared_with_its_old_path(repo: Path) -> None:
    (repo / "benchmarks" / "k3").mkdir()
    git(repo, "mv", "benchmarks/apply_k3.sh", "benchmarks/k3/apply.sh")
    write(repo, {"docs/waiver/100.md": waiver("100", "benchmarks/k3/apply.sh")})
    commit(repo, "move the patch script")
    change = read_change(repo, "main")
    moved = change.files["benchmarks/k3/apply.sh"]
    assert (moved.status, moved.old_path) == ("R", "benchmarks/apply_k3.sh")
    assert "benchmarks/apply_k3.sh" not in change.files
    assert change.added_lines("benchmarks/k3/apply.sh") == frozenset()
    result = audit(repo)
    assert codes(result, "benchmarks/k3/apply.sh") == [("PB402", 2, True)]
    assert pb107(result) == []  # a rename adds no patching
    # a line added to the renamed script is new patching; its old line is not
    write(repo, {"benchmarks/k3/apply.sh": K3.replace(SED, SED + CP)})
    commit(repo, "and patch more")
    assert read_change(repo, "main").added_lines("benchmarks/k3/apply.sh") == {3}
    assert pb107(audit(repo)) == [("benchmarks/k3/apply.sh", 3)]


def test_a_change_touching_only_a_harness_file_has_no_script_findings(repo: Path) -> None:
    write(repo, {"benchmarks/run.sh": HARNESS + "python3 -m bench.report results\n"})
    commit(repo, "report the results")
    result = audit(repo)
    assert [f.code for f in result.findings if f.code.startswith("PB4")] == []
    assert pb107(result) == []
    assert list(result.change.files) == ["benchmarks/run.sh"]
    # the whole repository has the unwaived old script
    full = run_audit(repo)
    assert codes(full, "benchmarks/legacy.sh") == [("PB404", 2, False)]


def test_uncommitted_changes_are_part_of_the_change(repo: Path) -> None:
    git(repo, "checkout", "-q", "main")
    write(repo, {"benchmarks/legacy.sh": "#!/bin/bash\n" + CP + "echo done\n"})  # unstaged
    write(repo, {"benchmarks/staged.sh": "#!/bin/bash\n" + SED})
    git(repo, "add", "benchmarks/staged.sh")
    write(repo, {"benchmarks/untracked.sh": "#!/bin/bash\necho\n" + SED})
    write(repo, {".gitignore": "scratch/\n", "scratch/ignored.sh": "#!/bin/bash\n" + SED})
    change = read_change(repo, "main")
    assert {p: f.status for p, f in change.files.items()} == {
        "benchmarks/legacy.sh": "M",
        "benchmarks/staged.sh": "A",
        "benchmarks/untracked.sh": "A",
        ".gitignore": "A",
    }
    assert change.added_lines("benchmarks/legacy.sh") == {3}
    result = audit(repo)
    assert pb107(result) == [("benchmarks/staged.sh", 2), ("benchmarks/untracked.sh", 3)]
    # the unstaged edit added no patching: the old finding is in scope, no PB107 for it
    assert codes(result, "benchmarks/legacy.sh") == [("PB404", 2, False)]
    assert codes(result, "scratch/ignored.sh") == []
    git(repo, "status", "--porcelain")  # the audit left the index usable (and took no lock)
    assert not (repo / ".git" / "index.lock").exists()


def test_deleted_files_are_not_part_of_the_change(repo: Path) -> None:
    write(repo, {"benchmarks/legacy.sh": None, "benchmarks/run.sh": HARNESS + "echo\n"})
    commit(repo, "drop the legacy script")
    assert list(read_change(repo, "main").files) == ["benchmarks/run.sh"]


def test_a_patch_added_to_a_patchset_needs_the_change_s_waiver(repo: Path) -> None:
    git(repo, "checkout", "-q", "main")
    edit = [{"file": "vllm/envs.py", "old": "a = 1\n", "new": "a = 2\n"}]
    old = {"id": "old-fix", "kind": "replace", "edits": edit}
    write_patchset(repo / "patchsets" / "k3", [old], name="k3")
    write(repo, {"docs/waiver/90.md": waiver("90", patches=("old-fix",))})
    commit(repo, "a patchset")
    git(repo, "checkout", "-q", "-b", "pr2")
    write_patchset(repo / "patchsets" / "k3", [old, {**old, "id": "new-fix"}], name="k3")
    commit(repo, "a second patch")
    result = audit(repo)
    assert [f.message.split(",")[0] for f in result.active if f.code == "PB107"] == [
        "patch new-fix is added in this change"
    ]
    assert {f.code for f in result.active if "new-fix" in f.message} == {"PB101", "PB107"}
    write(repo, {"docs/waiver/7.md": waiver("7", patches=("k3/new-fix",))})
    commit(repo, "its waiver")
    result = audit(repo)
    assert pb107(result) == []
    assert [f for f in result.active if f.code == "PB101"] == []


def test_pb107_takes_the_configured_severity_and_ignores(repo: Path) -> None:
    write(repo, {"benchmarks/apply_new.sh": "#!/bin/bash\n" + SED})
    commit(repo, "patch")
    write(repo, {"pyproject.toml": CONFIG + '[tool.patchbay.severity]\nPB107 = "warning"\n'})
    (found,) = [f for f in audit(repo).findings if f.code == "PB107"]
    assert found.severity.value == "warning"
    ignore = '[[tool.patchbay.ignore]]\nrule = "PB107"\nreason = "waivers are filed per release"\n'
    write(repo, {"pyproject.toml": CONFIG + ignore})
    (found,) = [f for f in audit(repo).findings if f.code == "PB107"]
    assert found.suppression is not None
    assert pb107(audit(repo)) == []


def test_the_json_report_names_the_change(repo: Path, tmp_path: Path) -> None:
    write(repo, {"benchmarks/run.sh": HARNESS + "echo\n"})
    commit(repo, "harness")
    change = audit(repo).to_json()["change"]
    assert change["since"] == "main"
    assert change["base"] == git(repo, "rev-parse", "main").strip()
    assert change["pull_request"] == 7
    assert change["files"] == [{"path": "benchmarks/run.sh", "status": "M", "old_path": None}]
    assert run_audit(repo).to_json()["change"] is None


def test_a_root_below_the_repository_top_sees_its_own_files(repo: Path) -> None:
    write(repo, {"benchmarks/apply_new.sh": "#!/bin/bash\n" + SED, "other/x.sh": HARNESS})
    commit(repo, "two folders")
    change = read_change(repo / "benchmarks", "main")
    assert list(change.files) == ["apply_new.sh"]
    assert change.added_lines("apply_new.sh") is None


def test_a_ref_that_does_not_exist_is_one_line_and_exit_2(repo: Path, tmp_path: Path) -> None:
    res = run_cli("audit", repo, "--changed-since", "origin/nope")
    assert res.code == 2
    assert res.err.count("\n") == 1
    assert res.err.startswith(f"patchbay: error: {repo}: --changed-since origin/nope: no such")
    plain = tmp_path / "plain"
    plain.mkdir()
    res = run_cli("audit", plain, "--changed-since", "main", "--pr", "3")
    assert res.code == 2
    assert res.err.count("\n") == 1
    assert "--changed-since: not a git repository" in res.err
    with pytest.raises(InputError, match="no such commit"):
        read_change(repo, "--output=x")


def test_unrelated_histories_have_no_merge_base(repo: Path) -> None:
    git(repo, "checkout", "-q", "--orphan", "island")
    commit(repo, "unrelated")
    with pytest.raises(InputError, match="no common ancestor with HEAD"):
        read_change(repo, "main")


def test_the_pull_request_number_comes_from_github_actions(tmp_path: Path) -> None:
    assert pull_request_number({"GITHUB_REF": "refs/pull/2508/merge"}) == 2508
    assert pull_request_number({"GITHUB_REF": "refs/heads/main"}) is None
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 31, "head": {}}}))
    target = {"GITHUB_REF": "refs/heads/main", "GITHUB_EVENT_PATH": str(event)}
    assert pull_request_number(target) == 31  # pull_request_target: the base branch's ref
    event.write_text(json.dumps({"ref": "refs/heads/main", "commits": []}))
    assert pull_request_number(target) is None  # a push
    event.write_text("{not json")
    with pytest.raises(InputError, match="GITHUB_EVENT_PATH: not a JSON event"):
        pull_request_number(target)


def test_change_waiver_must_hold_the_pull_request_number(repo: Path) -> None:
    write(repo, {"pyproject.toml": '[tool.patchbay]\nchange-waiver = "docs/waiver/pr.md"\n'})
    with pytest.raises(InputError) as exc:
        audit(repo)
    assert exc.value.line == 2
    assert "change-waiver: 'docs/waiver/pr.md' must hold {pr}" in str(exc.value)
