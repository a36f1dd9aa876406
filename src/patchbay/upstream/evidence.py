"""Content evidence: what an image's files say about a patch, and how it bends a verdict.

The forge says whether a fix was merged and whether the pinned commit holds it; the files of an
image say whether the patch's change is really there, hunk by hunk (the same classification as
``status`` and ``check``). Whenever an image is at hand (the pinned one with ``--python`` /
``--root``, a candidate with ``--candidate-python`` / ``--candidate-root``), content wins over
the forge where they disagree, so that the report, ``check`` and the audit's PB501 never
contradict each other:

- the pinned image already ships the whole patch (``redundant``): ``remove``;
- an image holds part of it (some hunks upstream, others still pending or conflicting) while
  the forge says ``remove`` or ``bump``: ``refresh`` ("part upstream in X; hunks 2-3 still
  needed"): the patch is to be trimmed, not dropped;
- a candidate on which the patch conflicts although the forge says ``bump`` or ``remove``:
  ``refresh`` (the merged fix differs from what is carried: rebase it);
- the pinned image has none of it although the forge says the fix is in the pin: ``attention``;
- a candidate that ships the whole patch (``check``: ``upstream``) while the forge says
  ``keep`` or ``attention``: ``bump`` (an image like the candidate removes it).

A candidate on which the patch still applies cleanly leaves ``bump`` as it is (the candidate
may predate the fix), with a warning.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..patchset.coverage import hunk_ranges
from .verdicts import Assessment, ContentEvidence, Verdict

if TYPE_CHECKING:
    from ..apply.results import PatchReport

#: hunk words that mean "the change is in this image" (see :mod:`patchbay.diff.hunkview`)
_PRESENT_WORDS = frozenset({"upstream", "present"})


def evidence_of(report: PatchReport, image: str, where: str, state: str) -> ContentEvidence:
    """The evidence of one patch's report (from ``make_plan``) on an image.

    Args:
        report: the patch's :class:`~patchbay.apply.results.PatchReport`.
        image: ``pinned`` or ``candidate``.
        where: how messages name the image.
        state: the word to record (the status, or ``check``'s verdict).
    """
    from ..diff.hunkview import hunk_counts, state_word

    kind, hunks = report.patch.kind, report.inspection.hunks
    mine = report.by_patchbay
    words = [state_word(h, kind, by_patchbay=mine) for h in hunks]
    present = tuple(n for n, w in enumerate(words, 1) if w in _PRESENT_WORDS)
    needed = tuple(n for n, w in enumerate(words, 1) if w not in _PRESENT_WORDS | {"applied"})
    counts = hunk_counts(hunks, kind, by_patchbay=mine)
    return ContentEvidence(image, where, state, present, needed, counts)


def numbers(values: Iterable[int]) -> str:
    """``2-3``, ``1, 3``, ``1-2, 5``: hunk numbers as ranges."""
    ordered = sorted(values)
    return hunk_ranges(ordered).split(" ", 1)[1] if ordered else ""


def _hunks(values: tuple[int, ...]) -> str:
    return f"hunk{'s' if len(values) > 1 else ''} {numbers(values)}"


def weigh(a: Assessment, evidence: list[ContentEvidence]) -> None:
    """Change ``a``'s verdict and reason by the content evidence (see the module docstring);
    waiver review dates are applied afterwards by the caller, as before."""
    a.evidence = list(evidence)
    forge = a.verdict
    for ev in evidence:  # the pinned image first: it is what runs today
        if ev.image == "pinned" and ev.whole:
            a.verdict = Verdict.REMOVE
            a.reason = f"{ev.where} already ships this patch's content (status: {ev.state})"
            return
        if ev.part and forge in (Verdict.REMOVE, Verdict.BUMP):
            a.verdict = Verdict.REFRESH
            a.reason = (
                f"part upstream in {ev.where} ({_hunks(ev.present)}); {_hunks(ev.needed)} "
                f"still needed; trim the patch ({a.reason})"
            )
            return
        if ev.image == "pinned" and forge is Verdict.REMOVE and ev.state == "pending":
            a.verdict = Verdict.ATTENTION
            a.reason = (
                f"upstream says the fix is in the pinned commit, but {ev.where} has none of "
                f"this patch ({a.reason})"
            )
            return
        if ev.image == "pinned" and forge is Verdict.REMOVE and not ev.whole:
            # remove only when every hunk is there by content
            a.verdict = Verdict.REFRESH
            a.reason = (
                f"upstream says the fix is in the pinned commit, but the patch is {ev.state} "
                f"on {ev.where} ({_hunks(ev.needed)} still needed); refresh it ({a.reason})"
            )
            return
        if ev.image == "candidate" and ev.conflicts and forge in (Verdict.REMOVE, Verdict.BUMP):
            a.verdict = Verdict.REFRESH
            a.reason = (
                f"merged upstream, but the patch is {ev.state} on {ev.where} "
                f"({_hunks(ev.needed)} still needed); rebase it ({a.reason})"
            )
            return
        if ev.image == "candidate" and ev.whole and forge in (Verdict.KEEP, Verdict.ATTENTION):
            a.verdict = Verdict.BUMP
            a.reason = (
                f"{ev.where} already ships this patch's content (check: upstream); an image "
                f"like it removes the patch ({a.reason})"
            )
            return
        if ev.image == "candidate" and ev.state == "applies" and forge is Verdict.BUMP:
            a.warnings.append(f"{ev.where} does not carry the fix yet (the patch still applies)")


def pinned_evidence(
    patchset: object, *, python: str | None, root: object | None
) -> dict[str, ContentEvidence]:
    """Every patch's evidence on the pinned image (``status``: the ledger counts, so a patch
    patchbay applied is not mistaken for one the image ships), by patch id.

    Raises:
        PatchbayError: the environment cannot be resolved or a patch cannot be read.
    """
    from ..apply.plan import make_plan
    from ..environment.targets import resolve_environment

    env = resolve_environment(patchset, python=python, root=root)  # type: ignore[arg-type]
    plan = make_plan(patchset, env)  # type: ignore[arg-type]
    return {
        r.id: evidence_of(r, "pinned", "the pinned image", r.status.value) for r in plan.reports
    }


def candidate_evidence(result: object) -> dict[str, ContentEvidence]:
    """Every patch's evidence from ``check`` on a candidate image
    (:class:`~patchbay.apply.check.CheckResult`), by patch id."""
    return {
        item.report.id: evidence_of(item.report, "candidate", "the candidate", item.verdict.value)
        for item in result.items  # type: ignore[attr-defined]
    }
