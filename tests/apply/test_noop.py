"""The verified no-op of ``apply`` (patchbay.apply.noop): a re-run answers "nothing to do" from the
ledger's identity only while every input, file, pin and the environment are what the last apply
left; every kind of difference falls through to the full engine, which then decides (and never
says nothing-to-do wrongly). Real trees, real venvs, real pip, real files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Engine, copy_engine, diff_patch, patchset_with_notes, write_patchset
from inprocess import run_main
from patchbay.apply import noop
from servers import Response, Server, make_wheel

OLD = "def work():\n    return 1\n"
NEW = "def work():\n    return 2\n"


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "demo_engine").mkdir(parents=True)
    (root / "demo_engine" / "worker.py").write_text(OLD)
    (root / "demo_engine" / "other.py").write_text("X = 1\n")
    return root


def _patchset(
    tmp_path: Path, *more: dict[str, object], files: dict[str, str] | None = None
) -> Path:
    patches = [
        {"id": "worker", "kind": "diff", "file": "worker.patch"},
        {
            "id": "other",
            "kind": "replace",
            "edits": [{"file": "demo_engine/other.py", "old": "X = 1\n", "new": "X = 2\n"}],
        },
        *more,
    ]
    body = {"worker.patch": diff_patch("demo_engine/worker.py", OLD, NEW), **(files or {})}
    return write_patchset(tmp_path / "ps", patches, files=body)


def _applied(tmp_path: Path) -> tuple[Path, Path]:
    root, ps = _tree(tmp_path), _patchset(tmp_path)
    res = run_main("apply", ps, "--root", root)
    assert res.code == 0, res.err
    assert noop.check(str(ps), root=root) is not None
    return root, ps


def _ledger(state: Path) -> dict[str, object]:
    return json.loads((state / "ledger.json").read_text())


def test_a_rerun_is_a_verified_noop_with_the_full_engines_output(tmp_path: Path) -> None:
    root, ps = _applied(tmp_path)
    res = run_main("apply", ps, "--root", root)
    assert (res.code, res.out) == (0, "nothing to do: 2 patch(es) already present\n")
    verified = noop.check(str(ps), root=root)
    assert verified is not None and verified.present == 2 and verified.redundant == []
    # the record is part of the ledger, written in the apply's transaction
    assert "applied_identity" in _ledger(root / ".patchbay")["patchsets"]["test"]  # type: ignore[index]


def test_an_edited_patch_file_falls_through(tmp_path: Path) -> None:
    root, ps = _applied(tmp_path)
    (ps / "worker.patch").write_text(
        diff_patch("demo_engine/worker.py", OLD, "def work():\n    return 3\n")
    )
    assert noop.check(str(ps), root=root) is None
    res = run_main("apply", ps, "--root", root)
    assert res.code == 1 and "--upgrade" in res.err  # the engine refuses: not "nothing to do"


def test_an_edited_patchset_yaml_falls_through(tmp_path: Path) -> None:
    root, ps = _applied(tmp_path)
    yaml_file = ps / "patchset.yaml"
    yaml_file.write_text(yaml_file.read_text() + "# a comment\n")
    assert noop.check(str(ps), root=root) is None
    assert run_main("apply", ps, "--root", root).out.startswith("nothing to do")
    # the full engine's no-op recorded the identity again: the next re-run is fast
    assert noop.check(str(ps), root=root) is not None


def test_an_edited_patched_file_falls_through(tmp_path: Path) -> None:
    root, ps = _applied(tmp_path)
    target = root / "demo_engine" / "other.py"
    target.write_text("X = 2\n# a local edit: the replace patch is still present\n")
    assert noop.check(str(ps), root=root) is None
    res = run_main("apply", ps, "--root", root)
    assert "changed since patchbay wrote it" in res.out


def test_same_bytes_do_not_hide_a_changed_mode_or_a_reverted_file(tmp_path: Path) -> None:
    root, ps = _applied(tmp_path)
    target = root / "demo_engine" / "worker.py"
    os.chmod(target, 0o600)
    assert noop.check(str(ps), root=root) is None
    os.chmod(target, 0o644)
    assert noop.check(str(ps), root=root) is not None
    target.write_text(OLD)  # put back to pristine by hand: the patch is pending again
    assert noop.check(str(ps), root=root) is None
    res = run_main("apply", ps, "--root", root)
    assert res.code == 0 and "applied worker" in res.out


def test_a_swapped_in_symlink_falls_through(tmp_path: Path) -> None:
    root, ps = _applied(tmp_path)
    target = root / "demo_engine" / "worker.py"
    elsewhere = tmp_path / "copy.py"
    elsewhere.write_bytes(target.read_bytes())
    target.unlink()
    target.symlink_to(elsewhere)  # the same bytes, through a link the path gate refuses
    assert noop.check(str(ps), root=root) is None


def test_another_tree_or_state_folder_falls_through(tmp_path: Path) -> None:
    root, ps = _applied(tmp_path)
    other = tmp_path / "other"
    (other / "demo_engine").mkdir(parents=True)
    for name in ("worker.py", "other.py"):
        (other / "demo_engine" / name).write_bytes((root / "demo_engine" / name).read_bytes())
    # the same state folder for another tree: the identity names the first tree
    assert noop.check(str(ps), root=other, state_dir=root / ".patchbay") is None
    assert noop.check(str(ps), root=other) is None  # no ledger there at all


def test_a_ledger_without_identity_or_of_another_version_falls_through(tmp_path: Path) -> None:
    root, ps = _applied(tmp_path)
    path = root / ".patchbay" / "ledger.json"
    data = json.loads(path.read_text())
    ident = data["patchsets"]["test"]["applied_identity"]
    ident["tool_version"] = "0.0.1"
    path.write_text(json.dumps(data))
    assert noop.check(str(ps), root=root) is None
    del data["patchsets"]["test"]["applied_identity"]  # a ledger an older patchbay wrote
    path.write_text(json.dumps(data))
    assert noop.check(str(ps), root=root) is None
    res = run_main("apply", ps, "--root", root)
    assert res.out == "nothing to do: 2 patch(es) already present\n"  # the full engine's no-op
    assert noop.check(str(ps), root=root) is not None  # which recorded the identity again
    path.write_text("{not json")
    assert noop.check(str(ps), root=root) is None
    assert run_main("apply", ps, "--root", root).code == 2  # the engine names the bad ledger


def test_a_journal_falls_through(tmp_path: Path) -> None:
    root, ps = _applied(tmp_path)
    (root / ".patchbay" / "journal").mkdir()
    assert noop.check(str(ps), root=root) is None


def test_revert_drops_the_identity(tmp_path: Path) -> None:
    root, ps = _applied(tmp_path)
    assert run_main("revert", ps, "--root", root).code == 0
    assert noop.check(str(ps), root=root) is None
    res = run_main("apply", ps, "--root", root)
    assert "2 applied" in res.out


def test_a_patch_added_to_the_patchset_falls_through(tmp_path: Path) -> None:
    root, ps = _applied(tmp_path)
    (root / "demo_engine" / "third.py").write_text("Y = 1\n")
    more = {
        "id": "third",
        "kind": "replace",
        "edits": [{"file": "demo_engine/third.py", "old": "Y = 1\n", "new": "Y = 2\n"}],
    }
    ps = _patchset(tmp_path, more)  # rewrites patchset.yaml in place
    assert noop.check(str(ps), root=root) is None
    assert "applied third" in run_main("apply", ps, "--root", root).out


def test_a_changed_artifact_falls_through(tmp_path: Path) -> None:
    import hashlib

    body = b"\x7fELF kernel v1"
    root = _tree(tmp_path)
    with Server() as server:
        server.add("/k.co", Response(body=body))
        art = {
            "id": "kernel",
            "kind": "artifact",
            "files": [
                {
                    "url": f"{server.url}/k.co",
                    "dest": "demo_engine/k.co",
                    "sha256": hashlib.sha256(body).hexdigest(),
                    "insecure_http": True,
                }
            ],
        }
        ps = _patchset(tmp_path, art)
        res = run_main("apply", ps, "--root", root, "--cache-dir", tmp_path / "cache")
        assert res.code == 0, res.err
    assert noop.check(str(ps), root=root) is not None
    (root / "demo_engine" / "k.co").write_bytes(b"\x7fELF kernel v2")
    assert noop.check(str(ps), root=root) is None


def test_another_interpreter_or_its_variables_fall_through(
    tmp_path: Path, engine: Engine, engine_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "pad", "kind": "replace", "edits": [{"file": "demo_engine/worker.py",
          "old": "r * 2", "new": "r * 3"}]}],
    )  # fmt: skip
    res = run_main("apply", ps, "--python", engine.python)
    assert res.code == 0, res.err
    assert noop.check(str(ps), python=str(engine.python)) is not None
    # the prefix comes from pyvenv.cfg, as CPython derives it, and the ledger confirms it
    assert noop.venv_prefix(str(engine.python)) == str(engine.prefix)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert noop.check(str(ps), python=str(engine.python)) is None
    monkeypatch.delenv("PYTHONPATH")
    other = copy_engine(engine_template, tmp_path / "other")
    assert noop.check(str(ps), python=str(other.python)) is None
    # a .pth file dropped into site-packages may send imports elsewhere
    (engine.site / "zz-redirect.pth").write_text(str(tmp_path) + "\n")
    assert noop.check(str(ps), python=str(engine.python)) is None
    (engine.site / "zz-redirect.pth").unlink()
    assert noop.check(str(ps), python=str(engine.python)) is not None
    res = run_main("apply", ps, "--python", engine.python)
    assert res.out == "nothing to do: 1 patch(es) already present\n"


def test_a_moved_pin_falls_through(
    tmp_path: Path, pengine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    links = tmp_path / "links"
    make_wheel(links, "tinypin", "1.0")
    make_wheel(links, "tinypin", "2.0")
    with Server() as empty:
        pin = {"id": "tinypin", "kind": "pip", "requirement": "tinypin==2.0",
               "index_url": f"{empty.url}/simple/", "find_links": [str(links)]}  # fmt: skip
        ps = write_patchset(tmp_path / "ps", [pin])
        res = run_main("apply", ps, "--python", pengine.python)
        assert res.code == 0, res.err
        assert noop.check(str(ps), python=str(pengine.python)) is not None
        subprocess.run(
            [str(pengine.python), "-m", "pip", "install", "-q", "--no-index", "-f", str(links),
             "tinypin==1.0"],
            check=True,
        )  # fmt: skip
        assert noop.check(str(ps), python=str(pengine.python)) is None
        res = run_main("status", ps, "--python", pengine.python, "--format", "concise")
        assert "tinypin: pending" in res.out


_MODULES = """
import io, json, sys, contextlib
from patchbay.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
names = ("argparse", "patchbay.cli.parser", "patchbay.cli.grammar.apply", "patchbay.apply.engine")
print(json.dumps({"code": code, "out": out.getvalue(),
                  "parser": sorted(n for n in names if n in sys.modules)}))
