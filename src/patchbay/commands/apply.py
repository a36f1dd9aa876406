"""``patchbay apply``: apply the pending patches of a patchset as one transaction."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from rich.markup import escape

from ..bundle import check_bundle
from ..engine import PatchStatus, apply_patchset, make_plan, plan_apply
from ..options import RunOptions
from ..output import apply_notes
from ..preview import dry_run_text
from ..provenance import check_record_path, provenance, write_record
from ..redaction import redact
from .common import console, environment, load


def run(
    patchset_arg: str,
    *,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    upgrade: bool,
    lock_timeout: float,
    dry_run: bool = False,
    record: Path | None,
    options: Callable[[], RunOptions] | None = None,
    probe_timeout: float | None = None,
) -> int:
    """Apply; print what was done; exit 0 (done or nothing to do). Errors raise."""
    if record is not None:
        check_record_path(record)
    run_options = options() if options is not None else RunOptions()
    if run_options.bundle is not None:
        check_bundle(run_options.bundle)
    patchset = load(patchset_arg)
    if dry_run:
        env = environment(patchset, python, root, state_dir, probe_timeout=probe_timeout)
        plan = plan_apply(patchset, env, upgrade=upgrade, options=run_options)
        sys.stdout.write(redact(dry_run_text(plan)))
        return 0
    env = environment(patchset, python, root, state_dir, writable=True, probe_timeout=probe_timeout)
    result = apply_patchset(
        patchset, env, upgrade=upgrade, lock_timeout=lock_timeout, options=run_options
    )
    plan = result.plan
    for path in result.recovered:
        console.print(f"rolled back an interrupted earlier run: restored {path}", markup=False)
    for pid in result.reverted:
        console.print(f"reverted {pid} (recorded version)", markup=False)
    for pid in result.applied:
        console.print(f"[green]applied[/] {escape(pid)}")
    redundant = [r.id for r in plan.with_status(PatchStatus.REDUNDANT)]
    already = [r.id for r in plan.with_status(PatchStatus.APPLIED)]
    for line in apply_notes(plan):
        console.print(line, markup=False)
    if redundant:
        console.print(
            f"[cyan]{len(redundant)} patch(es) redundant[/] (already in the image, not applied "
            f"by patchbay; remove them from the patchset): {escape(', '.join(redundant))}"
        )
    if result.nothing_to_do:
        console.print(f"nothing to do: {len(already) + len(redundant)} patch(es) already present")
    else:
        console.print(
            f"patchset {patchset.name}: {len(result.applied)} applied, {len(already)} already "
            f"applied, {len(redundant)} redundant"
        )
    if record is not None:
        outcome = {pid: "applied" for pid in result.applied}
        if not result.nothing_to_do:  # package pins changed versions: look again
            env = environment(patchset, python, root, state_dir, probe_timeout=probe_timeout)
        final = make_plan(patchset, env) if not result.nothing_to_do else plan
        write_record(record, provenance(final, command="apply", outcome=outcome))
    return 0
