"""patchbay writes a diff's results itself (no ``git apply`` on the target tree): for every shape
of file patch, the tree it leaves is the one a real ``git apply`` run in the target root leaves
(bytes, modes, which files and folders exist), but for the permission bits of a file patched in
place (it keeps its own: a 0444 file stays 0444), and revert gives back the pristine tree.

Each case is a sequence of tree states; real ``git diff --binary -M`` makes one patch per step,
all applied by patchbay in one run (one batch: consecutive diffs of one target) and, as the
reference, by ``git apply`` once per patch in a copy."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest

from conftest import write_patchset
from inprocess import run_main
from patchbay.apply import engine, journal
from patchbay.apply.engine import apply_patchset
from patchbay.apply.ledger import Ledger, sha256_bytes
from patchbay.apply.revert import revert_patchset
from patchbay.diff.gitapply import git_environment
from patchbay.environment.targets import resolve_environment
from patchbay.kinds.diffwrite import process_umask
from patchbay.patchset.loading import load_patchset

Files = dict[str, tuple[bytes, int]]  # target-relative path -> (bytes, permission bits)

BODY = b"".join(b"def f%d(x):\n    return x + %d\n\n\n" % (i, i) for i in range(12))


def _edit(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) == 1
    return data.replace(old, new)


@dataclass
class Case:
    """Tree states of one target, each step one patch."""

    name: str
    states: list[Files]
    path: str = ""  # the target's folder under the root ("": the root itself)
    umask: int = 0o022


def _pkg(files: dict[str, bytes | tuple[bytes, int]] | None = None) -> Files:
    """A state of package ``pkg``: its ``__init__.py`` and ``files`` (paths under ``pkg/``),
    0644 unless a mode is given."""
    out: Files = {"pkg/__init__.py": (b"", 0o644)}
    for rel, spec in (files or {}).items():
        out[f"pkg/{rel}"] = spec if isinstance(spec, tuple) else (spec, 0o644)
    return out


EDITED = _edit(BODY, b"x + 3", b"x - 3")
TWICE = _edit(EDITED, b"x + 9\n", b"x + 90\n")
CRLF = BODY.replace(b"\n", b"\r\n")
BIN = bytes(range(256)) * 8

CASES = [
    Case("modify", [_pkg({"a.py": BODY}), _pkg({"a.py": EDITED})]),
    Case("modify-0444", [_pkg({"ro.py": (BODY, 0o444)}), _pkg({"ro.py": (EDITED, 0o444)})]),
    Case("add-in-new-folders", [_pkg(), _pkg({"sub/deep/new.py": b"NEW = 1\n"})]),
    Case("add-executable-umask-027",
         [_pkg(), _pkg({"tools/run.sh": (b"#!/bin/sh\n", 0o755), "tools/data.txt": b"D\n"})],
         umask=0o027),
    Case("delete-empties-folders",
         [_pkg({"sub/deep/only.py": b"X\n", "keep/k.py": b"K\n", "keep/g.sh": (b"G\n", 0o755)}),
          _pkg({"keep/k.py": b"K\n"})]),
    Case("delete-the-target-roots-last-file", [{"only.py": (b"X = 1\n", 0o644)}, {}], path="pkg"),
    Case("rename", [_pkg({"old/a.py": BODY}), _pkg({"new/b.py": BODY})]),
    Case("rename-with-edit-executable",
         [_pkg({"run.py": (BODY, 0o755)}), _pkg({"bin/run.py": (EDITED, 0o755)})]),
    Case("mode-change",
         [_pkg({"on.py": b"A\n", "off.py": (b"B\n", 0o755), "private.py": (b"C\n", 0o600)}),
          _pkg({"on.py": (b"A\n", 0o755), "off.py": b"B\n", "private.py": (b"C\n", 0o700)})]),
    Case("mode-and-content", [_pkg({"a.py": BODY}), _pkg({"a.py": (EDITED, 0o755)})]),
    Case("setuid-and-setgid-dropped-by-a-write",
         [_pkg({"s.py": (BODY, 0o4755), "g.py": (BODY, 0o2644)}),
          _pkg({"s.py": (EDITED, 0o755), "g.py": (EDITED, 0o644)})]),
    Case("setuid-file-made-executable",
         [_pkg({"s.py": (b"A\n", 0o4644)}), _pkg({"s.py": (b"A\n", 0o755)})]),
    Case("binary-add-modify-delete",
         [_pkg({"k.co": BIN, "gone.co": b"\0" * 64}),
          _pkg({"k.co": BIN[::-1], "bin/new.co": (b"\0\1" * 99, 0o755)})]),
    Case("two-patches-of-one-file",
         [_pkg({"a.py": BODY}), _pkg({"a.py": (EDITED, 0o755)}), _pkg({"a.py": (TWICE, 0o755)})]),
    Case("delete-then-add-in-that-folder",
         [_pkg({"sub/a.py": b"A\n"}), _pkg(), _pkg({"sub/b.py": b"B\n"})]),
    Case("crlf", [_pkg({"win.py": CRLF}), _pkg({"win.py": _edit(CRLF, b"x + 4", b"x ** 4")})]),
    # git apply deletes first: a file may take the place of a folder the patch empties
    Case("file-replaces-folder", [_pkg({"a/x.py": b"X\n"}), _pkg({"a": b"F\n"})]),
    Case("folder-replaces-file", [_pkg({"a": b"F\n"}), _pkg({"a/x.py": b"X\n"})]),
    Case("file-replaces-nested-folders",
         [_pkg({"a/b/x.py": b"X\n", "a/y.sh": (b"Y\n", 0o755)}), _pkg({"a": (b"F\n", 0o755)})]),
    Case("rename-into-its-folder-s-place", [_pkg({"a/x.py": BODY}), _pkg({"a": EDITED})]),
    Case("rename-into-a-folder-of-its-name", [_pkg({"a": BODY}), _pkg({"a/x.py": BODY})]),
    Case("replaced-then-edited",
         [_pkg({"a/x.py": b"X\n"}), _pkg({"a": BODY}), _pkg({"a": EDITED})]),
    Case("replaced-then-added-beside",
         [_pkg({"a": b"F\n"}), _pkg({"a/x.py": BODY}), _pkg({"a/x.py": EDITED, "a/y.py": b"Y\n"})]),
    Case("folder-file-folder",
         [_pkg({"a/x.py": b"X\n"}), _pkg({"a": BODY}), _pkg({"a/y.py": EDITED})]),
    # a re-run judges the stack with the later patches taken off, a revert undoes it newest
    # first: a path that is a file, a folder, and a file again, in one run and one revert
    Case("pure-rename-into-its-folder-s-place", [_pkg({"a/x.py": BODY}), _pkg({"a": BODY})]),
    Case("renamed-into-its-folder-s-place-then-edited",
         [_pkg({"a/x.py": BODY}), _pkg({"a": BODY}), _pkg({"a": EDITED})]),
    Case("file-folder-file", [_pkg({"a": b"F\n"}), _pkg({"a/z.py": b"Z\n"}), _pkg({"a": b"G\n"})]),
    Case("file-nested-folders-file",
         [_pkg({"a": b"F\n"}), _pkg({"a/b/z.py": b"Z\n"}), _pkg({"a": b"G\n"})]),
    Case("folder-file-folder-file-by-renames",
         [_pkg({"a/x.py": BODY}), _pkg({"a": BODY}), _pkg({"a": EDITED}),
          _pkg({"a/b/z.py": TWICE}), _pkg({"a": TWICE})]),
    Case("no-trailing-newline",
         [_pkg({"n.py": b"A = 1\nB = 2", "m.py": b"C = 1"}),
          _pkg({"n.py": b"A = 1\nB = 3", "m.py": b"C = 1\n"})]),
]  # fmt: skip


def _materialise(root: Path, files: Files) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for rel, (data, mode) in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        os.chmod(root / rel, mode)


def _git(repo: Path, *args: str) -> bytes:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
    env = {**os.environ, **git_environment(repo)}
    return subprocess.run(git, cwd=repo, env=env, capture_output=True, check=True).stdout


def _git_diff(repo: Path, before: Files, after: Files) -> bytes:
    """What ``git diff --binary -M`` says from ``before`` to ``after``."""
    _materialise(repo, before)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "before")
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    _materialise(repo, after)
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached", "--binary", "--full-index", "-M")


def _tree(root: Path) -> dict[str, tuple[object, ...]]:
    """Every file (bytes, permission bits) and folder (permission bits) under ``root``, but
    patchbay's state folder."""
    out: dict[str, tuple[object, ...]] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if rel.split(os.sep)[0] == ".patchbay":
            continue
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        out[rel] = ("dir", mode) if path.is_dir() else ("file", path.read_bytes(), mode)
    return out


