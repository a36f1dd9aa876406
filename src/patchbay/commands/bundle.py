"""``patchbay bundle``: everything apply needs, for an air-gapped container."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..bundle import make_bundle
from ..options import RunOptions
from .common import console, environment, load


def run(
    patchset_arg: str, *, out: Path, python: str | None, options: Callable[[], RunOptions]
) -> int:
    """Write the bundle; exit 0. Errors raise."""
    patchset = load(patchset_arg)
    env = environment(patchset, python, None, None)
    manifest = make_bundle(patchset, env, out, options())
    console.print(
        f"bundle {out}: {len(manifest)} file(s); inside the container run "
        f"`patchbay apply {out / 'patchset'} --bundle {out} --offline`",
        markup=False,
    )
    return 0
