"""One patch that replaces a folder by a file of its name, or a file by a folder, as ``git apply``
applies it (deletions first, then the emptied folder goes and the file takes its place): a
re-run is a no-op that status and verify call applied, a fault at any point of the apply leaves
the pristine tree (folder modes and owners included) once recovered, the originals of files
under the folder are kept outside it when the state folder is on another filesystem, and a new
file over a folder that stays (or under a file that stays) is refused as git refuses it. The
fault sweeps also run stacks that make a path a file, a folder and a file again in one run.

The tree against ``git apply`` itself, revert and patch stacks are cases of
``tests/apply/test_diff_writes.py``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import write_patchset
from inprocess import run_main
from patchbay.apply import journal
from patchbay.apply.engine import apply_patchset
from patchbay.apply.ledger import Ledger
from patchbay.apply.recovery import Rollback, recover
from patchbay.apply.revert import revert_patchset
from patchbay.apply.transaction import Transaction
from patchbay.environment.targets import resolve_environment
from patchbay.errors import PatchbayError
from patchbay.patchset.loading import load_patchset
from test_diff_writes import BODY, _git, _git_diff, _materialise, _pkg, _tree

FOLDER = _pkg({"a/x.py": BODY, "a/deep/y.sh": (b"#!/bin/sh\n", 0o755)})
FILE = _pkg({"a": (b"F = 1\n", 0o644)})
# (pristine, patched): a folder replaced by a file, and a file by a folder
DIRECTIONS = {"folder-to-file": (FOLDER, FILE), "file-to-folder": (FILE, FOLDER)}
# stacks of patches, one per step, that make a path a file, a folder and a file again in one
# run (and one revert); each direction is a stack of one
STACKS = {
    **{name: list(states) for name, states in DIRECTIONS.items()},
    "file-folder-file": [FILE, _pkg({"a/z.py": BODY}), _pkg({"a": b"G = 1\n"})],
    "file-nested-folders-file": [FILE, FOLDER, _pkg({"a": b"G = 1\n"})],
}


def _pristine(site: Path, direction: str) -> Path:
    """Make the pristine tree of ``direction`` at ``site``: its folders 0750 and 0700 and, run
    as root, another user's."""
    _materialise(site, STACKS[direction][0])
    for rel, mode in (("pkg/a", 0o750), ("pkg/a/deep", 0o700)):
        if (site / rel).is_dir():
            os.chmod(site / rel, mode)
            if os.geteuid() == 0:
                os.chown(site / rel, 1234, 2345)
    return site


def _setup(tmp_path: Path, direction: str) -> tuple[Path, Path]:
    """The pristine site and the patchset of the one patch that makes the other state;
    returns ``(site, patchset)``."""
    states = STACKS[direction]
    site = _pristine(tmp_path / "site", direction)
    ids = ["swap", *(f"swap-{i}" for i in range(2, len(states)))]
    diffs = [
        _git_diff(tmp_path / f"diff-{i}", *states[i - 1 : i + 1]) for i, _ in enumerate(ids, 1)
    ]
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": i, "kind": "diff", "file": f"{i}.patch"} for i in ids],
        targets={"engine": {"package": "pkg"}},
        files={f"{i}.patch": diff for i, diff in zip(ids, diffs, strict=True)},
    )
    return site, ps


def _state(root: Path) -> dict[str, tuple[object, ...]]:
    """:func:`_tree` with each entry's owner."""
    return {
        rel: (*entry, os.lstat(root / rel).st_uid, os.lstat(root / rel).st_gid)
        for rel, entry in _tree(root).items()
    }


def _leftovers(site: Path) -> list[str]:
    """The journal, kept originals or temporary files left behind."""
    kept = [p for p in site.rglob(".*") if p.name.startswith(".patchbay-")]
    kept += [p for p in site.rglob(".*.patchbay") if p.parent != site]
    return [str(p) for p in [*kept, *site.glob(".patchbay/journal")]]


