"""``patchbay import``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.importer`."""

from __future__ import annotations

import argparse

from ..arguments import add_python, add_quiet, path


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay import``'s arguments to its parser."""
    p.add_argument("script", metavar="SCRIPT", type=path, help="the shell patch script to convert")
    p.add_argument(
        "--out",
        metavar="DIR",
        type=path,
        required=True,
        help="the new patchset folder, e.g. patchsets/NAME",
    )
    add_python(p, "also show `status` of the result in this engine")
    p.add_argument(
        "--project",
        metavar="NAME=OWNER/REPO",
        action="append",
        help="read `NAME #N` in comments as OWNER/REPO#N (repeatable; vllm, aiter, sglang, "
        "triton and flashinfer are known)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a folder that is not empty (replaces patches/)",
    )
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay import`` with the parsed arguments."""
    from ..commands import importer

    return importer.run(
        args.script, out=args.out, python=args.python, projects=args.project or [], force=args.force
    )
