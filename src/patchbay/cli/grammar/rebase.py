"""``patchbay rebase``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.rebase`."""

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
    path,
)


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay rebase``'s arguments to its parser."""
    add_patchset(p)
    add_python(p)
    add_root(p)
    add_state(p)
    p.add_argument("--onto-python", metavar="PATH", help="the candidate image's interpreter")
    p.add_argument(
        "--onto-root", metavar="DIR", type=path, help="the candidate image as an unpacked tree"
    )
    p.add_argument("--out", metavar="DIR", type=path, help="new folder for the rebased patchset")
    p.add_argument(
        "--write", action="store_true", help="rewrite the patchset itself instead of --out"
    )
    p.add_argument(
        "--conflicts",
        metavar="DIR",
        type=path,
        help="side folder for merged files with conflict markers (default: OUT/conflicts, or "
        "rebase-conflicts/NAME with --write)",
    )
    add_wheel(p)
    add_from_git(p)
    p.add_argument(
        "--resolved",
        metavar="DIR",
        type=path,
        help="a conflicts folder of an earlier run, merged by hand: take its files",
    )
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay rebase`` with the parsed arguments."""
    from ..commands import rebase

    return rebase.run(
        args.patchset,
        python=args.python,
        root=args.root,
        state_dir=args.state_dir,
        onto_python=args.onto_python,
        onto_root=args.onto_root,
        out=args.out,
        write=args.write,
        conflicts=args.conflicts,
        wheels=args.wheel or [],
        from_git=args.from_git,
        resolved=args.resolved,
    )