"""


def _cli_modules(*args: str | Path) -> dict[str, object]:
    """``patchbay ARGS`` in a fresh interpreter: exit code, stdout and which of the parser's and
    the engine's modules it imported."""
    proc = subprocess.run(
        [sys.executable, "-c", _MODULES, *map(str, args)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(proc.stdout.splitlines()[-1])


def test_the_plain_command_line_is_answered_before_the_parser_is_imported(
    tmp_path: Path,
) -> None:
    root, ps = _applied(tmp_path)
    state = root / ".patchbay"
    nothing = "nothing to do: 2 patch(es) already present\n"
    for args in (
        ["apply", ps, "--root", root],
        ["apply", f"--root={root}", ps, "-q"],
        ["apply", ps, "--root", root, "--state-dir", state, "--quiet"],
    ):
        assert _cli_modules(*args) == {"code": 0, "out": nothing, "parser": []}, args
    # any other option takes the parser, and the same verified no-op behind it
    got = _cli_modules("apply", ps, "--root", root, "--lock-timeout", "5")
    assert (got["code"], got["out"]) == (0, nothing)
    assert got["parser"] == ["argparse", "patchbay.cli.grammar.apply", "patchbay.cli.parser"]
    # what the check cannot verify goes to the full engine, which re-applies the reverted file
    (root / "demo_engine" / "worker.py").write_text(OLD)
    got = _cli_modules("apply", ps, "--root", root)
    assert got["code"] == 0 and "applied worker" in str(got["out"])
    assert "patchbay.apply.engine" in got["parser"]  # type: ignore[operator]
    assert (root / "demo_engine" / "worker.py").read_text() == NEW


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--root"], "argument --root: expected one argument"),
        (["PS", "PS"], "unrecognized arguments"),
        (["PS", "--root", "--state-dir", "x"], "argument --root: expected one argument"),
        (["PS", "--ro", "ROOT"], None),  # argparse's abbreviation: taken by the parser
    ],
)
def test_the_fast_path_leaves_every_other_command_line_to_argparse(
    tmp_path: Path, words: list[str], message: str | None
) -> None:
    root, ps = _applied(tmp_path)
    words = [str(ps) if w == "PS" else str(root) if w == "ROOT" else w for w in words]
    res = run_main("apply", *words)
    if message is None:
        assert (res.code, res.out) == (0, "nothing to do: 2 patch(es) already present\n")
    else:
        assert res.code == 2 and message in res.err and res.err.startswith("patchbay: error: ")


