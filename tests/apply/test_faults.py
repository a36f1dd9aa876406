"""A real ``patchbay apply`` killed (SIGKILL) at sampled points, including inside its commit
and inside its own rollback, on one filesystem and with the state folder on another: the next
run always finds the tree pristine or applied, with a ledger that matches it. The same for a
killed ``revert``.

The full sweep of every point is ``benchmarks/fault_matrix.py``; see ``tests/faults.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import PATCHBAY
from faults import Fixture, kill_faults, rollback_faults, run_scenario, sample

COMMIT_POINTS = ("ledger-written:1", "journal-committed:1", "backups-removed:1")


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    return Fixture.create(tmp_path_factory.mktemp("faults"), str(PATCHBAY))


def _other_fs_available(tmp_path: Path) -> bool:
    shm = Path("/dev/shm")
    return shm.is_dir() and os.stat(shm).st_dev != os.stat(tmp_path).st_dev


@pytest.mark.parametrize("other_fs", [False, True], ids=["one-fs", "state-on-dev-shm"])
def test_a_killed_apply_ends_pristine_or_applied(
    fixture: Fixture, tmp_path: Path, other_fs: bool
) -> None:
    if other_fs and not _other_fs_available(tmp_path):
        pytest.skip("no second filesystem at /dev/shm")
    points = fixture.points(tmp_path / "list", other_fs=other_fs)
    assert all(p in points for p in COMMIT_POINTS), points
    faults = sample(kill_faults(points), 6, seed=11) + sample(
        rollback_faults(fixture, tmp_path / "list-rollback", other_fs=other_fs), 2, seed=11
    )
    outcomes = [
        run_scenario(fixture, tmp_path / f"s{i}", fault=f, other_fs=other_fs, recover_first=i % 2)
        for i, f in enumerate(faults)
    ]
    assert [o for o in outcomes if not o.ok] == [], "\n".join(str(o) for o in outcomes)
    assert all(o.killed for o in outcomes), [o.name for o in outcomes if not o.killed]


def test_a_killed_revert_ends_applied_or_reverted(fixture: Fixture, tmp_path: Path) -> None:
    points = fixture.points(tmp_path / "list", other_fs=False, command="revert")
    assert all(p in points for p in COMMIT_POINTS), points
    faults = sample(kill_faults(points), 4, seed=11) + sample(
        rollback_faults(fixture, tmp_path / "rb", other_fs=False, command="revert"), 1, seed=11
    )
    outcomes = [
        run_scenario(fixture, tmp_path / f"s{i}", fault=f, recover_first=i % 2, command="revert")
        for i, f in enumerate(faults)
    ]
    assert [o for o in outcomes if not o.ok] == [], "\n".join(str(o) for o in outcomes)
    assert all(o.killed for o in outcomes), [o.name for o in outcomes if not o.killed]


@pytest.mark.parametrize("fault", ["kill@file-staged:1", "kill@file-staged:3"])
def test_a_run_killed_with_a_file_staged_leaves_no_temporary_file(
    fixture: Fixture, tmp_path: Path, fault: str
) -> None:
    """Killed with a file's new content complete under its temporary name, before the rename
    (a diff's file, then an edit's): recovery removes the temporary file with the rest of the
    run (a left ``.<name>.<hex>.patchbay`` is a half tree to the judge, which lists dotfiles)."""
    for recover_first in (True, False):
        out = run_scenario(fixture, tmp_path / f"r{int(recover_first)}", fault=fault,
                           recover_first=recover_first)  # fmt: skip
        assert out.killed and out.ok, str(out)
