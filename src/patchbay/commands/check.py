"""``patchbay check``: every patch against a candidate image, before an image bump."""

from __future__ import annotations

from pathlib import Path

from ..check import check_patchset
from ..output import check_epilogue, check_table, print_guard
from .common import console, environment, load, print_json


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
        console.print(check_table(result))
        for line in check_epilogue(result):
            console.print(line, markup=False, highlight=False)
    return 0 if result.ok else 1
