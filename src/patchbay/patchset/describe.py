"""What a document says about each patch of a patchset: its kind, target, content in one line,
description, upstream references and status, and what its ``covers`` cover (read by
``waiver new``, ``waiver sync`` and the audit's fixes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import PatchbayError
from ..kinds import KINDS
from .coverage import coverage_lines
from .model import Patchset


@dataclass
class PatchSummary:
    """What a waiver says about one patch (read from the patchset: :func:`patch_summaries`)."""

    id: str
    kind: str
    target: str | None
    description: str
    content: str  # one line: files touched (the kind's own description)
    upstream: list[str]
    upstream_status: str | None  # "Pending: reason"
    ref: str | None = None  # how the waiver's `patches` list names it (default: the id)
    # what a reference with `covers` covers, and the local rest with its reason
    # (patchbay.patchset.coverage.coverage_lines)
    coverage: list[str] | None = None


def patch_summaries(
    patchset: Patchset, chosen: list[tuple[int, Any]], shared: set[str]
) -> list[PatchSummary]:
    """What a waiver's generated blocks say of each chosen ``(index, patch)`` of ``patchset``
    (``shared``: ids another patchset of the repository has too, named ``patchset/id``); a
    patch whose content cannot be read says so in its ``content``, never raises."""
    summaries = []
    for index, patch in chosen:
        files = None  # the diff's (path, hunk count), for what `covers` leaves local
        try:
            loaded = KINDS[patch.kind].load(patch, patchset, index)
            unlocked = getattr(loaded, "unlocked", None)
            content = unlocked or KINDS[patch.kind].describe(patch, loaded)
            if patch.kind == "diff" and not unlocked:
                from ..kinds.diff import hunk_files  # its kind is loaded by now

                files = hunk_files(loaded.data)
        except (PatchbayError, KeyError) as exc:
            content = f"(content not readable: {getattr(exc, 'reason', exc)})"
        status = patch.upstream_status
        summaries.append(
            PatchSummary(
                id=patch.id,
                kind=patch.kind,
                target=getattr(patch, "target", None),
                description=patch.description,
                content=content,
                upstream=patch.upstream_refs,
                coverage=coverage_lines(patch, files),
                upstream_status=f"{status.status}: {status.reason}" if status else None,
                # an id another patchset of the repository has too is named patchset/id
                ref=f"{patchset.name}/{patch.id}" if patch.id in shared else None,
            )
        )
    return summaries
