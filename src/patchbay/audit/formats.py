"""How audit results look: a rich table per file for people; JSON, GitHub workflow commands
and SARIF 2.1.0 for machines.

- GitHub: one ``::error file=F,line=L,endLine=E,title=T::MESSAGE`` workflow command per finding
  (``warning``/``notice`` for the lower severities), escaped as the Actions runner expects
  (``%``, CR, LF in the message; also ``:`` and ``,`` in properties).
- SARIF: OASIS SARIF 2.1.0 (errata 01), one run, every rule as a ``reportingDescriptor``, every
  finding as a ``result`` with a relative ``artifactLocation`` (GitHub code scanning resolves it
  against the repository); suppressed findings carry ``suppressions`` (``inSource`` for review
  annotations, ``external`` for configured ignores), so viewers show them as such.

A file name that is not UTF-8 is shown by :mod:`patchbay.printable`'s rule in every format
(``\\xNN`` per undecodable byte; percent-encoded bytes in a SARIF URI).

Waived findings (script findings a waiver covers, :mod:`.waived`) are in every format, at level
``note``, with the waiver's id: a ``waived by ID`` mark in the table and the GitHub title, a
``waived`` object in JSON, and in SARIF an ``external`` suppression whose ``status`` is
``accepted`` for an approved waiver and ``underReview`` for a requested one (§3.35.3).
"""

from __future__ import annotations

from itertools import groupby
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..printable import printable, uri_path
from .rules import RULES, Finding, Severity, relative
from .run import AuditResult

if TYPE_CHECKING:  # rich is imported by print_table only (start-up time of the CLI)
    from rich.console import Console
    from rich.table import Table

FORMATS = ("table", "concise", "json", "github", "sarif")

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
_STYLE = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.NOTE: "cyan"}
_GITHUB_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def summary(result: AuditResult, fail_on: Severity) -> str:
    """One line: counts, what was audited, and whether the run fails."""
    c = result.counts()
    patches = sum(len(ps.patches) for ps in result.patchsets)
    audited = (
        f"{patches} patch(es) in {len(result.patchsets)} patchset(s), "
        f"{len(result.waivers)} waiver(s)"
    )
    if result.translations:
        audited += f", {len(result.translations)} translation(s) not audited"
    if not result.active:
        parts = [f"{c[k]} {k}" for k in ("waived", "suppressed") if c[k]]
        extra = f" ({', '.join(parts)})" if parts else ""
        return f"audit clean: {audited}{extra}"
    failing = len(result.failing(fail_on))
    verdict = f"{failing} at or above {fail_on.value}" if failing else f"none at {fail_on.value}"
    waived = f"{c['waived']} waived, " if c["waived"] else ""
    return (
        f"{c['error']} error(s), {c['warning']} warning(s), {c['note']} note(s), "
        f"{waived}{c['suppressed']} suppressed; {verdict}; audited {audited}"
    )


def _waived_mark(f: Finding) -> str:
    return f" (waived by {f.waived_by.id})" if f.waived_by is not None else ""


def finding_tables(result: AuditResult) -> list[Table]:
    """The findings that count and the waived ones (marked), grouped by file, one table each."""
    from rich.markup import escape
    from rich.table import Table

    tables = []
    for path, group in groupby(result.shown, key=lambda f: f.path):
        table = Table(
            title=escape(printable(path)), title_justify="left", title_style="bold", expand=False
        )
        table.add_column("line", justify="right", no_wrap=True)
        table.add_column("code", no_wrap=True)
        table.add_column("severity")
        table.add_column("message", overflow="fold")
        for f in group:
            line = "" if f.line is None else str(f.line)
            if f.end_line and f.end_line != f.line:
                line += f"-{f.end_line}"
            style = _STYLE[f.severity]
            severity = f"[{style}]{f.severity.value}[/]{escape(_waived_mark(f))}"
            table.add_row(line, f.code, severity, escape(printable(f.message)))
        tables.append(table)
    return tables


def print_table(
    result: AuditResult,
    console: Console,
    fail_on: Severity,
    tables: list[Table] | None = None,
) -> None:
    """The tables of :func:`finding_tables` (or ``tables``, made by it); the translated copies
    that were not audited; then the summary line."""
    from rich.markup import escape

    for table in finding_tables(result) if tables is None else tables:
        console.print(table)
    for t in result.translations:
        original = relative(t.original, result.root)
        console.print(
            escape(
                printable(
                    f"{relative(t.path, result.root)}: translation ({t.language}) of {original}"
                )
            ),
            "not audited as a waiver",
        )
    console.print(summary(result, fail_on))


def concise_lines(result: AuditResult) -> list[str]:
    """One line per finding that counts and per waived finding, in ruff's concise style:
    ``path:line: CODE message`` (``path: CODE message`` without a line), the severity after
    the code when it is not an error."""
    out = []
    for f in result.shown:
        where = f"{f.path}:{f.line}" if f.line else f.path
        level = "" if f.severity is Severity.ERROR else f" [{f.severity.value}]"
        message = f.message.replace("\n", " ")
        out.append(printable(f"{where}: {f.code}{level} {message}{_waived_mark(f)}"))
    return out


def github_lines(result: AuditResult) -> list[str]:
    """One GitHub Actions workflow command per finding that counts, and per waived finding
    (a ``notice`` whose title says which waiver covers it)."""
    out = []
    for f in result.shown:
        props = [f"file={_prop(f.path)}"]
        if f.line:
            props.append(f"line={f.line}")
        if f.end_line:
            props.append(f"endLine={f.end_line}")
        props.append(f"title={_prop(f'{f.code} {f.rule.name}{_waived_mark(f)}')}")
        line = f"::{_GITHUB_LEVEL[f.severity]} {','.join(props)}::{_data(f.message)}"
        out.append(printable(line))
    return out


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def sarif(result: AuditResult) -> dict[str, Any]:
    """The SARIF 2.1.0 log of an audit (suppressed findings included, marked)."""
    codes = sorted(RULES)
    index = {code: n for n, code in enumerate(codes)}
    rules = [
        {
            "id": code,
            "name": RULES[code].name,
            "shortDescription": {"text": RULES[code].summary},
            "defaultConfiguration": {"level": RULES[code].severity.value},
        }
        for code in codes
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "patchbay",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": [_sarif_result(f, index[f.code]) for f in result.findings],
            }
        ],
    }


def _sarif_result(f: Finding, rule_index: int) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": {"uri": uri_path(f.path)}}
    if f.line:
        region: dict[str, Any] = {"startLine": f.line}
        if f.end_line:
            region["endLine"] = f.end_line
        location["region"] = region
    out: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": rule_index,
        "level": f.severity.value,
        "message": {"text": f.message},
        "locations": [{"physicalLocation": location}],
    }
    if f.suppression is not None:
        out["suppressions"] = [
            {"kind": f.suppression.kind, "justification": f.suppression.justification}
        ]
    elif f.waived_by is not None:
        w = f.waived_by
        out["suppressions"] = [
            {
                "kind": "external",
                "status": "underReview" if w.status == "requested" else "accepted",
                "justification": f"waiver {w.id} ({w.path}) covers {w.script}",
            }
        ]
        out["properties"] = {"waiver": w.id}
    return out
