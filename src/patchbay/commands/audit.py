"""``patchbay audit``: patchsets, waivers and scripts of a repository, judged by rule."""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path

from rich.console import Console

from ..audit import Severity, run_audit
from ..audit.formats import github_lines, print_table, sarif, summary
from .common import console, err_console


def run(
    root: Path,
    *,
    output_format: str = "table",
    fail_on: str | None = None,
    config: Path | None = None,
    output: Path | None = None,
    today: date | None = None,
) -> int:
    """Audit ``root`` and print the report in ``output_format`` (to ``output`` if given).

    Returns:
        0 when no finding is at or above ``fail_on`` (default: the configuration's, ``error``),
        1 otherwise. Bad input (configuration, patchsets, waivers) raises
        :class:`~patchbay.errors.InputError` (exit 2).
    """
    result = run_audit(root, config_file=config, today=today)
    threshold = Severity(fail_on or result.config.config.fail_on)
    if output_format == "table":
        if output is None:
            print_table(result, console, threshold)
        else:
            with output.open("w", encoding="utf-8") as fh:
                print_table(result, Console(file=fh, width=160, soft_wrap=True), threshold)
    else:
        if output_format == "json":
            text = json.dumps(result.to_json(), indent=2)
        elif output_format == "sarif":
            text = json.dumps(sarif(result), indent=2)
        else:
            text = "\n".join(github_lines(result))
        if output is None:
            if text:
                sys.stdout.write(text + "\n")
        else:
            output.write_text(text + "\n" if text else "", encoding="utf-8")
        if output_format != "json" or output is not None:
            err_console.print(summary(result, threshold))
    return 1 if result.failing(threshold) else 0
