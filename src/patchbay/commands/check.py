"""``patchbay check``: every patch against a candidate image, before an image bump."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..check import CLEAR, CheckItem, CheckResult, Verdict, check_patchset
from ..output import guard_lines, id_column, print_guard
from .common import console, environment, load, print_json, read_format, say

if TYPE_CHECKING:
    from rich.table import Table

STYLES = {
    Verdict.APPLIES: "yellow",
    Verdict.UPSTREAM: "cyan",
    Verdict.PARTIAL: "red",
    Verdict.CONFLICT: "red",
    Verdict.AMBIGUOUS: "red",
    Verdict.UNLOCKED: "magenta",
}


def run(
    patchset_arg: str,
    *,
    python: str | None,
    root: Path | None,
    output_format: str | None = None,
    probe_timeout: float | None = None,
    as_json: bool = False,
) -> int:
    """Print each patch's verdict in ``output_format`` (``table``, ``concise``, ``json``);
    exit 0 when all apply or are upstream, 1 otherwise."""
    if as_json:
        output_format = "json"
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, None, probe_timeout=probe_timeout)
    result = check_patchset(patchset, env)
    if output_format == "json":
        print_json(result.to_json())
        return 0 if result.ok else 1
    table = _table(result) if output_format != "concise" else None
    if read_format(output_format, table) == "concise":
        for line in guard_lines(result.plan):
            say(line)
        for item in result.items:
            detail = "; ".join(_details(item))
            say(f"{item.report.id}: {item.verdict.value}" + (f" {detail}" if detail else ""))
        if result.droppable:
            say(
                f"{len(result.droppable)} patch(es) can be dropped with this image: "
                + ", ".join(result.droppable)
            )
    else:
        print_guard(result.plan, console)
        console.print(table)
        for item in result.items:
            for h in item.report.inspection.hunks:
                if h.text:
                    say(f"\n{item.report.id}: {h.file} hunk {h.index} ({h.state.value}):")
                    console.print(h.text.rstrip("\n"), markup=False, highlight=False)
        if result.droppable:
            say(
                f"\n{len(result.droppable)} patch(es) can be dropped with this image: "
                + ", ".join(result.droppable)
            )
    return 0 if result.ok else 1


def _details(item: CheckItem) -> list[str]:
    detail = []
    if item.verdict not in CLEAR:
        for h in item.report.inspection.hunks:
            unit = f"hunk {h.index}" if h.index else "file"
            where = f" at line {h.line}" if h.line else ""
            extra = f" — {h.detail}" if h.detail else ""
            state = "present" if h.state.value == "applied" else h.state.value
            detail.append(f"{h.file} {unit}: {state}{where}{extra}")
    return detail


def _table(result: CheckResult) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title=f"patchset {result.plan.patchset.name} on the candidate", title_justify="left"
    )
    table.add_column("#", justify="right", no_wrap=True)
    id_column(table, max((len(i.report.id) for i in result.items), default=5))
    table.add_column("kind", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for n, item in enumerate(result.items, start=1):
        table.add_row(
            str(n),
            Text(item.report.id),
            item.report.patch.kind,
            Text(item.verdict.value, style=STYLES[item.verdict]),
            Text("\n".join(_details(item))),
        )
    return table
