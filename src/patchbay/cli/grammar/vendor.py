"""``patchbay vendor``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.vendor`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..arguments import (
    add_api,
    add_cache,
    add_mirror,
    add_network,
    add_patchset,
    add_quiet,
    run_options,
)


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay vendor``'s arguments to its parser."""
    add_patchset(p)
    add_api(p)
    add_cache(p)
    add_mirror(p)
    add_network(p, bundle=False)
    p.add_argument(
        "--update", action="store_true", help="accept upstream content that differs from the lock"
    )
    p.add_argument(
        "--from",
        dest="local_copies",
        metavar="PATH",
        action="append",
        default=[],
        help="a local copy of a script a here-document source names (matched by file name, "
        "checked against the lock's sha256); repeatable; read instead of the forge",
    )
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay vendor`` with the parsed arguments."""
    from ..commands import vendor

    return vendor.run(
        args.patchset,
        api_url=args.api_url or os.environ.get("PATCHBAY_GITHUB_API"),
        options=lambda: run_options(args),
        update=args.update,
        local_copies=[Path(p) for p in args.local_copies],
    )
