"""The upstream report as one self-contained HTML page: inline CSS and an inline SVG chart of
carried patches by verdict over time (no scripts, no external assets: it opens offline).

The patches table has one row per reference, its state in the cell beside it (the patch's other
cells span its references), so a reference that wraps onto more lines cannot push its state out
of line. Patch ids, references and URLs wrap only after ``/ - _ . # ? &`` (a ``<wbr>`` there):
browsers find no break opportunity in ``owner/repo_name.x`` and would widen the table past the
window instead. A single word too wide for any column scrolls the table in its own box, not the
page.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .. import __version__
from ..redaction import redact
from .report import Report, Row, iso_time
from .verdicts import VERDICTS, RefStatus

COLOURS = {
    "remove": "#2e7d32",
    "bump": "#1565c0",
    "refresh": "#6a1b9a",
    "keep": "#8a8a8a",
    "attention": "#d84315",
}


def _svg_chart(entries: Sequence[Mapping[str, Any]], width: int = 760, height: int = 260) -> str:
    """Stacked bars of patches per verdict, one bar per run (the last 52), as inline SVG."""
    entries = list(entries)[-52:]
    left, right, top, bottom = 40, 130, 16, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    totals = [sum(int((e.get("counts") or {}).get(v.value, 0)) for v in VERDICTS) for e in entries]
    peak = max([*totals, 1])
    step = plot_w / max(len(entries), 1)
    bar = max(2.0, min(40.0, step * 0.7))
    esc = html.escape
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        'aria-label="Carried patches by verdict over time">'
    ]
    ticks = sorted({0, round(peak / 2), peak})
    for value in ticks:
        y = top + plot_h * (1 - value / peak)
        out.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">'
            f"{value}</text>"
        )
    label_every = max(1, len(entries) // 8)
    for i, e in enumerate(entries):
        x = left + step * i + (step - bar) / 2
        y = top + plot_h
        when = str(e.get("date") or e.get("time") or "")
        for v in reversed(VERDICTS):  # attention at the bottom, remove on top
            n = int((e.get("counts") or {}).get(v.value, 0))
            if not n:
                continue
            h = plot_h * n / peak
            y -= h
            out.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{COLOURS[v.value]}"><title>{esc(when)}: {n} {v.value}</title></rect>'
            )
        if i % label_every == 0 or i == len(entries) - 1:
            out.append(
                f'<text x="{x + bar / 2:.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
                f'font-size="11">{esc(when[:10])}</text>'
            )
    for k, v in enumerate(VERDICTS):
        y = top + 10 + 18 * k
        out.append(
            f'<rect x="{width - right + 16}" y="{y - 9}" width="12" height="12" '
            f'fill="{COLOURS[v.value]}"/><text x="{width - right + 34}" y="{y + 1}" '
            f'font-size="12">{v.value}</text>'
        )
    out.append("</svg>")
    return "".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem;color:#222}
body{max-width:72rem}
svg{max-width:100%;height:auto}
.scroll{overflow-x:auto}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f5f5}td.n{text-align:right}
tbody.patch{border-top:2px solid #bbb}
.v{display:inline-block;padding:0 .45rem;border-radius:.6rem;color:#fff;font-size:.8rem}
.remove{background:#2e7d32}.bump{background:#1565c0}.keep{background:#8a8a8a}
.refresh{background:#6a1b9a}
.attention{background:#d84315}.reason{color:#444;font-size:.85rem}
.warn{color:#8a4b00;font-size:.85rem}code{font-size:.85rem}
h1,h2,p,li{overflow-wrap:break-word}
@media (max-width:60rem){body{margin:1rem}th,td{padding:.3rem}}
"""


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page: inline CSS and SVG, no scripts, no links to
    other assets (it opens from a file, offline)."""
    esc = html.escape
    counts = report.counts
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Carried patches: upstream report, {esc(report.today.isoformat())}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Carried patches: upstream report</h1>",
        f"<p>As of {esc(report.today.isoformat())}: {len(report.rows)} carried patches in "
        f"{len(report.patchsets)} patchset(s): "
        + ", ".join(
            f'<span class="v {v.value}">{counts[v.value]} {v.value}</span>' for v in VERDICTS
        )
        + "</p>",
        "<h2>Carried patches by verdict over time</h2>",
        _svg_chart(report.history or [report.entry()]),
        "<h2>Changes</h2>",
    ]
    if report.previous is None:
        parts.append("<p>First report: there is no earlier run to compare with.</p>")
    else:
        when = esc(str(report.previous.get("date") or report.previous.get("time") or "?"))
        changes = report.changes()
        if changes:
            parts.append(f"<p>Since the last run ({when}):</p><ul>")
            parts += [f"<li>{_md_code_to_html(esc(c))}</li>" for c in changes]
            parts.append("</ul>")
        else:
            parts.append(f"<p>No change since the last run ({when}).</p>")
    if report.candidate is not None:
        n = len(report.droppable)
        parts.append("<h2>The candidate image</h2>")
        if n:
            parts.append(
                f"<p>These {n} patches can be dropped with this bump: "
                + ", ".join(f"<code>{breakable(k)}</code>" for k in report.droppable)
                + ".</p>"
            )
        else:
            parts.append("<p>No patch can be dropped with this bump.</p>")
        if report.to_refresh:
            parts.append(
                "<p><code>patchbay rebase</code> would refresh (3-way merge) "
                + ", ".join(f"<code>{breakable(k)}</code>" for k in report.to_refresh)
                + ".</p>"
            )
        for c in report.candidate:
            if c.problem:
                parts.append(f"<p>{esc(c.patchset)}: not checked: {esc(c.problem)}</p>")
    parts += [
        "<h2>Patches</h2>",
        '<div class="scroll"><table><thead><tr><th>patchset</th><th>patch</th><th>upstream</th>'
        "<th>state</th><th>verdict</th><th>carried (days)</th><th>since merged (days)</th>"
        + ("<th>candidate</th>" if report.candidate is not None else "")
        + "</tr></thead>",
    ]
    parts += [_patch_rows(row, candidate=report.candidate is not None) for row in report.rows]
    parts += [
        "</table></div>",
        f'<p class="reason">patchbay {esc(__version__)}, {esc(iso_time(report.generated) or "")}'
        f"; days are counted to {esc(report.today.isoformat())}.</p>",
        "</body></html>",
        "",
    ]
    return "\n".join(parts)


def _patch_rows(row: Row, *, candidate: bool) -> str:
    """One patch as a ``<tbody>`` of one row per reference (at least one row): the reference
    and its state share a row; the patch's other cells span all of its rows."""
    a = row.assessment
    pairs = [(_ref_html(r), breakable(r.label)) for r in a.refs] or [("—", "—")]
    span = f' rowspan="{len(pairs)}"' if len(pairs) > 1 else ""
    esc = html.escape
    detail = f'<div class="reason">{_prose(a.reason)}</div>'
    if a.needed_commits:
        detail += (
            '<div class="reason">needed: '
            # abbreviated as references are (owner/repo@<12 hex>): 40 hex digits are one word
            # wider than a column of a narrow window; the full id is the title
            + ", ".join(f'<code title="{esc(c)}">{esc(c[:12])}</code>' for c in a.needed_commits)
            + "</div>"
        )
    detail += "".join(f'<div class="warn">warning: {_prose(w)}</div>' for w in a.warnings)
    detail += "".join(f'<div class="reason">coverage: {_prose(c)}</div>' for c in a.coverage)
    first_ref, first_state = pairs[0]
    out = [
        f'<tbody class="patch"><tr><td{span}>{breakable(a.patchset)}</td>'
        f'<td{span}><code class="id">{breakable(a.patch_id)}</code></td>'
        f'<td class="ref">{first_ref}</td><td class="state">{first_state}</td>'
        f'<td{span}><span class="v {a.verdict.value}">{a.verdict.value}</span>{detail}</td>'
        f'<td class="n"{span}>{_num(row.days_carried)}</td>'
        f'<td class="n"{span}>{_num(row.days_since_merged)}</td>'
        + (f"<td{span}>{esc(row.candidate_label)}</td>" if candidate else "")
        + "</tr>"
    ]
    out += [f'<tr><td class="ref">{r}</td><td class="state">{st}</td></tr>' for r, st in pairs[1:]]
    out.append("</tbody>")
    return "\n".join(out)


