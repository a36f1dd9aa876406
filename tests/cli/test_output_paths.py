"""Output paths the user names are checked before any work: one line naming the option, exit 2.

Every command that writes to a path given on the command line (``bundle OUT``, ``rebase --out``
/ ``--conflicts`` / ``--resolved``, ``waiver new -o``, ``report -o``, ``import --out``,
``--record``) goes through :mod:`patchbay.outputfiles`; run in-process through the real CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Engine, write_patchset
from inprocess import run_main
from patchbay.errors import InputError
from patchbay.outputfiles import check_input_folder, check_output_file, check_output_folder


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
    (["audit", "--repo", "ps", "-o", "afile/x.sarif"], "afile/x.sarif: --output cannot be created"),
    (["audit", "--repo", "ps", "-f", "json", "-o", "adir"], "adir: --output names a folder"),
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


# every option that names a result file, and what it writes there
WRITERS = [
    (["audit", "--repo", "ps", "-f", "sarif", "-o", "new/deeper/audit.sarif"], '"2.1.0"'),
    (["audit", "--repo", "ps", "-o", "new/deeper/audit.txt"], "audit clean"),
    (["waiver", "new", "ps", "-o", "new/deeper/w.md"], "Removal"),
    (["status", "ps", "--root", "tree", "--record", "new/deeper/r.json"], '"schema_version"'),
    (["apply", "ps", "--root", "tree", "--record", "new/deeper/r.json"], '"schema_version"'),
    (["verify", "ps", "--root", "tree", "--record", "new/deeper/r.json"], '"schema_version"'),
]  # report -o: tests/upstream/test_report.py (it needs the forge's stand-in)


@pytest.mark.parametrize(("args", "written"), WRITERS, ids=[" ".join(a) for a, _ in WRITERS])
def test_every_result_file_gets_its_missing_folders(
    place: Path, args: list[str], written: str
) -> None:
    """One rule for every result file (patchbay.outputfiles.write_output_file): the folders
    missing above it are created, as ``mkdir -p`` would, and the file is written whole."""
    res = run_main(*args, cwd=place)
    assert res.crash is None, res.crash
    assert res.code in (0, 1), res.err
    out = next((place / "new" / "deeper").iterdir())
    assert written in out.read_text(encoding="utf-8")
