"""``rebase`` per hunk (issue 24, part 8): it follows a file moved upstream (git's rename
detection), leaves out of the merge a hunk ``check`` finds upstream (no conflict for a fix that
landed with nearby changes) and prints what happened to every hunk."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from conftest import diff_patch, run_cli, write_patchset


def _module(name: str, n: int = 120) -> str:
    return "".join(f"def {name}_{i}(x):\n    return x * {i}\n\n" for i in range(n))


def _scene(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An old image, a candidate where ``ops/mla_gluon.py`` moved to ``ops/gluon/`` (and changed
    a little) and ``sched.py`` got the first hunk's fix with a change beside it, and a patchset
    of two patches made against the old image."""
    old, new = tmp_path / "old", tmp_path / "new"
    gluon, sched = _module("mla"), _module("sched")
    for root in (old, new):
        (root / "pkg" / "ops").mkdir(parents=True)
        (root / "pkg" / "__init__.py").write_text("")
    (old / "pkg" / "ops" / "mla_gluon.py").write_text(gluon)
    (old / "pkg" / "sched.py").write_text(sched)
    (new / "pkg" / "ops" / "gluon").mkdir()
    moved = gluon.replace("return x * 3\n", "return x * 3  # upstream tidy\n")
    (new / "pkg" / "ops" / "gluon" / "mla_gluon.py").write_text(moved)
    landed = sched.replace("return x * 10\n", "return x * 10 + 1\n").replace(
        "def sched_10(x):\n", "def sched_10(x):  # upstream: fixed\n"
    )
    (new / "pkg" / "sched.py").write_text(landed)
    fixed_gluon = gluon.replace("return x * 40\n", "return x * 40 + 4\n").replace(
        "return x * 90\n", "return x * 90 + 9\n"
    )
    fixed_sched = sched.replace("return x * 10\n", "return x * 10 + 1\n").replace(
        "return x * 80\n", "return x * 80 + 8\n"
    )
    folder = write_patchset(
        tmp_path / "ps",
        [
            {"id": "gluon-fix", "kind": "diff", "file": "patches/gluon.patch"},
            {"id": "sched-fix", "kind": "diff", "file": "patches/sched.patch"},
        ],
        targets={"engine": {"package": "pkg"}},
        files={
            "patches/gluon.patch": diff_patch("pkg/ops/mla_gluon.py", gluon, fixed_gluon),
            "patches/sched.patch": diff_patch("pkg/sched.py", sched, fixed_sched),
        },
    )
    return old, new, folder


def test_rebase_follows_a_moved_file_and_drops_the_hunk_upstream_has(tmp_path: Path) -> None:
    old, new, folder = _scene(tmp_path)
    out = tmp_path / "rebased"
    res = run_cli("rebase", folder, "--root", old, "--onto-root", new, "--out", out)
    assert res.code == 0, res.out + res.err
    assert "pkg/ops/mla_gluon.py: moved upstream to pkg/ops/gluon/mla_gluon.py" in res.out
    assert "hunk(s) 1 already upstream, left out of the merge" in res.out
    gluon = (out / "patches" / "gluon.patch").read_text()
    assert "+++ b/pkg/ops/gluon/mla_gluon.py" in gluon and "mla_gluon.py\n" in gluon
    assert "+    return x * 40 + 4\n" in gluon and "+    return x * 90 + 9\n" in gluon
    sched = (out / "patches" / "sched.patch").read_text()
    assert "+    return x * 80 + 8\n" in sched and "x * 10 + 1" not in sched
    # the result is what the candidate needs: it applies there, and the files are as meant
    status = run_cli("status", out, "--root", new, "--format", "json")
    states = {p["id"]: p["status"] for p in json.loads(status.out)["patches"]}
    assert states == {"gluon-fix": "pending", "sched-fix": "pending"}
    applied = run_cli("apply", out, "--root", new)
    assert applied.code == 0, applied.err
    text = (new / "pkg" / "ops" / "gluon" / "mla_gluon.py").read_text()
    assert "x * 40 + 4" in text and "x * 90 + 9" in text and "# upstream tidy" in text
    assert (new / "pkg" / "sched.py").read_text().count("x * 10 + 1") == 1


