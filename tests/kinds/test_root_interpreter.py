"""With ``--root``, a command patch's ``{python}`` is the interpreter under the tree (the
prefix that owns its site-packages), and a tree with none is refused before anything runs."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import run_cli, snapshot, write_patchset
from patchbay.environment.rootpython import candidates, engine_python

PROBE = "import sys, pathlib; pathlib.Path('demo_engine/built.txt').write_text(sys.argv[1])"


def _patchset(tmp_path: Path) -> Path:
    return write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "build",
                "kind": "command",
                "argv": ["{python}", "-c", PROBE, "{python}"],
                "output": "demo_engine/built.txt",
            }
        ],
    )


def _tree(prefix: Path) -> Path:
    root = prefix / "lib" / "python3.11" / "site-packages"
    (root / "demo_engine").mkdir(parents=True)
    (root / "demo_engine" / "__init__.py").write_text("")
    return root


def test_the_command_runs_the_interpreter_under_the_tree(tmp_path: Path) -> None:
    root = _tree(tmp_path / "image")
    (tmp_path / "image" / "bin").mkdir()
    engine = tmp_path / "image" / "bin" / "python3.11"
    engine.symlink_to(sys.executable)
    assert engine_python(root) == engine
    res = run_cli("apply", _patchset(tmp_path), "--root", root)
    assert res.code == 0, res.err
    assert (root / "demo_engine" / "built.txt").read_text() == str(engine)


def test_a_tree_without_an_interpreter_is_refused_before_anything_runs(tmp_path: Path) -> None:
    root = _tree(tmp_path / "image")
    before = snapshot(root)
    res = run_cli("apply", _patchset(tmp_path), "--root", root)
    assert res.code == 1
    assert "there is none under the tree" in res.err
    assert str(tmp_path / "image" / "bin" / "python3.11") in res.err  # where it looked
    assert snapshot(root) == before
    flat = tmp_path / "flat"
    flat.mkdir()
    assert candidates(flat) == []