@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_a_re_run_is_a_no_op_that_status_and_verify_call_applied(
    tmp_path: Path, direction: str
) -> None:
    site, ps = _setup(tmp_path, direction)
    assert run_main("apply", ps, "--root", site).code == 0
    applied = _state(site)
    times = {p: p.lstat().st_mtime_ns for p in site.rglob("*")}
    again = run_main("apply", ps, "--root", site)
    assert again.code == 0, again.err
    assert _state(site) == applied
    assert {p: p.lstat().st_mtime_ns for p in site.rglob("*")} == times  # nothing written
    status = run_main("status", ps, "--root", site, "--json")
    assert status.code == 0, status.err
    assert [p["status"] for p in json.loads(status.out)["patches"]] == ["applied"]
    verify = run_main("verify", ps, "--root", site)
    assert verify.code == 0, verify.out + verify.err


@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_revert_gives_back_the_folder_with_its_mode_and_owner(
    tmp_path: Path, direction: str
) -> None:
    site, ps = _setup(tmp_path, direction)
    pristine = _state(site)
    assert run_main("apply", ps, "--root", site).code == 0
    res = run_main("revert", ps, "--root", site)
    assert res.code == 0, res.err
    assert _state(site) == pristine
    assert not _leftovers(site)


class _Killed(BaseException):
    """The SIGKILL a fault point sends, raised instead (the test process goes on)."""


