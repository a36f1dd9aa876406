"""``patchbay vendor``: pin remote diffs and unhashed artifacts into the lock file."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ...carry.vendor import DEFAULT_API, vendor_patchset
from ...options import RunOptions
from .common import load, say


def run(
    patchset_arg: str,
    *,
    api_url: str | None,
    options: Callable[[], RunOptions],
    update: bool = False,
    local_copies: Sequence[Path] = (),
) -> int:
    """Vendor; exit 0. Errors raise."""
    patchset = load(patchset_arg)
    result = vendor_patchset(
        patchset,
        api_url=api_url or DEFAULT_API,
        options=options(),
        update=update,
        local_copies=local_copies,
    )
    for pid in result.sources:
        origin = result.origins.get(pid)
        say(f"locked {pid}" + (f" (from {origin})" if origin else ""))
        left = result.left_out.get(pid)
        if left:
            say(f"  left out by its paths filter: {', '.join(left)}")
        if pid in result.relocked:
            say(f"  note: {result.relocked[pid]}")
    for url in result.artifacts:
        say(f"locked {url}")
    for pid, what in result.revisions.items():
        say(f"locked {pid}: {what}")
    for pid, why in result.skipped.items():
        say(f"not locked (offline): {pid}: {why}")
    if not result.sources and not result.artifacts and not result.revisions and not result.skipped:
        say(
            "nothing to vendor: no remote source, no unhashed artifact, no source build at a "
            "tag or branch"
        )
    return 0
