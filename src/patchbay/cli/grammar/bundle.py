"""``patchbay bundle``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.bundle`."""

from __future__ import annotations

import argparse

from ..arguments import (
    add_cache,
    add_mirror,
    add_patchset,
    add_python,
    add_quiet,
    add_root,
    path,
    run_options,
)


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay bundle``'s arguments to its parser."""
    add_patchset(p)
    p.add_argument("out", metavar="OUT", type=path, help="new folder for the bundle")
    add_python(p)
    add_root(p)
    add_cache(p)
    add_mirror(p)
    p.add_argument(
        "--without-patchbay",
        action="store_true",
        help="do not carry patchbay itself (its wheels and install-patchbay.sh)",
    )
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay bundle`` with the parsed arguments."""
    from ..commands import bundle

    return bundle.run(
        args.patchset,
        out=args.out,
        python=args.python,
        root=args.root,
        options=lambda: run_options(args),
        with_patchbay=not args.without_patchbay,
    )