def _own_bits(case: Case, rel: str, mode: int) -> int:
    """The permission bits patchbay leaves on a file patched in place (docs/patchset-format.md:
    it keeps its own; a declared mode change turns the executable bits on where readable, as
    ``chmod +x``, or off; set-user-ID and set-group-ID go once it is written), from its
    pristine bits and whether each step makes it executable."""
    steps = list(zip(case.states, case.states[1:], strict=False))
    if any(before[rel] != after[rel] for before, after in steps):
        mode &= ~0o6000
    for before, after in steps:
        was, now = before[rel][1] & 0o100, after[rel][1] & 0o100
        if was != now:
            mode = mode | ((mode & 0o444) >> 2) if now else mode & ~0o111
    return mode


def _expected(case: Case, reference: Path) -> dict[str, tuple[object, ...]]:
    """The tree git leaves, with patchbay's rule for the files patched in place: those in every
    state (never created, deleted or renamed)."""
    tree = _tree(reference)
    prefix = f"{case.path}/" if case.path else ""
    in_place = set.intersection(*(set(s) for s in case.states))
    for rel in in_place:
        kind, data, git_mode = tree[prefix + rel]
        mode = _own_bits(case, rel, case.states[0][rel][1])
        assert mode & 0o100 == git_mode & 0o100  # type: ignore[operator]
        tree[prefix + rel] = (kind, data, mode)
    return tree


