"""Planning once: one line index per content shared by forked trees, each patch inspected no
more than needed, and a plan made before the lock reused under it only while the tree and the
ledger are still what it judged."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from conftest import count_inspections, diff_patch, write_patchset
from patchbay.apply import engine
from patchbay.apply.engine import apply_patchset
from patchbay.apply.ledger import Ledger, LedgerEntry
from patchbay.apply.plan import make_plan
from patchbay.apply.statelock import state_lock
from patchbay.environment.targets import resolve_environment
from patchbay.environment.tree import Tree
from patchbay.kinds import KINDS
from patchbay.patchset.loading import load_patchset

BEFORE = {f"pkg/m{i}.py": "".join(f"v{i}_{k} = {k}\n" for k in range(12)) for i in range(3)}


def _after(rel: str) -> str:
    return BEFORE[rel].replace("= 5\n", "= 50\n")


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    """A root of three files and a patchset of three diff patches, one per file, plus a
    fourth that edits the first file again (on the first patch's result)."""
    root = tmp_path / "root"
    for rel, text in BEFORE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    files = {
        f"p{i}.patch": diff_patch(rel, BEFORE[rel], _after(rel)) for i, rel in enumerate(BEFORE)
    }
    first = _after("pkg/m0.py")
    files["p3.patch"] = diff_patch("pkg/m0.py", first, first.replace("= 9\n", "= 90\n"))
    patches = [{"id": f"p{i}", "kind": "diff", "file": f"p{i}.patch"} for i in range(4)]
    targets = {"engine": {"package": "pkg"}}
    return write_patchset(tmp_path / "ps", patches, files=files, targets=targets), root


def _env(ps: Path, root: Path):
    patchset = load_patchset(ps)
    return patchset, resolve_environment(patchset, root=root)


def test_forked_trees_share_one_line_index_per_content(tmp_path: Path) -> None:
    data = b"a\nb\n" * 10
    tree = Tree({"t": tmp_path})
    fork = tree.fork()
    assert fork.line_index(data) is tree.line_index(data)
    assert fork.fork().line_index(data) is tree.line_index(data)
    copy = bytes(bytearray(data))  # equal bytes, another object: its own index
    assert tree.line_index(copy) is not tree.line_index(data)
    assert tree.line_index(copy).lines == tree.line_index(data).lines


def test_disk_view_sees_changed_bytes_modes_and_files_that_appeared(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x\n")
    tree = Tree({"t": tmp_path})
    assert tree.read("t", "f") == b"x\n"
    assert tree.read("t", "absent") is None
    assert tree.mode("t", "f") is not None
    seen = tree.seen
    assert seen.unchanged()
    os.chmod(tmp_path / "f", 0o700)
    assert not seen.unchanged()
    os.chmod(tmp_path / "f", tree.mode("t", "f") or 0)
    assert seen.unchanged()
    (tmp_path / "absent").write_bytes(b"")
    assert not seen.unchanged()


def test_each_patch_is_inspected_once_cold_and_once_applied(
    setup: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold apply judges each pending patch once, its result checked on the way (the plan
    made before the lock holds under it; the backward pass's judgement is reused when the
    forward tree reads the same contents); a re-run judges each applied patch once."""
    ps, root = setup
    calls = count_inspections(monkeypatch)
    result = apply_patchset(*_env(ps, root))
    assert result.applied == ["p0", "p1", "p2", "p3"]
    # p3 is judged twice: first on the pristine file (the backward pass, a conflict), then on
    # p0's result
    assert calls == {"p0": 1, "p1": 1, "p2": 1, "p3": 2}
    assert (root / "pkg/m0.py").read_text() == _after("pkg/m0.py").replace("= 9\n", "= 90\n")
    calls.clear()
    assert apply_patchset(*_env(ps, root)).nothing_to_do
    assert calls == {"p0": 1, "p1": 1, "p2": 1, "p3": 1}


def test_plan_before_the_lock_holds_only_while_nothing_it_read_changed(
    setup: tuple[Path, Path],
) -> None:
    ps, root = setup
    patchset, env = _env(ps, root)
    plan = make_plan(patchset, env)
    assert engine._still_as_judged(plan)
    target = root / "pkg/m1.py"
    original = target.read_bytes()
    target.write_bytes(original + b"# edited\n")
    assert not engine._still_as_judged(plan)  # content
    target.write_bytes(original)
    target.unlink()
    target.symlink_to(root / "pkg/m2.py")
    (root / "pkg/m2.py").write_bytes(original)  # same bytes, but through a link now
    assert not engine._still_as_judged(plan)
    target.unlink()
    target.write_bytes(original)
    (root / "pkg/m2.py").write_text(BEFORE["pkg/m2.py"])
    assert engine._still_as_judged(plan)
    # the ledger is part of what was judged: another run's entries make the plan stale
    ledger = env.state_dir / "ledger.json"
    ledger.parent.mkdir(parents=True)
    entry = {"patch_id": "q", "kind": "diff", "patch_sha256": "0" * 64, "files": []}
    entry |= {"applied_at": "2026-01-01T00:00:00+00:00", "tool_version": "0.1.0"}
    ledger.write_text(json.dumps({"format": 1, "patchsets": {"other": {"entries": [entry]}}}))
    assert not engine._still_as_judged(plan)


def test_a_run_that_waited_for_the_lock_judges_the_tree_as_it_is(
    setup: tuple[Path, Path],
) -> None:
    """The plan is made before the lock; when another run applied everything meanwhile, the
    waiting run sees it under the lock and has nothing to do (it does not apply twice)."""
    ps, root = setup
    patchset, env = _env(ps, root)
    stale_plan = make_plan(patchset, env)
    apply_patchset(*_env(ps, root))  # the other run
    assert not engine._still_as_judged(stale_plan)
    again = apply_patchset(patchset, env)
    assert again.nothing_to_do


def test_a_run_with_nothing_to_do_needs_no_lock(setup: tuple[Path, Path]) -> None:
    ps, root = setup
    apply_patchset(*_env(ps, root))
    patchset, env = _env(ps, root)
    with state_lock(env.state_dir, 0):  # held by another run
        assert apply_patchset(patchset, env, lock_timeout=0).nothing_to_do


def test_ledger_put_replaces_the_entry_of_the_same_patch_and_keeps_the_order(
    tmp_path: Path,
) -> None:
    def entry(patch_id: str, sha: str) -> LedgerEntry:
        return LedgerEntry(patch_id, "diff", sha, "2026-01-01T00:00:00+00:00", "0.1.0")

    ledger = Ledger(tmp_path)
    for patch_id in ("a", "b", "c"):
        ledger.put("ps", entry(patch_id, "1"))
    ledger.put("ps", entry("b", "2"))
    assert [(e.patch_id, e.patch_sha256) for e in ledger.entries("ps")] == [
        ("a", "1"),
        ("c", "1"),
        ("b", "2"),
    ]
    ledger.remove("ps", "a")
    ledger.put("ps", entry("a", "3"))
    ledger.put("ps", entry("a", "4"))
    assert [e.patch_id for e in ledger.entries("ps")] == ["c", "b", "a"]
    assert ledger.find("ps", "a").patch_sha256 == "4"


def test_trying_a_result_stages_it_for_the_block_only(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"disk\n")
    tree = Tree({"t": tmp_path})
    tree.stage("t", "g", b"staged\n")
    with tree.trying([("t", "f", b"trial\n"), ("t", "g", None), ("t", "h", b"new\n")]):
        assert [tree.read("t", p) for p in ("f", "g", "h")] == [b"trial\n", None, b"new\n"]
    assert [tree.read("t", p) for p in ("f", "g", "h")] == [b"disk\n", b"staged\n", None]


def _random_diff_case(rng: random.Random, k: int) -> tuple[str, str]:
    """A diff of one or two hunks of repetitive lines, and a file of such lines that holds
    their preimages (so that images recur: some results leave the old text behind, and a
    re-run would apply them again); every seventh file has CRLF endings (the hunks are then
    matched with CRLF)."""
    end = "\r\n" if k % 7 == 0 else "\n"
    hunks, content = [], []
    for _ in range(rng.randint(1, 2)):
        content += [rng.choice("ab") for _ in range(rng.randint(0, 4))]
        body = [rng.choice(" -+") + rng.choice("ab") for _ in range(rng.randint(1, 3))]
        body = [" " + rng.choice("ab"), *body, " " + rng.choice("ab")]
        old = sum(line[0] != "+" for line in body)
        new = sum(line[0] != "-" for line in body)
        header = f"@@ -{len(content) + 1},{old} +{len(content) + 1},{new} @@\n"
        hunks.append(header + "".join(f"{line}\n" for line in body))
        content += [line[1:] for line in body if line[0] != "+"]
    content += [rng.choice("ab") for _ in range(rng.randint(0, 4))]
    text = "".join(line + end for line in content)
    return "--- a/m.txt\n+++ b/m.txt\n" + "".join(hunks), text


def test_a_diffs_result_classified_on_the_way_is_what_inspecting_it_again_finds(
    tmp_path: Path,
) -> None:
    """The recheck of a pending diff (is it present on its own result?) comes from the one
    inspection; it must say what a second inspection of the tree holding the result says,
    hunk by hunk, also for results that are not present (a re-run would apply them again)."""
    from types import SimpleNamespace

    from patchbay.diff.parse import parse_diff
    from patchbay.kinds.base import ContentState, LoadedPatch

    rng = random.Random(14)
    kind = KINDS["diff"]
    compared = not_present = 0
    for k in range(500):
        text, content = _random_diff_case(rng, k)
        (tmp_path / "m.txt").write_bytes(content.encode())
        loaded = LoadedPatch(
            sha256="", source=None, data=parse_diff(text.encode(), source=Path("p"))
        )
        patch = SimpleNamespace(id="p", kind="diff", target="t")
        tree = Tree({"t": tmp_path})
        inspection = kind.inspect(patch, loaded, tree)
        if inspection.state is not ContentState.PENDING:
            continue
        assert inspection.on_result is not None
        with tree.trying([(c.target, c.path, c.after) for c in inspection.changes]):
            again = kind.inspect(patch, loaded, tree)
        assert [(h.state, h.start, h.offset, h.detail) for h in inspection.on_result] == [
            (h.state, h.start, h.offset, h.detail) for h in again.hunks
        ]
        compared += 1
        not_present += again.state is not ContentState.APPLIED
    assert compared > 80 and not_present > 10, (compared, not_present)


def test_the_ledger_is_written_one_line_per_entry_and_reads_back_as_it_was(
    tmp_path: Path,
) -> None:
    from patchbay.apply.ledger import FileRecord
    from patchbay.apply.transaction import Transaction

    ledger = Ledger(tmp_path)
    for n, patchset in enumerate(("ps", 'other "one"')):
        for patch_id in ("a", "b\u00e9"):
            files = [FileRecord("engine", "pkg/m.py", "1" * 64, None, ["pkg"], 0o644)]
            entry = LedgerEntry(patch_id, "diff", str(n), "2026-01-01T00:00:00+00:00", "0.1.0")
            entry.files, entry.extra = files, {"argv": ["x", {"y": None}]}
            ledger.put(patchset, entry)
    identity = {"files": [["pkg/m.py", "2" * 64]], "env": {"b": [1, None], "a": {"z": 0.5}}}
    ledger.set_identity("ps", identity)
    with Transaction(tmp_path / "journal", [tmp_path]) as txn:
        ledger.save(txn)
        txn.commit()
    text = (tmp_path / "ledger.json").read_text()
    again = Ledger(tmp_path)
    assert again.all_entries() == ledger.all_entries()
    assert again.identity("ps") == identity
    assert json.loads(text) == ledger._data
    entry_lines = [line for line in text.splitlines() if '"patch_id"' in line]
    assert len(entry_lines) == 4  # one line per applied patch
    # written in pieces, the identity still reads as one line of sorted keys
    line = f'      "applied_identity": {json.dumps(identity, sort_keys=True)},'
    assert line in text.splitlines()
