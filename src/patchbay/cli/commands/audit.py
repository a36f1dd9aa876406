"""``patchbay audit``: patchsets, waivers and scripts of a repository, judged by rule.

Imports are deferred to what the chosen format needs: ``--format json`` (CI, the benchmark)
loads neither rich nor the engine-side modules other commands share (``.common``).
"""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def run(
    root: Path,
    *,
    output_format: str | None = None,
    fail_on: str | None = None,
    config: Path | None = None,
    output: Path | None = None,
    today: date | None = None,
    upstream: bool = False,
    api_url: str | None = None,
    cache_dir: Path | None = None,
    changed_since: str | None = None,
    pull_request: int | None = None,
    image_python: str | None = None,
    image_root: Path | None = None,
    cache: bool = True,
    paths: list[Path] | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    show_statistics: bool = False,
    fix: str | None = None,
) -> int:
    """Audit ``root`` and print the report in ``output_format`` (to ``output`` if given):
    ``table``, ``concise``, ``json``, ``github`` or ``sarif``; by default ``table`` on a
    terminal or into ``output``, elsewhere ``table`` when every table fits the width, else
    ``concise``.

    Returns:
        0 when no finding is at or above ``fail_on`` (default: the configuration's, ``error``),
        1 otherwise. Bad input (configuration, patchsets, waivers, a bad ``api_url``) raises
        :class:`~patchbay.errors.InputError` (exit 2); with ``upstream``, a forge that answers
        nothing raises :class:`~patchbay.upstream.GitHubError` (exit 1). ``changed_since``
        audits a change (:mod:`patchbay.audit.pull_request`); its pull request number is
        ``pull_request``, or the GitHub Actions run's. ``cache`` false (``--no-cache``): the
        audit's cache is neither read nor written. What of the cache was ignored (a link,
        another user's file, :mod:`patchbay.audit.store`) is one note each on stderr.
        ``paths``, ``select`` and ``ignore`` choose the findings reported and counted
        (:mod:`patchbay.audit.selection`); ``show_statistics`` prints one line per rule
        instead of the findings (``statistics`` in JSON). ``fix``: ``write`` makes the
        mechanical waiver fixes (:mod:`patchbay.audit.fixes`) and then audits again; ``diff``
        prints them as a unified diff, writes nothing and exits 1 when there is one.
    """
    from ...audit import Severity, run_audit
    from ...errors import InputError

    if output is not None:  # before the audit: a path that cannot be written is bad input
        from ...outputfiles import check_output_file

        check_output_file(output, "--output")
    if changed_since is not None and pull_request is None:
        import os

        from ...audit.changes import pull_request_number

        pull_request = pull_request_number(os.environ)
    elif pull_request is not None and changed_since is None:
        raise InputError("--pr needs --changed-since REF (the pull request's base)")

    def audit() -> Any:
        return run_audit(
            root,
            config_file=config,
            today=today,
            upstream=upstream,
            api_url=api_url,
            cache_dir=cache_dir,
            changed_since=changed_since,
            pull_request=pull_request,
            image_python=image_python,
            image_root=image_root,
            script_cache=cache,
        )

    result = audit()
    if fix is not None:
        from ...audit.fixes import waiver_fixes

        fixes = waiver_fixes(result)
        if fix == "diff":
            return _print_diff(fixes, root)
        from ...errors import InputError
        from ...outputfiles import write_output_file

        for f in fixes:
            try:
                write_output_file(f.path, f.after)
            except OSError as exc:
                raise InputError(
                    f"the fixed waiver cannot be written: {exc.strerror or exc}", file=f.path
                ) from None
            sys.stderr.write(f"patchbay: fixed {f.path}: {'; '.join(f.why)}\n")
        if fixes:
            result = audit()
    if paths is not None or select is not None or ignore is not None:
        from ...audit.selection import relative_paths, selected

        named = None if paths is None else relative_paths(paths, root)
        result.findings = selected(result.findings, select=select, ignore=ignore, paths=named)
    for line in result.notes:  # before the report: a reader of the log sees it first
        sys.stderr.write(f"patchbay: note: {line}\n")
    threshold = Severity(fail_on or result.config.config.fail_on)
    if show_statistics:
        return _statistics(result, threshold, output_format, output)
    tables = None
    if output_format is None and output is None:  # the rule of every read command
        from ...audit.formats import finding_tables
        from .common import fits

        tables = finding_tables(result)
        wrapping = _console().is_terminal  # (see commands.common.read_format)
        output_format = "table" if all(fits(t, wrapping=wrapping) for t in tables) else "concise"
    if output_format in (None, "table"):
        from ...audit.formats import print_table

        if output is None:
            print_table(result, _console(), threshold, tables)
        else:
            import io

            from rich.console import Console

            buffer = io.StringIO()
            print_table(result, Console(file=buffer, width=160, soft_wrap=True), threshold)
            _write(output, buffer.getvalue())
    else:
        from ...audit import formats
        from ...printable import dumps

        if output_format == "json":
            text = dumps(result.to_json(), indent=2)
        elif output_format == "concise":
            lines = formats.concise_lines(result)
            if output is None:  # as ruff does: the summary ends the list
                lines.append(formats.summary(result, threshold))
            text = "\n".join(lines)
        elif output_format == "sarif":
            text = dumps(formats.sarif(result), indent=2)
        else:
            text = "\n".join(formats.github_lines(result))
        if output is None:
            if text:
                sys.stdout.write(text + "\n")
        else:
            _write(output, text + "\n" if text else "")
        if output_format not in ("json", "concise") or output is not None:
            _console(stderr=True).print(formats.summary(result, threshold))
    return 1 if result.failing(threshold) else 0


