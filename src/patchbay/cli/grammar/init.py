"""``patchbay init``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.init`."""

from __future__ import annotations

import argparse

from ..arguments import add_python, add_quiet, add_root, path


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay init``'s arguments to its parser."""
    p.add_argument("folder", metavar="FOLDER", type=path, help="the new patchset's folder")
    p.add_argument(
        "--package",
        metavar="NAME",
        action="append",
        required=True,
        help="an engine package to patch, by import name: vllm, aiter (repeatable)",
    )
    add_python(p)
    add_root(p)
    p.add_argument("--name", metavar="NAME", help="the patchset's name (default: FOLDER's)")
    p.add_argument("--image", metavar="REF", help="the image reference (default: a blank)")
    p.add_argument(
        "--from-git",
        metavar="DIR",
        type=path,
        help="a clone of the component's repository, to expand an abbreviated commit id",
    )
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay init`` with the parsed arguments."""
    from ..commands import init

    return init.run(
        args.folder,
        args.package,
        python=args.python,
        root=args.root,
        name=args.name,
        image=args.image,
        from_git=args.from_git,
    )
