"""One file reached through two targets is one file.

The README's own layout has ``engine: {package: demo_engine}`` and ``meta: {package:
demo_engine, path: demo_engine_meta}``: ``demo_engine_meta/kernels/mla_asm.csv`` through
``engine`` and ``kernels/mla_asm.csv`` through ``meta`` are the same file. The plan's tree,
the journal, the ledger's file history and revert identify a file by its location
(:meth:`patchbay.environment.tree.Tree.location`), so a later patch is judged on what an earlier one
left, whichever target each goes through.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REPO, diff_patch, write_patchset
from inprocess import run_main
from patchbay.authoring.rebase import RebaseResult, rebase_patchset
from patchbay.environment.targets import resolve_environment
from patchbay.errors import InputError
from patchbay.patchset.loading import load_patchset

TARGETS = {
    "engine": {"package": "demo_engine"},
    "meta": {"package": "demo_engine", "path": "demo_engine_meta"},
}
THROUGH = {"engine": "demo_engine_meta/kernels/mla_asm.csv", "meta": "kernels/mla_asm.csv"}
CSV = "demo_engine_meta/kernels/mla_asm.csv"


def _edit(pid: str, target: str, old: str, new: str) -> dict[str, object]:
    edit = {"file": THROUGH[target], "old": old, "new": new}
    return {"id": pid, "kind": "replace", "target": target, "edits": [edit]}


def _patchsets(tmp_path: Path, first: str) -> dict[str, Path]:
    second = "meta" if first == "engine" else "engine"
    independent = [_edit("a", first, "qh128", "qh256"), _edit("b", second, "heads", "HEADS")]
    # b's old text exists only after a: it must be judged on a's result
    dependent = [_edit("a", first, "qh128", "qh256"), _edit("b", second, "qh256", "qh512")]
    # a diff through the other target, whose context holds a's result
    pristine = (REPO / "demo" / "engine" / "src" / CSV).read_text()
    after_a = pristine.replace("qh128", "qh256", 1)
    text = diff_patch(THROUGH[second], after_a, after_a.replace("bf16", "fp8", 1))
    diff = [_edit("a", first, "qh128", "qh256")]
    diff.append({"id": "b", "kind": "diff", "target": second, "file": "patches/b.patch"})
    return {
        "independent": write_patchset(tmp_path / "ind", independent, targets=TARGETS),
        "dependent": write_patchset(tmp_path / "dep", dependent, targets=TARGETS),
        "diff": write_patchset(
            tmp_path / "diff", diff, targets=TARGETS, files={"patches/b.patch": text}
        ),
    }


EXPECTED = {
    "independent": ("HEADS,qlen", "qh256.co"),
    "dependent": ("heads,qlen", "qh512.co"),
    "diff": ("fp8,mla_a16w16_qh256.co",),
}


def _round_trip(ps: Path, csv: Path, which: str, where: list[str]) -> None:
    pristine = csv.read_bytes()
    res = run_main("apply", ps, *where)
    assert res.code == 0, res.out + res.err
    text = csv.read_text()
    assert all(part in text for part in EXPECTED[which]), text
    assert "qh128.co" not in text.splitlines()[1]
    status = run_main("status", ps, *where, "--json")
    assert status.code == 0, status.out + status.err
    assert status.out.count('"applied"') >= 2 and "changed since" not in status.out
    again = run_main("apply", ps, *where)
    assert again.code == 0 and "2 patch(es) already present" in again.out, again.out
    assert csv.read_text() == text
    res = run_main("revert", ps, *where)
    assert res.code == 0, res.out + res.err
    assert csv.read_bytes() == pristine


@pytest.mark.parametrize("which", list(EXPECTED))
@pytest.mark.parametrize("first", ["engine", "meta"])
def test_two_targets_editing_one_file_with_root(tmp_path: Path, first: str, which: str) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(
        REPO / "demo" / "engine" / "src", tree, ignore=shutil.ignore_patterns("*.egg-info")
    )
    ps = _patchsets(tmp_path, first)[which]
    _round_trip(ps, tree / CSV, which, ["--root", str(tree)])


@pytest.mark.parametrize("first", ["engine", "meta"])
def test_two_targets_editing_one_file_in_a_real_venv(engine, tmp_path: Path, first: str) -> None:
    for which, ps in _patchsets(tmp_path, first).items():
        _round_trip(ps, engine.site / CSV, which, ["--python", str(engine.python)])


ROWS = [f"row{i},{i}\n" for i in range(1, 21)]


def _rebase(
    ps: Path, old: Path, new: Path, out: Path, resolved: Path | None = None
) -> RebaseResult:
    """``rebase`` of the patchset ``ps`` from the tree ``old`` onto the tree ``new``."""
    patchset = load_patchset(ps)
    old_env = resolve_environment(patchset, root=old)
    new_env = resolve_environment(patchset, root=new)
    return rebase_patchset(patchset, old_env, new_env, out=out, resolved=resolved)


def _rows_tree(root: Path, rows: list[str]) -> Path:
    (root / "demo_engine").mkdir(parents=True)
    (root / "demo_engine" / "__init__.py").write_text("")
    (root / "demo_engine_meta" / "kernels").mkdir(parents=True)
    (root / "demo_engine_meta" / "kernels" / "t.csv").write_text("".join(rows))
    return root


def test_rebase_merges_a_later_patch_onto_what_an_earlier_one_left_through_the_other_target(
    tmp_path: Path,
) -> None:
    """a (through ``engine``) edits row 12; b (a diff through ``meta``) edits row 13, with a's
    row in its context; the candidate changed row 15 (in b's context). b's 3-way merge must take
    the candidate's file with a staged: a clean merge that applies after a."""
    old = _rows_tree(tmp_path / "old", ROWS)
    new = _rows_tree(tmp_path / "new", [*ROWS[:14], "row15,fifteen\n", *ROWS[15:]])
    after_a = "".join(ROWS).replace("row12,12", "row12,TWELVE")
    after_b = after_a.replace("row13,13", "row13,THIRTEEN")
    edit = {"file": "demo_engine_meta/kernels/t.csv", "old": "row12,12\n", "new": "row12,TWELVE\n"}
    ps = write_patchset(
        tmp_path / "ps",
        [
            {"id": "a", "kind": "replace", "target": "engine", "edits": [edit]},
            {"id": "b", "kind": "diff", "target": "meta", "file": "b.patch"},
        ],
        targets=TARGETS,
        files={"b.patch": diff_patch("kernels/t.csv", after_a, after_b)},
    )
    result = _rebase(ps, old, new, tmp_path / "out")
    assert {i.id: i.outcome for i in result.items} == {"a": "unchanged", "b": "refreshed"}
    rebased = load_patchset(tmp_path / "out")
    res = run_main("apply", tmp_path / "out", "--root", new)
    assert res.code == 0 and "2 applied" in res.out, res.out + res.err
    want = after_b.replace("row15,15", "row15,fifteen")
    assert (new / "demo_engine_meta" / "kernels" / "t.csv").read_text() == want
    assert rebased.patches[1].id == "b"


def _rows_patchset(tmp_path: Path, after_a: str) -> Path:
    """a (a diff through ``engine``) edits row 12, b (a diff through ``meta``, after a) row 13;
    the old image's rows are ROWS."""
    after_b = after_a.replace("row13,13", "row13,THIRTEEN")
    return write_patchset(
        tmp_path / "ps",
        [
            {"id": "a", "kind": "diff", "target": "engine", "file": "a.patch"},
            {"id": "b", "kind": "diff", "target": "meta", "file": "b.patch", "after": ["a"]},
        ],
        targets=TARGETS,
        files={
            "a.patch": diff_patch("demo_engine_meta/kernels/t.csv", "".join(ROWS), after_a),
            "b.patch": diff_patch("kernels/t.csv", after_a, after_b),
        },
    )


def test_rebase_leaves_a_later_patch_alone_while_an_earlier_one_on_its_file_conflicts(
    tmp_path: Path,
) -> None:
    """The candidate changed row 12 itself: a conflicts. b, merged onto the candidate without
    a's change, would carry it; b waits for a (a conflict naming a), resolved or not."""
    old = _rows_tree(tmp_path / "old", ROWS)
    new = _rows_tree(tmp_path / "new", [*ROWS[:11], "row12,twelve\n", *ROWS[12:]])
    ps = _rows_patchset(tmp_path, "".join(ROWS).replace("row12,12", "row12,TWELVE"))
    resolved = tmp_path / "resolved" / "b" / "kernels"
    resolved.mkdir(parents=True)
    (resolved / "t.csv").write_text("".join(ROWS).replace("row13,13", "row13,THIRTEEN"))
    for n, by_hand in enumerate([None, tmp_path / "resolved"]):
        result = _rebase(ps, old, new, tmp_path / f"out{n}", resolved=by_hand)
        got = {i.id: i.outcome for i in result.items}
        assert got == {"a": "conflict", "b": "conflict"}, [i.details for i in result.items]
        b = next(i for i in result.items if i.id == "b")
        assert any("resolve a first" in d for d in b.details), b.details
        assert (tmp_path / f"out{n}" / "b.patch").read_bytes() == (ps / "b.patch").read_bytes()


def test_rebase_refuses_a_resolved_file_that_is_a_link(tmp_path: Path) -> None:
    """--resolved takes files a person merged; a link could name any file on the machine."""
    old = _rows_tree(tmp_path / "old", ROWS)
    new = _rows_tree(tmp_path / "new", [*ROWS[:11], "row12,twelve\n", *ROWS[12:]])
    ps = _rows_patchset(tmp_path, "".join(ROWS).replace("row12,12", "row12,TWELVE"))
    secret = tmp_path / "secret.txt"
    secret.write_text("not a csv\n")
    hand = tmp_path / "resolved" / "a" / "demo_engine_meta" / "kernels"
    hand.mkdir(parents=True)
    (hand / "t.csv").symlink_to(secret)
    result = _rebase(ps, old, new, tmp_path / "out", resolved=tmp_path / "resolved")
    a = next(i for i in result.items if i.id == "a")
    assert a.outcome == "conflict" and any("symbolic link" in d for d in a.details), a.details
    assert b"not a csv" not in (tmp_path / "out" / "a.patch").read_bytes()
    assert a.conflict_files  # the 3-way result with its markers is still in the side folder


def test_rebase_refuses_a_result_folder_inside_the_patchset(tmp_path: Path) -> None:
    old = _rows_tree(tmp_path / "old", ROWS)
    ps = _rows_patchset(tmp_path, "".join(ROWS).replace("row12,12", "row12,TWELVE"))
    patchset = load_patchset(ps)
    env = resolve_environment(patchset, root=old)
    with pytest.raises(InputError, match="lies inside the patchset"):
        rebase_patchset(patchset, env, env, out=ps / "sub")
    assert not (ps / "sub").exists()
