"""``patchbay edit``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.refresh`."""

from __future__ import annotations

import argparse

from ..arguments import add_patchset, add_python, add_quiet, add_root, add_state


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay edit``'s arguments to its parser."""
    add_patchset(p)
    p.add_argument("patch_id", metavar="ID", help="the patch's id")
    add_python(p)
    add_root(p)
    add_state(p)
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay edit`` with the parsed arguments."""
    from ..commands import refresh

    return refresh.edit(
        args.patchset, args.patch_id, python=args.python, root=args.root, state_dir=args.state_dir
    )
