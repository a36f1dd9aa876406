"""``patchbay validate``: schema and consistency checks of a patchset, offline."""

from __future__ import annotations

from ..engine import load_patches
from .common import console, load


def run(patchset_arg: str) -> int:
    """Exit 0 when valid; problems raise :class:`~patchbay.errors.InputError` (exit 2)."""
    patchset = load(patchset_arg)
    loaded = load_patches(patchset)
    notes = [
        f"{p.id}: {n}" for p, lp in zip(patchset.patches, loaded, strict=True) for n in lp.notes
    ]
    for note in notes:
        console.print(f"note: {note}")
    console.print(f"{patchset.path}: valid ({len(loaded)} patch(es))")
    return 0
