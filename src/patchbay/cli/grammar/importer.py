"""``patchbay import``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.importer`."""

from __future__ import annotations

import argparse

from ..arguments import add_python, add_quiet, add_root, path


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
    add_root(p)
    p.add_argument(
        "--project",
        metavar="NAME=OWNER/REPO",
        action="append",
        help="read `NAME #N` in comments as OWNER/REPO#N (repeatable; vllm, aiter, sglang, "
        "triton and flashinfer are known)",
    )
    p.add_argument(
        "--observe",
        action="store_true",
        help="run the script against the engine of --python (one made for the purpose: a "
        "scratch copy, a throwaway container), or a tree given as --root, and import what it "
        "really changed",
    )
    p.add_argument(
        "--scope",
        metavar="PACKAGE",
        action="append",
        help="with --observe: also keep the bytes of this package's files before the run "
        "(repeatable; the engines the script names are always kept)",
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
        args.script,
        out=args.out,
        python=args.python,
        projects=args.project or [],
        force=args.force,
        observe=args.observe,
        scope=args.scope or [],
        root=args.root,
    )
