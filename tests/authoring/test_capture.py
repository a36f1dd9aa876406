"""``capture``, ``edit`` and ``refresh`` on real engine environments: hand edits become a patch
that ``status`` recognises, pristine copies are checked against RECORD, and a patch in the
middle of a stack is changed in place."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import (
    REPO,
    Engine,
    copy_engine,
    diff_patch,
    run_cli,
    snapshot,
    write_patchset,
)
from demo_builds import git_repository
from patchbay.apply.engine import apply_patchset
from patchbay.apply.ledger import Ledger
from patchbay.apply.plan import make_plan
from patchbay.apply.revert import revert_patchset
from patchbay.authoring.capture import TODO_DESCRIPTION, PristineSources, capture_patch
from patchbay.authoring.refresh import edit_patch, refresh_patch
from patchbay.environment.installed import verify_installed
from patchbay.environment.targets import resolve_environment
from patchbay.errors import RefusedError
from patchbay.patchset.loading import load_patchset
from patchbay.patchset.text import set_scalar

WORKER_OLD = "        return [r * 2 for r in batch]\n"
WORKER_NEW = "        return [r * 3 for r in batch]\n"


def _demo(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    shutil.copytree(REPO / "patchsets" / "demo", folder)
    return folder


def _statuses(folder: Path, engine: Engine) -> dict[str, str]:
    patchset = load_patchset(folder)
    env = resolve_environment(patchset, python=str(engine.python))
    return {r.id: r.status.value for r in make_plan(patchset, env).reports}


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


def test_capture_hand_edits_applied_here_pending_on_a_fresh_copy(
    tmp_path: Path,
    engine: Engine,
    engine_template: Path,
    demo_wheel: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = _demo(tmp_path)
    yaml_before = (folder / "patchset.yaml").read_text()
    patchset = load_patchset(folder)
    env = resolve_environment(patchset, python=str(engine.python))
    apply_patchset(patchset, env)
    _edit(engine.pkg / "worker.py", WORKER_OLD, WORKER_NEW)
    (engine.pkg / "ops" / "fast").mkdir()
    (engine.pkg / "ops" / "fast" / "fused.py").write_text("def fused(x):\n    return x\n")
    (engine.pkg / "ops" / "decode.py").unlink()
    res = run_cli(
        "capture",
        folder,
        "worker-triple",
        engine.pkg / "worker.py",
        "demo_engine/ops/fast/fused.py",  # relative to the target root
        "demo_engine/ops/decode.py",  # deleted: named as RECORD lists it
        "--python",
        engine.python,
        "--wheel",
        demo_wheel,
    )
    assert res.code == 0, res.err
    assert "demo_engine/ops/decode.py (deleted" in res.out
    assert "demo_engine/ops/fast/fused.py (new" in res.out
    # the user's file is kept as it was (comments, order); the patch is added after it
    yaml_after = (folder / "patchset.yaml").read_text()
    assert yaml_after.startswith(yaml_before)
    entry = yaml.safe_load(yaml_after)["patches"][-1]
    assert entry == {
        "id": "worker-triple",
        "kind": "diff",
        "target": "engine",
        "file": "patches/worker-triple.patch",
        "strip": 1,
        "description": TODO_DESCRIPTION,
        "upstream_status": {"status": "Pending", "reason": entry["upstream_status"]["reason"]},
    }
    diff = (folder / "patches" / "worker-triple.patch").read_text()
    assert "--- a/demo_engine/worker.py\n+++ b/demo_engine/worker.py\n" in diff
    assert "new file mode" in diff and "deleted file mode" in diff
    # recognised on the tree it came from, and pending on a fresh copy of the image
    assert _statuses(folder, engine)["worker-triple"] == "applied"
    fresh = copy_engine(engine_template, tmp_path / "fresh")
    assert set(_statuses(folder, fresh).values()) == {"pending"}
    fresh_env = resolve_environment(load_patchset(folder), python=str(fresh.python))
    apply_patchset(load_patchset(folder), fresh_env)
    for rel in ("worker.py", "ops/fast/fused.py"):
        assert (fresh.pkg / rel).read_bytes() == (engine.pkg / rel).read_bytes()
    assert not (fresh.pkg / "ops" / "decode.py").exists()
    # validate lists the blanks; revert puts back what the image shipped
    from patchbay.cli.commands import validate

    assert validate.run(str(folder)) == 0
    out = capsys.readouterr().out
    assert f"TO FILL: {folder / 'patchset.yaml'}:" in out and "worker-triple: description" in out
    revert_patchset(load_patchset(folder), env)
    assert verify_installed(load_patchset(folder), env).ok
    assert not (engine.pkg / "ops" / "fast").exists()  # the folder the new file came with


def test_capture_without_files_finds_the_undeclared_edits(
    tmp_path: Path, engine: Engine, demo_wheel: Path
) -> None:
    """No FILE: the edits come from RECORD, minus what the ledger's patches explain; a file a
    patch already changed is captured relative to that patch's result; the pristine copy
    comes from the component's git repository at its pinned commit."""
    repo, commit = git_repository(REPO / "demo" / "engine", tmp_path / "engine-repo")
    folder = _demo(tmp_path)
    path = folder / "patchset.yaml"
    path.write_text(set_scalar(path.read_text(), ("components", 0, "commit"), commit, path=path))
    patchset = load_patchset(folder)
    env = resolve_environment(patchset, python=str(engine.python))
    apply_patchset(patchset, env)
    _edit(engine.pkg / "worker.py", WORKER_OLD, WORKER_NEW)
    envs = engine.pkg / "envs.py"  # patched by envs-asm-padding
    envs.write_text(envs.read_text() + 'TUNED = os.environ.get("DEMO_TUNED", "0")\n')
    result = capture_patch(patchset, env, "tuning", sources=PristineSources(from_git=str(repo)))
    assert sorted(f.path for f in result.files) == ["demo_engine/envs.py", "demo_engine/worker.py"]
    origins = {f.path: f.base for f in result.files}
    assert "envs-asm-padding" in origins["demo_engine/envs.py"]
    assert "repository" in origins["demo_engine/worker.py"]
    diff = result.patch_file.read_text()
    # relative to the earlier patch's result: its line is context, not part of the change
    assert ' ASM_PADDING = os.environ.get("DEMO_ASM_PADDING", "none")\n+TUNED' in diff
    assert set(_statuses(folder, engine).values()) == {"applied"}
    assert verify_installed(load_patchset(folder), env).ok


