"""The transaction journal: exact restoration, also after a run that was killed outright."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import REPO, Engine, Result, diff_patch, run_cli, snapshot, write_patchset
from inprocess import run_main
from patchbay.apply.journal import JOURNAL_FORMAT, write_atomic
from patchbay.apply.recovery import recover
from patchbay.apply.transaction import Transaction
from patchbay.errors import ApplyFailed


def test_rollback_restores_bytes_mode_and_mtime(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    kept = root / "kept.py"
    kept.write_text("old\n")
    os.chmod(kept, 0o755)
    os.utime(kept, ns=(1_000_000_000, 2_000_000_000))
    before = snapshot(root)
    with pytest.raises(RuntimeError), Transaction(tmp_path / "journal", [tmp_path]) as txn:
        txn.save(kept)
        write_atomic(kept, b"new\n")
        created = root / "a" / "b" / "new.py"
        txn.save(created)
        created.parent.mkdir(parents=True)
        created.write_text("x\n")
        raise RuntimeError("a later patch failed")
    assert snapshot(root) == before
    assert os.stat(kept).st_mode & 0o777 == 0o755
    assert not (root / "a").exists()
    assert not (tmp_path / "journal").exists()


def test_commit_keeps_changes_and_drops_journal(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("old\n")
    with Transaction(tmp_path / "journal", [tmp_path]) as txn:
        txn.save(f)
        write_atomic(f, b"new\n")
        txn.commit()
    assert f.read_text() == "new\n"
    assert not (tmp_path / "journal").exists()
    assert recover(tmp_path / "journal", [tmp_path]).restored == []


KILLED_RUN = """
import os, sys
from pathlib import Path
from patchbay.apply.journal import write_atomic
from patchbay.apply.transaction import Transaction
txn = Transaction(Path(sys.argv[1]), [Path(sys.argv[2])])
for name in sys.argv[3:]:
    path = Path(name)
    txn.save(path)
    write_atomic(path, b"half-written garbage\\n")