@pytest.fixture
def umask() -> object:
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_diff_leaves_the_tree_git_apply_leaves_and_revert_the_pristine_one(
    tmp_path: Path, case: Case, umask: object
) -> None:
    umask(case.umask)  # type: ignore[operator]
    steps = list(zip(case.states, case.states[1:], strict=False))
    diffs = [_git_diff(tmp_path / f"diff{i}", a, b) for i, (a, b) in enumerate(steps)]
    pristine = tmp_path / "pristine"
    (pristine / "pkg").mkdir(parents=True)  # the target package (a folder under the root)
    _materialise(pristine / case.path, case.states[0])
    reference = tmp_path / "git"
    shutil.copytree(pristine, reference, symlinks=True)
    for i, diff in enumerate(diffs):
        (tmp_path / f"p{i}.patch").write_bytes(diff)
        _git(reference / case.path, "apply", "--whitespace=nowarn", str(tmp_path / f"p{i}.patch"))
    site = tmp_path / "site"
    shutil.copytree(pristine, site, symlinks=True)
    target: dict[str, object] = {"package": "pkg", **({"path": case.path} if case.path else {})}
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": f"p{i}", "kind": "diff", "file": f"p{i}.patch"} for i in range(len(diffs))],
        targets={"engine": target},
        files={f"p{i}.patch": diff for i, diff in enumerate(diffs)},
    )
    patchset = load_patchset(ps)
    env = resolve_environment(patchset, root=site)
    assert apply_patchset(patchset, env).applied == [f"p{i}" for i in range(len(diffs))]
    assert _tree(site) == _expected(case, reference)
    # judged again: a no-op that status and verify call applied
    again = run_main("apply", ps, "--root", site)
    assert again.code == 0 and _tree(site) == _expected(case, reference), again.err
    status = run_main("status", ps, "--root", site, "--json")
    assert status.code == 0, status.err
    assert {p["status"] for p in json.loads(status.out)["patches"]} == {"applied"}
    verify = run_main("verify", ps, "--root", site)
    assert verify.code == 0, verify.out + verify.err
    # each patch's ledger record is its own step (a later one starts from the earlier result)
    for i, (before, after) in enumerate(steps):
        entry = Ledger(env.state_dir).find(patchset.name, f"p{i}")
        assert entry is not None
        recorded = {r.path: (r.before, r.after) for r in entry.files}
        changed = {p for p in {*before, *after} if before.get(p) != after.get(p)}
        assert recorded == {
            p: tuple(sha256_bytes(s[p][0]) if p in s else None for s in (before, after))
            for p in changed
        }
    assert revert_patchset(load_patchset(ps), env).ids == [
        f"p{i}" for i in reversed(range(len(diffs)))
    ]
    assert _tree(site) == _tree(pristine)


