"""Whose change is this (issue 24, part 1): before ``capture`` writes a patch and ``revert``
takes one off, each knows the other patchsets' records on the file and the package or editable
checkout that owns it, so that no engineer's file is deleted and no other patchset's change is
undone."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import REPO, Engine, build_wheel, copy_engine, run_cli

SCHED_OLD = "    return requests[:limit]\n"
SCHED_NEW = "    return list(requests[:limit])\n"
CORE = 'def greet(name):\n    return "hello " + name\n'
CORE_EDITED = 'def greet(name):\n    return "hello, " + name\n'


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, path
    path.write_text(text.replace(old, new))


def _second(folder: Path, name: str, targets: dict[str, object], components: list[dict]) -> Path:
    """An empty patchset ``name`` beside the demo: the same image, the given targets."""
    folder.mkdir(parents=True)
    doc = {
        "schema": 1,
        "name": name,
        "image": {"reference": "example.invalid/demo-engine:0.4.1-g1a2b3c4"},
        "components": components,
        "targets": targets,
        "patches": [],
    }
    (folder / "patchset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder


DEMO_COMPONENT = {"distribution": "demo-engine", "repository": "demo-org/demo-engine"}


def _helper_source(dest: Path, name: str = "helperlib") -> Path:
    """A small package that is not the engine (as idna or packaging are in a real image)."""
    (dest / name).mkdir(parents=True)
    (dest / name / "__init__.py").write_text("")
    (dest / name / "core.py").write_text(CORE)
    (dest / "pyproject.toml").write_text(
        f'[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{name}"\nversion = "1.0"\n'
        f'[tool.setuptools]\npackages = ["{name}"]\n'
    )
    return dest


def _greets(engine: Engine, module: str = "helperlib.core") -> str:
    proc = subprocess.run(
        [str(engine.python), "-c", f"import {module} as m; print(m.greet('x'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_capture_in_a_second_patchset_starts_from_what_the_first_left(
    tmp_path: Path, engine: Engine
) -> None:
    """The new patch holds only the new edit; reverting it leaves the first patchset applied;
    reverting the first while the second is on the file is refused, naming the second."""
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "patchsets" / "demo", demo)
    assert run_cli("apply", demo, "--python", engine.python).code == 0
    sched = engine.pkg / "scheduler.py"
    after_demo = sched.read_bytes()
    _edit(sched, SCHED_OLD, SCHED_NEW)
    edited = sched.read_bytes()
    extra = _second(
        tmp_path / "extra", "extra", {"engine": {"package": "demo_engine"}}, [DEMO_COMPONENT]
    )
    res = run_cli("capture", extra, "listed", sched, "--python", engine.python)
    assert res.code == 0, res.err
    assert "of patchset demo (from the ledger)" in res.out, res.out
    diff = (extra / "patches" / "listed.patch").read_text()
    # the new patch is relative to what demo's patches left: one hunk, only the new edit
    assert [ln[:2] for ln in diff.splitlines()].count(
        "@@"
    ) == 1 and "+    return list(requests[:limit])" in diff
    assert not [ln for ln in diff.splitlines() if ln.startswith("+") and "ASM_PADDING" in ln]
    for folder in (demo, extra):
        status = run_cli("status", folder, "--python", engine.python)
        assert status.code == 0 and "pending" not in status.out, status.out
    # demo cannot be reverted under extra's change: refused, naming it, nothing written
    refused = run_cli("revert", demo, "--python", engine.python)
    assert refused.code != 0 and sched.read_bytes() == edited
    assert "patch listed of patchset extra" in refused.err, refused.err
    # extra's revert puts back exactly what demo left; demo stays applied
    assert run_cli("revert", extra, "--python", engine.python).code == 0
    assert sched.read_bytes() == after_demo
    status = run_cli("status", demo, "--python", engine.python)
    assert status.code == 0 and "pending" not in status.out, status.out
    assert run_cli("revert", demo, "--python", engine.python).code == 0


def test_capture_in_a_second_patchset_whose_first_file_is_gone_is_refused(
    tmp_path: Path, engine: Engine
) -> None:
    """Without the first patchset's file the new patch cannot start from what it left: refused
    with the way out, nothing written."""
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "patchsets" / "demo", demo)
    assert run_cli("apply", demo, "--python", engine.python).code == 0
    shutil.rmtree(demo)
    _edit(engine.pkg / "scheduler.py", SCHED_OLD, SCHED_NEW)
    extra = _second(
        tmp_path / "extra", "extra", {"engine": {"package": "demo_engine"}}, [DEMO_COMPONENT]
    )
    before = (extra / "patchset.yaml").read_bytes()
    res = run_cli(
        "capture", extra, "listed", engine.pkg / "scheduler.py", "--python", engine.python
    )
    assert res.code == 1, res.out + res.err
    assert "patchset demo" in res.err and "which is gone" in res.err, res.err
    assert (extra / "patchset.yaml").read_bytes() == before
    assert not (extra / "patches").exists()


def test_a_file_of_a_package_that_is_no_component_is_captured_as_a_change(
    tmp_path: Path, engine: Engine
) -> None:
    """helperlib is installed but not among the components: its edited file is a modification
    (pristine from its wheel, checked against its RECORD), and revert puts the file back
    instead of deleting it."""
    wheel = build_wheel(_helper_source(tmp_path / "src"), tmp_path / "wheels")
    pip = [sys.executable, "-m", "pip", "--python", str(engine.python), "install", "--quiet"]
    subprocess.run([*pip, "--no-index", "--no-deps", str(wheel)], check=True)
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "patchsets" / "demo", demo)
    core = engine.site / "helperlib" / "core.py"
    core.write_text(CORE_EDITED)
    res = run_cli(
        "capture", demo, "greet", "helperlib/core.py", "--python", engine.python,
        "--wheel", wheel,
    )  # fmt: skip
    assert res.code == 0, res.err
    assert "captured: helperlib/core.py (modified" in res.out, res.out
    diff = (demo / "patches" / "greet.patch").read_text()
    assert "new file mode" not in diff and '-    return "hello " + name' in diff
    assert run_cli("revert", demo, "greet", "--python", engine.python).code == 0
    assert core.read_text() == CORE and _greets(engine) == "hello x"
    # a deleted file of it is named as its RECORD lists it, and comes back on revert
    core.unlink()
    demo = tmp_path / "demo2"
    shutil.copytree(REPO / "patchsets" / "demo", demo)
    gone = run_cli(
        "capture", demo, "drop", "helperlib/core.py", "--python", engine.python, "--wheel", wheel
    )
    assert gone.code == 0 and "helperlib/core.py (deleted" in gone.out, gone.out + gone.err
    assert run_cli("revert", demo, "drop", "--python", engine.python).code == 0
    assert core.read_text() == CORE


def _lib(tmp_path: Path) -> Path:
    """An empty patchset whose target and component is helperlib."""
    return _second(
        tmp_path / "lib",
        "lib",
        {"lib": {"package": "helperlib"}},
        [{"distribution": "helperlib", "repository": "t/helperlib"}],
    )


def _git(*args: str | Path, cwd: Path) -> None:
    subprocess.run(["git", *map(str, args)], cwd=cwd, check=True, capture_output=True)


def _install_editable(checkout: Path, engine: Engine) -> None:
    """``pip install -e`` of ``checkout`` into ``engine`` (PEP 660: a ``.pth`` or finder, and a
    ``direct_url.json`` saying editable), built with this interpreter's setuptools: the
    engine's own, from ensurepip, is too old to build an editable wheel."""
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
         "--no-build-isolation", "--prefix", str(engine.prefix), "-e", str(checkout)],
        check=True,
    )  # fmt: skip