os._exit(9)  # killed mid-run: no rollback, no commit
"""


def test_a_killed_apply_is_rolled_back_by_the_next_run(engine: Engine) -> None:
    demo = REPO / "patchsets" / "demo"
    pristine = snapshot(engine.site)
    victims = [engine.pkg / "envs.py", engine.pkg / "scheduler.py"]
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            KILLED_RUN,
            str(engine.state_dir / "journal"),
            str(engine.site),
            *map(str, victims),
        ]
    )
    assert proc.returncode == 9
    assert victims[0].read_text() == "half-written garbage\n"

    status = run_cli("status", demo, "--python", engine.python)
    assert "interrupted" in status.err

    res = run_cli("apply", demo, "--python", engine.python)
    assert res.code == 0, res.err
    assert "rolled back an interrupted earlier run" in res.out
    assert "5 applied" in res.out
    assert run_cli("revert", demo, "--python", engine.python).code == 0
    after = snapshot(engine.site)
    assert {k: v[0] for k, v in after.items() if "__pycache__" not in k} == {
        k: v[0] for k, v in pristine.items() if "__pycache__" not in k
    }


def test_revert_after_a_killed_run_says_it_rolled_the_run_back(engine: Engine) -> None:
    """The next command after a killed run may be ``revert``: it rolls the run back as apply
    does and says so, instead of only "nothing to revert"."""
    demo = REPO / "patchsets" / "demo"
    pristine = snapshot(engine.site)
    victims = [engine.pkg / "envs.py"]
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            KILLED_RUN,
            str(engine.state_dir / "journal"),
            str(engine.site),
            *map(str, victims),
        ]
    )
    assert proc.returncode == 9
    res = run_cli("revert", demo, "--python", engine.python)
    assert res.code == 0, res.err
    assert f"rolled back an interrupted earlier run: restored {victims[0]}" in res.out
    assert snapshot(engine.site) == pristine


# -- restores that only touch what changed, keep going, and say what they could not do ------


def cli(*args: str | Path) -> Result:
    """The CLI in-process (the code path of the console script, without a process)."""
    res = run_main(*args)
    return Result(res.code, res.out, res.err)


def _chattr(flag: str, path: Path) -> None:
    subprocess.run(["chattr", flag, str(path)], check=True, capture_output=True)


@pytest.fixture
def immutable_ok(tmp_path: Path) -> Iterator[list[Path]]:
    """Skip unless ``chattr +i`` works here (root on ext4/xfs); clears the flag afterwards on
    every path the test appended."""
    probe = tmp_path / "probe"
    probe.write_text("x")
    if shutil.which("chattr") is None:
        pytest.skip("no chattr")
    if subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not permitted on this filesystem")
    _chattr("-i", probe)
    flagged: list[Path] = []
    yield flagged
    for path in flagged:
        subprocess.run(["chattr", "-i", "-a", str(path)], capture_output=True)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "site"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


PRISTINE = {
    "demo_engine/a.py": "A = 1\n",
    "demo_engine/b.py": "B = 1\n",
    "demo_engine/c.py": "C = 1\n",
}


def _ab_patchset(tmp_path: Path, extra: list[dict[str, object]] | None = None) -> Path:
    """p1 edits a.py and b.py (one diff), p2 edits c.py, then ``extra`` patches."""
    diff = diff_patch("demo_engine/a.py", "A = 1\n", "A = 2\n") + diff_patch(
        "demo_engine/b.py", "B = 1\n", "B = 2\n"
    )
    return write_patchset(
        tmp_path / "ps",
        [
            {"id": "p1", "kind": "diff", "file": "p1.patch"},
            {"id": "p2", "kind": "replace", "edits": [
                {"file": "demo_engine/c.py", "old": "C = 1", "new": "C = 2"}]},
            *(extra or []),
        ],
        files={"p1.patch": diff},
    )  # fmt: skip


def _failing_command(script: str) -> dict[str, object]:
    return {
        "id": "p3",
        "kind": "command",
        "after": ["p1"],
        "shell": True,
        "argv": [script],
        "upstream_status": {"status": "Inappropriate", "reason": "a rebuild step"},
    }


def test_an_unchanged_immutable_file_does_not_stop_the_rollback(
    tmp_path: Path, immutable_ok: list[Path]
) -> None:
    """b.py is immutable: git cannot write it, and the rollback must not try to put back a
    file that never changed (it used to, and stopped at the first EPERM, leaving a.py
    patched)."""
    root = _tree(tmp_path, PRISTINE)
    ps = _ab_patchset(tmp_path)
    immutable_ok.append(root / "demo_engine/b.py")
    _chattr("+i", root / "demo_engine/b.py")
    before = snapshot(root)
    res = cli("apply", ps, "--root", root)
    assert res.code == 1, res.err
    assert "every file this run touched was restored" in res.err
    assert "Traceback" not in res.err
    assert snapshot(root) == before
    assert not (root / ".patchbay" / "journal").exists()


def test_a_failed_restore_is_reported_the_others_restored_and_retried(
    tmp_path: Path, immutable_ok: list[Path]
) -> None:
    """A later patch fails after making a.py (already patched) immutable: the rollback cannot
    put a.py back, restores b.py and c.py anyway, names a.py and where its original is, and
    never claims every file was restored; once the flag is gone the next run finishes it."""
    root = _tree(tmp_path, PRISTINE)
    a = root / "demo_engine/a.py"
    immutable_ok.append(a)
    ps = _ab_patchset(tmp_path, [_failing_command("chattr +i demo_engine/a.py; exit 3")])
    before = snapshot(root)
    res = cli("apply", ps, "--root", root, "--quiet")  # stderr: the error alone, no progress
    assert res.code == 1, res.err
    assert "every file this run touched was restored" not in res.err
    assert "1 file(s) could not be restored" in res.err.splitlines()[0]
    (line,) = [ln for ln in res.err.splitlines() if "not restored:" in ln]
    assert str(a) in line and "Operation not permitted" in line
    original = Path(line.split("its original is kept at ")[1])
    assert original.read_text() == "A = 1\n"
    assert a.read_text() == "A = 2\n"  # still patched: it could not be put back
    assert (root / "demo_engine/b.py").read_text() == "B = 1\n"
    assert (root / "demo_engine/c.py").read_text() == "C = 1\n"
    again = cli("apply", ps, "--root", root)  # refuses to judge a tree it could not restore
    assert again.code == 1 and "could not be rolled back completely" in again.err
    assert str(a) in again.err
    _chattr("-i", a)
    res = cli("revert", ps, "--root", root)  # recovers first; nothing recorded to revert
    assert res.code == 0, res.err
    assert snapshot(root) == before  # bytes and mtimes, a.py included
    assert not (root / ".patchbay" / "journal").exists()
    assert not [p for p in root.rglob(".patchbay-*")]


def test_a_revert_that_cannot_write_a_file_names_that_file(
    tmp_path: Path, immutable_ok: list[Path]
) -> None:
    """Revert writes each original back through a temporary file: an immutable c.py fails the
    rename, and the one line names c.py (it named the temporary file, which is gone)."""
    root = _tree(tmp_path, PRISTINE)
    ps = _ab_patchset(tmp_path)
    assert cli("apply", ps, "--root", root).code == 0
    c = root / "demo_engine/c.py"
    immutable_ok.append(c)
    _chattr("+i", c)
    res = cli("revert", ps, "--root", root)
    assert res.code == 1, res.err
    assert f"{c}:" in res.err and ".patchbay" not in res.err.replace(str(root / ".patchbay"), "")
    assert "Traceback" not in res.err
    assert c.read_text() == "C = 2\n"


def test_rollback_across_filesystems_restores_by_rename(tmp_path: Path, other_fs: Path) -> None:
    """With --state-dir on another filesystem the originals cannot be linked into the
    journal: they are kept beside each file, and a failed run still restores everything
    (it used to copy them away and then fail to rename them back)."""
    root = _tree(tmp_path, PRISTINE)
    ps = _ab_patchset(tmp_path, [_failing_command("exit 3")])
    before = snapshot(root)
    res = cli("apply", ps, "--root", root, "--state-dir", other_fs)
    assert res.code == 1, res.err
    assert "every file patchbay journaled was restored, but not what command p3" in res.err
    assert snapshot(root) == before
    assert not [p for p in root.rglob(".patchbay-*")]


def test_apply_and_revert_across_filesystems(tmp_path: Path, other_fs: Path) -> None:
    root = _tree(tmp_path, PRISTINE)
    ps = _ab_patchset(tmp_path)
    before = snapshot(root)
    assert cli("apply", ps, "--root", root, "--state-dir", other_fs).code == 0
    assert (root / "demo_engine/b.py").read_text() == "B = 2\n"
    assert not [p for p in root.rglob(".patchbay-*")]
    assert cli("revert", ps, "--root", root, "--state-dir", other_fs).code == 0
    assert {k: v[0] for k, v in snapshot(root).items()} == {k: v[0] for k, v in before.items()}


# -- full disks -----------------------------------------------------------------------------


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MiB tmpfs mounted for the test (needs root; skipped otherwise)."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True
    )
    if res.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(folder: Path, leave: int) -> Path:
    """Fill ``folder``'s filesystem until about ``leave`` bytes are free."""
    filler = folder / "filler"
    free = shutil.disk_usage(folder).free
    with open(filler, "wb") as fh:
        fh.write(b"\0" * max(free - leave, 0))
    return filler


