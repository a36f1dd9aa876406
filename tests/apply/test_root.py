"""``--root``: an unpacked tree stands in for site-packages. Its ``*.dist-info`` folders give the
base guard its versions (read as the interpreter's probe reads them), and a target package that
is not right under it is bad input naming what was looked for, never a conflict. The tree here
is the site-packages of a real environment the demo engine was pip-installed into."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from conftest import REPO, Engine, diff_patch, write_patchset
from inprocess import run_main

ENVS = (REPO / "demo" / "engine" / "src" / "demo_engine" / "envs.py").read_text()
PADDED = ENVS.replace(
    'KV_CACHE_DTYPE = os.environ.get("DEMO_KV_CACHE_DTYPE", "auto")\n',
    'KV_CACHE_DTYPE = os.environ.get("DEMO_KV_CACHE_DTYPE", "auto")\n'
    'ASM_PADDING = os.environ.get("DEMO_ASM_PADDING", "none")\n',
)


def _patchset(folder: Path, guard: str) -> Path:
    return write_patchset(
        folder,
        [{"id": "envs-padding", "kind": "diff", "file": "patches/envs.patch"}],
        base={"distributions": {"demo-engine": guard}},
        files={"patches/envs.patch": diff_patch("demo_engine/envs.py", ENVS, PADDED)},
    )


def _guard(res_out: str) -> list[dict[str, object]]:
    return [c for c in json.loads(res_out)["guard"]["checks"] if c["kind"] == "distribution"]


def test_the_base_guard_reads_versions_from_the_trees_dist_info(
    tmp_path: Path, engine: Engine
) -> None:
    dist_info = next(engine.site.glob("demo_engine-*.dist-info")).name
    version = dist_info.removesuffix(".dist-info").split("-")[1]
    ps = _patchset(tmp_path / "ps", f"=={version}")
    state = tmp_path / "state"
    by_root = run_main("status", ps, "--root", engine.site, "--state-dir", state, "--json")
    by_python = run_main("status", ps, "--python", engine.python, "--json")
    assert by_root.code == 0, by_root.out
    assert _guard(by_root.out) == _guard(by_python.out)  # the same reading as the probe's
    assert _guard(by_root.out)[0]["installed"] == version
    res = run_main("apply", ps, "--root", engine.site, "--state-dir", state)
    assert res.code == 0, res.err
    assert "ASM_PADDING" in (engine.pkg / "envs.py").read_text()

    other = _patchset(tmp_path / "other", "==0.5.0")
    res = run_main("apply", other, "--root", engine.site, "--state-dir", tmp_path / "s2")
    assert res.code == 1
    assert f"demo-engine {version} does not satisfy ==0.5.0" in res.err


def test_a_tree_without_the_dist_info_says_the_version_cannot_be_checked(
    tmp_path: Path, engine: Engine
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(engine.pkg, tree / "demo_engine")
    ps = _patchset(tmp_path / "ps", "==0.4.1+g1a2b3c4")
    res = run_main("apply", ps, "--root", tree)
    assert res.code == 1
    assert "base guard failed" in res.err
    assert f"demo-engine: no demo-engine-*.dist-info under {tree}" in res.err
    assert "ASM_PADDING" not in (tree / "demo_engine" / "envs.py").read_text()


def test_a_root_that_misses_the_package_is_bad_input_naming_where_it_looked(
    tmp_path: Path, engine: Engine
) -> None:
    ps = _patchset(tmp_path / "ps", ">=0")
    empty = tmp_path / "empty"
    empty.mkdir()
    for root, hint in (
        (engine.pkg, f"; it is under {engine.site}: give that folder as --root"),  # too deep
        (engine.site.parent, f"; it is under {engine.site}: give that folder as --root"),
        (empty, ")"),
    ):
        for command in ("status", "check", "apply"):
            res = run_main(command, ps, "--root", root)
            assert res.code == 2, res.err
            lines = res.err.strip().splitlines()
            assert len(lines) == 1, res.err
            looked = f"(looked for {root / 'demo_engine'}{os.sep} and {root / 'demo_engine'}.py"
            assert f"package demo_engine is not under {root} {looked}{hint}" in lines[0]
            assert "conflict" not in res.err
        assert not (root / ".patchbay").exists()  # nothing written
    assert "ASM_PADDING" not in (engine.pkg / "envs.py").read_text()


def test_root_and_python_together_are_refused(tmp_path: Path, engine: Engine) -> None:
    ps = _patchset(tmp_path / "ps", ">=0")
    res = run_main("apply", ps, "--root", engine.site, "--python", engine.python)
    assert res.code == 2
    assert "give --python or --root, not both" in res.err
    assert "ASM_PADDING" not in (engine.pkg / "envs.py").read_text()
