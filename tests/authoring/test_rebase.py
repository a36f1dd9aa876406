"""``rebase`` of the demo patchset onto a real new build of the demo engine: one fix landed
upstream (dropped), one patched file refactored under a hunk (a clean 3-way merge), one change
on the very lines a patch edits (a real conflict, markers in the side folder); the rest
applies unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REPO, Engine, build_wheel, copy_engine, make_engine, run_cli
from demo_builds import new_demo_source
from patchbay.apply.check import check_patchset
from patchbay.apply.engine import apply_patchset
from patchbay.authoring.rebase import rebase_patchset
from patchbay.environment.targets import resolve_environment
from patchbay.patchset.loading import load_patchset
from patchbay.upstream.report import check_candidate

EXPECTED = {
    "envs-asm-padding": ("upstream", "dropped"),
    "scheduler-padding": ("conflict", "conflict"),
    "mla-large-cache": ("conflict", "refreshed"),
    "mla-full-graph": ("applies", "unchanged"),
    "mla-fp8-kernel-row": ("applies", "unchanged"),
}


RESOLVED = (
    "    limit = min(envs.MAX_BATCH, 512)\n"
    '    if envs.ASM_PADDING != "none":\n'
    "        limit = min(limit, 128)\n"
    "    return list(requests)[:limit]\n"
)


@pytest.fixture(scope="session")
def new_build(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    """The demo engine's next release, built into a wheel and pip-installed."""
    work = tmp_path_factory.mktemp("new-build")
    source = new_demo_source(work / "src")
    return make_engine(work / "env", build_wheel(source, work / "wheels"))