def _owners(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.lstat().st_uid, p.lstat().st_gid)
        for p in sorted(root.rglob("*"))
        if p.relative_to(root).parts[0] != ".patchbay"
    }


def _read_only(folder: Path) -> list[str] | None:
    """Make ``folder`` refuse new entries, also to root (``chattr +i``); returns the command that
    undoes it, or None when this system cannot."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return ["chmod", "755", str(folder)]
    if shutil.which("chattr") is None:
        return None
    done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False)
    return ["chattr", "-i", str(folder)] if done.returncode == 0 else None


def test_a_file_that_cannot_be_written_is_named_with_its_patch_and_nothing_is_left_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second patch adds a file in a folder that refuses new entries: the one error line
    names that file (not the temporary file or the folder) and that patch, and the first
    patch is rolled back: its edit, its new file with the folders made for it, and its deleted
    file with the folders its deletion emptied (and git's rule removed), made again with their
    own modes 0750 and 0700 and, when the tests run as root, another user as owner, not the
    umask's 0755 and root."""
    site = tmp_path / "site"
    first = {"a.py": BODY, "gone/deep/x.py": b"X = 1\n"}
    _materialise(site, _pkg({**first, "locked/keep.py": b"K = 1\n"}))
    os.chmod(site / "pkg" / "gone", 0o750)
    os.chmod(site / "pkg" / "gone" / "deep", 0o700)
    if os.geteuid() == 0:
        os.chown(site / "pkg" / "gone" / "deep", 1234, 2345)
    owners = _owners(site)
    edit = _git_diff(
        tmp_path / "d0", _pkg(first), _pkg({"a.py": EDITED, "made/dir/n.py": b"N = 0\n"})
    )
    add = _git_diff(tmp_path / "d1", _pkg(), _pkg({"locked/new.py": b"N = 1\n"}))
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "edit", "kind": "diff", "file": "edit.patch"},
         {"id": "add", "kind": "diff", "file": "add.patch"}],
        targets={"engine": {"package": "pkg"}},
        files={"edit.patch": edit, "add.patch": add},
    )  # fmt: skip
    pristine = _tree(site)
    # planning refuses a folder os.access says cannot be written (test_access.py); this is
    # the write that fails anyway (an LSM's denial, a folder made read-only since the plan)
    monkeypatch.setattr(engine, "unwritable_folder", lambda root, rel: None)
    undo = _read_only(site / "pkg" / "locked")
    if undo is None:
        pytest.skip("cannot make a folder refuse new entries here")
    try:
        res = run_main("apply", ps, "--root", site)
    finally:
        subprocess.run(undo, check=True)
    assert res.code == 1 and res.crash is None, res.err
    lines = res.err.strip().splitlines()
    assert lines[0].startswith(f"patchbay: error: {site / 'pkg/locked/new.py'}: patch add: "), lines
    assert "every file this run touched was restored" in lines[0]
    assert _tree(site) == pristine  # folder modes included
    assert _owners(site) == owners
    assert not (site / ".patchbay" / "journal").exists()


