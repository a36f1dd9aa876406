"""The upstream report as Markdown (for an issue or chat): a summary, the changes since the last
run, the candidate image, a table of patches and a detail section per verdict. Within a length
limit (GitHub's on an issue body), detail sections are cut first, then table rows, never the
summary, and a note says what was cut; :data:`MARKER` marks the tracking issue's body.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import __version__
from .report import Report, Row, iso_time
from .verdicts import VERDICTS, Verdict

MARKER = "<!-- patchbay:upstream-report -->"


def _cell(text: str) -> str:
    text = text.replace("\n", " ").replace("|", "\\|")
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _refs_markdown(row: Row) -> str:
    parts = []
    for r in row.assessment.refs:
        name = _cell(r.ref.short)
        parts.append(f"[{name}]({r.url})" if r.url else name)
    return "<br>".join(parts) or "—"


def _states_markdown(row: Row) -> str:
    return "<br>".join(_cell(r.label) for r in row.assessment.refs) or "—"


def _num(value: int | None) -> str:
    return "—" if value is None else str(value)


def _summary_line(report: Report) -> str:
    counts = report.counts
    total = len(report.rows)
    sets = len(report.patchsets)
    parts = [
        f"**{counts[v.value]} {v.value}**"
        if v is Verdict.REMOVE and counts[v.value]
        else f"{counts[v.value]} {v.value}"
        for v in VERDICTS
    ]
    return (
        f"As of {report.today.isoformat()}: {total} carried patch{'es' if total != 1 else ''} "
        f"in {sets} patchset{'s' if sets != 1 else ''}: " + " · ".join(parts) + "."
    )


def _changes_markdown(report: Report) -> list[str]:
    if report.previous is None:
        return ["First report: there is no earlier run to compare with."]
    when = report.previous.get("date") or report.previous.get("time") or "?"
    lines = report.changes()
    if not lines:
        return [f"No change since the last run ({when})."]
    return [f"Since the last run ({when}):", "", *(f"- {line}" for line in lines)]


def _candidate_markdown(report: Report) -> list[str]:
    if report.candidate is None:
        return []
    out = ["## The candidate image", ""]
    n = len(report.droppable)
    if n:
        names = ", ".join(f"`{k}`" for k in report.droppable)
        out.append(
            f"These {n} patch{'es' if n != 1 else ''} can be dropped with this bump: {names}."
        )
    else:
        out.append("No patch can be dropped with this bump.")
    if report.to_refresh:
        names = ", ".join(f"`{k}`" for k in report.to_refresh)
        out.append(f"`patchbay rebase` would refresh (3-way merge) {names}.")
    for c in report.candidate:
        if c.problem:
            out.append(f"- `{c.patchset}`: not checked: {_cell(c.problem)}")
    out.append("")
    return out


def _table_markdown(rows: Sequence[Row], with_candidate: bool) -> list[str]:
    head = (
        "| patchset | patch | upstream | state | verdict | carried (days) | since merged (days) |"
    )
    rule = "|---|---|---|---|---|---:|---:|"
    if with_candidate:
        head += " candidate |"
        rule += "---|"
    lines = [head, rule]
    for row in rows:
        a = row.assessment
        verdict = f"**{a.verdict.value}**" if a.verdict is not Verdict.KEEP else a.verdict.value
        line = (
            f"| {_cell(a.patchset)} | `{_cell(a.patch_id)}` | {_refs_markdown(row)} | "
            f"{_states_markdown(row)} | {verdict} | {_num(row.days_carried)} | "
            f"{_num(row.days_since_merged)} |"
        )
        if with_candidate:
            line += f" {_cell(row.candidate_label)} |"
        lines.append(line)
    return lines


def _details_markdown(rows: Sequence[Row], verdict: Verdict) -> list[str]:
    chosen = [r for r in rows if r.assessment.verdict is verdict]
    if not chosen:
        return []
    titles = {
        Verdict.ATTENTION: "Needs attention",
        Verdict.REMOVE: "Remove: the fix is in the pinned image",
        Verdict.BUMP: "Bump: a newer image removes the patch",
        Verdict.REFRESH: "Refresh: part of the patch is upstream, or it conflicts",
        Verdict.KEEP: "Keep: upstream is still open",
    }
    out = [f"### {titles[verdict]}", ""]
    for row in chosen:
        a = row.assessment
        line = f"- `{a.key}`: {_cell(a.reason)}"
        if a.needed_commits:
            line += "; needed: " + ", ".join(f"`{c}`" for c in a.needed_commits)
        out.append(line)
        for w in a.warnings:
            out.append(f"  - warning: {_cell(w)}")
        for c in a.coverage:
            out.append(f"  - coverage: {_cell(c)}")
        if a.upstream_status and a.upstream_status not in a.reason:
            out.append(f"  - Upstream-Status: {_cell(a.upstream_status)}")
    out.append("")
    return out


def render_markdown(report: Report, *, issue: bool = False, limit: int | None = None) -> str:
    """The report as Markdown.

    Args:
        report: the report.
        issue: add the hidden marker and fingerprint of the tracking issue.
        limit: maximum length in characters; detail sections are cut first (keep, bump,
            remove, then attention), then table rows from the end, and a note says so. The
            summary is never cut.
    """
    head = [MARKER, ""] if issue else []
    head += ["# Carried patches: upstream report", "", _summary_line(report), ""]
    head += ["## Changes", "", *_changes_markdown(report), ""]
    head += _candidate_markdown(report)
    with_candidate = report.candidate is not None
    table = _table_markdown(report.rows, with_candidate)
    details = {v: _details_markdown(report.rows, v) for v in VERDICTS}
    detail_order = [Verdict.ATTENTION, Verdict.REMOVE, Verdict.REFRESH, Verdict.BUMP, Verdict.KEEP]
    tail = [f"<!-- patchbay:fingerprint={report.fingerprint()} -->"] if issue else []
    footer = [
        f"<sub>patchbay {__version__}, {iso_time(report.generated)}; days are counted to "
        f"{report.today.isoformat()}.</sub>",
        "",
    ]

    def assemble(kept_details: list[Verdict], rows: int, note: str | None) -> str:
        parts = [*head, "## Patches", "", *table[: 2 + rows], ""]
        if rows < len(report.rows):
            parts += [f"… and {len(report.rows) - rows} more rows (cut, see below).", ""]
        kept = [line for v in detail_order if v in kept_details for line in details[v]]
        if kept:
            parts += ["## Details", "", *kept]
        if note:
            parts += [f"> **Note:** {note}", ""]
        parts += [*footer, *tail]
        return "\n".join(parts).rstrip("\n") + "\n"

    kept_details = [v for v in detail_order if details[v]]
    text = assemble(kept_details, len(report.rows), None)
    if limit is None or len(text) <= limit:
        return text
    cut: list[str] = []
    while kept_details:
        dropped = kept_details.pop()
        cut.append(dropped.value)
        note = _cut_note(cut, 0)
        text = assemble(kept_details, len(report.rows), note)
        if len(text) <= limit:
            return text
    rows = len(report.rows)
    while rows > 0:
        rows -= 1
        text = assemble([], rows, _cut_note(cut, len(report.rows) - rows))
        if len(text) <= limit:
            return text
    return text[:limit]


def _cut_note(sections: list[str], rows: int) -> str:
    what = []
    if sections:
        what.append("the detail sections (" + ", ".join(sections) + ")")
    if rows:
        what.append(f"the last {rows} table rows")
    return (
        "to stay under GitHub's limit of 65,536 characters for an issue body, "
        + " and ".join(what)
        + " were cut; the JSON or HTML report has everything."
    )
