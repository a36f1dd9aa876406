"""``patchbay status``: the state of every patch (and hunk) in an environment; writes nothing."""

from __future__ import annotations

import sys
from pathlib import Path

from ...apply.engine import upgrade_command
from ...apply.interrupted import interrupted
from ...apply.plan import make_plan
from ...apply.results import BLOCKING, PatchStatus
from ...apply.trial import try_pending
from ...carry.provenance import check_record_path, provenance, write_record
from ...options import default_cache_dir
from ..output import guard_lines, print_guard, status_epilogue, status_lines, status_table
from .common import console, environment, load, print_json, read_format, say


def run(
    patchset_arg: str,
    *,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    output_format: str | None = None,
    record: Path | None = None,
    probe_timeout: float | None = None,
    as_json: bool = False,
    trial: bool = False,
    replay: tuple[str, list[str]] | None = None,
    verbose: bool = False,
) -> int:
    """Print the status in ``output_format`` (``table``, ``concise``, ``json``; default: see
    :func:`~patchbay.cli.commands.common.read_format`); exit 0 when nothing blocks an apply, 1
    otherwise (a pending pin that apply's dry run would refuse blocks it: see
    :mod:`patchbay.apply.trial`; the dry run is made with ``trial``, else answered from one
    kept for the same pin and environment). ``as_json`` is ``output_format="json"``.
    ``replay``: ``(key, command line words)`` when the applied identity verified and no output
    is kept for it yet (:mod:`patchbay.cli.replay`): the output is kept there after a clean run.
    ``verbose``: long lists in detail lines printed whole (:mod:`patchbay.summaries`).
    """
    if replay is None:
        return _run(patchset_arg, python, root, state_dir, output_format, record,
                    probe_timeout, as_json, trial, verbose)[0]  # fmt: skip
    import contextlib
    import io

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            code, clean = _run(patchset_arg, python, root, state_dir, output_format, record,
                               probe_timeout, as_json, trial, verbose)  # fmt: skip
    finally:
        sys.stdout.write(out.getvalue())  # what was printed, also before an error
    if code == 0 and clean:
        from .. import replay as kept

        kept.store(replay[0], code, out.getvalue(), replay[1])
    return code


def _run(
    patchset_arg: str,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    output_format: str | None,
    record: Path | None,
    probe_timeout: float | None,
    as_json: bool,
    trial: bool,
    verbose: bool = False,
) -> tuple[int, bool]:
    """:func:`run`'s work: ``(exit status, whether it printed no warning)``."""
    if as_json:
        output_format = "json"
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, state_dir, probe_timeout=probe_timeout)
    if record is not None:
        check_record_path(record)
    plan = make_plan(patchset, env)
    try_pending(plan, run=trial, cache_dir=default_cache_dir())
    busy = interrupted(env)
    if busy:
        say(
            f"patchbay: warning: {env.state_dir / 'journal'} exists: an apply or revert is "
            "running, or was interrupted mid-write (the next apply or revert restores its files "
            "first); the states below may be transient",
            err=True,
        )
    orphans = plan.ledger.has_orphan_blobs()
    if orphans:
        say(
            f"patchbay: warning: {env.state_dir} holds saved originals but no ledger: was the "
            "ledger deleted, or is --state-dir different from the first run? 'redundant' below "
            "may mean 'applied by patchbay, record lost'",
            err=True,
        )
    if output_format != "json":
        for replaced in plan.replaced:
            say(replaced.sentence())
    if output_format == "json":
        print_json(plan.to_json())
    else:
        table = status_table(plan, full=verbose) if output_format != "concise" else None
        if read_format(output_format, table) == "table":
            print_guard(plan, console)
            console.print(table)
            for line in status_epilogue(plan):
                console.print(line, markup=False, highlight=False)
        else:
            for line in [*guard_lines(plan), *status_lines(plan, full=verbose)]:
                say(line)
        for entry in plan.stale:
            if entry.patch_id not in {r.id for r in plan.reports}:
                say(
                    f"note: the ledger records {entry.patch_id}, which is no longer in the "
                    f"patchset; `{upgrade_command(plan)}` reverts it"
                )
    if record is not None:
        write_record(record, provenance(plan, command="status"))
    blocked = plan.with_status(*BLOCKING, PatchStatus.OUTDATED) or plan.stale
    clean = not busy and not orphans and not plan.with_status(PatchStatus.PENDING)
    return (1 if blocked or busy or not plan.guard.ok else 0), clean
