"""Refused access: a folder of the target this user cannot enter, a file it cannot read, a state
folder (or its ``blobs/`` or ``journal/`` folder) it cannot write. Each is one line naming the
file or folder and the problem, exit 1, never a traceback, and nothing on disk half-changed.

The runs are in-process, as another user: when the tests run as root, the real and effective
ids are switched to ``nobody`` (65534) for the run and back after it (the saved uid stays 0),
so root's ``CAP_DAC_OVERRIDE`` does not hide what another user meets; when they run as a plain
user, that user is the other user already."""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import patchbay
from conftest import write_patchset
from inprocess import Result, run_main
from patchbay.apply.interrupted import finish_journal
from patchbay.apply.ledger import Ledger
from patchbay.errors import RefusedError

NOBODY = 65534
BODY = b"".join(b"def f%d(x):\n    return x + %d\n\n\n" % (i, i) for i in range(6))
EDITED = BODY.replace(b"x + 3", b"x - 3")


@pytest.fixture(scope="module", autouse=True)
def _imported() -> None:
    """Import every module of patchbay first: the interpreter's own library may lie where
    the other user cannot read it (a ``pyenv`` under ``/root``)."""
    for info in pkgutil.walk_packages(patchbay.__path__, "patchbay."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


@contextlib.contextmanager
def _as_other_user() -> Iterator[None]:
    """Run the block as ``nobody`` (real and effective ids, no supplementary groups) when
    root, else as this user; the saved ids stay root's, to switch back."""
    if os.geteuid() != 0:
        yield
        return
    groups, gids = os.getgroups(), os.getresgid()
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, 0)
    os.setresuid(NOBODY, NOBODY, 0)
    try:
        yield
    finally:
        os.setresuid(0, 0, 0)
        os.setresgid(*gids)
        os.setgroups(groups)


def _run(*args: str | Path) -> Result:
    with _as_other_user():
        return run_main(*args)


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder the other user owns (pytest's own temporary folders are root's 0700 ones)."""
    folder = Path(tempfile.mkdtemp(prefix="patchbay-access-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for dirpath, dirnames, _ in os.walk(folder):  # undo the modes the tests set
            for name in dirnames:
                os.chmod(os.path.join(dirpath, name), 0o755)
        shutil.rmtree(folder)


def _give(root: Path) -> None:
    """Make everything under ``root`` the other user's (when the tests run as root)."""
    if os.geteuid() != 0:
        return
    for dirpath, dirnames, filenames in os.walk(root):
        os.chown(dirpath, NOBODY, NOBODY)
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), NOBODY, NOBODY)


def _diff(repo: Path, before: dict[str, bytes], after: dict[str, bytes]) -> bytes:
    """``git diff --binary`` from ``before`` to ``after`` (paths relative to the root)."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for files in (before, after):
        for child in repo.iterdir() if repo.exists() else []:
            if child.name != ".git":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        for rel, data in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_bytes(data)
        if files is before:
            subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
            subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
            subprocess.run([*git, "commit", "-qm", "b"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    return subprocess.run(
        [*git, "diff", "--cached", "--binary"], cwd=repo, capture_output=True, check=True
    ).stdout


def _tree(root: Path) -> dict[str, tuple[bytes | None, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st = path.lstat()
            data = path.read_bytes() if stat.S_ISREG(st.st_mode) else None
            out[str(path.relative_to(root))] = (data, st.st_mode)
    return out


def _setup(place: Path, before: dict[str, bytes], after: dict[str, bytes]) -> tuple[Path, Path]:
    """A site holding package ``pkg`` as ``before`` and a patchset of one diff ``p`` that
    makes it ``after``; both the other user's."""
    site = place / "site"
    for rel, data in before.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
    patch = _diff(place / "repo", before, after)
    ps = write_patchset(
        place / "ps",
        [{"id": "p", "kind": "diff", "file": "p.patch"}],
        targets={"engine": {"package": "pkg"}},
        files={"p.patch": patch},
    )
    _give(place)
    return site, ps


def _one_line(res: Result) -> str:
    assert res.crash is None, res.crash
    lines = res.err.strip().splitlines()
    assert len(lines) == 1, res.err
    return lines[0]


