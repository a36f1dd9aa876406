"""What apply's last checks would say of the pending patches, for ``status``; writes nothing.

``apply`` ends its checks with each pending patch's preflight: for a package pin, pip's dry run
(can the pin be resolved at all, would it move a protected distribution). A pin that passes
every check ``status`` makes on its own is still refused there, so ``status`` runs the same dry
run, through the kinds that offer it (:class:`~patchbay.kinds.base.Trial`): a patch apply would
refuse is a ``conflict`` in ``status`` too, and its exit code says so; a patch that could not be
checked (an index unreachable) stays ``pending`` with a note that says it was not checked.
"""

from __future__ import annotations

from ..diff.hunks import HunkState
from ..environment.tree import Tree
from ..kinds import KINDS, ContentState, PendingPatch
from .results import PatchStatus, Plan


def try_pending(plan: Plan) -> None:
    """Run each pending patch's trial (where its kind has one) and mark the outcome on its
    report in place: ``conflict`` with the reason on every unit when apply would refuse it,
    a ``not checked: ...`` note when it could not be checked, the trial's summary otherwise.

    Raises:
        RefusedError: the environment cannot be listed (pip's trial lists it first).
    """
    tree = Tree(plan.env.roots, plan.env)
    tree.protected = set(plan.patchset.spec.protected)
    tree.folder = plan.patchset.folder
    for report in plan.with_status(PatchStatus.PENDING):
        trial = getattr(KINDS[report.patch.kind], "trial", None)
        if trial is None:
            continue
        outcome = trial(PendingPatch(report.patch, report.loaded, report.inspection), tree)
        if outcome.refusal is not None:
            report.status = PatchStatus.CONFLICT
            report.inspection.state = ContentState.CONFLICT
            for h in report.inspection.hunks:
                h.state = HunkState.CONFLICT
                h.detail = f"apply would refuse it: {outcome.refusal}"
            report.notes.extend(outcome.details)
        elif outcome.unchecked is not None:
            report.notes.append(f"not checked: {outcome.unchecked}")
        elif outcome.summary is not None:
            report.notes.append(outcome.summary)
