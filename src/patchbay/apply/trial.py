"""What apply's last checks would say of the pending patches, for ``status``; writes nothing to
the engine or its state folder.

``apply`` ends its checks with each pending patch's preflight: for a package pin, pip's dry run
(can the pin be resolved at all, would it move a protected distribution). A pin that passes
every check ``status`` makes on its own is still refused there, so ``status --trial`` runs the
same dry run, through the kinds that offer it (:class:`~patchbay.kinds.base.Trial`): a patch
apply would refuse is a ``conflict`` in ``status`` too, and its exit code says so; a patch that
could not be checked (an index unreachable) stays ``pending`` with a note that says it was not
checked.

A dry run resolves against an index and can take minutes (a harness pin with a large
dependency tree), so plain ``status`` runs none: it answers from the outcome an earlier
``status --trial`` kept for the same dry run (the kind's ``trial_key``: the pin, the installed
versions, pip's variables) in ``$XDG_CACHE_HOME/patchbay/trials``, and otherwise notes that the
pin was not tried. An outcome that could not be checked is never kept (the index may answer
next time).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ..diff.hunks import HunkState
from ..environment.tree import Tree
from ..errors import RefusedError
from ..kinds import KINDS, ContentState, PendingPatch
from ..kinds.base import Trial
from .results import PatchReport, PatchStatus, Plan

NOT_TRIED = (
    "not tried: pip's dry run (whether apply would refuse it) is made by `patchbay status "
    "--trial`, and by apply before it installs"
)


def try_pending(plan: Plan, *, run: bool = True, cache_dir: Path | None = None) -> None:
    """Mark on each pending patch's report (in place) what its kind's trial says: ``conflict``
    with the reason on every unit when apply would refuse it, a ``not checked: ...`` note when
    it could not be checked, the trial's summary otherwise.

    Args:
        plan: the plan ``status`` made.
        run: run the trials that no kept outcome answers (``status --trial``); when False,
            such a patch gets the :data:`NOT_TRIED` note.
        cache_dir: where outcomes are kept (``<cache_dir>/trials/<key>.json``); None keeps none.

    Raises:
        RefusedError: with ``run``, the environment cannot be listed (pip's trial lists it
            first); without, such a patch is only not tried.
    """
    tree = Tree(plan.env.roots, plan.env)
    tree.protected = set(plan.patchset.spec.protected)
    tree.folder = plan.patchset.folder
    for report in plan.with_status(PatchStatus.PENDING):
        kind = KINDS[report.patch.kind]
        trial = getattr(kind, "trial", None)
        if trial is None:
            continue
        item = PendingPatch(report.patch, report.loaded, report.inspection)
        keyed = getattr(kind, "trial_key", None)
        kept = None
        try:
            key = keyed(item, tree) if cache_dir is not None and keyed is not None else None
        except RefusedError:
            if run:
                raise  # the trial would fail the same way: status says why
            key = None
        if cache_dir is not None and key is not None:
            kept = cache_dir / "trials" / f"{key}.json"
            outcome = _read(kept)
            if outcome is not None:
                _mark(report, outcome, kept=True)
                continue
        if not run:
            report.notes.append(NOT_TRIED)
            continue
        outcome = trial(item, tree)
        _mark(report, outcome, kept=False)
        if kept is not None and outcome.unchecked is None:
            _write(kept, outcome)


def _mark(report: PatchReport, outcome: Trial, *, kept: bool) -> None:
    """Put ``outcome`` on ``report`` (see :func:`try_pending`)."""
    again = " (kept from an earlier `status --trial` of the same pin and environment)"
    if outcome.refusal is not None:
        report.status = PatchStatus.CONFLICT
        report.inspection.state = ContentState.CONFLICT
        for h in report.inspection.hunks:
            h.state = HunkState.CONFLICT
            h.detail = f"apply would refuse it: {outcome.refusal}" + (again if kept else "")
        report.notes.extend(outcome.details)
    elif outcome.unchecked is not None:
        report.notes.append(f"not checked: {outcome.unchecked}")
    elif outcome.summary is not None:
        report.notes.append(outcome.summary + (again if kept else ""))


def _read(path: Path) -> Trial | None:
    """A kept outcome, or None when there is none or it cannot be read (it is then made
    again)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return Trial(
            refusal=doc.get("refusal"),
            details=[str(d) for d in doc.get("details", [])],
            summary=doc.get("summary"),
        )
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def _write(path: Path, outcome: Trial) -> None:
    """Keep ``outcome`` at ``path`` (written whole, then renamed); a cache that cannot be
    written is skipped: the next ``status`` tries again."""
    doc = {"refusal": outcome.refusal, "details": outcome.details, "summary": outcome.summary}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".trial-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(doc, out)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