def test_pristine_copy_that_does_not_match_record_is_refused(
    tmp_path: Path, engine: Engine, demo_wheel: Path
) -> None:
    # a wheel of another build: same name and version, one file differs
    wrong = tmp_path / "wrong" / demo_wheel.name
    wrong.parent.mkdir()
    with zipfile.ZipFile(demo_wheel) as src, zipfile.ZipFile(wrong, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "demo_engine/worker.py":
                data = data.replace(b"Worker", b"OtherWorker")
            dst.writestr(info, data)
    folder = _demo(tmp_path)
    _edit(engine.pkg / "worker.py", WORKER_OLD, WORKER_NEW)
    before = snapshot(folder), snapshot(engine.prefix)
    res = run_cli(
        "capture", folder, "fix", "demo_engine/worker.py", "--python", engine.python,
        "--wheel", wrong,
    )  # fmt: skip
    assert res.code == 1
    line = res.err.strip().splitlines()[0]
    assert line.startswith(f"patchbay: error: {engine.pkg / 'worker.py'}: demo_engine/worker.py:")
    assert "does not match the RECORD hash" in line and wrong.name in line
    assert (snapshot(folder), snapshot(engine.prefix)) == before


def test_pristine_copy_fetched_with_the_engines_own_pip(
    tmp_path: Path, demo_wheel: Path, pip_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With neither --wheel nor --from-git, the engine's pip downloads the installed version
    with its own index settings (here: PIP_* variables pointing at a local folder)."""
    engine = copy_engine(pip_template, tmp_path / "engine")
    links = tmp_path / "index"
    links.mkdir()
    shutil.copy(demo_wheel, links)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    folder = _demo(tmp_path)
    _edit(engine.pkg / "worker.py", WORKER_OLD, WORKER_NEW)
    patchset = load_patchset(folder)
    env = resolve_environment(patchset, python=str(engine.python))
    result = capture_patch(patchset, env, "fix", ["demo_engine/worker.py"])
    assert "fetched with the engine's pip" in result.files[0].base
    assert _statuses(folder, engine)["fix"] == "applied"


LINES = [f"line {n}\n" for n in range(1, 31)]


def _stack(tmp_path: Path, engine: Engine) -> Path:
    """Three patches on one file: P1 near the top, P2 in the middle, P3 just below P2."""
    path = "demo_engine/stack.py"
    (engine.pkg / "stack.py").write_text("".join(LINES))
    one = list(LINES)
    one[2] = "line 3 (one)\n"
    two = list(one)
    two[14] = "line 15 (two)\n"
    three = list(two)
    three[18] = "line 19 (three)\n"
    files = {
        "p1.patch": diff_patch(path, "".join(LINES), "".join(one)),
        "p2.patch": diff_patch(path, "".join(one), "".join(two)),
        "p3.patch": diff_patch(path, "".join(two), "".join(three)),
    }
    patches = [{"id": f"p{n}", "kind": "diff", "file": f"p{n}.patch"} for n in (1, 2, 3)]
    return write_patchset(tmp_path / "stack", patches, files=files)


def test_edit_and_refresh_in_the_middle_of_a_stack(tmp_path: Path, engine: Engine) -> None:
    folder = _stack(tmp_path, engine)
    patchset = load_patchset(folder)
    env = resolve_environment(patchset, python=str(engine.python))
    apply_patchset(patchset, env)
    edited = edit_patch(patchset, env, "p2")
    assert edited.reverted == ["p3"] and edited.applied == []
    assert edited.files == [engine.pkg / "stack.py"]
    target = engine.pkg / "stack.py"
    _edit(target, "line 15 (two)\n", "line 15 (two, better)\n")
    old_identity = Ledger(env.state_dir).find("test", "p2").patch_sha256
    result = refresh_patch(load_patchset(folder), env, "p2")
    assert result.later == {"p3": "pending"}
    assert "+line 15 (two, better)\n" in (folder / "p2.patch").read_text()
    entries = Ledger(env.state_dir).entries("test")
    assert [e.patch_id for e in entries] == ["p1", "p2"]  # in place, not moved to the end
    assert entries[1].patch_sha256 != old_identity
    assert _statuses(folder, engine) == {"p1": "applied", "p2": "applied", "p3": "pending"}
    assert apply_patchset(load_patchset(folder), env).applied == ["p3"]
    assert _statuses(folder, engine) == {"p1": "applied", "p2": "applied", "p3": "applied"}
    # an edit that takes away the context p3 needs: refused, nothing written
    edit_patch(load_patchset(folder), env, "p2")
    _edit(target, "line 17\n", "line 17 (moved)\n")
    before = snapshot(folder)
    with pytest.raises(RefusedError) as refused:
        refresh_patch(load_patchset(folder), env, "p2")
    assert "would break the patch(es) after it: p3 (conflict)" in refused.value.reason
    assert refused.value.details == ["p3: demo_engine/stack.py hunk 1: conflict"]
    assert snapshot(folder) == before


def test_refresh_refuses_when_a_later_patch_is_still_on_the_file(
    tmp_path: Path, engine: Engine
) -> None:
    folder = _stack(tmp_path, engine)
    patchset = load_patchset(folder)
    env = resolve_environment(patchset, python=str(engine.python))
    apply_patchset(patchset, env)
    res = run_cli("refresh", folder, "p2", "--python", engine.python)
    assert res.code == 1
    assert "also changed by p3, applied after p2; run `patchbay edit" in res.err


def test_every_hint_edit_and_refresh_print_runs_as_printed(tmp_path: Path, engine: Engine) -> None:
    """The commands `edit` and `refresh` suggest repeat the `--python` (and `--state-dir`)
    the user gave, quoted for the shell: run as printed, they act on the same engine, not on
    whatever `python3` is on PATH (issue 28, part 3)."""
    import re
    import shlex
    import subprocess

    from conftest import PATCHBAY

    folder = _stack(tmp_path, engine)
    assert run_cli("apply", folder, "--python", engine.python).code == 0
    edited = run_cli("edit", folder, "p2", "--python", engine.python)
    assert edited.code == 0, edited.err
    hints = re.findall(r"`(patchbay [^`]+)`", edited.out)
    assert len(hints) == 2 and all(f"--python {engine.python}" in h for h in hints), hints
    _edit(engine.pkg / "stack.py", "line 15 (two)\n", "line 15 (two, better)\n")
    for printed in hints:  # refresh p2, then apply puts p3 back
        argv = shlex.split(printed)
        res = subprocess.run([str(PATCHBAY), *argv[1:]], capture_output=True, text=True)
        assert res.returncode == 0, (printed, res.stdout, res.stderr)
        if argv[1] == "refresh":
            later = re.findall(r"`(patchbay [^`]+)`", res.stdout)
            assert all(f"--python {engine.python}" in h for h in later), res.stdout
    assert _statuses(folder, engine) == {"p1": "applied", "p2": "applied", "p3": "applied"}


def test_capture_with_root_on_an_unpacked_tree_and_its_hint(
    tmp_path: Path, engine: Engine, demo_wheel: Path
) -> None:
    """`capture --root` as the other commands take it: the tree's dist-info RECORD tells the
    edits from the installed files, the pristine copy comes from --wheel; the patch is applied
    on that tree and pending on a fresh one, and the hint it prints runs as printed (issue 28,
    parts 3 and 4)."""
    import re
    import shlex
    import subprocess

    from conftest import PATCHBAY

    tree, fresh = tmp_path / "tree", tmp_path / "fresh"
    shutil.copytree(engine.site, tree, symlinks=True)
    shutil.copytree(engine.site, fresh, symlinks=True)
    folder = _demo(tmp_path)
    _edit(tree / "demo_engine" / "worker.py", WORKER_OLD, WORKER_NEW)
    res = run_cli(
        "capture", folder, "worker-triple", "demo_engine/worker.py", "--root", tree,
        "--wheel", demo_wheel,
    )  # fmt: skip
    assert res.code == 0, res.err
    assert res.out.count("captured: ") == 1 and "(1 file(s)" in res.out
    status = run_cli("status", folder, "--root", tree, "--format", "json")
    states = {p["id"]: p["status"] for p in json.loads(status.out)["patches"]}
    assert states["worker-triple"] == "applied"
    status = run_cli("status", folder, "--root", fresh, "--format", "json")
    states = {p["id"]: p["status"] for p in json.loads(status.out)["patches"]}
    assert states["worker-triple"] == "pending"
    (printed,) = re.findall(r"`(patchbay [^`]+)`", res.out)
    ran = subprocess.run([str(PATCHBAY), *shlex.split(printed)[1:]], capture_output=True, text=True)
    assert ran.returncode == 0 and "worker-triple: description" in ran.stdout, ran.stdout


def test_capture_without_dist_info_under_root_names_what_is_missing(
    tmp_path: Path, engine: Engine
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(engine.pkg, tree / "demo_engine")
    shutil.copytree(engine.site / "demo_engine_meta", tree / "demo_engine_meta")
    folder = _demo(tmp_path)
    before = snapshot(folder), snapshot(tree)
    res = run_cli("capture", folder, "x", "demo_engine/worker.py", "--root", tree)
    assert res.code == 1
    assert f"no demo-engine-*.dist-info under {tree}" in res.err, res.err
    assert (snapshot(folder), snapshot(tree)) == before


def test_the_captured_patch_targets_the_package_holding_its_files(
    tmp_path: Path, engine: Engine, demo_wheel: Path
) -> None:
    """Two targets with one root (packages side by side in site-packages): the patch's target
    is the one whose package folder holds the files, not the first declared (issue 28,
    part 6)."""
    tree = tmp_path / "tree"
    shutil.copytree(engine.site, tree, symlinks=True)
    (tree / "other_pkg").mkdir()
    (tree / "other_pkg" / "__init__.py").write_text("")
    folder = _demo(tmp_path)
    path = folder / "patchset.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["targets"] = {"other": {"package": "other_pkg"}, **doc["targets"]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    _edit(tree / "demo_engine" / "worker.py", WORKER_OLD, WORKER_NEW)
    res = run_cli(
        "capture", folder, "w", "demo_engine/worker.py", "--root", tree, "--wheel", demo_wheel
    )
    assert res.code == 0, res.err
    assert "(target engine, strip 1)" in res.out
    assert yaml.safe_load(path.read_text())["patches"][-1]["target"] == "engine"


def test_refresh_of_a_patch_whose_file_is_gone_asks_for_allow_delete(
    tmp_path: Path, engine: Engine
) -> None:
    """A file of the patch lost while editing (a stray rm) does not silently turn the patch
    into a deletion: refused, nothing written; with --allow-delete it does (issue 24, part 5)."""
    folder = _stack(tmp_path, engine)
    assert run_cli("apply", folder, "--python", engine.python).code == 0
    (engine.pkg / "stack.py").unlink()
    before = snapshot(folder), snapshot(engine.state_dir)
    res = run_cli("refresh", folder, "p3", "--python", engine.python)
    assert res.code == 1
    assert "demo_engine/stack.py of p3 is gone from the tree" in res.err
    assert "--allow-delete" in res.err
    assert (snapshot(folder), snapshot(engine.state_dir)) == before
    res = run_cli("refresh", folder, "p3", "--python", engine.python, "--allow-delete")
    assert res.code == 0, res.err
    assert "deleted file mode" in (folder / "p3.patch").read_text()


def test_apply_after_edit_puts_the_later_patches_back_instead_of_nothing_to_do(
    tmp_path: Path, engine: Engine
) -> None:
    """`edit` applies the patches up to the one edited: that partial run must not leave the
    no-op identity a re-run of `apply` trusts, which would answer "nothing to do" while the
    later patches are off (issue 24, part 5; 6 of 6 runs before)."""
    folder = _stack(tmp_path, engine)
    assert run_cli("apply", folder, "--python", engine.python).code == 0
    assert run_cli("edit", folder, "p1", "--python", engine.python).code == 0
    assert _statuses(folder, engine) == {"p1": "applied", "p2": "pending", "p3": "pending"}
    res = run_cli("apply", folder, "--python", engine.python)
    assert res.code == 0 and "applied p2" in res.out and "applied p3" in res.out, res.out
    again = run_cli("apply", folder, "--python", engine.python)
    assert again.out == "nothing to do: 3 patch(es) already present\n"


def test_capture_without_files_leaves_out_what_no_record_lists(
    tmp_path: Path, engine: Engine, demo_wheel: Path
) -> None:
    """Runtime artefacts are not source: with no FILE, a JIT build and a cache index the
    engine made are left out and listed; named as FILE, such a file is captured as new
    (issue 24, part 3)."""
    folder = _demo(tmp_path)
    _edit(engine.pkg / "worker.py", WORKER_OLD, WORKER_NEW)
    (engine.pkg / "jit").mkdir()
    (engine.pkg / "jit" / "module_fast.so").write_bytes(b"\x7fELF\0built")
    (engine.pkg / ".cache").mkdir()
    (engine.pkg / ".cache" / "index.json").write_text("{}\n")
    res = run_cli("capture", folder, "tune", "--python", engine.python, "--wheel", demo_wheel)
    assert res.code == 0, res.err
    assert res.out.count("captured: ") == 1 and "captured: demo_engine/worker.py" in res.out
    for rel in ("demo_engine/jit/module_fast.so", "demo_engine/.cache/index.json"):
        assert f"skipped: {rel}: no RECORD lists it" in res.out
    diff = (folder / "patches" / "tune.patch").read_text()
    assert "module_fast" not in diff and "index.json" not in diff
    named = run_cli(
        "capture", folder, "jit", "demo_engine/jit/module_fast.so", "--python", engine.python,
    )  # fmt: skip
    assert named.code == 0, named.err
    assert "captured: demo_engine/jit/module_fast.so (new" in named.out


def test_capture_exclude_leaves_out_what_matches_and_lists_it(
    tmp_path: Path, engine: Engine, demo_wheel: Path
) -> None:
    """--exclude (issue 24, part 3): found or named, a matching file is left out and listed."""
    folder = _demo(tmp_path)
    _edit(engine.pkg / "worker.py", WORKER_OLD, WORKER_NEW)
    _edit(engine.pkg / "ops" / "decode.py", "    out = []\n", "    out = [] # tuned\n")
    (engine.pkg / "jit").mkdir()
    (engine.pkg / "jit" / "module_fast.so").write_bytes(b"\x7fELF\0built")
    res = run_cli(
        "capture", folder, "tune", "--python", engine.python, "--wheel", demo_wheel,
        "--exclude", "demo_engine/ops", "--exclude", "*.so",
    )  # fmt: skip
    assert res.code == 0, res.err
    assert res.out.count("captured: ") == 1 and "captured: demo_engine/worker.py" in res.out
    assert "skipped: demo_engine/ops/decode.py: excluded by --exclude demo_engine/ops" in res.out
    diff = (folder / "patches" / "tune.patch").read_text()
    assert "decode.py" not in diff
    named = run_cli(
        "capture", folder, "jit", "demo_engine/jit/module_fast.so", "--python", engine.python,
        "--exclude", "*.so",
    )  # fmt: skip
    assert named.code == 1 and "every edited file is excluded" in named.err, named.err
    assert "jit.patch" not in {p.name for p in (folder / "patches").iterdir()}


@pytest.mark.parametrize(
    ("rel", "pattern", "hit"),
    [
        ("pkg/jit/module.so", "*.so", True),
        ("pkg/.cache/index.json", ".cache", True),
        ("pkg/jit/module.so", "pkg/jit", True),
        ("pkg/jit/module.so", "/pkg/jit/", True),
        ("pkg/jit/module.so", "jit/module.so", False),  # with a /: from the root
        ("pkg/worker.py", "*.so", False),
        ("pkg/worker.py", "pkg/w*.py", True),
        ("pkg/sub/worker.py", "pkg/*.py", False),  # * never crosses a /
        ("pkg/sub/worker.py", "pkg/**/*.py", True),
        ("pkg/worker.py", "pkg/**/*.py", True),
    ],
)
def test_exclude_patterns_read_as_gitignore_does(rel: str, pattern: str, hit: bool) -> None:
    from patchbay.authoring.capture import excluded

    assert (excluded(rel, [pattern]) == pattern) is hit
