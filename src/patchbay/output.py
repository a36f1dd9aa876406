"""How plans look to people: a rich table, or one line per patch (``concise``, for CI logs, in
ruff's style ``patch-id: status detail``); machines get ``--format json``.

Tables never cut or split a patch id (its column does not wrap; folded only if the terminal is
narrower than the id itself); off a terminal, a table that would wrap is printed concise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .engine import PatchReport, PatchStatus, Plan

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


def _details(report: PatchReport) -> list[str]:
    detail = list(report.notes)
    if report.status in DETAILED:
        for h in report.inspection.hunks:
            unit = f"hunk {h.index}" if h.index else "file"
            if report.patch.kind == "replace":
                unit = f"edit {h.index}"
            line = f" line {h.line}" if h.line else ""
            extra = f" — {h.detail}" if h.detail else ""
            detail.append(f"{h.file} {unit}: {h.state.value}{line}{extra}")
    return detail


def id_column(table: Table, width: int) -> None:
    """Add the ``patch`` column: never wrapped at a ``-``, folded (not cut) only when the
    console is narrower than the longest id (``width``)."""
    table.add_column("patch", no_wrap=True, overflow="fold", min_width=width)


def status_table(plan: Plan) -> Table:
    """One row per patch, with per-hunk lines where a patch is not all one state."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"patchset {plan.patchset.name}", title_justify="left")
    table.add_column("#", justify="right", no_wrap=True)
    id_column(table, max((len(r.id) for r in plan.reports), default=5))
    table.add_column("kind", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for report in plan.reports:
        table.add_row(
            str(report.index + 1),
            Text(report.id),
            report.patch.kind,
            Text(report.status.value, style=STYLES[report.status]),
            Text("\n".join(_details(report))),
        )
    return table


def status_lines(plan: Plan) -> list[str]:
    """``concise``: one line per patch, ``patch-id: status detail`` (details joined by
    ``; ``)."""
    out = []
    for report in plan.reports:
        detail = "; ".join(_details(report)).replace("\n", " ")
        out.append(f"{report.id}: {report.status.value}" + (f" {detail}" if detail else ""))
    return out


def guard_lines(plan: Plan) -> list[str]:
    """The base guard's failures, one line each."""
    return [f"base guard: {failure}" for failure in plan.guard.failures]


def print_guard(plan: Plan, console: Console) -> None:
    """The base guard's failures, if any (in red on a terminal)."""
    from rich.text import Text

    for failure in plan.guard.failures:
        console.print(Text("base guard: ", style="red") + Text(failure))