def _print_diff(fixes: list[Any], root: Path) -> int:
    """``--diff``: each fix as a unified diff (``a/``, ``b/`` paths relative to ``root``)."""
    import difflib

    for f in fixes:
        try:
            rel = f.path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            rel = str(f.path)
        sys.stdout.writelines(
            difflib.unified_diff(
                f.before.splitlines(keepends=True),
                f.after.splitlines(keepends=True),
                fromfile=f"a/{rel}",
                tofile=f"b/{rel}",
            )
        )
    sys.stderr.write(f"patchbay: {len(fixes)} waiver(s) would be fixed (--fix writes them)\n")
    return 1 if fixes else 0


def _statistics(result: Any, threshold: Any, output_format: str | None, output: Path | None) -> int:
    """``--statistics``: one line per rule of the active findings (count, code, name,
    severity), most frequent first, then the summary; JSON: the counts as a list."""
    from ...audit import formats
    from ...audit.selection import statistics
    from ...printable import dumps

    rows = statistics(result.active)
    if output_format == "json":
        keys = ("count", "code", "name", "severity")
        text = dumps({"statistics": [dict(zip(keys, r, strict=True)) for r in rows]}, indent=2)
    else:
        width = max((len(str(r[0])) for r in rows), default=1)
        text = "\n".join(f"{n:>{width}}  {code}  {name}  [{sev}]" for n, code, name, sev in rows)
    if output is None:
        if text:
            sys.stdout.write(text + "\n")
    else:
        _write(output, text + "\n" if text else "")
    sys.stderr.write(formats.summary(result, threshold) + "\n")
    return 1 if result.failing(threshold) else 0


def _write(output: Path, text: str) -> None:
    """Write the report file (its missing folders created: the rule of every result file,
    :func:`patchbay.outputfiles.write_output_file`)."""
    from ...errors import InputError
    from ...outputfiles import write_output_file

    try:
        write_output_file(output, text)
    except OSError as exc:
        raise InputError(
            f"--output cannot be written: {exc.strerror or exc}", file=output
        ) from None


def _console(*, stderr: bool = False) -> Console:
    """The console of the other commands (``commands.common``), built the same way here so
    that the audit does not import what they need (patchset targets, packaging)."""
    from rich.console import Console

    # soft_wrap: one message is one line, whatever the width (paths stay greppable in CI logs)
    return Console(stderr=stderr, highlight=False, soft_wrap=True)
