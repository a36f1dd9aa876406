"""``patchbay revert``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.revert`."""

from __future__ import annotations

import argparse

from ..arguments import (
    add_lock,
    add_network,
    add_patchset,
    add_probe,
    add_python,
    add_quiet,
    add_root,
    add_state,
    run_options,
)


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay revert``'s arguments to its parser."""
    add_patchset(p)
    p.add_argument(
        "patch_ids",
        metavar="ID",
        nargs="*",
        help="revert these patches and those applied after them (default: all)",
    )
    p.add_argument(
        "--forget",
        action="store_true",
        help="remove the records only, writing no file: for a tree a newer release was "
        "installed over (status and apply then judge the patches on the files there)",
    )
    add_python(p)
    add_root(p)
    add_state(p)
    add_lock(p)
    add_network(p)
    add_probe(p)
    add_quiet(p)


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay revert`` with the parsed arguments."""
    from ..commands import revert

    return revert.run(
        args.patchset,
        patch_ids=args.patch_ids or None,
        forget=args.forget,
        python=args.python,
        root=args.root,
        state_dir=args.state_dir,
        lock_timeout=args.lock_timeout,
        options=lambda: run_options(args),
        probe_timeout=args.probe_timeout,
    )
