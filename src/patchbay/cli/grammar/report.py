"""``patchbay report``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.report`."""

from __future__ import annotations

import argparse

from ..arguments import (
    add_api,
    add_cache,
    add_format,
    add_python,
    add_quiet,
    add_root,
    count,
    day,
    given,
    path,
    seconds,
)


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay report``'s arguments to its parser."""
    p.add_argument(
        "patchsets",
        metavar="PATCHSET",
        nargs="*",
        type=given,
        help="patchsets to cover (default: all under patchsets/)",
    )
    p.add_argument(
        "--repo",
        metavar="DIR",
        type=path,
        default=".",
        help="repository with patchsets/ and waivers/ (default: .)",
    )
    add_format(
        p,
        choices=("markdown", "json", "html"),
        text="markdown (issue, chat), json or html (one page); default: markdown",
    )
    p.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        type=path,
        action="append",
        help="write the report to FILE (repeatable; .md, .json, .html pick the format)",
    )
    p.add_argument(
        "--history",
        metavar="FILE",
        type=path,
        help="JSON-lines history of runs (default: REPO/.patchbay/upstream-history.jsonl)",
    )
    p.add_argument("--no-history", action="store_true", help="neither read nor append the history")
    add_api(p)
    add_cache(p)
    p.add_argument(
        "--publish",
        metavar="OWNER/REPO",
        help="create or update the tracking issue there (needs GITHUB_TOKEN or GH_TOKEN)",
    )
    p.add_argument(
        "--candidate-python",
        metavar="PATH",
        help="a candidate image's interpreter: list the patches the bump drops",
    )
    p.add_argument(
        "--candidate-root", metavar="DIR", type=path, help="a candidate image as an unpacked tree"
    )
    add_python(p, "the pinned image's interpreter: a patch it already ships is `remove`")
    add_root(p)
    p.add_argument(
        "--today",
        metavar="YYYY-MM-DD",
        type=day,
        help="count days and judge waivers as of this date",
    )
    p.add_argument(
        "--max-wait",
        metavar="SECONDS",
        type=seconds(0),
        default=60.0,
        help="longest total wait for rate limits (default: 60)",
    )
    p.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=seconds(0.1),
        default=20.0,
        help="seconds per request (default: 20)",
    )
    p.add_argument(
        "--workers", metavar="N", type=count, default=8, help="concurrent requests (default: 8)"
    )
    p.add_argument(
        "--graphql",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="batch look-ups with GraphQL (default: with a token)",
    )
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay report`` with the parsed arguments."""
    from ..commands import report

    return report.run(
        args.patchsets,
        repo=args.repo,
        output_format=args.output_format or "markdown",
        outputs=args.output,
        history=args.history,
        no_history=args.no_history,
        api_url=args.api_url,
        cache_dir=args.cache_dir,
        publish_to=args.publish,
        candidate_python=args.candidate_python,
        candidate_root=args.candidate_root,
        python=args.python,
        root=args.root,
        today=args.today,
        max_wait=args.max_wait,
        timeout=args.timeout,
        workers=args.workers,
        graphql=args.graphql,
    )