def test_not_enough_space_is_refused_before_the_first_write(tmp_path: Path, small_fs: Path) -> None:
    root = _tree(small_fs, {**PRISTINE, "demo_engine/big.py": "x = 1\n"})
    big = "y = 2\n" * 20_000  # 120 kB of new content
    diff = diff_patch("demo_engine/big.py", "x = 1\n", big)
    ps = write_patchset(
        tmp_path / "ps", [{"id": "big", "kind": "diff", "file": "b.patch"}], files={"b.patch": diff}
    )
    _fill(small_fs, leave=64 * 1024)
    before = snapshot(root)
    res = cli("apply", ps, "--root", root)
    assert res.code == 1, res.err
    assert "not enough free space" in res.err and "nothing was changed" in res.err
    assert len(res.err.splitlines()) == 1
    assert snapshot(root) == before
    assert not (root / ".patchbay" / "journal").exists()


def test_a_disk_that_fills_up_mid_run_is_one_line_and_fully_rolled_back(
    tmp_path: Path, small_fs: Path
) -> None:
    """A command fills the disk to the last byte; storing the originals then fails with
    ENOSPC (it used to escape as a traceback), and the rollback, which needs no new space
    (renames of links made before), restores everything."""
    root = _tree(small_fs, PRISTINE)
    fill = "cat /dev/zero > ../filler 2>/dev/null; exit 0"
    ps = _ab_patchset(tmp_path, [{**_failing_command(fill), "id": "fill"}])
    before = snapshot(root)
    res = cli("apply", ps, "--root", root, "--quiet")  # stderr: the error alone, no progress
    assert res.code == 1, res.err
    assert "No space left on device" in res.err
    assert "every file patchbay journaled was restored, but not what command fill" in res.err
    assert "Traceback" not in res.err and len(res.err.splitlines()) == 1
    assert snapshot(root) == before
    assert not (root / ".patchbay" / "journal").exists()


def test_a_blob_store_that_refuses_writes_is_one_line_and_rolled_back(
    tmp_path: Path, immutable_ok: list[Path]
) -> None:
    """The state folder's blob store cannot take new originals (an immutable folder, which
    even root cannot write): one line naming that folder, exit 1, the tree as it was (it used
    to escape as a traceback after the patches were written; it is now refused when the lock
    is taken, before the first write)."""
    root = _tree(tmp_path, PRISTINE)
    state = tmp_path / "state"
    (state / "blobs").mkdir(parents=True)
    immutable_ok.append(state / "blobs")
    _chattr("+i", state / "blobs")
    ps = _ab_patchset(tmp_path)
    before = snapshot(root)
    res = cli("apply", ps, "--root", root, "--state-dir", state)
    assert res.code == 1, res.err
    (line,) = res.err.splitlines()
    assert line.startswith(f"patchbay: error: {state / 'blobs'}: the folder of saved originals")
    assert "cannot be written (no write permission)" in line and "nothing was changed" in line
    assert snapshot(root) == before
    assert not (state / "ledger.json").exists() and not (state / "journal").exists()


def test_a_journal_from_before_the_header_is_still_recovered(tmp_path: Path) -> None:
    """A journal left by a killed run of an older patchbay (no header line, originals named
    by a bare number) is rolled back like a current one; a torn last line is ignored."""
    root = tmp_path / "root"
    root.mkdir()
    kept = root / "kept.py"
    kept.write_text("old\n")
    journal = tmp_path / "journal"
    journal.mkdir()
    os.link(kept, journal / "000000")
    st = kept.stat()
    entries = [
        {"path": str(kept), "existed": True, "backup": "000000", "mode": 0o644,
         "times": [st.st_atime_ns, st.st_mtime_ns]},
        {"path": str(root / "new.py"), "existed": False, "created_dirs": []},
    ]  # fmt: skip
    (journal / "journal.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in entries) + '{"path": "/tor'
    )
    write_atomic(kept, b"half\n")
    (root / "new.py").write_text("x\n")
    outcome = recover(journal, [root])
    assert outcome.complete and sorted(outcome.restored) == sorted([root / "new.py", kept])
    assert kept.read_text() == "old\n" and not (root / "new.py").exists()
    assert not journal.exists()


