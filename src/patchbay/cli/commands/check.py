"""``patchbay check``: every patch against a candidate image, before an image bump."""

from __future__ import annotations

from pathlib import Path

from ...apply.check import check_patchset
from ..output import check_epilogue, check_lines, check_table, print_guard
from .common import console, environment, load, print_json, read_format, say


def run(
    patchset_arg: str,
    *,
    python: str | None,
    root: Path | None,
    output_format: str | None = None,
    probe_timeout: float | None = None,
    as_json: bool = False,
) -> int:
    """Print each patch's verdict in ``output_format`` (``table``, ``concise``, ``json``;
    None: a table on a terminal, see :func:`read_format`); exit 0 when all apply or are
    upstream, 1 otherwise."""
    if as_json:
        output_format = "json"
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, None, probe_timeout=probe_timeout)
    result = check_patchset(patchset, env)
    if output_format == "json":
        print_json(result.to_json())
        return 0 if result.ok else 1
    table = check_table(result) if output_format != "concise" else None
    if read_format(output_format, table) == "concise":
        for line in check_lines(result):
            say(line)
    else:
        print_guard(result.plan, console)
        console.print(table)
        for line in check_epilogue(result):
            console.print(line, markup=False, highlight=False)
    return 0 if result.ok else 1