def _demo(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    shutil.copytree(REPO / "patchsets" / "demo", folder)
    return folder


def test_rebase_onto_the_new_build(tmp_path: Path, engine: Engine, new_build: Engine) -> None:
    """The old image patched by patchbay (old pristine content from the ledger)."""
    folder = _demo(tmp_path)
    patchset = load_patchset(folder)
    old = resolve_environment(patchset, python=str(engine.python))
    apply_patchset(patchset, old)
    new = resolve_environment(patchset, python=str(new_build.python))
    out = tmp_path / "rebased"
    result = rebase_patchset(patchset, old, new, out=out)
    assert {i.id: (i.verdict, i.outcome) for i in result.items} == EXPECTED
    assert not result.ok
    # the refreshed diff is the patch's change on the refactored file
    merged = (out / "patches" / "03-mla-large-cache.patch").read_text()
    assert '"""Byte offsets of the kv rows in the half-open range [start, end)."""' in merged
    assert "+    if not WITHIN_2GB:\n" in merged
    # the conflict: left as it was, the merged file with git's markers in the side folder
    conflict = next(i for i in result.items if i.id == "scheduler-padding")
    side = out / "conflicts" / "scheduler-padding" / "demo_engine" / "scheduler.py"
    assert conflict.conflict_files == [side]
    marked = side.read_text()
    assert "<<<<<<< scheduler-padding on the old image\n" in marked
    assert "||||||| old image\n" in marked and ">>>>>>> candidate image\n" in marked
    assert "    limit = min(envs.MAX_BATCH, 512)\n" in marked
    assert (out / "patches" / "02-scheduler-padding.patch").read_bytes() == (
        folder / "patches" / "02-scheduler-padding.patch"
    ).read_bytes()
    # the removal: gone from the result, with its file; the user's patchset is untouched
    assert not (out / "patches" / "01-envs-asm-padding.patch").exists()
    assert (folder / "patches" / "01-envs-asm-padding.patch").exists()
    # `check` on the candidate: all clear except the listed conflict
    final = check_patchset(load_patchset(out), new)
    verdicts = {i.report.id: i.verdict.value for i in final.items}
    assert verdicts == {
        "scheduler-padding": "conflict",
        "mla-large-cache": "applies",
        "mla-full-graph": "applies",
        "mla-fp8-kernel-row": "applies",
    }
    assert final.plan.guard.ok  # the base guard now names the candidate
    # merged by hand, then rebased again: all clear, and it applies on the new image
    text = side.read_text()
    start, end = text.index("<<<<<<<"), text.index(">>>>>>> candidate image\n") + 24
    side.write_text(text[:start] + RESOLVED + text[end:])
    again = rebase_patchset(patchset, old, new, out=tmp_path / "again", resolved=out / "conflicts")
    assert again.ok
    assert {i.id: i.outcome for i in again.items}["scheduler-padding"] == "refreshed"
    target = copy_engine(new_build.prefix, tmp_path / "target")
    target_env = resolve_environment(load_patchset(tmp_path / "again"), python=str(target.python))
    applied = apply_patchset(load_patchset(tmp_path / "again"), target_env).applied
    assert applied == [
        "scheduler-padding",
        "mla-large-cache",
        "mla-full-graph",
        "mla-fp8-kernel-row",
    ]
    assert RESOLVED in (target.pkg / "scheduler.py").read_text()


def test_rebase_write_from_an_unpatched_old_image(
    tmp_path: Path, engine: Engine, new_build: Engine
) -> None:
    """--write rewrites the patchset itself, keeping the user's YAML as it was; the old
    pristine content comes from the old image's files (they match RECORD)."""
    folder = _demo(tmp_path)
    text = (folder / "patchset.yaml").read_text()
    res = run_cli(
        "rebase",
        folder,
        "--python",
        engine.python,
        "--onto-python",
        new_build.python,
        "--write",
        "--conflicts",
        tmp_path / "side",
        cwd=tmp_path,
    )
    assert res.code == 1, res.err  # one conflict is left to merge by hand
    assert "1 patch(es) in conflict: scheduler-padding" in res.out
    assert str(tmp_path / "side" / "scheduler-padding" / "demo_engine" / "scheduler.py") in res.out
    after = (folder / "patchset.yaml").read_text()
    assert "id: envs-asm-padding" not in after
    assert (
        "    package: demo_engine            # root = the folder that contains demo_engine/\n"
        in after
    )
    assert after.count("\n") == text.count("\n") - 8  # the dropped entry's lines, nothing else
    assert not (folder / "patches" / "01-envs-asm-padding.patch").exists()
    new = resolve_environment(load_patchset(folder), python=str(new_build.python))
    conflicts = [
        i.report.id
        for i in check_patchset(load_patchset(folder), new).items
        if i.verdict.value != "applies"
    ]
    assert conflicts == ["scheduler-padding"]


def test_report_names_the_patches_rebase_would_refresh(new_build: Engine) -> None:
    patchset = load_patchset(REPO / "patchsets" / "demo")
    (result,) = check_candidate([patchset], python=str(new_build.python), root=None)
    assert result.refresh == ["scheduler-padding", "mla-large-cache"]
    assert result.droppable == ["envs-asm-padding"]


def test_every_hint_rebase_prints_runs_as_printed(
    tmp_path: Path, engine: Engine, new_build: Engine
) -> None:
    """After a conflict, rebase prints the command that takes the resolved files and the
    `check` to run: both repeat the options given, quoted for the shell, and run as printed
    (issue 28, part 3)."""
    import re
    import shlex
    import subprocess

    from conftest import PATCHBAY

    folder = _demo(tmp_path)
    assert run_cli("apply", folder, "--python", engine.python).code == 0
    out = tmp_path / "rebased dir"  # a space: the hint must quote it
    res = run_cli(
        "rebase", folder, "--python", engine.python, "--onto-python", new_build.python,
        "--out", out,
    )  # fmt: skip
    assert res.code == 1, res.err
    hints = re.findall(r"`(patchbay [^`]+)`", res.out)
    resolve = next(h for h in hints if "--resolved" in h)
    assert f"--python {engine.python}" in resolve
    assert shlex.quote(str(out.with_name("rebased dir-resolved"))) in resolve
    side = next((out / "conflicts").rglob("scheduler.py"))
    text = side.read_text()
    start, end = text.index("<<<<<<<"), text.index(">>>>>>> candidate image\n") + 24
    side.write_text(text[:start] + RESOLVED + text[end:])
    again = subprocess.run(
        [str(PATCHBAY), *shlex.split(resolve)[1:]], capture_output=True, text=True
    )
    assert again.returncode == 0, (resolve, again.stdout, again.stderr)
    (check,) = [h for h in re.findall(r"`(patchbay [^`]+)`", again.stdout) if " check " in h]
    ran = subprocess.run([str(PATCHBAY), *shlex.split(check)[1:]], capture_output=True, text=True)
    assert ran.returncode == 0, (check, ran.stdout, ran.stderr)


def test_a_binary_file_in_conflict_lies_in_three_versions_and_resolves(
    tmp_path: Path, engine: Engine
) -> None:
    """A binary file the patch and the candidate both changed: no markers fit, so its base,
    ours and theirs lie side by side in the conflicts folder, with a line saying how to
    resolve it; the version copied to the file's own path there is taken by --resolved
    (issue 28, part 5)."""
    import subprocess

    from conftest import write_patchset

    base, ours, theirs = b"\0\1base" * 40, b"\0\2ours" * 40, b"\0\3theirs" * 40
    old_root, new_root = tmp_path / "old", tmp_path / "new"
    for root, data in ((old_root, base), (new_root, theirs)):
        shutil.copytree(engine.site, root, symlinks=True)
        (root / "demo_engine" / "table.bin").write_bytes(data)
    repo = tmp_path / "repo"
    (repo / "demo_engine").mkdir(parents=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "demo_engine" / "table.bin").write_bytes(base)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=repo, check=True)
    (repo / "demo_engine" / "table.bin").write_bytes(ours)
    diff = subprocess.run(
        [*git, "diff", "--binary"], cwd=repo, check=True, capture_output=True
    ).stdout
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "table", "kind": "diff", "file": "patches/table.patch"}],
        files={"patches/table.patch": diff},
    )
    assert run_cli("apply", ps, "--root", old_root).code == 0
    out = tmp_path / "out"
    res = run_cli("rebase", ps, "--root", old_root, "--onto-root", new_root, "--out", out)
    assert res.code == 1, res.err
    side = out / "conflicts" / "table" / "demo_engine"
    assert (side / "table.bin.base").read_bytes() == base
    assert (side / "table.bin.ours").read_bytes() == ours
    assert (side / "table.bin.theirs").read_bytes() == theirs
    assert "copy the version wanted to table/demo_engine/table.bin there" in res.out
    shutil.copy(side / "table.bin.ours", side / "table.bin")
    again = run_cli(
        "rebase", ps, "--root", old_root, "--onto-root", new_root,
        "--out", tmp_path / "again", "--resolved", out / "conflicts",
    )  # fmt: skip
    assert again.code == 0, again.out + again.err
    target = tmp_path / "target"
    shutil.copytree(new_root, target, symlinks=True)
    assert run_cli("apply", tmp_path / "again", "--root", target).code == 0
    assert (target / "demo_engine" / "table.bin").read_bytes() == ours