def test_the_fast_path_s_options_are_apply_s_own() -> None:
    """The fast path reads ``--python``/``--root``/``--state-dir`` without the parser: each
    must be an option of ``apply`` taking one value, under the same name, and the one option
    it skips, ``--quiet``/``-q``, a flag of it (a renamed option would otherwise be read
    wrongly, or never)."""
    from patchbay.cli.entry import _NOOP_OPTIONS
    from patchbay.cli.parser import build

    parser, _ = build("apply")
    assert parser is not None
    actions = {s: a for a in parser._actions for s in a.option_strings}
    for option, dest in _NOOP_OPTIONS.items():
        assert actions[option].dest == dest and actions[option].nargs is None, option
    assert actions["--quiet"] is actions["-q"] and actions["-q"].nargs == 0


# -- what the identity must cover (each once answered "nothing to do" wrongly) ----------------


def test_with_root_a_changed_distribution_version_falls_through(tmp_path: Path) -> None:
    """--root: the base guard reads the tree's .dist-info; an edited, renamed or removed one
    is a change (the engine then refuses: wrong image)."""
    root = _tree(tmp_path)
    info = root / "demo_engine-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-engine\nVersion: 0.1\n")
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "other", "kind": "replace",
          "edits": [{"file": "demo_engine/other.py", "old": "X = 1\n", "new": "X = 2\n"}]}],
        base={"distributions": {"demo-engine": "==0.1"}},
    )  # fmt: skip
    assert run_main("apply", ps, "--root", root).code == 0
    assert noop.check(str(ps), root=root) is not None
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-engine\nVersion: 0.9\n")
    assert noop.check(str(ps), root=root) is None
    res = run_main("apply", ps, "--root", root)
    assert res.code == 1 and "base guard failed" in res.err
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-engine\nVersion: 0.1\n")
    assert noop.check(str(ps), root=root) is not None
    info.rename(root / "demo_engine-0.1.dist-info.off")
    assert noop.check(str(ps), root=root) is None


