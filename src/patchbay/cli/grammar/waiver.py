"""``patchbay waiver``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.waiver`."""

from __future__ import annotations

import argparse

from ..arguments import Formatter, Parser, UsageError, add_patchset, path


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay waiver``'s arguments to its parser."""
    waiver_sub = p.add_subparsers(
        metavar="SUBCOMMAND", title="subcommands", parser_class=Parser, prog="patchbay waiver"
    )
    w = waiver_sub.add_parser(
        "new",
        help="Write a waiver prefilled from the patchset, with <TODO: ...> blanks to fill.",
        description="Write a waiver prefilled from the patchset, with <TODO: ...> blanks to fill.",
        formatter_class=Formatter,
    )
    w.set_defaults(handler=handle_new)
    add_patchset(w)
    w.add_argument(
        "patch_ids", metavar="PATCH_ID", nargs="*", help="patches to cover (default: all)"
    )
    w.add_argument(
        "--id", metavar="ID", help="waiver id (default: the patch id, or the patchset name)"
    )
    w.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        type=path,
        help="where to write (default: waivers/<id>.md)",
    )
    w.add_argument(
        "--force",
        action="store_true",
        help="write a new waiver over an existing file; without it a legacy waiver (no front "
        "matter) is adopted in place, its text kept, and one with front matter is refused "
        "(`waiver sync` refreshes it)",
    )
    s = waiver_sub.add_parser(
        "sync",
        help="Refresh a waiver's patch list and generated patch table from the patchset, "
        "keeping its text.",
        description="Refresh a waiver's patch list and generated patch table from the patchset, "
        "keeping every hand-written line.",
        formatter_class=Formatter,
    )
    s.set_defaults(handler=handle_sync)
    add_patchset(s)
    s.add_argument("waiver", metavar="WAIVER", type=path, help="the waiver file")
    s.add_argument(
        "patch_ids",
        metavar="PATCH_ID",
        nargs="*",
        help="patches to add (default: those it lists; all of the patchset if none)",
    )


def handle(args: argparse.Namespace) -> int:
    """``patchbay waiver`` without a subcommand: a usage error."""
    raise UsageError(
        "waiver: a subcommand is required: new, sync (`patchbay waiver -h` shows the usage)"
    )


def handle_new(args: argparse.Namespace) -> int:
    """Run ``patchbay waiver new`` with the parsed arguments."""
    from ..commands import waiver

    return waiver.new(
        args.patchset, args.patch_ids, waiver_id=args.id, output=args.output, force=args.force
    )


def handle_sync(args: argparse.Namespace) -> int:
    """Run ``patchbay waiver sync`` with the parsed arguments."""
    from ..commands import waiver

    return waiver.sync(args.patchset, args.waiver, args.patch_ids)
