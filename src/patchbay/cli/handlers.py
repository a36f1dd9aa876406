"""The handlers of ``patchbay``'s sub-commands: each turns the parsed arguments
(:class:`argparse.Namespace`, see :mod:`patchbay.cli.parser`) into a call of its ``commands``
module, imported when it runs (a short command pays only for what it needs)."""

from __future__ import annotations

import os
import sys

from .. import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    import argparse
    from typing import Any


def run_options(args: argparse.Namespace) -> Any:
    """The :class:`~patchbay.options.RunOptions` of the network options, built on demand."""
    from ..errors import InputError
    from ..options import RunOptions

    pairs = []
    for item in getattr(args, "mirror", None) or []:
        prefix, sep, replacement = item.partition("=")
        if not sep or not prefix or not replacement:
            raise InputError(f"--mirror {item!r}: expected FROM=TO")
        pairs.append((prefix, replacement))
    options = RunOptions(
        offline=getattr(args, "offline", False), bundle=getattr(args, "bundle", None), mirrors=pairs
    )
    if getattr(args, "cache_dir", None) is not None:
        options.cache_dir = args.cache_dir
    return options


# -- the commands ----------------------------------------------------------------------------


def apply(args: argparse.Namespace) -> int:
    from .commands import apply

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
    )


def status(args: argparse.Namespace) -> int:
    from .commands import status

    return status.run(
        args.patchset,
        python=args.python,
        root=args.root,
        state_dir=args.state_dir,
        output_format=args.output_format,
        record=args.record,
        probe_timeout=args.probe_timeout,
    )


def revert(args: argparse.Namespace) -> int:
    from .commands import revert

    return revert.run(
        args.patchset,
        patch_ids=args.patch_ids or None,
        python=args.python,
        root=args.root,
        state_dir=args.state_dir,
        lock_timeout=args.lock_timeout,
        options=lambda: run_options(args),
        probe_timeout=args.probe_timeout,
    )


def vendor(args: argparse.Namespace) -> int:
    from .commands import vendor

    return vendor.run(
        args.patchset,
        api_url=args.api_url or os.environ.get("PATCHBAY_GITHUB_API"),
        options=lambda: run_options(args),
        update=args.update,
    )


def bundle(args: argparse.Namespace) -> int:
    from .commands import bundle

    return bundle.run(
        args.patchset,
        out=args.out,
        python=args.python,
        options=lambda: run_options(args),
        with_patchbay=not args.without_patchbay,
    )


def verify(args: argparse.Namespace) -> int:
    from .commands import verify

    return verify.run(
        args.patchset,
        python=args.python,
        root=args.root,
        state_dir=args.state_dir,
        output_format=args.output_format,
        installed=args.installed,
        dists=args.dist,
        record=args.record,
        probe_timeout=args.probe_timeout,
    )


def check(args: argparse.Namespace) -> int:
    from .commands import check

    return check.run(
        args.patchset,
        python=args.python,
        root=args.root,
        output_format=args.output_format,
        probe_timeout=args.probe_timeout,
    )


def validate(args: argparse.Namespace) -> int:
    from .commands import validate

    return validate.run(args.patchset, output_format=args.output_format)


def schema(args: argparse.Namespace) -> int:
    from .commands import schema

    return schema.run()


def audit(args: argparse.Namespace) -> int:
    from .commands import audit

    if args.root is not None and args.repo is not None and args.root != args.repo:
        from ..errors import InputError

        raise InputError("give the repository once: --repo DIR (ROOT is its old spelling)")
    from pathlib import Path

    return audit.run(
        args.repo or args.root or Path("."),
        output_format=args.output_format,
        fail_on=args.fail_on,
        config=args.config,
        output=args.output,
        today=args.today,
        upstream=args.upstream,
        image_python=args.python,
        image_root=args.image_root,
        api_url=args.api_url,
        changed_since=args.changed_since,
        pull_request=args.pr,
    )


def waiver_new(args: argparse.Namespace) -> int:
    from .commands import waiver

    return waiver.new(
        args.patchset, args.patch_ids, waiver_id=args.id, output=args.output, force=args.force
    )


def capture(args: argparse.Namespace) -> int:
    from .commands import capture

    return capture.run(
        args.patchset,
        args.patch_id,
        args.files,
        python=args.python,
        state_dir=args.state_dir,
        target=args.target,
        wheels=args.wheel or [],
        from_git=args.from_git,
        description=args.description,
        upstream=args.upstream or [],
    )


def edit(args: argparse.Namespace) -> int:
    from .commands import refresh

    return refresh.edit(
        args.patchset, args.patch_id, python=args.python, root=args.root, state_dir=args.state_dir
    )


def refresh(args: argparse.Namespace) -> int:
    from .commands import refresh

    return refresh.refresh(
        args.patchset,
        args.patch_id,
        args.files,
        python=args.python,
        root=args.root,
        state_dir=args.state_dir,
        wheels=args.wheel or [],
        from_git=args.from_git,
    )


def rebase(args: argparse.Namespace) -> int:
    from .commands import rebase

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


def report(args: argparse.Namespace) -> int:
    from .commands import report

    return report.run(
        args.patchsets,
        repo=args.repo,
        output_format=args.output_format or "markdown",
        outputs=args.output,
        history=args.history,
        no_history=args.no_history,
        api_url=args.api_url,
        cache_dir=args.cache_dir,
        publish_to=args.publish,
        candidate_python=args.candidate_python,
        candidate_root=args.candidate_root,
        python=args.python,
        root=args.root,
        today=args.today,
        max_wait=args.max_wait,
        timeout=args.timeout,
        workers=args.workers,
        graphql=args.graphql,
    )


def import_script(args: argparse.Namespace) -> int:
    from .commands import importer

    return importer.run(
        args.script, out=args.out, python=args.python, projects=args.project or [], force=args.force
    )


def version(args: argparse.Namespace) -> int:
    print(__version__)
    return 0


def completion(args: argparse.Namespace) -> int:
    from argcomplete import shellcode

    sys.stdout.write(shellcode(["patchbay"], shell=args.shell))
    return 0
