"""The order of a patch stack: which patches change the same file without saying their order.

Patches apply in list order, each on the tree the earlier ones leave (quilt's series file).
When two patches change the same file, the later one's context may include the earlier one's
lines, so swapping them turns a clean stack into a conflict. ``after: [ID]`` declares that
dependency (the loader refuses a patchset whose list order contradicts it, see
:func:`patchbay.patchset.loading.load_patchset`); this module finds the pairs that share a file with
no declared order, so that ``validate`` can point at them once their content is known (a remote
source is known only after ``patchbay vendor``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..kinds import LoadedPatch
from .model import Patchset


class Overlap(msgspec.Struct, frozen=True):
    """Two patches that change one file, the later not declared ``after`` the earlier.

    Attributes:
        earlier: id of the patch listed first.
        later: id of the patch listed after it.
        path: the file both change, relative to the later patch's target root.
        index: position of ``later`` in ``patches`` (for its line in the YAML file).
    """

    earlier: str
    later: str
    path: str
    index: int


def _files(patch: Any, loaded: LoadedPatch) -> list[str]:
    """Files a patch changes, relative to its target root (empty when not known offline)."""
    if patch.kind == "diff" and loaded.data is not None:
        return sorted({p for fp in loaded.data.files for p in (fp.old_path, fp.new_path) if p})
    if patch.kind == "replace":
        return sorted({e.file for e in patch.edits})
    if patch.kind == "artifact":
        return sorted({f.dest for f in patch.files})
    return []


def declared_before(patchset: Patchset) -> dict[str, set[str]]:
    """Patch id -> every patch it is declared to come after, directly or through a chain."""
    direct = {p.id: set(p.after) for p in patchset.patches}
    closure: dict[str, set[str]] = {}
    for patch in patchset.patches:  # list order: every dependency is closed already
        seen: set[str] = set()
        for dep in direct[patch.id]:
            seen |= {dep, *closure.get(dep, set())}
        closure[patch.id] = seen
    return closure


def unordered_overlaps(patchset: Patchset, loaded: list[LoadedPatch]) -> list[Overlap]:
    """Every pair of patches that change the same file where the later does not come
    ``after`` the earlier (directly or through a chain); files are compared on the same
    installed root (a target's package folder plus its ``path``, or a home folder)."""
    targets = patchset.spec.targets

    def key(target: str, rel: str) -> tuple[str, str]:
        t = targets[target]
        if t.package is None:
            return f"~{target}", rel
        return t.package, f"{t.path}/{rel}" if t.path else rel

    before = declared_before(patchset)
    owners: dict[tuple[str, str], list[str]] = {}
    out: list[Overlap] = []
    for i, (patch, lp) in enumerate(zip(patchset.patches, loaded, strict=True)):
        if patch.target is None or lp.unlocked:
            continue
        for rel in _files(patch, lp):
            k = key(patch.target, rel)
            for other in owners.get(k, []):
                if other not in before[patch.id]:
                    out.append(Overlap(other, patch.id, rel, i))
            owners.setdefault(k, []).append(patch.id)
    return out


class SameChange(msgspec.Struct, frozen=True):
    """Two diff patches that make one change to a file from different bases: the lines they
    add to ``path`` are the same, the lines they remove are not (a script's ``apply_one_of A
    B``: "the same edit, two source baselines"). Both can never apply to one tree.

    Attributes:
        first, second: the patch ids, in list order.
        path: the file.
        index: position of ``second`` in ``patches``.
    """

    first: str
    second: str
    path: str
    index: int


def line_change(fp: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The lines a file patch (:class:`patchbay.diff.parse.FilePatch`) adds and removes, in
    order: what two diffs of one change from different bases share and do not share."""
    added = tuple(text for h in fp.hunks for tag, text in h.lines if tag == "+")
    removed = tuple(text for h in fp.hunks for tag, text in h.lines if tag == "-")
    return added, removed


def same_changes(patchset: Patchset, loaded: list[LoadedPatch]) -> list[SameChange]:
    """Every pair of ``diff`` patches of one target that add the same lines to a file while
    removing different ones (see :class:`SameChange`); what is not known offline (a remote
    source not vendored) is not compared."""
    seen: dict[tuple[str, str], list[tuple[str, tuple[str, ...], tuple[str, ...]]]] = {}
    out: list[SameChange] = []
    for i, (patch, lp) in enumerate(zip(patchset.patches, loaded, strict=True)):
        if patch.kind != "diff" or lp.data is None or lp.unlocked or patch.target is None:
            continue
        for fp in lp.data.files:
            if fp.new_path is None or not fp.hunks:
                continue
            added, removed = line_change(fp)
            key = (patch.target, fp.new_path)
            for other, o_added, o_removed in seen.get(key, []):
                if added and added == o_added and removed != o_removed:
                    out.append(SameChange(other, patch.id, fp.new_path, i))
            seen.setdefault(key, []).append((patch.id, added, removed))
    return out
