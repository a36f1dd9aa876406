"""``patchbay vendor``: pin remote diffs and unhashed artifacts into the lock file."""

from __future__ import annotations

from collections.abc import Callable

from ..options import RunOptions
from ..vendor import DEFAULT_API, vendor_patchset
from .common import load, say


def run(
    patchset_arg: str,
    *,
    api_url: str | None,
    options: Callable[[], RunOptions],
    update: bool = False,
) -> int:
    """Vendor; exit 0. Errors raise."""
    patchset = load(patchset_arg)
    result = vendor_patchset(
        patchset, api_url=api_url or DEFAULT_API, options=options(), update=update
    )
    for pid in result.sources:
        say(f"locked {pid}")
    for url in result.artifacts:
        say(f"locked {url}")
    if not result.sources and not result.artifacts:
        say("nothing to vendor: no remote source and no unhashed artifact")
    return 0
