"""Output paths the user names are checked before any work: one line naming the option, exit 2.

Every command that writes to a path given on the command line (``bundle OUT``, ``rebase --out``
/ ``--conflicts`` / ``--resolved``, ``waiver new -o``, ``report -o``, ``import --out``,
``--record``) goes through :mod:`patchbay.outputs`; run in-process through the real CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Engine, write_patchset
from inprocess import run_main
from patchbay.errors import InputError
from patchbay.outputs import check_input_folder, check_output_file, check_output_folder


@pytest.fixture
def place(tmp_path: Path) -> Path:
    (tmp_path / "afile").write_text("x\n")
    (tmp_path / "adir").mkdir()
    (tmp_path / "tree" / "demo_engine").mkdir(parents=True)  # a root that holds the package
    (tmp_path / "tree" / "demo_engine" / "worker.py").write_text("a\n")
    write_patchset(tmp_path / "ps", [{"id": "r", "kind": "replace", "edits": [
        {"file": "demo_engine/worker.py", "old": "a", "new": "b"}]}])  # fmt: skip
    return tmp_path


REBASE = ["rebase", "ps", "--root", "nowhere", "--onto-root", "nowhere"]
CASES = [
    (["bundle", "ps", "afile"], "afile: OUT names a file, not a folder"),
    (
        ["bundle", "ps", "afile/sub"],
        "afile/sub: OUT cannot be created: {tmp}/afile is not a folder",
    ),
    ([*REBASE, "--out", "afile"], "afile: --out names a file, not a folder"),
    ([*REBASE, "--out", "afile/sub"], "afile/sub: --out cannot be created: {tmp}/afile is not"),
    ([*REBASE, "--conflicts", "afile"], "afile: --conflicts names a file, not a folder"),
    ([*REBASE, "--resolved", "missing"], "missing: --resolved names a folder that does not exist"),
    ([*REBASE, "--resolved", "afile"], "afile: --resolved names a file, not a folder"),
    (["waiver", "new", "ps", "-o", "afile/x.md"], "afile/x.md: -o/--output cannot be created"),
    (["waiver", "new", "ps", "-o", "adir", "--force"], "adir: -o/--output names a folder, not a"),
    (["report", "ps", "-o", "adir"], "adir: -o/--output names a folder, not a file"),
    (["import", "/dev/null", "--out", "afile/x"], "afile/x: --out cannot be created: {tmp}/afile"),
    (["status", "ps", "--root", "tree", "--record", "adir"], "adir: --record names a folder"),
]


@pytest.mark.parametrize(("args", "said"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_bad_output_path_is_one_line_exit_2(place: Path, args: list[str], said: str) -> None:
    before = sorted(p.relative_to(place) for p in place.rglob("*"))
    res = run_main(*args, cwd=place)
    assert res.crash is None, res.crash
    assert res.code == 2, res.err
    assert res.err.startswith("patchbay: error: " + said.format(tmp=place)), res.err
    assert len(res.err.strip().splitlines()) == 1
    assert sorted(p.relative_to(place) for p in place.rglob("*")) == before  # nothing made


def test_a_bundle_folder_no_file_can_be_made_in_is_one_line_exit_2(
    place: Path, engine: Engine
) -> None:
    # /proc takes no new file even for root, whom the access check lets through
    res = run_main("bundle", "ps", "/proc/patchbay-bundle", "--python", engine.python, cwd=place)
    assert res.crash is None, res.crash
    assert res.code == 2, res.err
    assert res.err.startswith("patchbay: error: /proc/patchbay-bundle: "), res.err
    assert len(res.err.strip().splitlines()) == 1


def test_the_checks_accept_what_can_be_written(tmp_path: Path) -> None:
    check_output_file(tmp_path / "new" / "deeper" / "r.json", "-o")
    check_output_folder(tmp_path / "new" / "out", "--out")
    check_output_folder(tmp_path, "--out")
    check_input_folder(tmp_path, "--resolved")
    assert not (tmp_path / "new").exists()  # a check creates nothing
    with pytest.raises(InputError, match="--out already exists"):
        check_output_folder(tmp_path, "--out", exist_ok=False)
