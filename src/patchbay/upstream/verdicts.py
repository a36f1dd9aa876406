"""The values of an upstream verdict: a reference's state, a patch's verdict, an image's content
evidence and the assessment that holds them. Plain data: :mod:`.status` fills them in from the
forge's answers, :mod:`.evidence` bends a verdict by an image's content, the report shows them.

A reference's state comes from the forge (:mod:`.github`): a pull request is ``open``,
``draft``, ``merged``, ``closed`` (without merge), ``reverted`` (merged, then undone on its base
branch) or ``unknown`` (the forge did not answer: never guessed); an issue is ``open`` or
``closed`` (with the PR or commit that closed it, when the forge says); a commit is
``on-branch`` (on the default branch), ``not-on-branch``, ``reverted`` or ``unknown``
(:mod:`.fixes` says how a fix is found in the pinned image).

Verdicts, per patch:

========= ===================================================================================
remove    the fix is in the pinned image (or ``status`` found the patch's content there)
bump      merged after the pinned commit: an image built from the named commit removes it
refresh   merged, but an image's content shows part of the patch still needed (or a conflict):
          trim or rebase it (content evidence, :mod:`.evidence`)
keep      upstream is open or draft, or the patch is carried by design (Upstream-Status
          ``Inappropriate`` with a reason, and no reference)
attention closed without merge, reverted, no upstream reference, unknown, or the waiver's
          review date has passed (also for a patch carried by design)
========= ===================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from enum import Enum
from pathlib import Path
from typing import Any

from .refs import UpstreamRef


class RefState(str, Enum):
    """The upstream state of one reference (see the module docstring)."""

    OPEN = "open"
    DRAFT = "draft"
    MERGED = "merged"
    CLOSED = "closed"
    REVERTED = "reverted"
    UNKNOWN = "unknown"
    ON_BRANCH = "on-branch"
    NOT_ON_BRANCH = "not-on-branch"


class Verdict(str, Enum):
    """What to do with a patch (see the module docstring)."""

    REMOVE = "remove"
    BUMP = "bump"
    REFRESH = "refresh"
    KEEP = "keep"
    ATTENTION = "attention"


VERDICTS = (Verdict.REMOVE, Verdict.BUMP, Verdict.REFRESH, Verdict.KEEP, Verdict.ATTENTION)


@dataclass
class RefStatus:
    """One reference's state and what it says about the patch.

    Attributes:
        ref: the parsed reference.
        state: see :class:`RefState`.
        verdict: what this reference alone says.
        reason: one line: why.
        fix: True for a pull request or commit (the change itself); False for an issue.
        title, url: as the forge gives them.
        merged_at: when the pull request was merged.
        fix_commit: the commit that carries the fix upstream (merge commit, the commit itself,
            or the commit that closed the issue).
        base_ref: the branch the fix went into.
        in_image: the fix is in the pinned image (None: could not be decided).
        needed_commit: for ``bump``, the commit an image must be built from (or after).
        reverted_by: the commit that reverted the fix on the branch, if it is still reverted.
        closed_by: for an issue, what closed it (``owner/repo#N`` or a commit id).
        warnings: things to know that do not change the verdict.
    """

    ref: UpstreamRef
    state: RefState
    verdict: Verdict
    reason: str
    fix: bool = True
    title: str | None = None
    url: str | None = None
    merged_at: datetime | None = None
    fix_commit: str | None = None
    base_ref: str | None = None
    in_image: bool | None = None
    needed_commit: str | None = None
    reverted_by: str | None = None
    closed_by: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The state for a table cell, e.g. ``merged``, ``closed by #12 (merged)``."""
        if self.closed_by:
            return f"{self.state.value} by {self.closed_by}"
        if self.state in (RefState.ON_BRANCH, RefState.NOT_ON_BRANCH) and self.base_ref:
            return ("on " if self.state is RefState.ON_BRANCH else "not on ") + self.base_ref
        return self.state.value

    def to_json(self) -> dict[str, Any]:
        return {
            "ref": self.ref.text,
            "kind": self.ref.kind,
            "repository": self.ref.repository,
            "state": self.state.value,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "title": self.title,
            "url": self.url,
            "merged_at": _iso(self.merged_at),
            "fix_commit": self.fix_commit,
            "base_ref": self.base_ref,
            "in_image": self.in_image,
            "needed_commit": self.needed_commit,
            "reverted_by": self.reverted_by,
            "closed_by": self.closed_by,
            "warnings": self.warnings,
        }


@dataclass(frozen=True)
class WaiverReview:
    """The review date of the waiver covering a patch (``review_by`` or ``expires``, the
    earlier), or a problem reading it."""

    waiver: str
    review: date | None
    path: Path | None = None
    problem: str | None = None


@dataclass(frozen=True)
class ContentEvidence:
    """One image's verdict on one patch.

    Attributes:
        image: ``pinned`` or ``candidate``.
        where: the image for messages (``the pinned image``, ``the candidate``).
        state: the patch's state there: ``status``'s word on the pinned image (``redundant``,
            ``applied``, ``partial``...), ``check``'s verdict on a candidate (``upstream``,
            ``applies``, ``partial``, ``conflict``...).
        present: 1-based numbers (in patch order) of the hunks found in the image.
        needed: 1-based numbers of the hunks not in it (pending, conflicting, ambiguous).
        counts: hunks per word (``1 upstream, 1 pending, 1 conflict``).
    """

    image: str
    where: str
    state: str
    present: tuple[int, ...] = ()
    needed: tuple[int, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def whole(self) -> bool:
        """The image ships the whole patch."""
        return self.state in ("redundant", "upstream")

    @property
    def part(self) -> bool:
        """Some hunks are in the image and others are not."""
        return bool(self.present) and bool(self.needed)

    @property
    def conflicts(self) -> bool:
        return self.state in ("conflict", "ambiguous", "partial")

    def to_json(self) -> dict[str, object]:
        return {
            "image": self.image,
            "state": self.state,
            "present_hunks": list(self.present),
            "needed_hunks": list(self.needed),
            "hunk_counts": self.counts,
        }


@dataclass
class Assessment:
    """One patch: its references' states and its verdict.

    Attributes:
        patchset: the patchset's name; ``patchset_path`` its YAML file.
        patch_id: the patch id; ``index`` its position; ``line`` the line of its ``upstream``
            key (or of its ``id``) in the YAML file.
        verdict: see :class:`Verdict`; ``reason`` one line saying why.
        refs: the references' states, in the patchset's order.
        needed_commits: for ``bump``, the commits a newer image must contain.
        merged_at: the latest merge among the fixes (for "days since merged").
        upstream_status: the patch's Yocto ``Upstream-Status`` and reason, if declared.
        waiver: the waiver covering the patch and its review date, if any.
        warnings: notes that do not change the verdict.
        evidence: what the images' content said (:mod:`.evidence`), when an image was given.
        coverage: what references with ``covers`` cover and the local rest with its reason
            (:func:`patchbay.patchset.coverage.coverage_lines`).
    """

    patchset: str
    patchset_path: Path
    patch_id: str
    index: int
    line: int | None
    verdict: Verdict
    reason: str
    refs: list[RefStatus] = field(default_factory=list)
    needed_commits: list[str] = field(default_factory=list)
    merged_at: datetime | None = None
    upstream_status: str | None = None
    waiver: WaiverReview | None = None
    warnings: list[str] = field(default_factory=list)
    evidence: list[ContentEvidence] = field(default_factory=list)
    coverage: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """``patchset/patch-id``."""
        return f"{self.patchset}/{self.patch_id}"

    def to_json(self) -> dict[str, Any]:
        return {
            "patchset": self.patchset,
            "patchset_file": str(self.patchset_path),
            "line": self.line,
            "id": self.patch_id,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "needed_commits": self.needed_commits,
            "merged_at": _iso(self.merged_at),
            "upstream_status": self.upstream_status,
            "waiver": None
            if self.waiver is None
            else {
                "id": self.waiver.waiver,
                "review_by": self.waiver.review.isoformat() if self.waiver.review else None,
                "problem": self.waiver.problem,
            },
            "warnings": self.warnings,
            "evidence": [e.to_json() for e in self.evidence],
            "coverage": self.coverage,
            "refs": [r.to_json() for r in self.refs],
        }


def _iso(when: datetime | None) -> str | None:
    return when.isoformat().replace("+00:00", "Z") if when else None
