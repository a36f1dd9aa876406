"""``patchbay audit``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.audit`."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..arguments import add_api, add_format, add_python, add_quiet, count, day, path


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay audit``'s arguments to its parser."""
    p.add_argument(
        "paths",
        metavar="PATH",
        nargs="*",
        type=path,
        help="report only the findings of these files or folders (the whole repository is "
        "judged; one folder alone and no --repo: that folder is the repository, as before)",
    )
    p.add_argument(
        "--repo",
        metavar="DIR",
        type=path,
        help="repository to audit (default: .; `audit DIR` is the old spelling)",
    )
    add_format(
        p,
        choices=("table", "concise", "json", "github", "sarif"),
        text="table (people), concise (path:line: CODE message), json, github (annotations) or "
        "sarif; default: table",
    )
    p.add_argument(
        "--fail-on",
        metavar="LEVEL",
        choices=("error", "warning", "note"),
        help="lowest severity that makes the run exit 1: error, warning or note (default: the "
        "configuration's, else error)",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        type=path,
        help="patchbay.toml or pyproject.toml (default: the one in the repository)",
    )
    p.add_argument("--output", "-o", metavar="FILE", type=path, help="write the report to FILE")
    p.add_argument(
        "--today", metavar="YYYY-MM-DD", type=day, help="judge review dates as of this date"
    )
    p.add_argument(
        "--upstream",
        action="store_true",
        help="ask GitHub about every patch's upstream fix: PB501 when it is in the pin",
    )
    add_api(p, "GitHub API base for --upstream")
    add_python(
        p,
        "with --upstream: the pinned image's interpreter; its files are content evidence for "
        "PB501, as in `patchbay report --python`",
    )
    p.add_argument(
        "--image-root",
        metavar="DIR",
        type=path,
        help="with --upstream: the pinned image as an unpacked folder (as --root elsewhere)",
    )
    p.add_argument(
        "--changed-since",
        metavar="REF",
        help="audit the change since the merge base of REF and HEAD (a pull request): script "
        "findings of its files, and a waiver of its own for the patching it adds",
    )
    p.add_argument(
        "--pr",
        metavar="N",
        type=count,
        help="the pull request's number, for change-waiver (default: from GitHub Actions)",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the audit's cache (a gate job: a cache another ref can "
        "write must not decide it; docs/audit.md)",
    )
    p.add_argument(
        "--select",
        metavar="CODES",
        help="report only these rules: comma-separated codes or prefixes (PB101,PB4)",
    )
    p.add_argument(
        "--ignore",
        metavar="CODES",
        help="do not report these rules: comma-separated codes or prefixes (PB205,PB3)",
    )
    p.add_argument(
        "--fix",
        action="store_true",
        help="make the mechanical waiver fixes (generated patch tables written again from the "
        "patchset, an uncovered patch added to the waiver of its patchset), then audit",
    )
    p.add_argument(
        "--diff",
        action="store_true",
        help="print the fixes --fix would make as a unified diff and write nothing (exit 1 "
        "when there is one)",
    )
    p.add_argument(
        "--statistics",
        action="store_true",
        help="print the number of findings per rule instead of the findings",
    )
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay audit`` with the parsed arguments."""

    from ..commands import audit

    repo, paths = args.repo, list(args.paths)
    if repo is None and len(paths) == 1 and paths[0].is_dir() and not _inside_current(paths[0]):
        repo, paths = paths[0], []  # `audit DIR` of a repository: the old spelling of --repo
    from ...audit.selection import parse_codes

    return audit.run(
        repo or Path("."),
        paths=paths or None,
        select=None if args.select is None else parse_codes(args.select, "--select"),
        ignore=None if args.ignore is None else parse_codes(args.ignore, "--ignore"),
        show_statistics=args.statistics,
        fix="diff" if args.diff else "write" if args.fix else None,
        output_format=args.output_format,
        fail_on=args.fail_on,
        config=args.config,
        output=args.output,
        today=args.today,
        upstream=args.upstream,
        image_python=args.python,
        image_root=args.image_root,
        api_url=args.api_url,
        changed_since=args.changed_since,
        pull_request=args.pr,
        cache=not args.no_cache,
    )


# what marks a folder as a repository's top (and not a folder inside one)
_TOP_MARKS = (".git", "patchbay.toml", "pyproject.toml")


def _inside_current(folder: Path) -> bool:
    """Whether ``folder`` is a folder inside the repository the current folder is the top of
    (it holds ``.git`` or an audit configuration): then ``audit FOLDER`` reports that folder's
    findings of the repository's audit, as ``audit FILE`` does. Any other folder given alone
    is the repository itself (``audit DIR``, the old spelling of ``--repo``)."""
    here = Path.cwd().resolve()
    target = folder.resolve()
    if target == here or not target.is_relative_to(here):
        return False
    return any((here / mark).exists() for mark in _TOP_MARKS)