# -- originals kept as entries of a content-addressed store (journal format 2) ---------------


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _store_tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(root, state, a file under root holding b'old\\n', mode 0o755, an old mtime)."""
    root, state = tmp_path / "root", tmp_path / "state"
    (root / "pkg").mkdir(parents=True)
    kept = root / "pkg" / "kept.py"
    kept.write_bytes(b"old\n")
    os.chmod(kept, 0o755)
    os.utime(kept, ns=(1_000_000_000, 2_000_000_000))
    return root, state, kept


def test_an_original_kept_in_the_store_is_renamed_back_on_rollback(tmp_path: Path) -> None:
    root, state, kept = _store_tree(tmp_path)
    inode = os.stat(kept).st_ino
    blob = state / "blobs" / _sha(b"old\n")
    before = snapshot(root)
    txn = Transaction(state / "journal", [root, state], store=state / "blobs")
    with pytest.raises(RuntimeError), txn:
        txn.save(kept, digest=_sha(b"old\n"))
        assert os.stat(blob).st_ino == inode  # the original itself, no copy
        assert sorted(p.name for p in (state / "journal").iterdir()) == ["journal.jsonl"]
        write_atomic(kept, b"new\n")
        raise RuntimeError("a later patch failed")
    assert snapshot(root) == before and os.stat(kept).st_ino == inode
    assert not (state / "blobs").exists()  # the store entry and the folder it needed: gone
    assert not (state / "journal").exists()


def test_a_commit_leaves_the_original_as_the_store_entry_and_deletes_nothing(
    tmp_path: Path,
) -> None:
    root, state, kept = _store_tree(tmp_path)
    inode = os.stat(kept).st_ino
    with Transaction(state / "journal", [root, state], store=state / "blobs") as txn:
        txn.save(kept, digest=_sha(b"old\n"))
        write_atomic(kept, b"new\n")
        txn.commit()
    blob = state / "blobs" / _sha(b"old\n")
    assert blob.read_bytes() == b"old\n" and os.stat(blob).st_ino == inode
    assert kept.read_bytes() == b"new\n"
    assert not (state / "journal").exists()


def test_a_file_that_does_not_hold_its_digest_is_journaled_as_before(tmp_path: Path) -> None:
    """The caller's digest is checked on the linked bytes: a file changed since it was read
    never becomes a store entry under a digest it does not have."""
    root, state, kept = _store_tree(tmp_path)
    txn = Transaction(state / "journal", [root, state], store=state / "blobs")
    with pytest.raises(RuntimeError), txn:
        txn.save(kept, digest=_sha(b"something else\n"))
        assert not (state / "blobs" / _sha(b"something else\n")).exists()
        assert len(list((state / "journal").iterdir())) == 2  # the manifest and a link
        write_atomic(kept, b"new\n")
        raise RuntimeError("a later patch failed")
    assert kept.read_bytes() == b"old\n"
    assert not (state / "journal").exists()


def test_an_existing_store_entry_is_never_an_original_to_rename_back(tmp_path: Path) -> None:
    """Two files with the same bytes, and a store that already holds them: every original
    is kept in the journal, and a rollback leaves the store entry that was there."""
    root, state, kept = _store_tree(tmp_path)
    twin = root / "pkg" / "twin.py"
    twin.write_bytes(b"old\n")
    txn = Transaction(state / "journal", [root, state], store=state / "blobs")
    with pytest.raises(RuntimeError), txn:
        txn.save(kept, digest=_sha(b"old\n"))
        txn.save(twin, digest=_sha(b"old\n"))  # the entry exists now (made for kept.py)
        write_atomic(kept, b"new\n")
        write_atomic(twin, b"new\n")
        raise RuntimeError("a later patch failed")
    assert kept.read_bytes() == twin.read_bytes() == b"old\n"
    (state / "blobs").mkdir()
    (state / "blobs" / _sha(b"old\n")).write_bytes(b"old\n")
    txn = Transaction(state / "journal", [root, state], store=state / "blobs")
    with pytest.raises(RuntimeError), txn:
        txn.save(kept, digest=_sha(b"old\n"))
        write_atomic(kept, b"new\n")
        raise RuntimeError("a later patch failed")
    assert kept.read_bytes() == b"old\n"
    assert (state / "blobs" / _sha(b"old\n")).read_bytes() == b"old\n"


KILLED_STORE_RUN = """
import hashlib, os, sys
from pathlib import Path
from patchbay.apply.journal import write_atomic
from patchbay.apply.transaction import Transaction
root, state = Path(sys.argv[1]), Path(sys.argv[2])
txn = Transaction(state / "journal", [root, state], store=state / "blobs")
for name in sys.argv[3:]:
    path = Path(name)
    txn.save(path, digest=hashlib.sha256(path.read_bytes()).hexdigest())
txn.sync()
for name in sys.argv[3:]:
    write_atomic(Path(name), b"half-written garbage\\n")