@pytest.mark.parametrize(
    ("rel", "locked", "mode", "says"),
    [("a/b/c/x.py", "pkg/a/b", 0o700, "{file}: patch p: folder pkg/a/b cannot be entered (perm"),
     ("a/b/x.py", "pkg/a/b", 0o700, "{file}: patch p: folder pkg/a/b cannot be entered (perm"),
     ("x.py", "pkg/x.py", 0o600, "patch p: pkg/x.py cannot be read")],
    ids=["folder-above-it", "its-folder", "the-file"],
)  # fmt: skip
def test_what_this_user_cannot_enter_or_read_is_refused_naming_it_and_the_patch(
    place: Path, rel: str, locked: str, mode: int, says: str
) -> None:
    """A folder on the patched file's way that is 0700, or the file itself 0600, and not this
    user's: apply and status refuse in one line naming the patch and what cannot be entered
    or read (the file once); nothing changes."""
    before = {"pkg/__init__.py": b"", f"pkg/{rel}": BODY, "pkg/keep.py": b"K\n"}
    site, ps = _setup(place, before, {**before, f"pkg/{rel}": EDITED, "pkg/keep.py": b"K2\n"})
    (site / locked).chmod(mode if os.geteuid() == 0 else 0o000)
    if os.geteuid() == 0:
        os.chown(site / locked, 0, 0)
    pristine = _tree(site)
    for command in ("apply", "status"):
        res = _run(command, ps, "--root", site)
        line = _one_line(res)
        assert res.code == 1, res.err
        assert says.format(file=site / "pkg" / rel) in line, line
        if mode == 0o700:  # the file named once, with the folder that cannot be entered
            assert line.count(f"pkg/{rel}") == 1, line
    assert _tree(site) == pristine


def test_a_folder_that_cannot_be_entered_after_the_apply_is_refused_by_revert_naming_the_patch(
    place: Path,
) -> None:
    """Applied, then a folder of the patched file becomes root's 0700: revert refuses in one
    line naming the file once, the folder and the patch, as apply and status do; the tree
    stays applied."""
    before = {"pkg/__init__.py": b"", "pkg/a/x.py": BODY}
    site, ps = _setup(place, before, {**before, "pkg/a/x.py": EDITED})
    assert _run("apply", ps, "--root", site).code == 0
    (site / "pkg" / "a").chmod(0o700 if os.geteuid() == 0 else 0o000)
    if os.geteuid() == 0:
        os.chown(site / "pkg" / "a", 0, 0)
    applied = _tree(site)
    for command in ("revert", "status"):
        res = _run(command, ps, "--root", site)
        line = _one_line(res)
        assert res.code == 1, res.err
        assert line.startswith(
            f"patchbay: error: {site / 'pkg/a/x.py'}: patch p: folder pkg/a cannot be entered "
            "(permission denied)"
        ), line
    assert _tree(site) == applied


def _not_mine(path: Path, mode: int) -> None:
    """Make ``path`` refuse the other user: root's with ``mode`` when root, else ``mode``
    with the write bits taken off (a plain user cannot give a file away)."""
    if os.geteuid() == 0:
        os.chown(path, 0, 0)
        path.chmod(mode)
    else:
        path.chmod(mode & ~0o222)


@pytest.mark.parametrize(
    ("rel", "how"),
    [("a/x.py", "edit"), ("a/n/new.py", "new"), ("a/x.py", "delete")],
    ids=["its-folder", "a-new-folder", "a-deletion"],
)
def test_a_folder_this_user_can_enter_but_not_write_is_refused_while_planning(
    place: Path, rel: str, how: str
) -> None:
    """The patched file's folder (or, for a new file, the folder its missing folders would
    be made in) is root's 0755: apply and apply --dry-run refuse before anything is written,
    in one line naming the file, the folder and the patch (exit 1); nothing changes, not
    even a state folder made, and no other file of the patch is written first."""
    before = {"pkg/__init__.py": b"", "pkg/a/x.py": BODY, "pkg/keep.py": b"K\n"}
    after = {**before, "pkg/keep.py": b"K2\n", f"pkg/{rel}": EDITED}
    if how == "delete":
        del after[f"pkg/{rel}"]
    site, ps = _setup(place, before, after)
    _not_mine(site / "pkg" / "a", 0o755)
    pristine = _tree(site)
    for dry in ([], ["--dry-run"]):
        res = _run("apply", ps, "--root", site, *dry)
        line = _one_line(res)
        assert res.code == 1, res.err
        assert line.startswith(
            f"patchbay: error: {site / 'pkg' / rel}: patch p: folder pkg/a cannot be written "
            "(no write permission)"
        ), line
        deletes = "patchbay deletes a file by removing its name from its folder"
        assert (deletes in line) == (how == "delete"), line
        assert line.endswith("nothing was changed"), line
        assert res.out == ""
    assert _tree(site) == pristine
    assert not (site / ".patchbay").exists()


