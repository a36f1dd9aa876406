"""The plain values planning returns and the CLI renders: every patch's status
(:class:`PatchStatus`), its :class:`PatchReport`, the base guard's :class:`GuardResult`, the
:class:`Plan` of a run and what an apply did (:class:`ApplyResult`); nothing here reads the disk.

Per-patch status combines the content state with the ledger:

========== ===============================================================================
pending    applies cleanly
applied    present, and the ledger says patchbay applied this very patch content
redundant  present, but patchbay did not apply it: the image already ships it (remove it)
outdated   the ledger holds an older version of this patch (the patch file was edited)
partial    some hunks present, others pending
conflict   some hunk neither applies nor is present
ambiguous  some hunk's context occurs more than once; refusing to guess
unlocked   remote content or an artifact hash is not pinned yet (``patchbay vendor``)
========== ===============================================================================
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

import msgspec

from ..diff.hunks import HunkState
from ..diff.hunkview import hunk_sentence
from ..environment.owners import Replacement
from ..environment.targets import Environment
from ..environment.tree import DiskView
from ..kinds import Inspection, LoadedPatch
from ..patchset.model import Patchset
from .ledger import Ledger, LedgerEntry


class PatchStatus(str, Enum):
    """Status of a patch in an environment (see the module docstring)."""

    PENDING = "pending"
    APPLIED = "applied"
    REDUNDANT = "redundant"
    OUTDATED = "outdated"
    PARTIAL = "partial"
    CONFLICT = "conflict"
    AMBIGUOUS = "ambiguous"
    UNLOCKED = "unlocked"


BLOCKING = {PatchStatus.PARTIAL, PatchStatus.CONFLICT, PatchStatus.AMBIGUOUS, PatchStatus.UNLOCKED}


class PatchReport(msgspec.Struct):
    """One patch's status, with its hunks and what applying it would change."""

    index: int
    patch: Any
    loaded: LoadedPatch
    inspection: Inspection
    status: PatchStatus
    entry: LedgerEntry | None
    notes: list[str] = msgspec.field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.patch.id)

    @property
    def by_patchbay(self) -> bool:
        """Whether what is present of this patch was written by patchbay: the ledger records
        it and it is applied (or an older version of it is)."""
        return self.entry is not None and self.status in (
            PatchStatus.APPLIED,
            PatchStatus.OUTDATED,
        )

    @property
    def applied_by(self) -> str | None:
        """``patchbay``, ``image`` (present, not applied by patchbay) or None (not present);
        never ``patchbay`` beside a status that says the patch is not there."""
        if self.by_patchbay:
            return "patchbay"
        return "image" if self.status is PatchStatus.REDUNDANT else None

    def to_json(self) -> dict[str, Any]:
        from ..diff.hunkview import hunk_counts, hunk_json

        kind = self.patch.kind
        return {
            "id": self.id,
            "kind": kind,
            "status": self.status.value,
            "content_state": self.inspection.state.value,
            "patch_sha256": self.loaded.sha256,
            "patch_identity": self.loaded.identity,
            "applied_by": self.applied_by,
            "ledger": None
            if self.entry is None
            else {
                "patch_sha256": self.entry.patch_sha256,
                "patch_identity": self.entry.patch_identity,
                "applied_at": self.entry.applied_at,
                "tool_version": self.entry.tool_version,
                "matches_tree": self.by_patchbay,
            },
            "hunk_counts": hunk_counts(self.inspection.hunks, kind, by_patchbay=self.by_patchbay),
            "hunks": [
                hunk_json(h, kind, by_patchbay=self.by_patchbay) for h in self.inspection.hunks
            ],
            "notes": self.notes,
        }


class GuardResult(msgspec.Struct):
    """Outcome of the base guard: one line per check, and the failed ones."""

    checks: list[dict[str, Any]] = msgspec.field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        return [c["message"] for c in self.checks if not c["ok"]]

    @property
    def ok(self) -> bool:
        return not self.failures


class Plan(msgspec.Struct):
    """Everything preflight learned; nothing has been written."""

    patchset: Patchset
    env: Environment
    ledger: Ledger
    guard: GuardResult
    reports: list[PatchReport]
    stale: list[LedgerEntry]
    seen: DiskView | None = None
    replaced: list[Replacement] = msgspec.field(default_factory=list)
    compiled: int | None = None  # patches judged by a bundle's compiled plan; None: no plan

    @property
    def superseded(self) -> list[str]:
        """Ids of the records a newer build of their distribution made stale (``replaced``):
        their patches were judged afresh, and ``apply`` or ``revert`` drops the records."""
        return [pid for r in self.replaced for pid in r.patch_ids]

    def with_status(self, *statuses: PatchStatus) -> list[PatchReport]:
        return [r for r in self.reports if r.status in statuses]

    def to_json(self) -> dict[str, Any]:
        return {
            "patchset": self.patchset.name,
            "image": msgspec.to_builtins(self.patchset.spec.image),
            "environment": self.env.describe(),
            "guard": {"ok": self.guard.ok, "checks": self.guard.checks},
            "patches": [r.to_json() for r in self.reports],
            "stale_ledger_entries": [e.patch_id for e in self.stale],
            "replaced_distributions": [
                {
                    "name": r.name,
                    "was": r.was,
                    "now": r.now,
                    "same_version": r.same_version,
                    "patches": r.patch_ids,
                }
                for r in self.replaced
            ],
        }


class ApplyResult(msgspec.Struct):
    """What an apply did."""

    plan: Plan
    applied: list[str] = msgspec.field(default_factory=list)
    reverted: list[str] = msgspec.field(default_factory=list)
    recovered: list[Path] = msgspec.field(default_factory=list)
    forgot: list[str] = msgspec.field(default_factory=list)  # stale records dropped (replaced)

    @property
    def nothing_to_do(self) -> bool:
        return not self.applied and not self.reverted and not self.forgot


def apply_notes(plan: Plan) -> list[str]:
    """``note:`` lines of ``apply``, after its run: each patch's notes (not a redundant one's:
    the redundant line says it), and each hunk found upstream with its context moved or away
    from its declared line; a hunk this run wrote (its patch was pending) reads ``applied at
    line N, offset K``, as ``git apply`` says a hunk succeeded at an offset."""
    out = []
    for report in plan.reports:
        if report.status is not PatchStatus.REDUNDANT:
            out += [f"note: {report.id}: {note}" for note in report.notes]
        written = report.status is PatchStatus.PENDING
        for h in report.inspection.hunks:
            if h.moved is not None or (h.offset and h.index):
                if written and h.state is HunkState.PENDING:
                    h = msgspec.structs.replace(h, state=HunkState.APPLIED)
                mine = report.by_patchbay or written
                sentence = hunk_sentence(h, report.patch.kind, by_patchbay=mine)
                out.append(f"note: {report.id}: {sentence}")
    return out


def touched_paths(patch: Any, loaded: LoadedPatch) -> tuple[list[str], list[str]]:
    """(paths the patch writes whole, paths it edits), relative to its target root."""
    if patch.kind == "artifact":
        return [f.dest for f in patch.files], []
    if patch.kind == "replace":
        return [], [e.file for e in patch.edits]
    if patch.kind == "diff" and loaded.data is not None:
        known = getattr(loaded.data, "edited_paths", None)  # a deferred parse (a bundle's plan)
        if known is not None:
            return [], list(known)
        return [], [p for fp in loaded.data.files for p in (fp.old_path, fp.new_path) if p]
    return [], []
