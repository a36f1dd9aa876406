"""``patchbay revert``: undo what the ledger says was applied, newest first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ...apply.revert import forget_records, revert_patchset
from ...errors import InputError
from ...options import RunOptions
from ..output import recovered_lines, revert_lines
from .common import environment, load, say


def run(
    patchset_arg: str,
    *,
    patch_ids: list[str] | None = None,
    forget: bool = False,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    lock_timeout: float,
    options: Callable[[], RunOptions] | None = None,
    probe_timeout: float | None = None,
) -> int:
    """Revert; exit 0 (also when there was nothing to revert). With ``forget``, remove the
    records only (:func:`patchbay.apply.revert.forget_records`). Errors raise."""
    patchset = load(patchset_arg)
    known = {p.id for p in patchset.patches}
    unknown = [pid for pid in patch_ids or [] if pid not in known]
    if unknown:
        raise InputError(
            f"no patch {', '.join(unknown)} in patchset {patchset.name} "
            f"(patches: {', '.join(sorted(known)) or 'none'})",
            file=patchset.path,
        )
    env = environment(patchset, python, root, state_dir, writable=True, probe_timeout=probe_timeout)
    if forget:
        gone = forget_records(patchset, env, patch_ids, lock_timeout=lock_timeout)
        for pid in gone:
            say(f"forgot {pid}: its record only (no file was written)")
        if not gone:
            say(f"nothing to forget: the ledger records no patch of {patchset.name} here")
        return 0
    result = revert_patchset(
        patchset, env, patch_ids, lock_timeout=lock_timeout, options=options() if options else None
    )
    for line in recovered_lines(result.recovered, env.state_dir):  # as apply says it
        say(line)
    for line in revert_lines(result, patchset.name, patch_ids):
        say(line)
    return 0