def _editable(tmp_path: Path, engine: Engine) -> Path:
    """helperlib installed editable (pip install -e) from a git checkout; returns the
    checkout."""
    checkout = _helper_source(tmp_path / "checkout")
    _git("init", "-q", cwd=checkout)
    _git("add", ".", cwd=checkout)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first", cwd=checkout)
    _install_editable(checkout, engine)
    return checkout


def test_an_editable_checkout_is_captured_against_its_git_head_and_never_deleted(
    tmp_path: Path, engine: Engine
) -> None:
    """The files of an editable install are the engineer's: an edit is captured against what
    git's HEAD holds (also found without FILE), a new file's folders that hold other files are
    not the patch's, and revert leaves the checkout as git has it."""
    checkout = _editable(tmp_path, engine)
    lib = _lib(tmp_path)
    (checkout / "helperlib" / "core.py").write_text(CORE_EDITED)
    (checkout / "helperlib" / "extra.py").write_text("X = 1\n")
    assert _greets(engine) == "hello, x"
    res = run_cli(
        "capture", lib, "greet", "--python", engine.python
    )  # no FILE: git's view of the checkout
    assert res.code == 0, res.err
    assert "captured: helperlib/core.py (modified" in res.out, res.out
    assert "extra.py" not in res.out  # untracked: not captured unless named
    assert run_cli("revert", lib, "--python", engine.python).code == 0
    assert (checkout / "helperlib" / "core.py").read_text() == CORE
    # a new file named as FILE: revert removes it, and only it
    (checkout / "helperlib" / "sub").mkdir()
    (checkout / "helperlib" / "sub" / "kept.txt").write_text("the engineer's\n")
    (checkout / "helperlib" / "sub" / "new.py").write_text("Y = 2\n")
    named = run_cli("capture", lib, "new", "helperlib/sub/new.py", "--python", engine.python)
    assert named.code == 0 and "helperlib/sub/new.py (new" in named.out, named.out + named.err
    assert run_cli("revert", lib, "--python", engine.python).code == 0
    assert not (checkout / "helperlib" / "sub" / "new.py").exists()
    assert (checkout / "helperlib" / "sub" / "kept.txt").read_text() == "the engineer's\n"
    assert (checkout / "helperlib" / "extra.py").read_text() == "X = 1\n"
    assert (checkout / "helperlib" / "__init__.py").exists() and (checkout / ".git").is_dir()


