"""``patchbay refresh``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.refresh`."""

from __future__ import annotations

import argparse

from ..arguments import (
    add_from_git,
    add_patchset,
    add_python,
    add_quiet,
    add_root,
    add_state,
    add_wheel,
)


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay refresh``'s arguments to its parser."""
    add_patchset(p)
    p.add_argument("patch_id", metavar="ID", help="the patch's id")
    p.add_argument("files", metavar="FILE", nargs="*", help="more files to take into the patch")
    add_python(p)
    add_root(p)
    add_state(p)
    add_wheel(p)
    add_from_git(p)
    p.add_argument(
        "--allow-delete",
        action="store_true",
        help="a file of the patch that is gone becomes a deletion in the patch",
    )
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay refresh`` with the parsed arguments."""
    from ..commands import refresh

    return refresh.refresh(
        args.patchset,
        args.patch_id,
        args.files,
        python=args.python,
        root=args.root,
        state_dir=args.state_dir,
        wheels=args.wheel or [],
        from_git=args.from_git,
        allow_delete=args.allow_delete,
    )
