"""``patchbay check``: every patch against a candidate image, before an image bump."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from ..check import CLEAR, CheckResult, Verdict, check_patchset
from ..output import print_guard
from .common import console, environment, load, print_json

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
    as_json: bool,
    probe_timeout: float | None = None,
) -> int:
    """Print each patch's verdict; exit 0 when all apply or are upstream, 1 otherwise."""
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, None, probe_timeout=probe_timeout)
    result = check_patchset(patchset, env)
    if as_json:
        print_json(result.to_json())
    else:
        print_guard(result.plan, console)
        console.print(_table(result))
        for item in result.items:
            for h in item.report.inspection.hunks:
                if h.text:
                    console.print(
                        f"\n{item.report.id}: {h.file} hunk {h.index} ({h.state.value}):",
                        markup=False,
                    )
                    console.print(h.text.rstrip("\n"), markup=False, highlight=False)
        if result.droppable:
            console.print(
                f"\n{len(result.droppable)} patch(es) can be dropped with this image: "
                + ", ".join(result.droppable),
                markup=False,
            )
    return 0 if result.ok else 1


def _table(result: CheckResult) -> Table:
    table = Table(
        title=f"patchset {result.plan.patchset.name} on the candidate", title_justify="left"
    )
    for column in ("#", "patch", "kind", "verdict", "detail"):
        table.add_column(column)
    for n, item in enumerate(result.items, start=1):
        detail = []
        if item.verdict not in CLEAR:
            for h in item.report.inspection.hunks:
                unit = f"hunk {h.index}" if h.index else "file"
                where = f" at line {h.line}" if h.line else ""
                extra = f" — {h.detail}" if h.detail else ""
                state = "present" if h.state.value == "applied" else h.state.value
                detail.append(f"{h.file} {unit}: {state}{where}{extra}")
        style = STYLES[item.verdict]
        table.add_row(
            str(n),
            item.report.id,
            item.report.patch.kind,
            f"[{style}]{item.verdict.value}[/]",
            "\n".join(detail),
        )
    return table