os._exit(9)  # killed mid-run: no rollback, no commit
"""


@pytest.mark.parametrize(
    "fault",
    ["kill@store-entry-journaled:2", "kill@store-entry-linked:2", "kill@journal-saved:2", ""],
)
def test_a_run_killed_around_a_store_entry_is_rolled_back(tmp_path: Path, fault: str) -> None:
    root, state, kept = _store_tree(tmp_path)
    other = root / "pkg" / "other.py"
    other.write_bytes(b"other\n")
    before = snapshot(root)
    env = {**os.environ, "PATCHBAY_TEST_FAULT": fault} if fault else None
    args = [sys.executable, "-c", KILLED_STORE_RUN, str(root), str(state), str(kept), str(other)]
    proc = subprocess.run(args, env=env, capture_output=True)
    assert proc.returncode == (-9 if fault else 9), proc.stderr
    outcome = recover(state / "journal", [root, state])
    assert outcome.complete, outcome.problems()
    assert snapshot(root) == before
    assert not (state / "journal").exists()
    assert not (state / "blobs").exists()  # its entries and the folder made for them


def _journal(state: Path, header: dict[str, object], entries: list[dict[str, object]]) -> Path:
    journal = state / "journal"
    journal.mkdir(parents=True)
    lines = [header, *entries]
    (journal / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return journal


def test_a_journal_of_a_newer_format_is_refused_whole(tmp_path: Path) -> None:
    root, state, _ = _store_tree(tmp_path)
    new = root / "pkg" / "new.py"
    new.write_text("made by the run\n")
    entry = {"n": 0, "path": str(new), "existed": False, "created_dirs": []}
    journal = _journal(state, {"journal": 99, "id": "abcd"}, [entry])
    outcome = recover(journal, [root, state])
    assert not outcome.complete
    assert "journal format 99 is not one this patchbay reads" in outcome.problems()[0]
    assert new.exists() and (journal / "journal.jsonl").exists()


@pytest.mark.parametrize("store", ["outside", None], ids=["store-outside-roots", "no-store"])
def test_store_entries_without_a_store_in_the_roots_are_not_acted_on(
    tmp_path: Path, store: str | None
) -> None:
    """A journal whose entries keep originals in a store it does not name, or names outside
    the environment, is left as it is: deleting its store entries would lose originals."""
    root, state, kept = _store_tree(tmp_path)
    blobs = state / "blobs"
    blobs.mkdir(parents=True)
    digest = _sha(b"old\n")
    os.link(kept, blobs / digest)
    write_atomic(kept, b"half\n")
    st = os.stat(blobs / digest)
    header: dict[str, object] = {"journal": 2, "id": "abcd"}
    if store is not None:
        header["store"] = str(tmp_path / store)
    entries = [
        {"n": 0, "path": str(blobs / digest), "existed": False, "created_dirs": []},
        {"n": 1, "path": str(kept), "existed": True, "backup": "store", "sha256": digest,
         "mode": 0o755, "times": [st.st_atime_ns, st.st_mtime_ns]},
    ]  # fmt: skip
    journal = _journal(state, header, entries)
    outcome = recover(journal, [root, state])
    assert not outcome.complete
    assert (blobs / digest).read_bytes() == b"old\n" and kept.read_bytes() == b"half\n"
    assert (journal / "journal.jsonl").exists()


def test_a_failed_write_names_the_file_and_the_patch_where_it_struck(
    tmp_path: Path, immutable_ok: list[Path]
) -> None:
    """Three diffs of one target are written in one batch; the second one's file cannot be
    written (an immutable file: the rename over it fails). The error names that file (not
    the temporary file beside it) and that patch, and the tree is as before."""
    files = {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(3)}
    root = _tree(tmp_path, files)
    patches = [{"id": f"p{i}", "kind": "diff", "file": f"p{i}.patch"} for i in range(3)]
    bodies = {
        f"p{i}.patch": diff_patch(f"pkg/m{i}.py", text, text.replace("return", "return -"))
        for i, text in enumerate(files.values())
    }
    ps = write_patchset(tmp_path / "ps", patches, targets={"engine": {"package": "pkg"}},
                        files=bodies)  # fmt: skip
    before = snapshot(root)
    struck = root / "pkg" / "m1.py"
    _chattr("+i", struck)
    immutable_ok.append(struck)
    res = cli("apply", ps, "--root", root)
    assert res.code == 1, res.err
    first = res.err.splitlines()[0]
    assert first.startswith(f"patchbay: error: {struck}: patch p1: write failed: "), first
    assert "Operation not permitted" in first and ".patchbay" not in first
    _chattr("-i", struck)
    assert snapshot(root) == before


@pytest.mark.parametrize("command", ["apply", "revert", "status"])
def test_a_file_where_the_journal_goes_is_refused_by_name(tmp_path: Path, command: str) -> None:
    """A stray file named ``journal`` in the state folder is no journal to roll back and no
    place for one: every command that looks for a journal says so, and changes nothing."""
    root = _tree(tmp_path, {"pkg/m.py": "X = 1\n"})
    edit = {"file": "pkg/m.py", "old": "X = 1\n", "new": "X = 2\n"}
    ps = write_patchset(tmp_path / "ps", [{"id": "p", "kind": "replace", "edits": [edit]}],
                        targets={"engine": {"package": "pkg"}})  # fmt: skip
    assert cli("apply", ps, "--root", root).code == 0
    journal = root / ".patchbay" / "journal"
    journal.write_text("not a journal\n")
    (root / "pkg" / "m.py").write_text("X = 1\n")  # so that apply has work to do
    before = snapshot(root)
    res = cli(command, ps, "--root", root)
    assert res.code == 1, res.out + res.err
    assert f"{journal} is not a folder: patchbay keeps a run's journal there" in res.err
    assert snapshot(root) == before


KILLED_STAGED_RUN = """
import os, sys
from pathlib import Path
from patchbay.apply.journal import staging_file
from patchbay.apply.transaction import Transaction
path = Path(sys.argv[2])
txn = Transaction(Path(sys.argv[1]), [path.parent])
txn.save(path)
fd, name = staging_file(path)
os.write(fd, b"new content, complete under its temporary name\\n")
print(name)
os._exit(9)  # killed before the rename
"""


def test_recovery_removes_the_run_s_temporary_file_and_no_file_of_the_user_s(
    tmp_path: Path,
) -> None:
    """A run killed between writing a file's new content under its temporary name and the
    rename: recovery removes that name, which carries the journal's id, and leaves a file of
    the same shape with another id (a user's) where it is."""
    root = tmp_path / "root"
    root.mkdir()
    victim = root / "m.py"
    victim.write_bytes(b"old\n")
    users = root / ".m.py.0badc0de.patchbay"
    users.write_bytes(b"the user's own file\n")
    journal = tmp_path / "journal"
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_STAGED_RUN, str(journal), str(victim)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 9, proc.stderr
    staged = Path(proc.stdout.strip())
    header = json.loads((journal / "journal.jsonl").read_text().splitlines()[0])
    assert header["journal"] == JOURNAL_FORMAT
    assert staged.name == f".m.py.{header['id']}.patchbay" and staged.exists()
    outcome = recover(journal, [root])
    assert outcome.complete, outcome.problems()
    assert not staged.exists()
    assert users.read_bytes() == b"the user's own file\n"
    assert victim.read_bytes() == b"old\n"
    assert sorted(p.name for p in root.iterdir()) == [users.name, "m.py"]


def test_a_format_2_journal_s_temporary_files_are_found_by_their_shape(tmp_path: Path) -> None:
    """A journal an earlier patchbay wrote (format 2) did not name its temporary files by
    its id: recovery removes every ``.<name>.<8 hex>.patchbay`` beside its files, as that
    patchbay did, and leaves other names."""
    root, state, kept = _store_tree(tmp_path)
    new = root / "pkg" / "new.py"
    new.write_text("made by the run\n")
    staged = root / "pkg" / ".kept.py.1234abcd.patchbay"
    staged.write_bytes(b"half\n")
    other = root / "pkg" / ".other.py.1234abcd.patchbay"
    other.write_bytes(b"not beside a journaled file\n")
    st = os.stat(kept)
    (state / "journal").mkdir(parents=True)
    os.link(kept, state / "journal" / "000001")
    entries = [
        {"n": 0, "path": str(new), "existed": False, "created_dirs": []},
        {"n": 1, "path": str(kept), "existed": True, "backup": "journal", "mode": 0o755,
         "times": [st.st_atime_ns, st.st_mtime_ns]},
    ]  # fmt: skip
    journal = state / "journal"
    (journal / "journal.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in [{"journal": 2, "id": "abcd"}, *entries])
    )
    outcome = recover(journal, [root, state])
    assert outcome.complete, outcome.problems()
    assert not staged.exists() and not new.exists()
    assert other.exists() and kept.read_bytes() == b"old\n"


def test_a_file_where_the_run_s_temporary_file_goes_is_left_alone(tmp_path: Path) -> None:
    """A file already named as this run's temporary file for a path (the journal's id) is no
    file of this run's: the write fails naming the path, the file is not touched, and the
    rollback restores the rest."""
    root, state, kept = _store_tree(tmp_path)
    other = root / "pkg" / "other.py"
    other.write_bytes(b"other\n")
    before = snapshot(root)
    txn = Transaction(state / "journal", [root, state])
    foreign = None
    with pytest.raises(ApplyFailed) as raised, txn:
        txn.save(other)
        txn.save(kept)
        write_atomic(other, b"patched\n")
        foreign = kept.parent / f".{kept.name}.{txn.id}.patchbay"
        foreign.write_bytes(b"someone else's\n")
        write_atomic(kept, b"patched\n")
    message = str(raised.value)
    assert message.startswith(f"{kept}: writing failed: a file named as patchbay's temporary")
    assert "is not this run's and is left alone" in message
    assert message.endswith("every file this run touched was restored")
    assert foreign is not None and foreign.read_bytes() == b"someone else's\n"
    foreign.unlink()
    assert snapshot(root) == before
    # the next write outside a transaction takes a random name again
    write_atomic(kept, b"new\n")
    assert sorted(p.name for p in kept.parent.iterdir()) == ["kept.py", "other.py"]


@pytest.mark.parametrize(
    "folders",
    [[["OUTSIDE", 0o755, 0, 0]], [["SIDE", 0o755, 0, 0]], [["STATE", 0o755, 0, 0]],
     [["ABOVE", 0o17777, 0, 0]], [["ABOVE", 0o755, 2**40, 0]], [["ABOVE", 0o755, 0, -1]],
     [["ABOVE", 0o755]], [["ABOVE", 0o755, 0, 0, None]], "ABOVE", None],
    ids=["outside-the-roots", "not-above-the-file", "in-the-state-folder", "bad-mode",
         "huge-uid", "negative-gid", "short", "five-items", "not-a-list", "null"],
)  # fmt: skip
def test_a_journal_entry_with_bad_folders_is_not_acted_on(tmp_path: Path, folders: object) -> None:
    """Recovery gives back removed folders from an entry's ``folders``: one naming a folder
    that is not above the entry's file (outside the roots, beside it, in the state folder), or
    malformed, is refused, and nothing is made, changed or restored for it."""
    root, state, kept = _store_tree(tmp_path)
    outside = tmp_path / "elsewhere" / "made"
    inside = root / "pkg" / "sub"
    mode = stat.S_IMODE(os.stat(root / "pkg").st_mode)
    text = (
        json.dumps(folders)
        .replace("OUTSIDE", str(outside))
        .replace("SIDE", str(inside))
        .replace("STATE", str(state / "blobs" / "evil"))
        .replace("ABOVE", str(root / "pkg"))
    )
    st = os.stat(kept)
    entry = {"n": 0, "path": str(kept), "existed": True, "backup": "journal", "mode": 0o755,
             "times": [st.st_atime_ns, st.st_mtime_ns], "folders": json.loads(text)}  # fmt: skip
    journal = _journal(state, {"journal": 3, "id": "abcd1234"}, [entry])
    os.link(kept, journal / "000000")
    kept.unlink()
    outcome = recover(journal, [root, state])
    assert not outcome.complete
    assert "has no valid 'folders'; not acted on" in outcome.problems()[0]
    assert not outside.parent.exists() and not inside.exists() and not kept.exists()
    assert not (state / "blobs").exists()
    assert stat.S_IMODE(os.stat(root / "pkg").st_mode) == mode


def test_recovery_never_writes_through_a_link_an_earlier_restore_put_back(
    tmp_path: Path,
) -> None:
    """A crafted journal: its newest entry puts back, as ``pkg/d``, a link to a folder outside
    the roots; an older entry then restores ``pkg/d/x.py`` (mode 4755) and gives ``pkg/d``
    its mode back. Each path is judged again right before it is acted on, so nothing is written,
    made or chmodded outside the roots, and the entries not acted on are reported."""
    root, state, _ = _store_tree(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(outside, 0o755)
    (root / "pkg" / "d").mkdir()
    (root / "pkg" / "d" / "x.py").write_bytes(b"mine\n")
    link = tmp_path / "link"
    link.symlink_to(outside)
    below = [[str(root / "pkg" / "d"), 0o777, 0, 0]]  # by then the link: not chmodded
    journal = _journal(state, {"journal": 3, "id": "abcdef12"}, [
        {"n": 0, "path": str(root / "pkg" / "d" / "x.py"), "existed": True, "backup": "journal",
         "mode": 0o4755, "times": [0, 0], "folders": below},
        {"n": 1, "path": str(root / "pkg" / "d"), "existed": True, "backup": "journal",
         "mode": 0o777, "times": [0, 0]},
    ])  # fmt: skip
    (journal / "000000").write_bytes(b"#!/bin/sh\n")
    os.link(link, journal / "000001", follow_symlinks=False)
    outcome = recover(journal, [root, state])
    assert not outcome.complete
    assert any("leads outside the roots" in line for line in outcome.problems()), outcome
    assert sorted(os.listdir(outside)) == []
    assert stat.S_IMODE(os.stat(outside).st_mode) == 0o755


@pytest.mark.parametrize(
    "header", [{"journal": 3}, {"journal": 3, "id": "../x"}], ids=["no-id", "bad-id"]
)
def test_a_format_3_journal_without_an_id_is_not_acted_on(
    tmp_path: Path, header: dict[str, object]
) -> None:
    """A format-3 journal names its temporary files by its id: without a valid one, nothing
    tells the run's files from a user's of the same shape, so it is refused whole (nothing
    is removed or restored), not recovered by the older formats' rule."""
    root, state, kept = _store_tree(tmp_path)
    users = root / "pkg" / ".kept.py.1234abcd.patchbay"
    users.write_bytes(b"the user's\n")
    new = root / "pkg" / "new.py"
    new.write_text("made by the run\n")
    journal = _journal(state, header, [{"n": 0, "path": str(new), "existed": False}])
    outcome = recover(journal, [root, state])
    assert not outcome.complete
    assert "a journal of format 3 without a valid 'id'" in outcome.problems()[0]
    assert users.exists() and new.exists() and kept.read_bytes() == b"old\n"


@pytest.mark.parametrize("where", ["state", "state/blobs", "outside"])
def test_a_journal_folder_entry_for_the_state_folder_is_not_acted_on(
    tmp_path: Path, where: str
) -> None:
    """A folder entry (a folder a command's ``remove`` took) names the state folder, a folder
    in it, or one outside the roots: recovery refuses it and changes no folder's mode or
    owner."""
    root, state, _ = _store_tree(tmp_path)
    (state / "blobs").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    folder = tmp_path / where
    mode = stat.S_IMODE(os.stat(folder).st_mode)
    entry = {"n": 0, "path": str(folder), "existed": True, "folder": [0o777, 65534, 65534],
             "mode": 0o777, "times": [0, 0]}  # fmt: skip
    journal = _journal(state, {"journal": 3, "id": "abcd1234"}, [entry])
    outcome = recover(journal, [root, state])
    assert not outcome.complete
    assert "not acted on" in outcome.problems()[0]
    st = os.stat(folder)
    assert (stat.S_IMODE(st.st_mode), st.st_uid) == (mode, os.geteuid())


def test_a_dry_run_says_an_interrupted_runs_journal_would_be_rolled_back_first(
    tmp_path: Path,
) -> None:
    """A killed run left its journal (one file half-written): ``apply --dry-run`` says in one
    line that apply would roll it back first and that its plan is of the tree as it is now,
    and changes nothing, not even the journal; the real apply then rolls back and applies."""
    root = tmp_path / "tree"
    (root / "demo_engine").mkdir(parents=True)
    victim = root / "demo_engine" / "worker.py"
    victim.write_text("def work():\n    return 1\n")
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "w", "kind": "replace",
          "edits": [{"file": "demo_engine/worker.py", "old": "return 1", "new": "return 2"}]}],
    )  # fmt: skip
    journal = root / ".patchbay" / "journal"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, str(journal), str(root), str(victim)], check=False
    )
    assert killed.returncode == 9

    def everything() -> dict[str, bytes]:
        return {str(p): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}

    before = everything()
    res = run_main("apply", ps, "--root", root, "--dry-run")
    assert res.code == 1 and res.crash is None, res.err  # half-written: not as the patch expects
    first = res.err.splitlines()[0]
    assert first == (
        f"patchbay: warning: {journal}: an interrupted run's journal is present, which apply "
        "would roll back first; the plan below is of the current, unrecovered tree"
    ), res.err
    assert everything() == before
    res = run_main("apply", ps, "--root", root)
    assert res.code == 0, res.err
    assert f"rolled back an interrupted earlier run: restored {victim}" in res.out
    assert victim.read_text() == "def work():\n    return 2\n"
    assert not journal.exists()


