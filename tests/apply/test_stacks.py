"""Stacks of patches of one file where a later patch undoes an earlier one (create then delete,
delete then create again, rename and back, an edit and its reverse, create-modify-delete): a
cold apply leaves the tree a real ``git apply`` of each patch in order leaves, every patch is
then ``applied``, a re-run is a no-op, and revert gives back the pristine tree.

The plan judges a patch on the tree with every later applied patch taken off (the backward
pass); on a cold tree such a stack looks applied already, so the earlier pending patch must
make the later ones be judged again on what it leaves. Each patch is made by real
``git diff --binary -M`` between real trees (as in ``test_diff_writes``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import count_inspections, write_patchset
from patchbay.apply.engine import apply_patchset
from patchbay.apply.plan import make_plan
from patchbay.apply.results import PatchStatus
from patchbay.apply.revert import revert_patchset
from patchbay.environment.targets import resolve_environment
from patchbay.patchset.loading import load_patchset
from test_diff_writes import (
    BIN,
    BODY,
    EDITED,
    Case,
    _expected,
    _git,
    _git_diff,
    _materialise,
    _pkg,
    _tree,
)

OTHER = BODY.replace(b"return", b"yield")

STACKS = [
    Case("create-then-delete", [_pkg(), _pkg({"x.py": BODY}), _pkg()]),
    Case("delete-then-create-other", [_pkg({"x.py": BODY}), _pkg(), _pkg({"x.py": OTHER})]),
    Case("delete-then-create-same", [_pkg({"x.py": BODY}), _pkg(), _pkg({"x.py": BODY})]),
    Case("rename-and-back",
         [_pkg({"a.py": BODY}), _pkg({"b.py": BODY}), _pkg({"a.py": BODY})]),
    Case("rename-and-back-edited",
         [_pkg({"a.py": BODY}), _pkg({"b.py": EDITED}), _pkg({"a.py": BODY})]),
    Case("edit-and-its-reverse",
         [_pkg({"a.py": BODY}), _pkg({"a.py": EDITED}), _pkg({"a.py": BODY})]),
    Case("create-modify-delete",
         [_pkg(), _pkg({"x.py": BODY}), _pkg({"x.py": EDITED}), _pkg()]),
    Case("mode-and-back",
         [_pkg({"a.py": BODY}), _pkg({"a.py": (BODY, 0o755)}), _pkg({"a.py": BODY})]),
    Case("create-executable-then-not",
         [_pkg(), _pkg({"x.sh": (BODY, 0o755)}), _pkg({"x.sh": BODY})]),
    Case("edit-made-executable-then-back",
         [_pkg({"a.py": BODY}), _pkg({"a.py": (EDITED, 0o755)}), _pkg({"a.py": BODY})]),
    Case("binary-create-then-delete", [_pkg(), _pkg({"k.co": BIN}), _pkg()]),
    Case("binary-edit-and-back",
         [_pkg({"k.co": BIN}), _pkg({"k.co": BIN[::-1]}), _pkg({"k.co": BIN})]),
    Case("create-in-new-folders-then-delete",
         [_pkg(), _pkg({"new/dir/x.py": BODY}), _pkg()]),
    Case("rename-into-new-folders-and-back",
         [_pkg({"a.py": BODY}), _pkg({"sub/dir/a.py": BODY}), _pkg({"a.py": BODY})]),
    Case("delete-emptying-folders-then-create-there",
         [_pkg({"old/dir/x.py": BODY}), _pkg(), _pkg({"old/dir/y.py": OTHER})]),
    Case("edit-reverse-edit-again",
         [_pkg({"a.py": BODY}), _pkg({"a.py": EDITED}), _pkg({"a.py": BODY}),
          _pkg({"a.py": EDITED})]),
]  # fmt: skip
R, P = PatchStatus.REDUNDANT, PatchStatus.PENDING
# the statuses on the tree a stack leaves, with no ledger: pending where that tree is also the
# one before the stack (all of them, but these), redundant as far as the content tells
SHIPPED = {
    "delete-then-create-other": {"p0": R, "p1": R},
    "delete-emptying-folders-then-create-there": {"p0": R, "p1": R},
    "create-executable-then-not": {"p0": R, "p1": R},
    "edit-reverse-edit-again": {"p0": R, "p1": P, "p2": P},
}


def _setup(tmp_path: Path, case: Case) -> tuple[Path, Path, Path, Path]:
    """The patchset, the pristine tree, the tree ``git apply`` of each patch in order leaves,
    and a copy of the pristine tree to apply to."""
    steps = list(zip(case.states, case.states[1:], strict=False))
    diffs = [_git_diff(tmp_path / f"diff{i}", a, b) for i, (a, b) in enumerate(steps)]
    pristine = tmp_path / "pristine"
    (pristine / "pkg").mkdir(parents=True)
    _materialise(pristine, case.states[0])
    reference = tmp_path / "git"
    shutil.copytree(pristine, reference, symlinks=True)
    for i, diff in enumerate(diffs):
        (tmp_path / f"p{i}.patch").write_bytes(diff)
        _git(reference, "apply", "--whitespace=nowarn", str(tmp_path / f"p{i}.patch"))
    site = tmp_path / "site"
    shutil.copytree(pristine, site, symlinks=True)
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": f"p{i}", "kind": "diff", "file": f"p{i}.patch"} for i in range(len(diffs))],
        targets={"engine": {"package": "pkg"}},
        files={f"p{i}.patch": diff for i, diff in enumerate(diffs)},
    )
    return ps, pristine, reference, site


def _statuses(ps: Path, site: Path) -> dict[str, PatchStatus]:
    patchset = load_patchset(ps)
    plan = make_plan(patchset, resolve_environment(patchset, root=site))
    return {r.id: r.status for r in plan.reports}


@pytest.mark.parametrize("case", STACKS, ids=[c.name for c in STACKS])
def test_a_stack_that_undoes_itself_applies_as_git_apply_in_order_and_reverts(
    tmp_path: Path, case: Case
) -> None:
    ps, pristine, reference, site = _setup(tmp_path, case)
    ids = [f"p{i}" for i in range(len(case.states) - 1)]
    patchset = load_patchset(ps)
    env = resolve_environment(patchset, root=site)
    assert {r.id: r.status for r in make_plan(patchset, env).reports} == dict.fromkeys(
        ids, PatchStatus.PENDING
    )
    assert apply_patchset(patchset, env).applied == ids
    assert _tree(site) == _expected(case, reference)
    assert _statuses(ps, site) == dict.fromkeys(ids, PatchStatus.APPLIED)
    # already applied: a re-run writes nothing and the status holds
    again = load_patchset(ps)
    assert apply_patchset(again, resolve_environment(again, root=site)).nothing_to_do
    assert _tree(site) == _expected(case, reference)
    assert _statuses(ps, site) == dict.fromkeys(ids, PatchStatus.APPLIED)
    assert revert_patchset(load_patchset(ps), env).ids == ids[::-1]
    assert _tree(site) == _tree(pristine)
    assert _statuses(ps, site) == dict.fromkeys(ids, PatchStatus.PENDING)


@pytest.mark.parametrize("case", STACKS, ids=[c.name for c in STACKS])
def test_an_image_that_ships_the_stack_is_left_as_it_is(tmp_path: Path, case: Case) -> None:
    """On the tree the whole stack leaves, with no ledger (the image ships it), apply leaves
    every file as it is and nothing blocks: each patch is redundant, or, where the stack's
    result is the tree before it (nothing tells the two apart), applied as on a cold tree."""
    ps, _, reference, _ = _setup(tmp_path, case)
    shipped = tmp_path / "shipped"
    shutil.copytree(reference, shipped, symlinks=True)
    before = _tree(shipped)
    patchset = load_patchset(ps)
    env = resolve_environment(patchset, root=shipped)
    statuses = {r.id: r.status for r in make_plan(patchset, env).reports}
    assert statuses == SHIPPED.get(case.name, dict.fromkeys(statuses, PatchStatus.PENDING))
    apply_patchset(patchset, env)
    assert _tree(shipped) == before


@pytest.mark.parametrize("first", ["diff", "replace"])
def test_a_replace_that_undoes_an_earlier_edit_is_applied_after_it(
    tmp_path: Path, first: str
) -> None:
    """The same class through the ``replace`` kind: an edit (a diff or a replace) and a later
    replace that puts the old text back leave the pristine bytes, both then ``applied``."""
    site = tmp_path / "site"
    _materialise(site, _pkg({"a.py": BODY}))
    pristine = _tree(site)
    edit: dict[str, object] = {"file": "pkg/a.py", "old": "x + 3\n", "new": "x - 3\n"}
    back = {"file": "pkg/a.py", "old": "x - 3\n", "new": "x + 3\n"}
    files = {}
    if first == "diff":
        files["p0.patch"] = _git_diff(tmp_path / "d", _pkg({"a.py": BODY}), _pkg({"a.py": EDITED}))
        p0: dict[str, object] = {"id": "p0", "kind": "diff", "file": "p0.patch"}
    else:
        p0 = {"id": "p0", "kind": "replace", "edits": [edit]}
    ps = write_patchset(
        tmp_path / "ps",
        [p0, {"id": "p1", "kind": "replace", "edits": [back]}],
        targets={"engine": {"package": "pkg"}},
        files=files,
    )
    patchset = load_patchset(ps)
    env = resolve_environment(patchset, root=site)
    assert apply_patchset(patchset, env).applied == ["p0", "p1"]
    assert _tree(site) == pristine
    assert _statuses(ps, site) == {"p0": PatchStatus.APPLIED, "p1": PatchStatus.APPLIED}
    again = load_patchset(ps)
    assert apply_patchset(again, resolve_environment(again, root=site)).nothing_to_do
    assert revert_patchset(load_patchset(ps), env).ids == ["p1", "p0"]
    assert _tree(site) == pristine
    assert _statuses(ps, site) == {"p0": PatchStatus.PENDING, "p1": PatchStatus.PENDING}


def test_only_the_patches_of_the_stack_are_judged_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold apply judges the stack's patches again on the earlier one's result, but reuses
    the backward pass's judgement of a patch of another file (nothing earlier is staged on it);
    a re-run judges every patch once."""
    site = tmp_path / "site"
    _materialise(site, _pkg({"a.py": BODY}))
    create = _git_diff(tmp_path / "d0", _pkg(), _pkg({"x.py": OTHER}))
    delete = _git_diff(tmp_path / "d1", _pkg({"x.py": OTHER}), _pkg())
    edit = _git_diff(tmp_path / "d2", _pkg({"a.py": BODY}), _pkg({"a.py": EDITED}))
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": f"p{i}", "kind": "diff", "file": f"p{i}.patch"} for i in range(3)],
        targets={"engine": {"package": "pkg"}},
        files={"p0.patch": create, "p1.patch": delete, "p2.patch": edit},
    )
    calls = count_inspections(monkeypatch)
    patchset = load_patchset(ps)
    env = resolve_environment(patchset, root=site)
    assert apply_patchset(patchset, env).applied == ["p0", "p1", "p2"]
    assert calls == {"p0": 2, "p1": 2, "p2": 1}
    assert not (site / "pkg/x.py").exists()
    calls.clear()
    assert apply_patchset(load_patchset(ps), env).nothing_to_do
    assert calls == {"p0": 1, "p1": 1, "p2": 1}