def test_a_repointed_link_to_patch_files_or_the_yaml_falls_through(tmp_path: Path) -> None:
    """The engine reads the inputs through the patchset's folder as given: switching a link
    (a `patches` folder link, a linked patchset.yaml in another folder) is a change."""
    root = _tree(tmp_path)
    ps = tmp_path / "ps"
    patch = {"id": "worker", "kind": "diff", "file": "patches/w.patch"}
    body = diff_patch("demo_engine/worker.py", OLD, NEW)
    v1 = write_patchset(ps, [patch], files={"v1/w.patch": body})
    (ps / "v2").mkdir()
    third = NEW.replace("2", "3")
    (ps / "v2" / "w.patch").write_text(diff_patch("demo_engine/worker.py", OLD, third))
    (ps / "patches").symlink_to("v1")
    assert run_main("apply", v1, "--root", root).code == 0
    assert noop.check(str(ps), root=root) is not None
    (ps / "patches").unlink()
    (ps / "patches").symlink_to("v2")
    assert noop.check(str(ps), root=root) is None
    res = run_main("apply", ps, "--root", root)
    assert res.code == 1 and "differ from the patchset" in res.err
    (ps / "patches").unlink()
    (ps / "patches").symlink_to("v1")
    assert noop.check(str(ps), root=root) is not None
    # the same YAML linked from a folder without the patch files is another patchset
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "patchset.yaml").symlink_to(ps / "patchset.yaml")
    assert noop.check(str(other), root=root) is None
    res = run_main("apply", other, "--root", root)
    assert res.code == 2 and "not found" in res.err