def test_an_editable_checkout_without_git_is_refused_naming_it(
    tmp_path: Path, engine: Engine
) -> None:
    checkout = _helper_source(tmp_path / "plain")
    _install_editable(checkout, engine)
    shutil.rmtree(checkout / "build", ignore_errors=True)
    lib = _lib(tmp_path)
    (checkout / "helperlib" / "core.py").write_text(CORE_EDITED)
    res = run_cli("capture", lib, "greet", "helperlib/core.py", "--python", engine.python)
    assert res.code == 1, res.out + res.err
    assert "editable checkout of helperlib" in res.err and "no git repository" in res.err
    assert not (lib / "patches").exists()


def test_modes_are_part_of_a_captured_change(
    tmp_path: Path, engine: Engine, engine_template: Path, demo_wheel: Path
) -> None:
    """As git's ``old mode``/``new mode`` (issue 24, part 2): a ``chmod +x`` alone is a change,
    an edit plus ``chmod 755`` keeps the mode; apply on a fresh copy makes the same modes and
    revert puts the old ones back."""
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "patchsets" / "demo", demo)
    worker, envs = engine.pkg / "worker.py", engine.pkg / "ops" / "decode.py"
    worker.chmod(0o755)  # the mode alone
    _edit(envs, "    out = []\n", "    out = []  # edited\n")
    envs.chmod(0o755)  # an edit and the mode
    res = run_cli(
        "capture", demo, "modes", worker, envs, "--python", engine.python, "--wheel", demo_wheel
    )
    assert res.code == 0, res.err
    assert "captured: demo_engine/worker.py (mode changed" in res.out, res.out
    assert "captured: demo_engine/ops/decode.py (modified, mode changed" in res.out, res.out
    diff = (demo / "patches" / "modes.patch").read_text()
    assert diff.count("old mode 100644\nnew mode 100755\n") == 2, diff
    fresh = copy_engine(engine_template, tmp_path / "fresh")
    assert run_cli("apply", demo, "--python", fresh.python).code == 0
    for name in ("worker.py", "ops/decode.py"):
        assert (fresh.pkg / name).stat().st_mode & 0o111 == 0o111
        assert (fresh.pkg / name).read_bytes() == (engine.pkg / name).read_bytes()
    assert run_cli("revert", demo, "modes", "--python", engine.python).code == 0
    assert worker.stat().st_mode & 0o777 == 0o644 and envs.stat().st_mode & 0o777 == 0o644
    shutil.rmtree(demo)
    shutil.copytree(REPO / "patchsets" / "demo", demo)
    unchanged = run_cli(
        "capture", demo, "none", worker, "--python", engine.python, "--wheel", demo_wheel
    )
    assert unchanged.code == 1 and "not edited (same bytes and mode" in unchanged.err