def test_rebase_prints_a_verdict_for_every_hunk(tmp_path: Path) -> None:
    old, new, folder = _scene(tmp_path)
    res = run_cli("rebase", folder, "--root", old, "--onto-root", new, "--out", tmp_path / "r")
    assert res.code == 0, res.out + res.err
    table = res.out.split("per hunk:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    rows = {tuple(line.split()[:3]): line for line in table[1:]}
    assert "merged" in rows[("gluon-fix", "pkg/ops/mla_gluon.py", "1")]
    assert "now in pkg/ops/gluon/mla_gluon.py" in rows[("gluon-fix", "pkg/ops/mla_gluon.py", "2")]
    assert "dropped upstream" in rows[("sched-fix", "pkg/sched.py", "1")]
    assert rows[("sched-fix", "pkg/sched.py", "2")].split()[3] in ("kept", "re-anchored")
    assert len(rows) == 4


def test_git_cherry_pick_agrees_on_the_moved_file(tmp_path: Path) -> None:
    """The same history in a git repository: cherry-picking the patch's commit onto the
    candidate carries its hunks to the new path too (git's rename detection, the behaviour
    rebase follows)."""
    old, new, folder = _scene(tmp_path)
    repo = tmp_path / "repo"
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin"}

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=repo, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip

    shutil.copytree(old, repo)
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "old")
    git("checkout", "-qb", "patched")
    assert git("apply", str(folder / "patches" / "gluon.patch")).returncode == 0
    git("commit", "-qam", "the patch")
    git("checkout", "-q", "main")
    shutil.rmtree(repo / "pkg")
    shutil.copytree(new / "pkg", repo / "pkg")
    git("add", "-A")
    git("commit", "-qm", "candidate")
    res = git("cherry-pick", "patched")
    assert res.returncode == 0, res.stderr
    ours = (repo / "pkg" / "ops" / "gluon" / "mla_gluon.py").read_text()
    applied = run_cli("apply", _rebased(tmp_path, old, new, folder), "--root", new)
    assert applied.code == 0, applied.err
    assert (new / "pkg" / "ops" / "gluon" / "mla_gluon.py").read_text() == ours


def _rebased(tmp_path: Path, old: Path, new: Path, folder: Path) -> Path:
    out = tmp_path / "rebased"
    res = run_cli("rebase", folder, "--root", old, "--onto-root", new, "--out", out)
    assert res.code == 0, res.out + res.err
    return out


def test_a_moved_file_in_conflict_is_resolved_at_its_new_path(tmp_path: Path) -> None:
    """Upstream moved the file and changed the very line the patch changes: the merged file with
    markers lies under the new path, and a resolution put there is what --resolved takes."""
    old, new, folder = _scene(tmp_path)
    moved = new / "pkg" / "ops" / "gluon" / "mla_gluon.py"
    moved.write_text(moved.read_text().replace("return x * 40\n", "return x * 40 - 1\n"))
    out = tmp_path / "first"
    res = run_cli("rebase", folder, "--root", old, "--onto-root", new, "--out", out)
    assert res.code == 1, res.out + res.err
    side = out / "conflicts" / "gluon-fix" / "pkg" / "ops" / "gluon" / "mla_gluon.py"
    marked = side.read_text()
    assert "<<<<<<< gluon-fix on the old image\n" in marked
    assert "conflict" in res.out.split("per hunk:", 1)[1]
    side.write_text(
        marked.split("<<<<<<< ", 1)[0]
        + "    return x * 40 + 4\n"
        + marked.split(">>>>>>> candidate image\n", 1)[1]
    )
    again = tmp_path / "second"
    res = run_cli(
        "rebase", folder, "--root", old, "--onto-root", new, "--out", again,
        "--resolved", out / "conflicts",
    )  # fmt: skip
    assert res.code == 0, res.out + res.err
    assert f"taken from {side}" in res.out
    assert run_cli("apply", again, "--root", new).code == 0
    text = moved.read_text()
    assert "x * 40 + 4" in text and "x * 40 - 1" not in text and "x * 90 + 9" in text