def test_a_home_targets_variable_moves_its_root_and_falls_through(
    tmp_path: Path, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "jit-a", tmp_path / "jit-b"
    for folder in (first, second):
        folder.mkdir()
        (folder / "x.txt").write_text("mode=a\n")
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "jit-mode", "kind": "replace", "target": "jit",
          "edits": [{"file": "x.txt", "old": "mode=a\n", "new": "mode=b\n"}]}],
        targets={"engine": {"package": "demo_engine"},
                 "jit": {"home": ".cache/pb-jit", "env": "PB_TEST_JIT_DIR"}},
    )  # fmt: skip
    monkeypatch.setenv("PB_TEST_JIT_DIR", str(first))
    assert run_main("apply", ps, "--python", engine.python).code == 0
    assert noop.check(str(ps), python=str(engine.python)) is not None
    monkeypatch.setenv("PB_TEST_JIT_DIR", str(second))
    assert noop.check(str(ps), python=str(engine.python)) is None
    res = run_main("apply", ps, "--python", engine.python)
    assert res.code == 0 and "applied jit-mode" in res.out, res.out + res.err
    assert (second / "x.txt").read_text() == "mode=b\n"


def test_a_user_site_packages_created_later_falls_through(
    tmp_path: Path, engine_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interpreter with user site-packages enabled (a system Python; here a venv that sees
    the system site-packages) adds ~/.local/.../site-packages to sys.path once that folder
    exists (a system Python ahead of its own site-packages): the no-op is not verified then."""
    engine = copy_engine(engine_template, tmp_path / "env")
    cfg = engine.prefix / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace("include-system-site-packages = false",
                                           "include-system-site-packages = true"))  # fmt: skip
    pristine = tmp_path / "pristine"
    shutil.copytree(engine.site, pristine, symlinks=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "pad", "kind": "replace", "edits": [{"file": "demo_engine/worker.py",
          "old": "r * 2", "new": "r * 3"}]}],
    )  # fmt: skip
    assert run_main("apply", ps, "--python", engine.python).code == 0
    assert noop.check(str(ps), python=str(engine.python)) is not None
    user_site = subprocess.run(
        [str(engine.python), "-c", "import site; print(site.getusersitepackages())"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert user_site.startswith(str(tmp_path / "home"))
    shutil.copytree(pristine, user_site, symlinks=True)
    assert noop.check(str(ps), python=str(engine.python)) is None
    # the engine then judges the copy imports find (a venv's own site-packages stay ahead of
    # the user's; a system Python's do not), and a verified no-op is recorded again
    assert run_main("apply", ps, "--python", engine.python).code == 0
    found = subprocess.run(
        [str(engine.python), "-c",
         "import importlib.util as u; print(u.find_spec('demo_engine').origin)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert "r * 3" in (Path(found).parent / "worker.py").read_text()
    assert noop.check(str(ps), python=str(engine.python)) is not None


def test_a_state_folder_apply_cannot_write_takes_the_engine(tmp_path: Path) -> None:
    """The no-op must not answer for a --state-dir apply cannot write (root writes through
    permission bits: the folder is made immutable); the engine then finds nothing to do,
    which needs no write (the identity, a cache, is not recorded again)."""
    root, ps, state = _tree(tmp_path), _patchset(tmp_path), tmp_path / "state"
    assert run_main("apply", ps, "--root", root, "--state-dir", state).code == 0
    assert noop.check(str(ps), root=root, state_dir=state) is not None
    if subprocess.run(["chattr", "+i", str(state)], capture_output=True).returncode != 0:
        pytest.skip("cannot make an immutable folder here (needs root and ext4/xfs)")
    try:
        assert noop.check(str(ps), root=root, state_dir=state) is None
        ledger = (state / "ledger.json").read_bytes()
        res = run_main("apply", ps, "--root", root, "--state-dir", state)
        assert res.code == 0, res.out + res.err
        assert res.out.endswith("nothing to do: 2 patch(es) already present\n"), res.out
        assert (state / "ledger.json").read_bytes() == ledger
    finally:
        subprocess.run(["chattr", "-i", str(state)], check=True)


def test_a_no_op_that_does_not_verify_is_checked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast path's check that fails is not repeated by apply behind the parser (at 10,000
    patches the check hashes 20,000 files)."""
    root, ps = _applied(tmp_path)
    (root / "demo_engine" / "worker.py").write_text(OLD)
    calls = []
    real = noop.check
    monkeypatch.setattr(noop, "check", lambda *a, **k: calls.append(a) or real(*a, **k))
    res = run_main("apply", ps, "--root", root)
    assert res.code == 0 and "applied worker" in res.out, res.out + res.err
    assert len(calls) == 1
    calls.clear()
    res = run_main("apply", ps, "--root", root, "--lock-timeout", "5")  # no fast path
    assert (res.code, len(calls)) == (0, 1)


def test_a_patchset_with_notes_gets_a_verified_noop_that_counts_them(tmp_path: Path) -> None:
    """A hunk found one line off its declared line and a CRLF file give ``note:`` lines. The
    cold apply's notes are not a re-run's (its line numbers are the preimage's), so its run
    records no identity; the first re-run, through the engine, records one with the notes it
    printed, and every later re-run is the verified no-op, which counts them in its one line
    and prints exactly the same as that re-run with ``-v``."""
    root, ps = patchset_with_notes(tmp_path)
    cold = run_main("apply", ps, "--root", root)
    assert cold.code == 0, cold.err
    assert "applied at line 3, offset +1" in cold.out
    assert noop.check(str(ps), root=root) is None
    first = run_main("apply", ps, "--root", root)
    assert first.code == 0, first.err
    assert first.out.splitlines() == [
        "note: worker: demo_engine/worker.py hunk 1: applied at line 3, offset +1",
        "note: crlf: demo_engine/crlf.py uses CRLF line endings; the patch was matched with CRLF",
        "nothing to do: 2 patch(es) already present",
    ]
    verified = noop.check(str(ps), root=root)
    assert verified is not None and verified.notes == first.out.splitlines()[:2]
    again = run_main("apply", ps, "--root", root)
    assert (again.code, again.out) == (
        0,
        "nothing to do: 2 patch(es) already present (2 notes from the last apply: -v shows them)\n",
    )
    assert run_main("apply", ps, "--root", root, "-v").out == first.out
