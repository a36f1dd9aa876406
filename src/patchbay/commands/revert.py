"""``patchbay revert``: undo what the ledger says was applied, newest first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..engine import revert_patchset
from ..options import RunOptions
from .common import console, environment, load


def run(
    patchset_arg: str,
    *,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    lock_timeout: float,
    options: Callable[[], RunOptions] | None = None,
    probe_timeout: float | None = None,
) -> int:
    """Revert; exit 0 (also when there was nothing to revert). Errors raise."""
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, state_dir, writable=True, probe_timeout=probe_timeout)
    reverted = revert_patchset(
        patchset, env, lock_timeout=lock_timeout, options=options() if options else None
    )
    if not reverted:
        console.print(
            f"nothing to revert: the ledger records no patch of {patchset.name}", markup=False
        )
    for pid in reverted:
        console.print(f"reverted {pid}", markup=False)
    return 0
