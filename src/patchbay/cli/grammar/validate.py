"""``patchbay validate``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.validate`."""

from __future__ import annotations

import argparse

from ..arguments import add_format, add_patchset, add_quiet, add_verbose


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay validate``'s arguments to its parser."""
    add_patchset(p)
    add_format(p)
    add_quiet(p)
    add_verbose(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay validate`` with the parsed arguments."""
    from ..commands import validate

    return validate.run(args.patchset, output_format=args.output_format, verbose=args.verbose)
