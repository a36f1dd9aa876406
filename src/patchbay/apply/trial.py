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
versions, pip's variables, the local find-links folders) in ``$XDG_CACHE_HOME/patchbay/trials``,
and otherwise notes that the pin was not tried. ``status --trial`` always runs the dry run again
(an index's releases are not in the key) and replaces the kept outcome. An outcome made while a
place could not be reached is never kept, and removes the one kept before.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import msgspec

from ..diff.hunks import HunkState
from ..environment.tree import Tree
from ..errors import RefusedError
from ..kinds import KINDS, ContentState, PendingPatch
from ..kinds.base import Trial
from .journal import write_atomic
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
        run: run every trial and keep its outcome (``status --trial``); when False, show the
            outcome kept for the same key, or the :data:`NOT_TRIED` note.
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
        if not run:
            outcome = None if kept is None else _read(kept)
            if outcome is None:
                report.notes.append(NOT_TRIED)
            else:
                _mark(report, outcome, kept=True)
            continue
        # --trial always asks pip again (an index may hold other releases since), and its
        # answer replaces the kept one
        outcome = trial(item, tree)
        _mark(report, outcome, kept=False)
        if kept is not None:
            if outcome.unchecked is None and outcome.unreachable is None:
                _write(kept, outcome)
            else:  # made without the network it needs: no later status may show it
                with contextlib.suppress(OSError):
                    kept.unlink(missing_ok=True)


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
    """A kept outcome (a :class:`Trial` as JSON), or None when there is none or it is not one
    (not JSON, other types, neither or both of a refusal and a summary): it is then not tried,
    and ``--trial`` writes it anew."""
    try:
        kept = msgspec.json.decode(path.read_bytes(), type=Trial)
    except (OSError, msgspec.DecodeError):
        return None
    if (kept.refusal is None) == (kept.summary is None) or kept.unchecked or kept.unreachable:
        return None
    return kept


def _write(path: Path, outcome: Trial) -> None:
    """Keep ``outcome`` at ``path`` (:func:`~patchbay.apply.journal.write_atomic`); a cache that
    cannot be written is skipped: the next ``status`` tries again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, msgspec.json.encode(outcome), mode=0o644)
    except OSError:
        return