def test_a_site_where_the_state_folder_cannot_be_made_is_refused_naming_it(place: Path) -> None:
    """``--root`` on a site this user cannot write, with no state folder yet: apply refuses
    with one line naming ``<root>/.patchbay`` and saying it cannot be made; nothing changes."""
    before = {"pkg/__init__.py": b"", "pkg/x.py": BODY}
    site, ps = _setup(place, before, {**before, "pkg/x.py": EDITED})
    _not_mine(site, 0o755)
    pristine = _tree(site)
    res = _run("apply", ps, "--root", site)
    line = _one_line(res)
    assert res.code == 1
    assert line.startswith(
        f"patchbay: error: {site / '.patchbay'}: the state folder cannot be made (Permission "
        "denied)"
    ), line
    assert _tree(site) == pristine


@pytest.mark.parametrize("given", [False, True], ids=["default", "state-dir"])
def test_a_state_folder_that_cannot_be_made_is_needed_only_for_a_write(
    place: Path, given: bool
) -> None:
    """The state folder cannot be made (its parent is not this user's), be it the default
    ``<root>/.patchbay`` or a ``--state-dir`` that does not exist yet: an apply with nothing
    to do says so (exit 0) without it; one with a patch to write refuses in one line naming
    it (exit 1); nothing is made either way."""
    before = {"pkg/__init__.py": b"", "pkg/x.py": BODY}
    site, ps = _setup(place, before, {**before, "pkg/x.py": EDITED})
    locked = place / "locked"
    locked.mkdir()
    _not_mine(locked, 0o755)
    _not_mine(site, 0o755)
    state = locked / "state" if given else site / ".patchbay"
    extra = ["--state-dir", state] if given else []
    (site / "pkg" / "x.py").write_bytes(EDITED)  # in the image already
    res = _run("apply", ps, "--root", site, *extra)
    assert res.code == 0, res.err
    assert res.out.endswith("nothing to do: 1 patch(es) already present\n"), res.out
    (site / "pkg" / "x.py").write_bytes(BODY)
    pristine = _tree(place)
    res = _run("apply", ps, "--root", site, *extra)
    line = _one_line(res)
    assert res.code == 1
    assert line.startswith(
        f"patchbay: error: {state}: the state folder cannot be made (Permission denied)"
    ), line
    assert _tree(place) == pristine


@pytest.mark.parametrize(
    ("folder", "named"),
    [("", "the state folder"), ("blobs", "the folder of saved originals in the state folder")],
    ids=["state-folder", "blobs"],
)
def test_a_state_folder_that_cannot_be_written_refuses_revert_up_front(
    place: Path, folder: str, named: str
) -> None:
    """Applied, then the state folder (or its ``blobs/``, which the revert's cleanup prunes
    after the commit) is made read-only for this user: revert refuses before it changes
    anything, naming that folder, not a target file; the tree and the ledger stay applied."""
    before = {"pkg/__init__.py": b"", "pkg/x.py": BODY, "pkg/y.py": b"Y = 1\n"}
    site, ps = _setup(place, before, {**before, "pkg/x.py": EDITED, "pkg/y.py": b"Y = 2\n"})
    assert _run("apply", ps, "--root", site).code == 0
    applied = _tree(site)
    state = site / ".patchbay"
    _not_mine(state / folder, 0o755)
    res = _run("revert", ps, "--root", site)
    line = _one_line(res)
    assert res.code == 1
    assert line == (
        f"patchbay: error: {state / folder if folder else state}: {named} cannot be written (no "
        "write permission); make it writable for this user, or run as its owner; nothing was "
        "changed"
    ), line
    assert _tree(site) == applied


