"""``patchbay status``: the state of every patch (and hunk) in an environment; writes nothing."""

from __future__ import annotations

from pathlib import Path

from ..engine import BLOCKING, interrupted, make_plan
from ..output import print_guard, status_table
from ..provenance import provenance, write_record
from .common import console, environment, err_console, load, print_json


def run(
    patchset_arg: str,
    *,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    as_json: bool,
    record: Path | None,
) -> int:
    """Print the status; exit 0 when nothing blocks an apply, 1 otherwise."""
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, state_dir)
    plan = make_plan(patchset, env)
    if interrupted(env):
        err_console.print(
            "patchbay: warning: an earlier run was interrupted mid-write; the next apply or "
            "revert restores its files first"
        )
    if as_json:
        print_json(plan.to_json())
    else:
        print_guard(plan, console)
        console.print(status_table(plan))
        for entry in plan.stale:
            if entry.patch_id not in {r.id for r in plan.reports}:
                console.print(
                    f"note: the ledger records {entry.patch_id}, which is no longer in the "
                    "patchset; `patchbay apply --upgrade` reverts it"
                )
    if record is not None:
        write_record(record, provenance(plan, command="status"))
    return 1 if plan.with_status(*BLOCKING) or not plan.guard.ok else 0
