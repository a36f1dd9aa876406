"""``patchbay validate``: schema and consistency checks of a patchset, offline."""

from __future__ import annotations

from ..engine import load_patches
from ..model import Patchset
from ..ordering import unordered_overlaps
from ..waivers import placeholder_in
from .common import console, load


def _blanks(patchset: Patchset) -> list[tuple[str, str]]:
    """``(where, placeholder)`` for every blank left in a patch's description or upstream
    state (``<TODO: ...>`` written by ``capture``, ``TODO`` by ``import``), with its line."""
    out = []
    for i, patch in enumerate(patchset.patches):
        fields: list[tuple[tuple[str, ...], str]] = [(("description",), patch.description)]
        if patch.upstream_status is not None:
            fields.append((("upstream_status", "reason"), patch.upstream_status.reason))
        for keys, text in fields:
            blank = placeholder_in(text)
            if blank:
                line = patchset.patch_line(i, *keys)
                out.append((f"{patchset.path}:{line}: {patch.id}: {'.'.join(keys)}", blank))
    return out


def run(patchset_arg: str) -> int:
    """Exit 0 when valid; problems raise :class:`~patchbay.errors.InputError` (exit 2)."""
    patchset = load(patchset_arg)
    loaded = load_patches(patchset)
    pairs = list(zip(patchset.patches, loaded, strict=True))
    for patch, lp in pairs:
        for note in lp.notes:
            console.print(f"note: {patch.id}: {note}", markup=False)
    for overlap in unordered_overlaps(patchset, loaded):
        line = patchset.patch_line(overlap.index, "id")
        console.print(
            f"note: {patchset.path}:{line}: {overlap.later} and {overlap.earlier} both change "
            f"{overlap.path}; if {overlap.later} was made on top of {overlap.earlier}, declare "
            f"`after: [{overlap.earlier}]` so that their order is checked",
            markup=False,
        )
    unlocked = [(patch, lp) for patch, lp in pairs if lp.unlocked]
    for patch, lp in unlocked:
        console.print(f"NOT LOCKED: {patch.id}: {lp.unlocked}", markup=False)
    blanks = _blanks(patchset)
    for where, text in blanks:
        console.print(f"TO FILL: {where}: {text}", markup=False)
    extra = f", {len(unlocked)} not locked yet (apply refuses them)" if unlocked else ""
    if blanks:
        extra += f", {len(blanks)} blank(s) to fill (the audit flags them)"
    console.print(f"{patchset.path}: valid ({len(loaded)} patch(es){extra})", markup=False)
    return 0
