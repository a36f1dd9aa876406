"""The transaction journal: exact restoration, also after a run that was killed outright."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, Engine, run_cli, snapshot
from patchbay.transaction import Transaction, recover, write_atomic


def test_rollback_restores_bytes_mode_and_mtime(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    kept = root / "kept.py"
    kept.write_text("old\n")
    os.chmod(kept, 0o755)
    os.utime(kept, ns=(1_000_000_000, 2_000_000_000))
    before = snapshot(root)
    with pytest.raises(RuntimeError), Transaction(tmp_path / "journal") as txn:
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
    with Transaction(tmp_path / "journal") as txn:
        txn.save(f)
        write_atomic(f, b"new\n")
        txn.commit()
    assert f.read_text() == "new\n"
    assert not (tmp_path / "journal").exists()
    assert recover(tmp_path / "journal") == []


KILLED_RUN = """
import os, sys
from pathlib import Path
from patchbay.transaction import Transaction, write_atomic
txn = Transaction(Path(sys.argv[1]))
for name in sys.argv[2:]:
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
        [sys.executable, "-c", KILLED_RUN, str(engine.state_dir / "journal"), *map(str, victims)]
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
