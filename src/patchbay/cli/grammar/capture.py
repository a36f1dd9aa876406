"""``patchbay capture``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.capture`."""

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
    """Add ``patchbay capture``'s arguments to its parser."""
    add_patchset(p)
    p.add_argument("patch_id", metavar="ID", help="id of the new patch")
    p.add_argument(
        "files",
        metavar="FILE",
        nargs="*",
        help="edited files (default: every file that differs from RECORD, undeclared)",
    )
    add_python(p)
    add_root(p)
    add_state(p)
    p.add_argument("--target", metavar="NAME", help="target of the patch (default: the deepest)")
    add_wheel(p)
    add_from_git(p)
    p.add_argument("--description", metavar="TEXT", help="what the patch does")
    p.add_argument(
        "--upstream",
        metavar="REF",
        action="append",
        help="upstream PR, issue or commit (repeatable)",
    )
    p.add_argument(
        "--exclude",
        metavar="PATTERN",
        action="append",
        help="leave out files matching PATTERN, as .gitignore reads it: *.so, .cache, "
        "demo_engine/jit (repeatable; each one left out is listed)",
    )
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay capture`` with the parsed arguments."""
    from ..commands import capture

    return capture.run(
        args.patchset,
        args.patch_id,
        args.files,
        python=args.python,
        root=args.root,
        state_dir=args.state_dir,
        target=args.target,
        wheels=args.wheel or [],
        from_git=args.from_git,
        description=args.description,
        upstream=args.upstream or [],
        exclude=args.exclude or [],
    )