@pytest.mark.parametrize("command", ["apply", "status", "revert"])
def test_a_state_folder_that_cannot_be_entered_is_refused_in_one_line(
    place: Path, command: str
) -> None:
    """Applied, then the state folder is made root's 0000 (or, run as a plain user, 0000):
    nothing in it can be looked at, not the ledger, not a journal; each command refuses in
    one line naming the state folder, and nothing changes."""
    before = {"pkg/__init__.py": b"", "pkg/x.py": BODY}
    site, ps = _setup(place, before, {**before, "pkg/x.py": EDITED})
    assert _run("apply", ps, "--root", site).code == 0
    (site / "pkg" / "x.py").write_bytes(BODY)  # so that apply has something to do
    applied = _tree(site)
    state = site / ".patchbay"
    state.chmod(0o000)
    if os.geteuid() == 0:
        os.chown(state, 0, 0)
    try:
        res = _run(command, ps, "--root", site)
    finally:
        state.chmod(0o755)
    line = _one_line(res)
    assert res.code == 1
    assert line.startswith(
        f"patchbay: error: {state}: the state folder cannot be entered (Permission denied)"
    ), line
    assert _tree(site) == applied


def test_pruning_saved_originals_after_the_commit_never_fails_the_run(place: Path) -> None:
    """:meth:`Ledger.prune_blobs` is cleanup after a committed revert: a ``blobs/`` folder
    that refuses the removal leaves its blob where it is and raises nothing."""
    state = place / "state"
    (state / "blobs").mkdir(parents=True)
    (state / "blobs" / ("0" * 64)).write_bytes(b"an original no entry needs\n")
    _give(place)
    _not_mine(state / "blobs", 0o755)
    with _as_other_user():
        removed = Ledger(state).prune_blobs()
    assert removed == 0
    assert (state / "blobs" / ("0" * 64)).exists()
    (state / "blobs").chmod(0o755)
    _give(place)
    assert Ledger(state).prune_blobs() == 1


def test_a_journal_folder_that_cannot_be_written_is_named_before_and_after_its_recovery(
    place: Path,
) -> None:
    """A run killed after its first write leaves its journal, in a folder this user cannot
    write. The next apply refuses up front, naming the journal folder, and changes nothing;
    recovering it anyway (the library call, without the lock's check) puts the files back but
    says the journal cannot be removed and what to do, instead of a later "journal is still
    open"; once the folder is this user's, apply recovers and applies."""
    before = {"pkg/__init__.py": b"", "pkg/x.py": BODY, "pkg/y.py": b"Y = 1\n"}
    after = {**before, "pkg/x.py": EDITED, "pkg/y.py": b"Y = 2\n"}
    site, ps = _setup(place, before, after)
    pristine = _tree(site)
    killed = subprocess.run(
        [sys.executable, "-m", "patchbay", "apply", str(ps), "--root", str(site)],
        env={**os.environ, "PATCHBAY_TEST_FAULT": "kill@file-written:1"},
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -9, killed.stderr
    journal = site / ".patchbay" / "journal"
    _give(place)  # the killed run's state folder and files are this user's; its journal not
    _not_mine(journal, 0o755)
    half = _tree(site)
    assert half != pristine
    res = _run("apply", ps, "--root", site)
    line = _one_line(res)
    assert res.code == 1
    assert line.startswith(
        f"patchbay: error: {journal}: the journal folder in the state folder, which holds an "
        "earlier run's journal to roll back and remove, cannot be written (no write permission)"
    ), line
    assert _tree(site) == half
    with _as_other_user(), pytest.raises(RefusedError) as refused:
        finish_journal(site / ".patchbay", [site, site / ".patchbay"])
    assert str(refused.value) == (
        f"{journal}: the journal of an earlier run (failed or killed) was recovered, but cannot "
        "be removed (no write permission): make the journal folder writable for this user (or "
        "run as its owner) and run again; nothing else was done"
    )
    assert {k: v for k, v in _tree(site).items() if ".patchbay" not in k} == {
        k: v for k, v in pristine.items() if ".patchbay" not in k
    }
    journal.chmod(0o755)
    _give(journal)
    res = _run("apply", ps, "--root", site)
    assert res.code == 0, res.err
    assert (site / "pkg/x.py").read_bytes() == EDITED
    assert not journal.exists()