@pytest.fixture
def killable(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """``arm("kill@<point>:<n>")`` (or ``fail@...``): the next run dies at that point as a
    killed process would, leaving its journal for the next run, or fails there (an OSError)
    and rolls back. In process: the fault's SIGKILL raises :class:`_Killed`, and the rollback
    of a killed run does nothing but let go of its journal, as a dead process does."""
    real_kill, real_rollback = os.kill, Transaction.rollback
    killed: list[bool] = []

    def kill(pid: int, sig: int) -> None:
        if pid == os.getpid() and sig == 9:
            killed.append(True)
            raise _Killed
        real_kill(pid, sig)

    def rollback(self: Transaction) -> Rollback:
        if not killed:
            return real_rollback(self)
        self._done = True
        if self._manifest is not None:
            self._manifest.close()
            journal._release_staging_id(self.id)
        journal._LIVE_STAGING.clear()
        return Rollback()

    monkeypatch.setattr(os, "kill", kill)
    monkeypatch.setattr(Transaction, "rollback", rollback)

    def arm(fault: str) -> None:
        killed.clear()
        monkeypatch.setattr(journal, "_FAULT_HITS", {})  # counted per process
        monkeypatch.setenv("PATCHBAY_TEST_FAULT", fault)

    yield arm


def _points(run: Callable[[], object], log: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every fault point ``run`` (a clean apply or revert) reaches, in order, as
    ``<point>:<n>``."""
    monkeypatch.setattr(journal, "_FAULT_HITS", {})
    monkeypatch.setenv("PATCHBAY_TEST_FAULT_LOG", str(log))
    run()
    monkeypatch.delenv("PATCHBAY_TEST_FAULT_LOG")
    return log.read_text().split()


def _apply(ps: Path, root: Path) -> None:
    patchset = load_patchset(ps)
    apply_patchset(patchset, resolve_environment(patchset, root=root))


def _revert(ps: Path, root: Path) -> None:
    patchset = load_patchset(ps)
    revert_patchset(patchset, resolve_environment(patchset, root=root))


@pytest.mark.parametrize("direction", list(STACKS))
def test_a_fault_at_any_point_of_the_apply_leaves_the_pristine_tree_once_recovered(
    tmp_path: Path,
    direction: str,
    killable: Callable[[str], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each point a clean apply reaches, with a failure there (rolled back in the run) and
    with a kill (rolled back by the recovery of the next run): the tree is the pristine one,
    folder modes and owners included, with no ledger entry, or, for a fault after the commit
    mark, the patched one with its entry, which a revert then takes off; nothing of the
    journal is left behind."""
    site, ps = _setup(tmp_path, direction)
    clean = _pristine(tmp_path / "clean", direction)
    points = _points(lambda: _apply(ps, clean), tmp_path / "points.log", monkeypatch)
    committed = points.index("journal-committed:1")
    assert {"file-deleted:1", "file-written:1", "batch-written:1"} <= set(points[:committed])
    _sweep(tmp_path, direction, ps, points, killable, monkeypatch, command="apply",
           before=_state(site), after=_state(clean), pristine=_state(site))  # fmt: skip


@pytest.mark.parametrize("direction", list(STACKS))
def test_a_fault_at_any_point_of_the_revert_leaves_the_applied_tree_once_recovered(
    tmp_path: Path,
    direction: str,
    killable: Callable[[str], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same for a revert of the patch: before its commit mark, recovery gives back the
    patched tree with its ledger entry (and a revert then the pristine one); after it, the
    pristine tree without the entry."""
    site, ps = _setup(tmp_path, direction)
    pristine = _state(site)
    clean = _pristine(tmp_path / "clean", direction)
    _apply(ps, clean)
    patched = _state(clean)
    points = _points(lambda: _revert(ps, clean), tmp_path / "points.log", monkeypatch)
    assert _state(clean) == pristine
    _sweep(tmp_path, direction, ps, points, killable, monkeypatch, command="revert",
           before=patched, after=pristine, pristine=pristine)  # fmt: skip


def _sweep(
    tmp_path: Path,
    direction: str,
    ps: Path,
    points: list[str],
    killable: Callable[[str], None],
    monkeypatch: pytest.MonkeyPatch,
    *,
    command: str,
    before: dict[str, object],
    after: dict[str, object],
    pristine: dict[str, object],
) -> None:
    """At every point of ``points``, a failure and a kill during ``command`` (apply, or a
    revert of an applied tree) of a fresh tree, then recovery: the tree is ``before`` (with
    the ledger entry only for a revert) up to the commit mark and ``after`` from it, nothing
    of the journal is left, and a ledger entry left is reverted to ``pristine``."""
    committed = points.index("journal-committed:1")
    for i, point in enumerate(points):
        for action in ("fail", "kill"):
            run = _pristine(tmp_path / f"{action}-{i}", direction)
            if command == "revert":
                _apply(ps, run)
            killable(f"{action}@{point}")
            patchset = load_patchset(ps)
            env = resolve_environment(patchset, root=run)
            with pytest.raises((PatchbayError, OSError, _Killed)):
                (apply_patchset if command == "apply" else revert_patchset)(patchset, env)
            monkeypatch.delenv("PATCHBAY_TEST_FAULT")
            outcome = recover(env.state_dir / "journal", [run])
            assert outcome.complete, (point, action, outcome.problems())
            entry = Ledger(env.state_dir).find(patchset.name, "swap")  # (all or none)
            assert _state(run) == (before if i < committed else after), (point, action)
            applied = (i >= committed) if command == "apply" else (i < committed)
            assert (entry is not None) == applied, (point, action)
            assert not _leftovers(run), (point, action)
            if entry is not None:
                revert_patchset(load_patchset(ps), env)
                assert _state(run) == pristine, (point, action)
            shutil.rmtree(run)


@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_with_the_state_folder_on_another_filesystem_the_originals_are_kept_outside_the_folder(
    tmp_path: Path, direction: str, other_fs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The originals cannot be linked into the journal then: those of the files under the
    folder a file replaces are kept beside that folder (it must be empty for the file to take
    its place), and apply, a failed apply and revert all leave the tree they should."""
    site, ps = _setup(tmp_path, direction)
    pristine = _state(site)
    monkeypatch.setattr(journal, "_FAULT_HITS", {})
    monkeypatch.setenv("PATCHBAY_TEST_FAULT", "fail@batch-written:1")
    res = run_main("apply", ps, "--root", site, "--state-dir", other_fs)
    assert res.code == 1 and "every file this run touched was restored" in res.err, res.err
    assert _state(site) == pristine and not _leftovers(site)
    monkeypatch.delenv("PATCHBAY_TEST_FAULT")
    res = run_main("apply", ps, "--root", site, "--state-dir", other_fs)
    assert res.code == 0, res.err
    after = DIRECTIONS[direction][1]
    assert {rel for rel, e in _tree(site).items() if e[0] == "file"} == set(after)
    assert not _leftovers(site)
    res = run_main("revert", ps, "--root", site, "--state-dir", other_fs)
    assert res.code == 0, res.err
    assert _state(site) == pristine and not _leftovers(site)


def _git_refuses(tmp_path: Path, site: Path, ps: Path) -> str:
    """What ``git apply`` says of the patch on a copy of ``site`` (it must fail)."""
    copy = tmp_path / "git"
    shutil.copytree(site, copy, symlinks=True)
    _git(copy, "init", "-q")
    with pytest.raises(subprocess.CalledProcessError) as failed:
        _git(copy, "apply", str(ps / "swap.patch"))
    return failed.value.stderr.decode()


@pytest.mark.parametrize(
    ("direction", "extra", "stays"),
    [
        ("folder-to-file", {"pkg/a/other.py": b"O\n"}, "pkg/a/other.py stays in it"),
        ("folder-to-file", {"pkg/a/empty": None}, "pkg/a/empty/ stays in it"),
    ],
    ids=["a-file-the-patch-does-not-delete", "an-empty-folder"],
)
def test_a_new_file_where_a_folder_stays_is_refused_as_git_refuses_it(
    tmp_path: Path, direction: str, extra: dict[str, bytes | None], stays: str
) -> None:
    """A folder the patch's deletions do not empty stays where its new file goes (git apply
    fails to write there too): apply is refused with a line naming the patch, the path and
    what stays, and nothing is written."""
    site, ps = _setup(tmp_path, direction)
    for rel, data in extra.items():
        if data is None:
            (site / rel).mkdir(parents=True)
        else:
            (site / rel).write_bytes(data)
    assert _git_refuses(tmp_path, site, ps)
    pristine = _state(site)
    res = run_main("apply", ps, "--root", site)
    assert res.code == 1 and res.crash is None, res.err
    assert "patch swap" in res.err and "swap: pkg/a" in res.err and stays in res.err, res.err
    assert _state(site) == pristine and not _leftovers(site)


def test_a_new_folder_s_file_where_a_file_stays_is_refused(tmp_path: Path) -> None:
    """The converse: a patch that makes ``pkg/a/x.py`` but does not delete the file
    ``pkg/a`` is refused naming the file that stays where the folder goes."""
    site = tmp_path / "site"
    _materialise(site, FILE)
    diff = _git_diff(tmp_path / "diff", _pkg(), _pkg({"a/x.py": BODY}))
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "swap", "kind": "diff", "file": "swap.patch"}],
        targets={"engine": {"package": "pkg"}},
        files={"swap.patch": diff},
    )
    assert _git_refuses(tmp_path, site, ps)
    pristine = _state(site)
    res = run_main("apply", ps, "--root", site)
    assert res.code == 1 and res.crash is None, res.err
    assert "swap: pkg/a/x.py" in res.err and "pkg/a is a file, not a folder" in res.err, res.err
    assert _state(site) == pristine


def test_a_new_file_under_a_file_an_earlier_patch_makes_is_a_conflict(tmp_path: Path) -> None:
    """The planned tree decides, not the disk alone: after a patch that makes the file
    ``pkg/a``, a patch that makes ``pkg/a/x.py`` (git could not: ``pkg/a`` is a file then) is
    a conflict naming that file, and nothing is written."""
    site = tmp_path / "site"
    _materialise(site, _pkg())
    first = _git_diff(tmp_path / "d0", _pkg(), _pkg({"a": b"F\n"}))
    second = _git_diff(tmp_path / "d1", _pkg(), _pkg({"a/x.py": BODY}))
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "file", "kind": "diff", "file": "f.patch"},
         {"id": "under", "kind": "diff", "file": "u.patch"}],
        targets={"engine": {"package": "pkg"}},
        files={"f.patch": first, "u.patch": second},
    )  # fmt: skip
    pristine = _state(site)
    res = run_main("apply", ps, "--root", site)
    assert res.code == 1 and res.crash is None, res.err
    assert "under: pkg/a/x.py" in res.err, res.err
    assert "pkg/a is a file (made by an earlier patch), not a folder" in res.err, res.err
    assert _state(site) == pristine


def test_a_new_file_in_a_linked_folder_inside_the_root_is_still_made(tmp_path: Path) -> None:
    """The checks of a new file's folders go by real paths: a folder on its way that is a
    link to another folder inside the root stays fine, as before."""
    site = tmp_path / "site"
    _materialise(site, _pkg({"real/keep.py": b"K\n"}))
    (site / "pkg" / "linked").symlink_to("real")
    diff = _git_diff(tmp_path / "d0", _pkg(), _pkg({"linked/new.py": b"N = 1\n"}))
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "new", "kind": "diff", "file": "n.patch"}],
        targets={"engine": {"package": "pkg"}},
        files={"n.patch": diff},
    )
    res = run_main("apply", ps, "--root", site)
    assert res.code == 0, res.err
    assert (site / "pkg" / "real" / "new.py").read_bytes() == b"N = 1\n"
