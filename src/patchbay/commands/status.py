"""``patchbay status``: the state of every patch (and hunk) in an environment; writes nothing."""

from __future__ import annotations

from pathlib import Path

from ..engine import BLOCKING, PatchStatus, interrupted, make_plan, upgrade_command
from ..output import print_guard, status_epilogue, status_table
from ..provenance import check_record_path, provenance, write_record
from ..trial import try_pending
from .common import console, environment, err_console, load, print_json


def run(
    patchset_arg: str,
    *,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    as_json: bool,
    record: Path | None,
    probe_timeout: float | None = None,
) -> int:
    """Print the status; exit 0 when nothing blocks an apply, 1 otherwise (a pending pin
    that apply's dry run would refuse blocks it: see :mod:`patchbay.trial`)."""
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, state_dir, probe_timeout=probe_timeout)
    if record is not None:
        check_record_path(record)
    plan = make_plan(patchset, env)
    try_pending(plan)
    busy = interrupted(env)
    if busy:
        err_console.print(
            f"patchbay: warning: {env.state_dir / 'journal'} exists: an apply or revert is "
            "running, or was interrupted mid-write (the next apply or revert restores its files "
            "first); the states below may be transient",
            markup=False,
        )
    if plan.ledger.has_orphan_blobs():
        err_console.print(
            f"patchbay: warning: {env.state_dir} holds saved originals but no ledger: was the "
            "ledger deleted, or is --state-dir different from the first run? 'redundant' below "
            "may mean 'applied by patchbay, record lost'",
            markup=False,
        )
    if as_json:
        print_json(plan.to_json())
    else:
        print_guard(plan, console)
        console.print(status_table(plan))
        for line in status_epilogue(plan):
            console.print(line, markup=False, highlight=False)
        for entry in plan.stale:
            if entry.patch_id not in {r.id for r in plan.reports}:
                console.print(
                    f"note: the ledger records {entry.patch_id}, which is no longer in the "
                    f"patchset; `{upgrade_command(plan)}` reverts it",
                    markup=False,
                )
    if record is not None:
        write_record(record, provenance(plan, command="status"))
    blocked = plan.with_status(*BLOCKING, PatchStatus.OUTDATED) or plan.stale
    return 1 if blocked or busy or not plan.guard.ok else 0
