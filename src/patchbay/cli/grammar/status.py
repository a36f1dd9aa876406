"""``patchbay status``: its arguments, and its handler, which calls
:mod:`patchbay.cli.commands.status`."""

from __future__ import annotations

import argparse

from ..arguments import (
    add_format,
    add_patchset,
    add_probe,
    add_python,
    add_quiet,
    add_record,
    add_root,
    add_state,
    add_verbose,
)


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay status``'s arguments to its parser."""
    add_patchset(p)
    add_python(p)
    add_root(p)
    add_state(p)
    add_format(p)
    add_record(p)
    add_probe(p)
    add_quiet(p)
    add_verbose(p)
    p.add_argument(
        "--trial",
        action="store_true",
        help="run pip's dry run of each pending pin, as apply does before it installs (can "
        "take minutes against a large index). Without it a pending pin reads 'not tried' and "
        "does not make status exit 1, unless an earlier --trial of the same pin and "
        "environment kept its outcome (in $XDG_CACHE_HOME/patchbay/trials), which is shown; "
        "--trial always asks pip again and replaces it",
    )


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay status`` with the parsed arguments."""
    from ..commands import status

    return status.run(
        args.patchset,
        python=args.python,
        root=args.root,
        state_dir=args.state_dir,
        output_format=args.output_format,
        record=args.record,
        probe_timeout=args.probe_timeout,
        trial=args.trial,
        replay=getattr(args, "replay", None),
        verbose=args.verbose,
    )
