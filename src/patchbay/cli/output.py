"""How plans and results look to people: a rich table, or one line per patch (``concise``, for
CI logs, in ruff's style ``patch-id: status detail``); machines get ``--format json``.

Tables never cut or split a patch id (its column does not wrap; folded only if the terminal is
narrower than the id itself); off a terminal, a table that would wrap is printed concise.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..apply.check import CLEAR, CheckItem, CheckResult, Verdict
from ..apply.results import PatchReport, PatchStatus, Plan
from ..apply.revert import RevertResult
from ..diff.hunks import HunkResult
from ..diff.hunkview import closest_lines, counts_text, hunk_counts, hunk_sentence, mixed, unit_name
from ..environment.paths import inside

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

STYLES = {
    PatchStatus.PENDING: "yellow",
    PatchStatus.APPLIED: "green",
    PatchStatus.REDUNDANT: "cyan",
    PatchStatus.OUTDATED: "magenta",
    PatchStatus.PARTIAL: "red",
    PatchStatus.CONFLICT: "red",
    PatchStatus.AMBIGUOUS: "red",
    PatchStatus.UNLOCKED: "magenta",
}

# statuses whose per-hunk detail is worth a line each
DETAILED = {PatchStatus.PARTIAL, PatchStatus.CONFLICT, PatchStatus.AMBIGUOUS}


def id_column(table: Table, width: int) -> None:
    """Add the ``patch`` column: never wrapped at a ``-``, folded (not cut) only when the
    console is narrower than the longest id (``width``)."""
    table.add_column("patch", no_wrap=True, overflow="fold", min_width=width)


def _columns(table: Table, ids: list[str], verdict: str) -> None:
    table.add_column("#", justify="right", no_wrap=True)
    id_column(table, max((len(i) for i in ids), default=5))
    table.add_column("kind", no_wrap=True)
    table.add_column(verdict, no_wrap=True)
    table.add_column("detail", overflow="fold")


def status_table(plan: Plan, *, full: bool = False) -> Table:
    """One row per patch, with per-hunk lines (and counts per state) where a patch is not all
    one state or something is wrong; every located hunk away from its declared line shows its
    offset. A long list in a detail line (many packages, many URLs) is summarised unless
    ``full`` (``status -v``)."""
    from rich.table import Table
    from rich.text import Text

    from ..summaries import shown

    table = Table(title=f"patchset {plan.patchset.name}", title_justify="left")
    _columns(table, [r.id for r in plan.reports], "status")
    for report in plan.reports:
        style = STYLES[report.status]
        table.add_row(
            str(report.index + 1),
            Text(report.id),
            report.patch.kind,
            Text(report.status.value, style=style),
            Text("\n".join(shown(patch_detail(report), full=full))),
        )
    return table


def status_lines(plan: Plan, *, full: bool = False) -> list[str]:
    """``concise``: one line per patch, ``patch-id: status detail`` (details joined by
    ``; ``), each detail summarised as in :func:`status_table` unless ``full``."""
    from ..summaries import shown

    out = []
    for report in plan.reports:
        detail = "; ".join(shown(patch_detail(report), full=full)).replace("\n", " ")
        out.append(f"{report.id}: {report.status.value}" + (f" {detail}" if detail else ""))
    return out


def guard_lines(plan: Plan) -> list[str]:
    """The base guard's failures, one line each."""
    return [f"base guard: {failure}" for failure in plan.guard.failures]


def patch_detail(report: PatchReport) -> list[str]:
    """The detail lines of one patch in ``status``: its notes, the hunk counts of a mixed
    patch, and one line per hunk that is worth one (see :mod:`patchbay.diff.hunkview`)."""
    kind, hunks = report.patch.kind, report.inspection.hunks
    mine = report.by_patchbay
    detail = list(report.notes)
    if mixed(hunks, kind, by_patchbay=mine):
        detail.append(counts_text(hunk_counts(hunks, kind, by_patchbay=mine)))
    for h in hunks:
        if report.status in DETAILED or h.moved is not None or (h.offset and h.index):
            detail.append(hunk_sentence(h, kind, by_patchbay=mine))
    return detail


def status_epilogue(plan: Plan) -> list[str]:
    """What ``status`` prints after its table: each conflicting hunk's closest place beside the
    file (``.rej``-like)."""
    out: list[str] = []
    for report in plan.reports:
        for h in report.inspection.hunks:
            if h.closest:
                out += ["", *closest_block(report.id, h, report.patch.kind)]
    return out


def closest_block(report_id: str, h: HunkResult, kind: str) -> list[str]:
    """A conflicting or ambiguous hunk after the table: its closest place beside the file
    (``.rej``-like) when there is one, else the hunk as the patch has it."""
    unit = unit_name(h, kind) or "unit"
    head = f"{report_id}: {h.file} {unit} ({h.state.value}):"
    view = closest_lines(h)
    return [head, *(view or [h.text.rstrip("\n")])]