def test_revert_gives_back_the_folders_a_deletion_removed_and_each_file_s_owner(
    tmp_path: Path,
) -> None:
    """One patch deletes the one file of two nested folders of modes 0750 and 0700 and edits
    another file; both files and the inner folder belong, when the tests run as root, to
    another user. Applied, git's rule removes the emptied folders; reverted, the tree is the
    pristine one: the folders come back with their own modes and owner, and each file with
    its owner (a revert writes a new file, which would otherwise be root's)."""
    site = tmp_path / "site"
    before = {"gone/deep/x.py": b"X = 1\n", "a.py": BODY}
    _materialise(site, _pkg(before))
    os.chmod(site / "pkg" / "gone", 0o750)
    os.chmod(site / "pkg" / "gone" / "deep", 0o700)
    root_run = os.geteuid() == 0
    if root_run:
        for rel in ("gone/deep", "gone/deep/x.py", "a.py"):
            os.chown(site / "pkg" / rel, 1234, 2345)
    patch = _git_diff(tmp_path / "d0", _pkg(before), _pkg({"a.py": EDITED}))
    ps = write_patchset(
        tmp_path / "ps", [{"id": "p", "kind": "diff", "file": "p.patch"}],
        targets={"engine": {"package": "pkg"}}, files={"p.patch": patch},
    )  # fmt: skip
    pristine, owners = _tree(site), _owners(site)
    res = run_main("apply", ps, "--root", site)
    assert res.code == 0, res.err
    assert not (site / "pkg" / "gone").exists()
    res = run_main("revert", ps, "--root", site)
    assert res.code == 0, res.err
    assert _tree(site) == pristine  # folder modes included
    if root_run:
        assert _owners(site) == owners


@pytest.mark.parametrize("mask", [0o022, 0o027], ids=["umask-022", "umask-027"])
@pytest.mark.parametrize("content", [BODY, EDITED], ids=["mode-only", "mode-and-content"])
def test_a_file_readable_by_nobody_made_executable_is_left_as_git_apply_leaves_it(
    tmp_path: Path, umask: object, mask: int, content: bytes
) -> None:
    """``old mode 100644``/``new mode 100755`` on a 0000 file: there is no readable class to
    turn ``x`` on for, so the file gets what ``git apply`` leaves (0777 less the umask), is
    then ``applied`` (not pending again, nor partial), a re-run is a no-op, and revert gives
    back 0000."""
    if os.geteuid() != 0:
        pytest.skip("only root reads a 0000 file (git apply cannot either)")
    umask(mask)  # type: ignore[operator]
    diff = _git_diff(tmp_path / "d", _pkg({"a.py": BODY}), _pkg({"a.py": (content, 0o755)}))
    assert b"old mode 100644\nnew mode 100755\n" in diff
    pristine = tmp_path / "pristine"
    _materialise(pristine, _pkg({"a.py": (BODY, 0o000)}))
    reference = tmp_path / "git"
    shutil.copytree(pristine, reference)
    (tmp_path / "m.patch").write_bytes(diff)
    _git(reference, "apply", str(tmp_path / "m.patch"))
    site = tmp_path / "site"
    shutil.copytree(pristine, site)
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "x", "kind": "diff", "file": "m.patch"}],
        targets={"engine": {"package": "pkg"}},
        files={"m.patch": diff},
    )
    patchset = load_patchset(ps)
    env = resolve_environment(patchset, root=site)
    assert apply_patchset(patchset, env).applied == ["x"]
    assert _tree(site) == _tree(reference)
    assert stat.S_IMODE(os.stat(site / "pkg/a.py").st_mode) == 0o777 & ~mask
    status = run_main("status", ps, "--root", site, "--format", "json")
    assert status.code == 0, status.err
    assert [p["status"] for p in json.loads(status.out)["patches"]] == ["applied"]
    assert apply_patchset(load_patchset(ps), env).nothing_to_do
    assert revert_patchset(load_patchset(ps), env).ids == ["x"]
    assert _tree(site) == _tree(pristine)


