"""Judging one patch on the tree as the earlier patches leave it: its inspection (reused from
the backward pass where that still holds, as quilt's stack does), its status from the content
state and the ledger, and the refusal of a pending patch whose result would not read as applied
(a re-run would apply it again)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..diff.hunks import PRESENT, HunkState
from ..diff.identity import same_patch
from ..environment.tree import Tree
from ..errors import PatchbayError
from ..kinds import KINDS, ContentState, Inspection, LoadedPatch
from ..kinds.base import aggregate
from .layers import OnTop
from .ledger import LedgerEntry, sha256_or_none
from .results import PatchStatus

if TYPE_CHECKING:
    from .compiled import CompiledPlan


def judge(
    patch: Any,
    loaded: LoadedPatch,
    tree: Tree,
    backward: tuple[list[tuple[str, str, bytes | None]], Inspection] | None,
    entry: LedgerEntry | None,
    staged: set[str],
    compiled: CompiledPlan | None = None,
) -> Inspection:
    """The inspection of ``patch`` on the forward ``tree`` (disk plus the earlier pending
    patches staged), reusing ``backward``, its ``(reads, inspection)`` on the tree with every
    later applied patch taken off, where that judgement holds.

    It holds when the forward tree reads the very same contents. A patch found applied there
    also stays applied when the difference is only the later patches taken off (quilt's
    stack), unless it is pending on the forward tree and either an earlier pending patch
    changes a file it read or the ledger does not record it: then the stack is not pushed
    (a later patch undoes an earlier one: create then delete, an edit and its reverse, a
    rename and back), and each patch is applied in order, as ``git apply`` of each would.
    ``compiled``: a bundle's compiled plan, consulted before any hunk search.
    """
    if backward is None:
        return inspect_patch(patch, loaded, tree, compiled)
    reads, inspection = backward
    if tree.reads_same(reads):
        return inspection
    if inspection.state is not ContentState.APPLIED:
        return inspect_patch(patch, loaded, tree, compiled)
    if entry is not None and not any(tree.location_of(t, rel) in staged for t, rel, _ in reads):
        return inspection
    forward = inspect_patch(patch, loaded, tree, compiled)
    return forward if forward.state is ContentState.PENDING else inspection


def check_reaches_applied(
    patch: Any, loaded: LoadedPatch, inspection: Inspection, tree: Tree
) -> None:
    """A pending patch must leave the tree in a state recognised as applied; otherwise a re-run
    would apply it again (e.g. an edit whose result contains its own old text). Such a patch is
    turned into a conflict here, before anything is written."""
    if inspection.on_result is not None:  # the kind classified its result on the way
        hunks, inspection.on_result = inspection.on_result, None  # not kept in the plan
        state = aggregate(hunks)
    else:
        trial = [(c.target, c.path, c.after) for c in inspection.changes]
        with tree.trying(trial):
            again = inspect_patch(patch, loaded, tree)
        hunks, state = again.hunks, again.state
    if state is ContentState.APPLIED:
        return
    mode_only = {c.path for c in inspection.changes if c.before == c.after}  # not in the trial
    units = [h for h in hunks if h.state not in PRESENT and h.file not in mode_only]
    if not units:
        return
    where = (
        ", ".join(
            f"{h.file} {'edit' if patch.kind == 'replace' else 'hunk'} {h.index}" for h in units
        )
        or "the patch"
    )
    inspection.state = ContentState.CONFLICT
    for h in inspection.hunks:
        if any(u.file == h.file and u.index == h.index for u in units):
            h.state = HunkState.CONFLICT
            h.detail = (
                "not idempotent: after applying it, its old text is still there, so a re-run "
                "would apply it again; give it more context"
            )
    inspection.notes.append(f"applying would not make it present ({where}); refusing")


def inspect_patch(
    patch: Any, loaded: LoadedPatch, tree: Tree, compiled: CompiledPlan | None = None
) -> Inspection:
    """The kind's inspection of ``patch`` on ``tree``; the judgement ``compiled`` (a bundle's
    compiled plan, :mod:`patchbay.apply.compiled`) recorded for it when that holds there.

    Raises:
        PatchbayError: the kind's, with the patch's id.
    """
    if compiled is not None and patch.kind == "diff":
        recorded = compiled.inspection(patch, loaded, tree)
        if recorded is not None:
            return recorded
    try:
        return KINDS[patch.kind].inspect(patch, loaded, tree)
    except PatchbayError as exc:
        exc.patch_id = exc.patch_id or patch.id
        raise


def status_of(
    inspection: Inspection,
    entry: LedgerEntry | None,
    loaded: LoadedPatch,
    tree: Tree,
    history: dict[object, tuple[str | None, str | None]],
    layered: Mapping[object, OnTop] | None = None,
) -> tuple[PatchStatus, list[str]]:
    notes = list(inspection.notes)
    state = inspection.state
    if entry is None and inspection.unproven:
        # present by a guess only, and patchbay did not write it: fail closed
        for index, why in inspection.unproven:
            for hunk in inspection.hunks:
                if hunk.index == index:
                    hunk.state, hunk.detail = HunkState.CONFLICT, why
        inspection.state = state = ContentState.CONFLICT
    if entry is not None and not same_patch(entry, loaded):
        recorded = entry.patch_identity or entry.patch_sha256
        now = loaded.identity if entry.patch_identity else loaded.sha256
        notes.append(
            f"the patch changed since it was applied on {entry.applied_at} (recorded "
            f"{'identity' if entry.patch_identity else 'sha256'} {recorded[:12]}, now "
            f"{now[:12]}); "
            "`patchbay apply --upgrade` reverts the recorded version and applies this one"
        )
        return PatchStatus.OUTDATED, notes
    if entry is not None and entry.patch_sha256 != loaded.sha256:
        notes.append(
            "the patch file's bytes changed since it was applied, not its content (same "
            "identity: index lines, hunk headers or mail headers differ)"
        )
    if entry is not None:
        back = []
        for rec in entry.files:
            key = tree.location_of(rec.target, rec.path)
            first_before, last_written = history[key]  # later patches too
            top = (layered or {}).get(key)
            if top is not None:  # another patchset's patch on top of what this one left
                if last_written == rec.after:
                    notes.append(top.sentence())
                continue
            current = sha256_or_none(tree.on_disk_if_file(rec.target, rec.path))
            if current in (rec.before, first_before) and current != last_written:
                back.append(rec.path)
            elif current != last_written:
                notes.append(f"{rec.path} changed since patchbay wrote it")
        if back:
            notes.append(
                f"the ledger records it as applied, but its files are back to what they were "
                f"before it ({', '.join(back)}; the package was reinstalled?): `patchbay "
                "apply` applies it again, `patchbay revert` clears the record"
            )
    if state is ContentState.APPLIED:
        if entry is None:
            notes.append(
                "present in the image, not applied by patchbay: the patch is redundant "
                "and can be removed from the patchset"
            )
            return PatchStatus.REDUNDANT, notes
        return PatchStatus.APPLIED, notes
    return PatchStatus(state.value), notes
