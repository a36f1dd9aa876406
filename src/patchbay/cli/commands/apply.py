"""``patchbay apply``: apply the pending patches of a patchset as one transaction."""

from __future__ import annotations

import sys

from .common import environment, load, note, say, say_each

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the no-op path)
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from ...apply.noop import NoOp
    from ...options import RunOptions


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
    bundle: Path | None = None,
    noop_checked: bool = False,
    verbose: bool = False,
) -> int:
    """Apply; print what was done; exit 0 (done or nothing to do). Errors raise.

    A re-run on an environment the ledger's identity still describes is answered by the
    verified no-op (:mod:`patchbay.apply.noop`) without loading the patchset; anything it cannot
    verify takes the full engine. ``bundle`` is the bundle the ``options`` name (checked
    first, as every apply with a bundle does). ``noop_checked``: the caller checked the
    verified no-op for these very arguments already, and it did not verify (it is not checked
    twice). ``verbose``: a verified no-op prints the notes of the last apply in full
    (:func:`print_noop`).
    """
    if bundle is not None:
        from ...carry.manifest import check_bundle

        check_bundle(bundle)
    if record is None and not dry_run and not noop_checked:
        from ...apply import noop

        verified = noop.check(patchset_arg, python=python, root=root, state_dir=state_dir)
        if verified is not None:
            print_noop(verified, verbose=verbose)
            return 0

    from ...apply.engine import apply_patchset, plan_apply
    from ...apply.interrupted import interrupted
    from ...apply.plan import make_plan
    from ...apply.results import PatchStatus, apply_notes
    from ...options import RunOptions
    from ..output import recovered_lines

    run_options = options() if options is not None else RunOptions()

    if record is not None:
        from ...carry.provenance import check_record_path, provenance, write_record

        check_record_path(record)
    patchset = load(patchset_arg)
    if dry_run:
        from ...redaction import redact
        from ..preview import dry_run_text

        env = environment(patchset, python, root, state_dir, probe_timeout=probe_timeout)
        if interrupted(env):  # said first: also when the plan below refuses
            say(_UNRECOVERED.format(journal=env.state_dir / "journal"), err=True)
        plan = plan_apply(patchset, env, upgrade=upgrade, options=run_options)
        sys.stdout.write(redact(dry_run_text(plan)))
        return 0
    # the state folder is written only when there is something to do: the lock checks it
    # then (statelock.check_writable), as for the default folder, so that an apply with
    # nothing to do needs no state folder it can write, whichever folder it is
    env = environment(patchset, python, root, state_dir, probe_timeout=probe_timeout)
    result = apply_patchset(
        patchset, env, upgrade=upgrade, lock_timeout=lock_timeout, options=run_options
    )
    plan = result.plan
    say_each("", recovered_lines(result.recovered, env.state_dir))
    for replaced in plan.replaced:
        say(replaced.sentence())
    say_each("dropped ", [f"{pid}'s stale record (no file written)" for pid in result.forgot])
    say_each("reverted ", [f"{pid} (recorded version)" for pid in result.reverted])
    say_each(("applied", "green"), [f" {pid}" for pid in result.applied])
    redundant = [r.id for r in plan.with_status(PatchStatus.REDUNDANT)]
    already = [r.id for r in plan.with_status(PatchStatus.APPLIED)]
    for line in apply_notes(plan):
        note(line)
    if result.nothing_to_do:
        _print_nothing_to_do(redundant, len(already) + len(redundant))
    else:
        _print_redundant(redundant)
        say(
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


# a dry run writes nothing, so it cannot roll the journal back to plan against what apply
# would see: it plans against the tree as it is, and says so
_UNRECOVERED = (
    "patchbay: warning: {journal}: an interrupted run's journal is present, which apply would "
    "roll back first; the plan below is of the current, unrecovered tree"
)


def print_noop(verified: NoOp, *, quiet: bool = False, verbose: bool = False) -> None:
    """Print the answer of a verified no-op (:func:`patchbay.apply.noop.check`): the redundant
    patches, if any, and "nothing to do: N patch(es) already present" on stdout.

    The ``note:`` lines the last apply printed (``verified.notes``, "applied at line N (offset
    K)") were printed by the run that recorded them; a no-op, which changes nothing, says only
    how many there are, on its last line: ``nothing to do: 5 patch(es) already present (5
    notes from the last apply: -v shows them)``. With ``verbose`` it prints them in full first
    instead, as the engine's no-op printed them. With ``quiet`` (or after ``--quiet``
    silenced notes) it says nothing of them.
    """
    progress = sys.modules.get("patchbay.progress")  # imported by a run with --quiet
    silenced = quiet or (progress is not None and progress.quiet())
    notes = [] if silenced else verified.notes
    if verbose:
        for line in notes:
            note(line)  # as the engine's no-op prints them (redacted)
    # plain: the ids are checked names and the rest are counts (nothing to redact)
    if verified.redundant:
        _print_redundant(verified.redundant)
    counted = ""
    if notes and not verbose:
        noun = "note" if len(notes) == 1 else "notes"
        counted = f" ({len(notes)} {noun} from the last apply: -v shows them)"
    sys.stdout.write(f"nothing to do: {verified.present} patch(es) already present{counted}\n")


def _print_redundant(redundant: list[str]) -> None:
    if redundant:
        say(
            (f"{len(redundant)} patch(es) redundant", "cyan"),
            " (already in the image, not applied by patchbay; remove them from the patchset): "
            + ", ".join(redundant),
        )


def _print_nothing_to_do(redundant: list[str], present: int) -> None:
    _print_redundant(redundant)
    say(f"nothing to do: {present} patch(es) already present")
