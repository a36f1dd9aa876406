"""The ordering key (``after:`` on every kind) and ``home`` targets (a per-user folder whose
root comes from an environment variable, else a folder under the home directory).

Real files, real symbolic links, the real command line in this process against a real engine
environment (the demo engine, pip-installed).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import Engine, write_patchset
from inprocess import run_main
from patchbay.environment.targets import home_root
from patchbay.errors import InputError
from patchbay.patchset.model import Target

OLD = "        return num_decode_tokens == 1\n"
NEW = "        return num_decode_tokens >= 1\n"


def _edit(pid: str, old: str = OLD, new: str = NEW, **extra: object) -> dict[str, object]:
    edits = [{"file": "demo_engine/scheduler.py", "old": old, "new": new}]
    return {"id": pid, "kind": "replace", "edits": edits, **extra}


# -- the ordering key -------------------------------------------------------------------------


def test_after_that_contradicts_the_list_order_is_refused(tmp_path: Path) -> None:
    first = _edit(
        "second-edit", NEW, "        return num_decode_tokens >= 2\n", after=["first-edit"]
    )
    ps = write_patchset(tmp_path / "ps", [first, _edit("first-edit")])
    res = run_main("validate", ps)
    assert res.code == 2
    assert "patchset.yaml:" in res.err
    assert "`after` names 'first-edit', which is listed after it" in res.err

    ps = write_patchset(tmp_path / "self", [_edit("a", after=["a"])])
    res = run_main("validate", ps)
    assert res.code == 2 and "`after` names the patch itself" in res.err

    ps = write_patchset(tmp_path / "unknown", [_edit("a", after=["nope"])])
    res = run_main("validate", ps)
    assert res.code == 2 and "'nope', which is not a patch here" in res.err


def test_validate_names_patches_that_share_a_file_without_a_declared_order(
    tmp_path: Path,
) -> None:
    later = "        return num_decode_tokens >= 2\n"
    ps = write_patchset(tmp_path / "ps", [_edit("a"), _edit("b", NEW, later)])
    res = run_main("validate", ps)
    assert res.code == 0, res.err
    assert "b and a both change demo_engine/scheduler.py" in res.out
    assert "declare `after: [a]`" in res.out

    ps = write_patchset(tmp_path / "ordered", [_edit("a"), _edit("b", NEW, later, after=["a"])])
    res = run_main("validate", ps)
    assert res.code == 0, res.err
    assert "both change" not in res.out


def test_an_ordered_stack_applies_in_order(tmp_path: Path, engine: Engine) -> None:
    later = "        return num_decode_tokens >= 2\n"
    ps = write_patchset(tmp_path / "ps", [_edit("a"), _edit("b", NEW, later, after=["a"])])
    res = run_main("apply", ps, "--python", engine.python)
    assert res.code == 0, res.err
    assert later in (engine.pkg / "scheduler.py").read_text()


# -- home targets -------------------------------------------------------------------------------


def _home_target(env: str | None = "DEMO_JIT_DIR", home: str = ".demo/jit") -> Target:
    return Target(env=env, home=home) if env else Target(home=home)


def test_home_root_comes_from_the_variable_else_the_home_directory(tmp_path: Path) -> None:
    target = _home_target()
    home = tmp_path / "home"
    home.mkdir()
    assert home_root("jit", target, {"HOME": str(home)}) == home / ".demo" / "jit"
    alt = tmp_path / "alt"
    assert home_root("jit", target, {"HOME": str(home), "DEMO_JIT_DIR": str(alt)}) == alt
    for bad in ("relative/jit", "", f"{alt}/../etc"):
        with pytest.raises(InputError, match=r"\$DEMO_JIT_DIR=.* must be an absolute path"):
            home_root("jit", target, {"HOME": str(home), "DEMO_JIT_DIR": bad})
    # a home folder that is a link out of the home directory is refused
    outside = tmp_path / "outside"
    outside.mkdir()
    (home / ".demo").symlink_to(outside)
    with pytest.raises(InputError, match="outside the home directory"):
        home_root("jit", target, {"HOME": str(home)})


def test_home_targets_are_declared_one_way(tmp_path: Path) -> None:
    bad = {
        "both": {"package": "demo_engine", "home": ".x"},
        "neither": {"path": "x"},
        "path-with-home": {"home": ".x", "path": "y"},
        "env-with-package": {"package": "demo_engine", "env": "X"},
        "home-dotdot": {"home": "../x"},
        "env-name": {"home": ".x", "env": "not a name"},
    }
    for name, target in bad.items():
        ps = write_patchset(
            tmp_path / name, [], targets={"engine": {"package": "demo_engine"}, "t": target}
        )
        res = run_main("validate", ps)
        assert res.code == 2, name
        assert "patchset.yaml:" in res.err, name


def _rebuild_patchset(tmp_path: Path, argv: list[str]) -> Path:
    command = {
        "id": "rebuild",
        "kind": "command",
        "after": ["edit"],
        "remove": [
            "demo_engine/jit/mod.so",
            {"target": "user_jit", "path": "mod.so"},
            {"target": "user_jit", "path": "build/mod"},
        ],
        "argv": argv,
        "output": "demo_engine/jit/mod.so",
    }
    targets = {
        "engine": {"package": "demo_engine"},
        "user_jit": {"env": "DEMO_JIT_DIR", "home": ".demo/jit"},
    }
    return write_patchset(tmp_path / "ps", [_edit("edit"), command], targets=targets)


BUILD = ["{python}", "-c", "open('demo_engine/jit/mod.so', 'w').write('fresh')"]


@pytest.fixture
def stale(tmp_path: Path, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stale module in the engine and in the user JIT folder under a home of the test's."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("DEMO_JIT_DIR", raising=False)
    (engine.pkg / "jit").mkdir()
    (engine.pkg / "jit" / "mod.so").write_text("stale")
    jit = home / ".demo" / "jit"
    (jit / "build" / "mod").mkdir(parents=True)
    (jit / "mod.so").write_text("stale")
    (jit / "build" / "mod" / "mod.o").write_text("stale")
    return jit


def test_a_rebuild_removes_stale_builds_in_the_engine_and_the_user_folder(
    tmp_path: Path, engine: Engine, stale: Path
) -> None:
    (stale / "keep.so").write_text("another module")
    ps = _rebuild_patchset(tmp_path, BUILD)
    res = run_main("apply", ps, "--python", engine.python)
    assert res.code == 0, res.err
    assert (engine.pkg / "jit" / "mod.so").read_text() == "fresh"
    assert not (stale / "mod.so").exists() and not (stale / "build" / "mod").exists()
    assert (stale / "keep.so").read_text() == "another module"


def test_the_variable_moves_the_user_folder(
    tmp_path: Path, engine: Engine, stale: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alt = tmp_path / "alt-jit"
    alt.mkdir()
    (alt / "mod.so").write_text("stale")
    monkeypatch.setenv("DEMO_JIT_DIR", str(alt))
    res = run_main("apply", _rebuild_patchset(tmp_path, BUILD), "--python", engine.python)
    assert res.code == 0, res.err
    assert not (alt / "mod.so").exists()
    assert (stale / "mod.so").read_text() == "stale"  # the home folder is not the JIT folder now


def test_a_failed_rebuild_puts_the_user_folder_back(
    tmp_path: Path, engine: Engine, stale: Path
) -> None:
    ps = _rebuild_patchset(tmp_path, ["{python}", "-c", "raise SystemExit(3)"])
    res = run_main("apply", ps, "--python", engine.python)
    assert res.code == 1
    assert "command exited with status 3" in res.err
    assert (stale / "mod.so").read_text() == "stale"
    assert (stale / "build" / "mod" / "mod.o").read_text() == "stale"
    assert (engine.pkg / "scheduler.py").read_text().count(OLD) == 1


def test_a_link_out_of_the_user_folder_is_refused(
    tmp_path: Path, engine: Engine, stale: Path
) -> None:
    victim = tmp_path / "victim.so"
    victim.write_text("not patchbay's to remove")
    (stale / "mod.so").unlink()
    os.symlink(victim, stale / "mod.so")
    res = run_main("apply", _rebuild_patchset(tmp_path, BUILD), "--python", engine.python)
    assert res.code == 1
    assert "symbolic link" in res.err
    assert victim.read_text() == "not patchbay's to remove"
    assert (engine.pkg / "jit" / "mod.so").read_text() == "stale"
