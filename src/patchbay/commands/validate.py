"""``patchbay validate``: schema and consistency checks of a patchset, offline."""

from __future__ import annotations

from ..engine import load_patches
from .common import console, load


def run(patchset_arg: str) -> int:
    """Exit 0 when valid; problems raise :class:`~patchbay.errors.InputError` (exit 2)."""
    patchset = load(patchset_arg)
    loaded = load_patches(patchset)
    pairs = list(zip(patchset.patches, loaded, strict=True))
    for patch, lp in pairs:
        for note in lp.notes:
            console.print(f"note: {patch.id}: {note}", markup=False)
    unlocked = [(patch, lp) for patch, lp in pairs if lp.unlocked]
    for patch, lp in unlocked:
        console.print(f"NOT LOCKED: {patch.id}: {lp.unlocked}", markup=False)
    extra = f", {len(unlocked)} not locked yet (apply refuses them)" if unlocked else ""
    console.print(f"{patchset.path}: valid ({len(loaded)} patch(es){extra})", markup=False)
    return 0
