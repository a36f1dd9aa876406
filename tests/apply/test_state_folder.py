"""patchbay's own state folder (ledger, saved originals, journal) is out of every patch's
reach, and never lies inside a target's package.

With ``--root`` the default state folder is ``<root>/.patchbay``, under the target root: the
path gate (:func:`patchbay.environment.paths.resolve_under`, called by ``Tree.resolve`` for every
kind) refuses any path that resolves into it, whatever kind named it, before anything is written.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import REPO, write_patchset
from inprocess import run_main

REPLACE = {
    "id": "fg",
    "kind": "replace",
    "edits": [
        {
            "file": "demo_engine/scheduler.py",
            "old": "        return num_decode_tokens == 1\n",
            "new": "        return num_decode_tokens >= 1\n",
        }
    ],
}


def _folder_hash(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        if path.is_file() and not path.is_symlink() and path.name != "lock":
            h.update(path.read_bytes())
    return h.hexdigest()


def _evil(rel: str) -> dict[str, Callable[[Path], dict]]:
    """One patch per kind and field that names ``rel`` (relative to the target root)."""
    diff = (
        f"diff --git a/{rel} b/{rel}\nnew file mode 100644\n--- /dev/null\n+++ b/{rel}\n"
        "@@ -0,0 +1 @@\n+evil\n"
    )

    def diff_patch(ps: Path) -> dict:
        (ps / "patches").mkdir(exist_ok=True)
        (ps / "patches" / "evil.patch").write_text(diff)
        return {"id": "evil", "kind": "diff", "file": "patches/evil.patch"}

    def replace_patch(ps: Path) -> dict:
        return {"id": "evil", "kind": "replace", "edits": [{"file": rel, "old": "{", "new": "["}]}

    def artifact(ps: Path) -> dict:
        # refused before any fetch: the address is never asked
        url, sha = "https://example.invalid/k.co", "a" * 64
        return {
            "id": "evil",
            "kind": "artifact",
            "files": [{"url": url, "dest": rel, "sha256": sha}],
        }

    def command_output(ps: Path) -> dict:
        return {"id": "evil", "kind": "command", "argv": ["true"], "output": rel}

    def command_remove(ps: Path) -> dict:
        return {"id": "evil", "kind": "command", "argv": ["true"], "after": ["fg"], "remove": [rel]}

    return {
        "diff": diff_patch,
        "replace": replace_patch,
        "artifact": artifact,
        "command-output": command_output,
        "command-remove": command_remove,
    }


@pytest.mark.parametrize("kind", list(_evil("x")))
@pytest.mark.parametrize(
    ("state", "rel"),
    [
        (None, ".patchbay/ledger.json"),
        (None, ".patchbay/evil.txt"),
        (None, "./.patchbay//ledger.json"),
        ("demo_state", "demo_state/ledger.json"),
    ],
)
def test_no_patch_of_any_kind_may_write_into_the_state_folder(
    tmp_path: Path, kind: str, state: str | None, rel: str
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(
        REPO / "demo" / "engine" / "src", tree, ignore=shutil.ignore_patterns("*.egg-info")
    )
    state_args = ["--state-dir", str(tree / state)] if state else []
    state_dir = tree / (state or ".patchbay")
    good = write_patchset(tmp_path / "good", [REPLACE])
    assert run_main("apply", good, "--root", tree, *state_args).code == 0
    assert (state_dir / "ledger.json").is_file()
    before, saved = _folder_hash(tree / "demo_engine"), _folder_hash(state_dir)
    ps = tmp_path / "ps"
    ps.mkdir()
    bad = write_patchset(ps, [REPLACE, _evil(rel)[kind](ps)])
    for command in ("status", "apply"):
        res = run_main(command, bad, "--root", tree, *state_args)
        assert res.crash is None, res.crash
        assert res.code == 2, res.out + res.err
        lines = res.err.strip().splitlines()
        assert len(lines) == 1 and "state folder" in lines[0], res.err
        assert "no patch may write there" in lines[0]
    assert _folder_hash(tree / "demo_engine") == before
    assert _folder_hash(state_dir) == saved
    assert run_main("revert", good, "--root", tree, *state_args).code == 0
    assert "num_decode_tokens == 1" in (tree / "demo_engine" / "scheduler.py").read_text()


def test_a_link_into_the_state_folder_is_refused_too(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(
        REPO / "demo" / "engine" / "src", tree, ignore=shutil.ignore_patterns("*.egg-info")
    )
    (tree / ".patchbay").mkdir()
    os.symlink(tree / ".patchbay", tree / "demo_engine" / "state")
    ps = tmp_path / "ps"
    ps.mkdir()
    bad = write_patchset(ps, [_evil("demo_engine/state/evil.txt")["diff"](ps)])
    res = run_main("apply", bad, "--root", tree)
    assert res.code == 2 and "state folder" in res.err, res.err
    assert not (tree / ".patchbay" / "evil.txt").exists()


@pytest.mark.parametrize("inner", ["demo_engine", "demo_engine/state", "demo_engine_meta/s"])
def test_a_state_folder_inside_a_target_package_is_refused(tmp_path: Path, inner: str) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(
        REPO / "demo" / "engine" / "src", tree, ignore=shutil.ignore_patterns("*.egg-info")
    )
    targets = {
        "engine": {"package": "demo_engine"},
        "meta": {"package": "demo_engine", "path": "demo_engine_meta"},
    }
    ps = write_patchset(tmp_path / "ps", [REPLACE], targets=targets)
    before = _folder_hash(tree)
    for command in ("status", "apply", "revert"):
        res = run_main(command, ps, "--root", tree, "--state-dir", tree / inner)
        assert res.code == 2, res.out + res.err
        (line,) = res.err.strip().splitlines()
        package = "demo_engine_meta" if inner.startswith("demo_engine_meta") else "demo_engine"
        assert f"{tree / inner} lies inside {tree / package}, a package folder" in line
    assert _folder_hash(tree) == before
    # beside the packages (the default, <root>/.patchbay) is fine
    assert run_main("apply", ps, "--root", tree, "--state-dir", tree / "state").code == 0


def test_a_state_folder_that_holds_a_target_root_is_refused(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(
        REPO / "demo" / "engine" / "src", tree, ignore=shutil.ignore_patterns("*.egg-info")
    )
    ps = write_patchset(tmp_path / "ps", [REPLACE])
    res = run_main("apply", ps, "--root", tree, "--state-dir", tree)
    assert res.code == 2, res.out + res.err
    (line,) = res.err.strip().splitlines()
    assert f"the state folder {tree} holds the root {tree} of target 'engine'" in line
    assert "num_decode_tokens == 1" in (tree / "demo_engine" / "scheduler.py").read_text()


def test_a_state_folder_inside_an_installed_package_is_refused(engine, tmp_path: Path) -> None:
    ps = write_patchset(tmp_path / "ps", [REPLACE])
    res = run_main("apply", ps, "--python", engine.python, "--state-dir", engine.pkg / "st")
    assert res.code == 2 and f"lies inside {engine.pkg}, a package folder" in res.err, res.err
    assert not (engine.pkg / "st").exists()


def test_environments_sharing_a_state_dir_keep_their_records_apart(
    tmp_path: Path, engine_template: Path
) -> None:
    """One --state-dir given to two engine environments (issue 24, part 6): the first claims
    it, the second keeps its records in a folder of its own below it; each status, no-op apply
    and revert acts only on its own environment's records."""
    from conftest import copy_engine, run_cli
    from patchbay.environment.statefolder import CLAIM, SUBFOLDER

    first = copy_engine(engine_template, tmp_path / "first")
    second = copy_engine(engine_template, tmp_path / "second")
    shared = tmp_path / "state"
    shared.mkdir()
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "patchsets" / "demo", demo)

    def cli(cmd: str, engine: object, *more: str) -> object:
        return run_cli(cmd, demo, "--python", engine.python, "--state-dir", shared, *more)

    assert cli("apply", first).code == 0
    assert cli("apply", second).code == 0  # not "nothing to do": its own records
    assert (shared / "ledger.json").is_file()
    (own,) = (shared / SUBFOLDER).iterdir()
    assert (own / "ledger.json").is_file()
    assert CLAIM in {p.name for p in shared.iterdir()} and (own / CLAIM).is_file()
    again = cli("apply", second)
    assert again.code == 0 and "nothing to do" in again.out, again.out
    # revert in the first environment acts on the first's files only
    assert cli("revert", first).code == 0
    assert (first.pkg / "scheduler.py").read_bytes() == (
        engine_template / first.pkg.relative_to(first.prefix) / "scheduler.py"
    ).read_bytes()
    status = cli("status", second)
    assert status.code == 0 and "pending" not in status.out, status.out
    assert cli("revert", second).code == 0
    assert "pending" in cli("status", first).out