@pytest.mark.parametrize("patches", [1, 2], ids=["one-patch", "two-patches"])
@pytest.mark.parametrize("undo", ["rollback", "revert"])
def test_a_folder_a_run_empties_and_makes_again_gets_its_own_mode_and_owner_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, patches: int, undo: str
) -> None:
    """A deletion empties ``pkg/sub`` (1770) and ``pkg/sub/deep`` (2750), git's rule removes
    them, and a later write of the same run (the same patch, or the next) makes them again
    through the umask. A rollback (the run fails after its writes) and a revert each give back
    the pristine tree: both folders with their own modes and, run as root, owners."""
    site = tmp_path / "site"
    _materialise(site, _pkg({"sub/deep/a.py": b"A = 1\n"}))
    os.chmod(site / "pkg" / "sub", 0o1770)
    os.chmod(site / "pkg" / "sub" / "deep", 0o2750)
    if os.geteuid() == 0:
        os.chown(site / "pkg" / "sub", 1234, 2345)
        os.chown(site / "pkg" / "sub" / "deep", 65534, 2345)
        os.chmod(site / "pkg" / "sub" / "deep", 0o2750)
    start, end = _pkg({"sub/deep/a.py": b"A = 1\n"}), _pkg({"sub/deep/b/x.py": b"X = 1\n"})
    if patches == 1:
        diffs = [_git_diff(tmp_path / "d0", start, end)]
    else:
        diffs = [_git_diff(tmp_path / "d0", start, _pkg()), _git_diff(tmp_path / "d1", _pkg(), end)]
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": f"p{i}", "kind": "diff", "file": f"p{i}.patch"} for i in range(len(diffs))],
        targets={"engine": {"package": "pkg"}},
        files={f"p{i}.patch": d for i, d in enumerate(diffs)},
    )
    pristine, owners = _tree(site), _owners(site)
    if undo == "rollback":
        monkeypatch.setenv("PATCHBAY_TEST_FAULT", "fail@ledger-written:1")
        monkeypatch.setattr(journal, "_FAULT_HITS", {})  # counted per process
        res = run_main("apply", ps, "--root", site)
        assert res.code == 1 and "every file this run touched was restored" in res.err, res.err
    else:
        res = run_main("apply", ps, "--root", site)
        assert res.code == 0, res.err
        assert stat.S_IMODE(os.stat(site / "pkg" / "sub").st_mode) != 0o1770
        res = run_main("revert", ps, "--root", site)
        assert res.code == 0, res.err
    assert _tree(site) == pristine
    assert _owners(site) == owners


EDITS = {
    "folders-null": ("d", "folders_before", None),
    "folders-huge-uid": ("d", "folders_before", [["pkg/gone", 0o750, 2**40, 0, None]]),
    "folders-huge-mode": ("d", "folders_before", [["pkg/gone", 2**40, 0, 0, None]]),
    "folders-in-the-state-folder": ("d", "folders_before",
                                    [[".patchbay/blobs/evil", 0o777, 0, 0, None]]),
    "folders-not-above": ("d", "folders_before", [["elsewhere", 0o777, 0, 0, None]]),
    "folders-escaping": ("d", "folders_before", [["../../out", 0o777, 0, 0, None]]),
    "owner-huge": ("e", "owner_before", [2**40, 0]),
    "owner-negative": ("e", "owner_before", [-1, -1]),
    "mode-huge": ("e", "mode_before", 2**40),
    "created-null": ("n", "created_dirs", None),
}  # fmt: skip


@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_a_hand_edited_ledger_s_folders_owner_or_mode_is_not_obeyed(
    tmp_path: Path, edit: str
) -> None:
    """Revert reads ``folders_before``, ``owner_before``, ``mode_before`` and ``created_dirs``
    back from the ledger, which may have been edited: a value that is malformed, out of
    range, or names a folder that is not above the record's file (in the state folder,
    outside the root) is not acted on. The revert still restores every file's bytes, without
    a traceback, and makes or changes nothing elsewhere."""
    site = tmp_path / "site"
    files = {"gone/x.py": b"X = 1\n", "e.py": BODY}
    _materialise(site, _pkg(files))
    patch = _git_diff(tmp_path / "d0", _pkg(files), _pkg({"e.py": EDITED, "n/new.py": b"N\n"}))
    ps = write_patchset(
        tmp_path / "ps", [{"id": "p", "kind": "diff", "file": "p.patch"}],
        targets={"engine": {"package": "pkg"}}, files={"p.patch": patch},
    )  # fmt: skip
    assert run_main("apply", ps, "--root", site).code == 0
    ledger_path = site / ".patchbay" / "ledger.json"
    ledger = json.loads(ledger_path.read_text())
    which, key, value = EDITS[edit]
    file = {"d": "pkg/gone/x.py", "e": "pkg/e.py", "n": "pkg/n/new.py"}[which]
    (record,) = [
        r for e in ledger["patchsets"]["test"]["entries"] for r in e["files"] if r["path"] == file
    ]
    record[key] = value
    ledger_path.write_text(json.dumps(ledger, indent=2))
    res = run_main("revert", ps, "--root", site)
    assert res.code == 0 and res.crash is None, res.err
    assert (site / "pkg" / "gone" / "x.py").read_bytes() == b"X = 1\n"
    assert (site / "pkg" / "e.py").read_bytes() == BODY
    assert not (site / ".patchbay" / "blobs" / "evil").exists()
    assert not (site / "pkg" / "elsewhere").exists() and not (tmp_path / "out").exists()
    assert "reverted p" in res.out, res.out
    if edit.startswith("folders-huge"):  # made again as the umask makes it, not as recorded
        assert stat.S_IMODE(os.stat(site / "pkg" / "gone").st_mode) == 0o777 & ~process_umask()