def test_recovery_lists_only_the_users_files_it_gave_back(tmp_path: Path) -> None:
    """A real apply killed after its first write journaled the original as a new saved
    original (``blobs/<sha256>``) too: the next apply rolls both back but lists only the
    user's file it restored, not patchbay's own blob."""
    root = tmp_path / "tree"
    (root / "demo_engine").mkdir(parents=True)
    victim = root / "demo_engine" / "worker.py"
    victim.write_text("def work():\n    return 1\n")
    (root / "demo_engine" / "other.py").write_text("X = 1\n")
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "w", "kind": "replace",
          "edits": [{"file": "demo_engine/worker.py", "old": "return 1", "new": "return 2"}]},
         {"id": "o", "kind": "replace",
          "edits": [{"file": "demo_engine/other.py", "old": "X = 1", "new": "X = 2"}]}],
    )  # fmt: skip
    killed = subprocess.run(
        [sys.executable, "-m", "patchbay", "apply", str(ps), "--root", str(root)],
        env={**os.environ, "PATCHBAY_TEST_FAULT": "kill@file-written:1"},
        capture_output=True,
        check=False,
    )
    assert killed.returncode == -9, killed.stderr
    manifest = (root / ".patchbay" / "journal" / "journal.jsonl").read_text()
    assert "/blobs/" in manifest  # the case at hand: a saved original is journaled too
    res = run_main("apply", ps, "--root", root)
    assert res.code == 0, res.err
    recovered = [line for line in res.out.splitlines() if line.startswith("rolled back")]
    assert recovered == [f"rolled back an interrupted earlier run: restored {victim}"], res.out


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(
    ("point", "committed"),
    [
        ("batch-written", False),  # inside the transaction: rolled back, and said so
        ("ledger-written", False),  # the ledger written, not yet committed: rolled back
        ("journal-committed", True),  # the mark is down: the run stands
    ],
)
def test_a_ctrl_c_is_reported_as_what_it_left(
    tmp_path: Path, engine: Engine, point: str, committed: bool
) -> None:
    """Issue 24, part 7: 'rolled back' only when the tree is back; a Ctrl-C after the commit
    says the patches stay applied and recorded, as status then finds them."""
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "patchsets" / "demo", demo)
    pristine = snapshot(engine.pkg)
    env = {**os.environ, "PATCHBAY_TEST_FAULT": f"int@{point}"}
    # a terminal's Ctrl-C reaches a process whose SIGINT is at its default; a CI job started in
    # the background hands its children SIGINT ignored, and Python then never raises for it
    res = run_cli("apply", demo, "--python", engine.python, env=env, preexec_fn=_default_sigint)
    assert res.code == 130, res.out + res.err
    assert "Traceback" not in res.err
    status = run_cli("status", demo, "--python", engine.python)
    if committed:
        assert "committed: they stay applied and recorded" in res.err, res.err
        assert "rolled back" not in res.err and "restored" not in res.err
        assert status.code == 0 and "pending" not in status.out, status.out
    else:
        assert "every file this run touched was restored" in res.err, res.err
        assert snapshot(engine.pkg) == pristine
        assert "applied" not in status.out.replace("not applied", ""), status.out
