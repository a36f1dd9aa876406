"""The output formats of ``patchbay report``: Markdown (:mod:`.report_markdown`), JSON (the
report's own document, :meth:`.report.Report.to_json`) and HTML (:mod:`.report_html`), each
redacted of credentials before it leaves.
"""

from __future__ import annotations

from ..errors import InputError
from ..printable import dumps
from ..redaction import redact
from .report import Report
from .report_html import render_html
from .report_markdown import render_markdown


def render(report: Report, output_format: str) -> str:
    """The report in ``markdown``, ``json`` or ``html``.

    Forge answers and URLs may carry a credential (a token echoed back, ``--api-url`` with a
    password): the text passes through :func:`patchbay.redaction.redact`.

    Raises:
        InputError: an unknown format.
    """
    if output_format == "markdown":
        return redact(render_markdown(report))
    if output_format == "json":
        return redact(dumps(report.to_json(), indent=2) + "\n")
    if output_format == "html":
        return redact(render_html(report))
    raise InputError(f"unknown report format {output_format!r} (markdown, json, html)")
