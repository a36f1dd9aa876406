"""``check``: every patch against a candidate image, before an image bump; writes nothing.

The candidate is judged by the same classification engine as ``status``, with the candidate
environment's own ledger (the state-folder rules of ``status``): a patch patchbay itself
applied there is ``applied``, never ``upstream`` (its result is there because patchbay wrote
it, not because the image ships it). Each patch gets a verdict for the bump:

=========== ===========================================================================
applies     still needed, and applies cleanly
applied     patchbay applied it in the candidate environment (its ledger says so): still
            needed, not droppable; judge a fresh copy of the image to know more
outdated    patchbay applied an older version of it there
upstream    its result is already in the candidate: drop the patch with the bump
partial     some hunks are already there, others pending: trim the patch (hunks named)
conflict    a hunk neither applies nor is present (the closest matching place is named)
ambiguous   a hunk's context occurs more than once: refusing to guess
=========== ===========================================================================

A patch is never reverse-applied to "fix" what looks like a reversal.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import msgspec

from ..diff.hunkview import hunk_counts, hunk_json
from ..environment.targets import Environment
from ..patchset.model import Patchset
from .plan import make_plan
from .results import PatchReport, PatchStatus, Plan


class Verdict(str, Enum):
    """What a candidate image means for one patch."""

    APPLIES = "applies"
    APPLIED = "applied"
    OUTDATED = "outdated"
    UPSTREAM = "upstream"
    PARTIAL = "partial"
    CONFLICT = "conflict"
    AMBIGUOUS = "ambiguous"
    UNLOCKED = "unlocked"


_VERDICTS = {
    PatchStatus.PENDING: Verdict.APPLIES,
    PatchStatus.APPLIED: Verdict.APPLIED,  # with a ledger entry only: patchbay wrote it
    PatchStatus.OUTDATED: Verdict.OUTDATED,
    PatchStatus.REDUNDANT: Verdict.UPSTREAM,
    PatchStatus.PARTIAL: Verdict.PARTIAL,
    PatchStatus.CONFLICT: Verdict.CONFLICT,
    PatchStatus.AMBIGUOUS: Verdict.AMBIGUOUS,
    PatchStatus.UNLOCKED: Verdict.UNLOCKED,
}

CLEAR = {Verdict.APPLIES, Verdict.APPLIED, Verdict.UPSTREAM}

APPLIED_NOTE = (
    "applied by patchbay in this environment (its ledger records it), so its presence says "
    "nothing of the image: keep the patch; check a fresh copy of the image to see if it ships it"
)


class CheckItem(msgspec.Struct):
    """One patch's verdict on the candidate."""

    report: PatchReport
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.report.id,
            "kind": self.report.patch.kind,
            "verdict": self.verdict.value,
            "hunk_counts": hunk_counts(
                self.report.inspection.hunks, self.report.patch.kind, by_patchbay=False
            ),
            "hunks": [
                hunk_json(h, self.report.patch.kind, by_patchbay=False)
                for h in self.report.inspection.hunks
            ],
            "notes": self.report.inspection.notes,
        }


class CheckResult(msgspec.Struct):
    """All verdicts; ``ok`` when every patch applies or is already upstream."""

    plan: Plan
    items: list[CheckItem]

    @property
    def ok(self) -> bool:
        return all(item.verdict in CLEAR for item in self.items)

    @property
    def droppable(self) -> list[str]:
        """Ids of the patches the candidate makes unnecessary."""
        return [i.report.id for i in self.items if i.verdict is Verdict.UPSTREAM]

    def to_json(self) -> dict[str, Any]:
        return {
            "patchset": self.plan.patchset.name,
            "candidate": self.plan.env.describe(),
            "guard": {"ok": self.plan.guard.ok, "checks": self.plan.guard.checks},
            "ok": self.ok,
            "droppable": self.droppable,
            "patches": [item.to_json() for item in self.items],
        }


def check_patchset(patchset: Patchset, env: Environment) -> CheckResult:
    """Judge every patch of ``patchset`` on the candidate environment ``env``.

    The base guard is evaluated and reported but does not block: a candidate image is expected
    to differ from the pinned one. The candidate's ledger (``env.state_dir``) is read: what
    patchbay applied there is ``applied``, not ``upstream``.

    Raises:
        InputError: a patch's content is missing or corrupt.
        RefusedError: a patch path is unsafe in the candidate tree.
    """
    plan = make_plan(patchset, env)
    for report in plan.reports:
        if report.status is PatchStatus.APPLIED:
            report.inspection.notes.append(APPLIED_NOTE)
    return CheckResult(plan, [CheckItem(r, _VERDICTS[r.status]) for r in plan.reports])
