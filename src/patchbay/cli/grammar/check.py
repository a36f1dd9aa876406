"""``patchbay check``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.check`."""

from __future__ import annotations

import argparse

from ..arguments import add_format, add_patchset, add_probe, add_python, add_quiet, add_root


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay check``'s arguments to its parser."""
    add_patchset(p)
    add_python(p)
    add_root(p)
    add_format(p)
    add_probe(p)
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay check`` with the parsed arguments."""
    from ..commands import check

    return check.run(
        args.patchset,
        python=args.python,
        root=args.root,
        output_format=args.output_format,
        probe_timeout=args.probe_timeout,
    )
