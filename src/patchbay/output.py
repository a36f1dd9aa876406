"""How plans and results look to people (rich tables); machines get ``--json``."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .engine import PatchStatus, Plan

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


def status_table(plan: Plan) -> Table:
    """One row per patch, with per-hunk lines where a patch is not all one state."""
    table = Table(title=f"patchset {plan.patchset.name}", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("patch")
    table.add_column("kind")
    table.add_column("status")
    table.add_column("detail")
    for report in plan.reports:
        style = STYLES[report.status]
        detail = list(report.notes)
        if report.status in DETAILED:
            for h in report.inspection.hunks:
                unit = f"hunk {h.index}" if h.index else "file"
                if report.patch.kind == "replace":
                    unit = f"edit {h.index}"
                line = f" line {h.line}" if h.line else ""
                extra = f" — {h.detail}" if h.detail else ""
                detail.append(f"{h.file} {unit}: {h.state.value}{line}{extra}")
        table.add_row(
            str(report.index + 1),
            Text(report.id),
            report.patch.kind,
            Text(report.status.value, style=style),
            Text("\n".join(detail)),
        )
    return table


def print_guard(plan: Plan, console: Console) -> None:
    """The base guard's failures, if any."""
    for failure in plan.guard.failures:
        console.print(Text("base guard: ", style="red") + Text(failure))