def recovered_lines(restored: list[Path], state_dir: Path) -> list[str]:
    """What ``apply`` and ``revert`` print for an interrupted earlier run they rolled back:
    one line per file of the user's it gave back; patchbay's own files in the state folder
    (a saved original, the ledger), which the rollback restores too, are not listed.

    Args:
        restored: the absolute paths the recovery restored (``ApplyResult.recovered``).
        state_dir: the environment's state folder (an absolute path, as the journal's are).
    """
    state = os.path.abspath(state_dir)
    return [
        f"rolled back an interrupted earlier run: restored {path}"
        for path in restored
        if not inside(os.path.abspath(path), state)
    ]


def revert_lines(result: RevertResult, patchset: str, patch_ids: list[str] | None) -> list[str]:
    """What ``revert`` prints: each patch undone or cleared, newest first, or why nothing."""
    if not result.ids:
        named = f" for {', '.join(patch_ids)}" if patch_ids else ""
        return [f"nothing to revert: the ledger records no patch of {patchset}{named}"]
    out = [r.sentence("dropped without a write") for r in result.replaced]
    superseded = set(result.superseded)
    for pid in result.ids:
        if pid in superseded:
            out.append(f"cleared {pid}: its stale record only; wrote nothing")
        elif pid in result.cleared:
            out.append(
                f"cleared {pid}: its files were already back to what they were before it "
                "(reinstalled?); removed its ledger entry, wrote nothing"
            )
        else:
            out.append(f"reverted {pid}")
    return out


def print_guard(plan: Plan, console: Console) -> None:
    """The base guard's failures, if any (in red on a terminal)."""
    from rich.text import Text

    for failure in plan.guard.failures:
        console.print(Text("base guard: ", style="red") + Text(failure))


CHECK_STYLES = {
    Verdict.APPLIES: "yellow",
    Verdict.APPLIED: "green",
    Verdict.OUTDATED: "red",
    Verdict.UPSTREAM: "cyan",
    Verdict.PARTIAL: "red",
    Verdict.CONFLICT: "red",
    Verdict.AMBIGUOUS: "red",
    Verdict.UNLOCKED: "magenta",
}


def check_detail(item: CheckItem) -> list[str]:
    """The detail lines of one patch in ``check``: the hunk counts of a mixed patch and one
    line per hunk where the verdict is not clear, or where a hunk was found away from its
    declared line or with its context moved."""
    kind, hunks = item.report.patch.kind, item.report.inspection.hunks
    detail = []
    if mixed(hunks, kind, by_patchbay=False):
        detail.append(counts_text(hunk_counts(hunks, kind, by_patchbay=False)))
    for h in hunks:
        if item.verdict not in CLEAR or h.moved is not None or (h.offset and h.index):
            detail.append(hunk_sentence(h, kind, by_patchbay=False))
    if item.verdict in CLEAR:
        detail.extend(item.report.inspection.notes)
    return detail


def check_table(result: CheckResult) -> Table:
    """``check``'s table: one row per patch with its verdict and detail."""
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title=f"patchset {result.plan.patchset.name} on the candidate", title_justify="left"
    )
    _columns(table, [i.report.id for i in result.items], "verdict")
    for n, item in enumerate(result.items, start=1):
        table.add_row(
            str(n),
            Text(item.report.id),
            item.report.patch.kind,
            Text(item.verdict.value, style=CHECK_STYLES[item.verdict]),
            Text("\n".join(check_detail(item))),
        )
    return table


def check_lines(result: CheckResult) -> list[str]:
    """``concise``: the guard's failures, one line per patch ``patch-id: verdict detail``,
    and the patches the candidate makes unnecessary."""
    out = guard_lines(result.plan)
    for item in result.items:
        detail = "; ".join(check_detail(item)).replace("\n", " ")
        out.append(f"{item.report.id}: {item.verdict.value}" + (f" {detail}" if detail else ""))
    if result.droppable:
        out.append(
            f"{len(result.droppable)} patch(es) can be dropped with this image: "
            + ", ".join(result.droppable)
        )
    return out


def check_epilogue(result: CheckResult) -> list[str]:
    """What ``check`` prints after its table: each conflicting or ambiguous hunk's closest
    place (or the hunk itself), and the patches the candidate makes unnecessary."""
    out: list[str] = []
    for item in result.items:
        for h in item.report.inspection.hunks:
            if h.closest or h.text:
                out += ["", *closest_block(item.report.id, h, item.report.patch.kind)]
    if result.droppable:
        out += [
            "",
            f"{len(result.droppable)} patch(es) can be dropped with this image: "
            + ", ".join(result.droppable),
        ]
    return out