def _ref_html(ref: RefStatus) -> str:
    """A reference as shown in its cell: a link when the forge gave its URL."""
    text = breakable(ref.ref.short)
    if ref.url:
        return f'<a class="id" href="{html.escape(ref.url)}">{text}</a>'
    return f'<span class="id">{text}</span>'


_BREAK_AFTER = re.compile(r"(?<=[/\-_.#?&])(?=[^/\-_.#?&])")


def breakable(text: str) -> str:
    """``text`` as HTML that wraps only at its natural points: ``<wbr>`` after each run of
    ``/ - _ . # ? &`` that is followed by more text (``https://`` breaks after both slashes,
    never between them), nowhere inside a word.

    The text is redacted first (:func:`patchbay.redaction.redact`): a ``<wbr>`` inside a
    credential would hide it from the redaction of the whole page.
    """
    return "<wbr>".join(html.escape(piece) for piece in _BREAK_AFTER.split(redact(text)))


_WORD = re.compile(r"(\s+)")
_LONG_WORD = 21  # characters: a shorter word fits any column, and is left as written


def _prose(text: str) -> str:
    """A sentence for a table cell: its long words (an owner/repo#N, a URL, a path) made
    :func:`breakable`, so that a table column is never as wide as the longest of them."""
    return "".join(
        breakable(word) if len(word) >= _LONG_WORD else html.escape(word)
        for word in _WORD.split(redact(text))
    )


def _md_code_to_html(text: str) -> str:
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def _num(value: int | None) -> str:
    return "—" if value is None else str(value)
