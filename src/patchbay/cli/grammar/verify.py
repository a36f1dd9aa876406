"""``patchbay verify``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.verify`."""

from __future__ import annotations

import argparse

from ..arguments import (
    add_format,
    add_patchset,
    add_probe,
    add_python,
    add_quiet,
    add_record,
    add_root,
    add_state,
)


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay verify``'s arguments to its parser."""
    add_patchset(p)
    add_python(p)
    add_root(p)
    add_state(p)
    add_format(p)
    p.add_argument(
        "--installed",
        action="store_true",
        help="check every installed file of the engine's distributions against its RECORD; "
        "differences must be declared patches",
    )
    p.add_argument(
        "--dist",
        metavar="NAME",
        action="append",
        help="distribution to check (repeatable; default: the components)",
    )
    add_record(p)
    add_probe(p)
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay verify`` with the parsed arguments."""
    from ..commands import verify

    return verify.run(
        args.patchset,
        python=args.python,
        root=args.root,
        state_dir=args.state_dir,
        output_format=args.output_format,
        installed=args.installed,
        dists=args.dist,
        record=args.record,
        probe_timeout=args.probe_timeout,
    )