def test_with_the_state_folder_on_another_filesystem_a_deletion_removes_the_folders_it_empties(
    tmp_path: Path,
) -> None:
    """With ``--state-dir`` on another filesystem, a deleted file's original is kept beside it
    until the commit, so the folders its deletion empties are not empty yet when git's rule
    would remove them: they go at the commit, and the tree is the one ``git apply`` leaves.
    Revert then gives back the pristine tree, folder modes included, and without the folders
    the patch made for its new file (kept from being empty by that file's original, until
    the revert's commit)."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on another filesystem than the tests' folder")
    site = tmp_path / "site"
    files = {"gone/deep/x.py": b"X = 1\n", "a.py": BODY}
    _materialise(site, _pkg(files))
    os.chmod(site / "pkg" / "gone", 0o750)
    after = _pkg({"a.py": EDITED, "n/m/new.py": b"N = 1\n"})
    patch = _git_diff(tmp_path / "d0", _pkg(files), after)
    ps = write_patchset(
        tmp_path / "ps", [{"id": "p", "kind": "diff", "file": "p.patch"}],
        targets={"engine": {"package": "pkg"}}, files={"p.patch": patch},
    )  # fmt: skip
    reference = tmp_path / "git"
    shutil.copytree(site, reference)
    (tmp_path / "p.patch").write_bytes(patch)
    _git(reference, "apply", str(tmp_path / "p.patch"))
    pristine = _tree(site)
    state = Path(tempfile.mkdtemp(prefix="patchbay-test-", dir=shm))
    try:
        res = run_main("apply", ps, "--root", site, "--state-dir", state)
        assert res.code == 0, res.err
        assert _tree(site) == _tree(reference)
        res = run_main("revert", ps, "--root", site, "--state-dir", state)
        assert res.code == 0, res.err
        assert _tree(site) == pristine
    finally:
        shutil.rmtree(state, ignore_errors=True)


@pytest.mark.parametrize("kind", ["diff", "replace"])
def test_run_as_root_a_patched_file_keeps_its_owner(tmp_path: Path, kind: str) -> None:
    """A service's own file (777:888, 0640) patched by root stays the service's, as an edit
    in place (and GNU patch) leaves it: root owning it would lock its owner out of it."""
    if os.geteuid() != 0:
        pytest.skip("only root gives a file to another owner")
    site = tmp_path / "site"
    _materialise(site, _pkg({"a.py": (BODY, 0o640)}))
    os.chown(site / "pkg" / "a.py", 777, 888)
    if kind == "diff":
        patch = {"id": "p", "kind": "diff", "file": "p.patch"}
        files = {
            "p.patch": _git_diff(tmp_path / "d0", _pkg({"a.py": BODY}), _pkg({"a.py": EDITED}))
        }
    else:
        edit = {"file": "pkg/a.py", "old": "x + 3", "new": "x - 3"}
        patch, files = {"id": "p", "kind": "replace", "edits": [edit]}, {}
    ps = write_patchset(tmp_path / "ps", [patch], targets={"engine": {"package": "pkg"}},
                        files=files)  # fmt: skip
    assert run_main("apply", ps, "--root", site).code == 0
    st = os.stat(site / "pkg" / "a.py")
    assert (site / "pkg" / "a.py").read_bytes() == EDITED
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (777, 888, 0o640)


def test_a_file_with_a_name_of_nearly_255_bytes_is_patched_and_reverted(tmp_path: Path) -> None:
    """A file name of 250 bytes leaves no room for the 19 bytes the temporary name adds:
    patchbay stages it under a shorter name, as ``git apply`` patches it, and reverts it."""
    name = "m" * 247 + ".py"
    site = tmp_path / "site"
    _materialise(site, _pkg({name: BODY}))
    patch = _git_diff(tmp_path / "d0", _pkg({name: BODY}), _pkg({name: EDITED}))
    ps = write_patchset(
        tmp_path / "ps", [{"id": "p", "kind": "diff", "file": "p.patch"}],
        targets={"engine": {"package": "pkg"}}, files={"p.patch": patch},
    )  # fmt: skip
    pristine = _tree(site)
    res = run_main("apply", ps, "--root", site)
    assert res.code == 0, res.err
    assert (site / "pkg" / name).read_bytes() == EDITED
    assert sorted(os.listdir(site / "pkg")) == ["__init__.py", name]
    assert run_main("revert", ps, "--root", site).code == 0
    assert _tree(site) == pristine


def test_reverting_the_later_of_two_mode_changes_gives_back_the_mode_between_them(
    tmp_path: Path,
) -> None:
    """p1 makes a 0640 file executable (0750), p2 takes it off again (0640), both in one run:
    a revert of p2 alone leaves the file as p1 left it, 0750, and the owner it had (run as
    root, another user's); a revert of p1 then the pristine file."""
    site = tmp_path / "site"
    _materialise(site, _pkg({"a.py": (BODY, 0o640)}))
    if os.geteuid() == 0:
        os.chown(site / "pkg" / "a.py", 777, 888)
    states = [_pkg({"a.py": BODY}), _pkg({"a.py": (EDITED, 0o755)}), _pkg({"a.py": TWICE})]
    diffs = [_git_diff(tmp_path / f"d{i}", a, b) for i, (a, b) in enumerate(pairwise(states))]
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": f"p{i + 1}", "kind": "diff", "file": f"p{i}.patch"} for i in range(2)],
        targets={"engine": {"package": "pkg"}},
        files={f"p{i}.patch": d for i, d in enumerate(diffs)},
    )
    pristine, owners = _tree(site), _owners(site)
    assert run_main("apply", ps, "--root", site).code == 0
    assert stat.S_IMODE(os.stat(site / "pkg" / "a.py").st_mode) == 0o640
    assert run_main("revert", ps, "p2", "--root", site).code == 0
    st = os.stat(site / "pkg" / "a.py")
    assert (site / "pkg" / "a.py").read_bytes() == EDITED
    assert stat.S_IMODE(st.st_mode) == 0o750
    assert _owners(site) == owners
    assert run_main("revert", ps, "--root", site).code == 0
    assert _tree(site) == pristine


