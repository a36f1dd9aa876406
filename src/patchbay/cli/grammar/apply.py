"""``patchbay apply``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.apply`."""

from __future__ import annotations

import argparse

from ..arguments import (
    add_cache,
    add_lock,
    add_mirror,
    add_network,
    add_patchset,
    add_probe,
    add_python,
    add_quiet,
    add_record,
    add_root,
    add_state,
    add_verbose,
    run_options,
)


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay apply``'s arguments to its parser."""
    add_patchset(p)
    add_python(p)
    add_root(p)
    add_state(p)
    p.add_argument(
        "--upgrade",
        action="store_true",
        help="revert recorded versions of edited or removed patches, then apply, in one step",
    )
    add_lock(p)
    # a dry run writes nothing, a record neither: asking for both is a usage error
    writes = p.add_mutually_exclusive_group()
    writes.add_argument(
        "--dry-run",
        action="store_true",
        help="print the unified diff apply would write; write nothing (not with --record)",
    )
    add_record(writes)
    add_network(p)
    add_cache(p)
    add_mirror(p)
    add_probe(p)
    add_quiet(p)
    add_verbose(p, "print in full the notes a verified no-op only counts")


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay apply`` with the parsed arguments."""
    from ..commands import apply

    return apply.run(
        args.patchset,
        python=args.python,
        root=args.root,
        state_dir=args.state_dir,
        upgrade=args.upgrade,
        dry_run=args.dry_run,
        lock_timeout=args.lock_timeout,
        record=args.record,
        options=lambda: run_options(args),
        probe_timeout=args.probe_timeout,
        bundle=args.bundle,
        noop_checked=getattr(args, "noop_checked", False),
        verbose=args.verbose,
    )