@pytest.mark.parametrize("edited", [False, True], ids=["pure-rename", "rename-with-edit"])
def test_a_renamed_file_keeps_its_permission_bits_and_owner(tmp_path: Path, edited: bool) -> None:
    """A private 0640 file (777:888 when the tests run as root) renamed into a new folder
    keeps its bits and owner, as ``mv`` leaves it: made again through the umask (git's 0644)
    it would be world-readable. Revert gives back the pristine tree."""
    site = tmp_path / "site"
    _materialise(site, _pkg({"r.py": (BODY, 0o640)}))
    if os.geteuid() == 0:
        os.chown(site / "pkg" / "r.py", 777, 888)
    after = _pkg({"sub/r.py": ((EDITED if edited else BODY), 0o644)})
    patch = _git_diff(tmp_path / "d0", _pkg({"r.py": BODY}), after)
    assert b"rename from" in patch
    ps = write_patchset(
        tmp_path / "ps", [{"id": "p", "kind": "diff", "file": "p.patch"}],
        targets={"engine": {"package": "pkg"}}, files={"p.patch": patch},
    )  # fmt: skip
    pristine, owners = _tree(site), _owners(site)
    assert run_main("apply", ps, "--root", site).code == 0
    st = os.stat(site / "pkg" / "sub" / "r.py")
    assert stat.S_IMODE(st.st_mode) == 0o640
    assert (st.st_uid, st.st_gid) == owners["pkg/r.py"]
    assert run_main("revert", ps, "--root", site).code == 0
    assert _tree(site) == pristine and _owners(site) == owners
