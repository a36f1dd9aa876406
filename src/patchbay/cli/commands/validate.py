"""``patchbay validate``: schema and consistency checks of a patchset, offline."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...apply.plan import load_patches
from ...patchset.blanks import blank_items
from ...patchset.ordering import same_changes, unordered_overlaps
from .common import load, print_json, say
from .common import note as note_line

if TYPE_CHECKING:
    from ...patchset.model import Patchset


def _blanks(patchset: Patchset) -> list[tuple[str, str]]:
    """``(where, placeholder)`` of :func:`~patchbay.patchset.blanks.blank_items`, ``where`` as
    ``file:line: id: field``
    (``file:line: field`` for the patchset's own fields)."""
    out = []
    for pid, line, field, blank in blank_items(patchset):
        where = f"{patchset.path}:{line}" if line else str(patchset.path)
        out.append((f"{where}: {pid}: {field}" if pid else f"{where}: {field}", blank))
    return out


def run(patchset_arg: str, *, output_format: str | None = None, verbose: bool = False) -> int:
    """Validate; exit 0 when valid. Problems raise :class:`~patchbay.errors.InputError` (exit
    2); with ``output_format="json"`` they are the document's ``error`` instead (``valid``
    false) and the exit status stays 2.

    ``table`` and ``concise`` print the same lines (``TO FILL: file:line: id: field: text``);
    a long list in a patch's note or ``NOT LOCKED`` line (many packages, many URLs) is
    summarised (:mod:`patchbay.summaries`) unless ``verbose``; JSON carries it whole.
    """
    if output_format == "json":
        return _json(patchset_arg)
    from ...summaries import shown

    patchset = load(patchset_arg)
    loaded = load_patches(patchset)
    refuse_same_changes(patchset, loaded)
    pairs = list(zip(patchset.patches, loaded, strict=True))
    for patch, lp in pairs:
        for note in shown(lp.notes, full=verbose):
            note_line(f"note: {patch.id}: {note}")
    for overlap in unordered_overlaps(patchset, loaded):
        line = patchset.patch_line(overlap.index, "id")
        note_line(
            f"note: {patchset.path}:{line}: {overlap.later} and {overlap.earlier} both change "
            f"{overlap.path}; if {overlap.later} was made on top of {overlap.earlier}, declare "
            f"`after: [{overlap.earlier}]` so that their order is checked"
        )
    unlocked = [(patch, lp) for patch, lp in pairs if lp.unlocked]
    for patch, lp in unlocked:
        (reason,) = shown([str(lp.unlocked)], full=verbose)
        say(f"NOT LOCKED: {patch.id}: {reason}")
    blanks = _blanks(patchset)
    for where, text in blanks:
        say(f"TO FILL: {where}: {text}")
    extra = f", {len(unlocked)} not locked yet (apply refuses them)" if unlocked else ""
    if blanks:
        extra += f", {len(blanks)} blank(s) to fill"
    say(f"{patchset.path}: valid ({len(loaded)} patch(es){extra})")
    return 0


def refuse_same_changes(patchset: Patchset, loaded: list[Any]) -> None:
    """Refuse two diff patches that make one change from different bases
    (:func:`patchbay.patchset.ordering.same_changes`): they cannot both apply.

    Raises:
        InputError: at the second patch's line, naming both and the file.
    """
    from ...errors import InputError

    for same in same_changes(patchset, loaded):
        raise InputError(
            f"{same.second} and {same.first} make the same change to {same.path} from different "
            "bases (a script's apply-one-of: the same edit for two images), so they can never "
            "both apply; keep the one made for this patchset's image",
            file=patchset.path,
            line=patchset.patch_line(same.index, "id"),
            patch_id=same.second,
        )


def _json(patchset_arg: str) -> int:
    """The ``validate`` document (docs/schemas/validate.schema.json)."""
    from ...errors import PatchbayError
    from .common import patchset_path

    doc: dict[str, Any] = {"patchset": str(patchset_path(patchset_arg)), "valid": False}
    try:
        patchset = load(patchset_arg)
        doc["patchset"] = str(patchset.path)
        loaded = load_patches(patchset)
        refuse_same_changes(patchset, loaded)
    except PatchbayError as exc:
        doc["error"] = {
            "message": exc.reason,
            "file": None if exc.file is None else str(exc.file),
            "line": exc.line,
            "patch_id": exc.patch_id,
            "details": list(exc.details),
            "exit_code": exc.exit_code,
        }
        print_json(doc)
        return exc.exit_code
    doc["valid"] = True
    doc["patches"] = [
        {
            "id": patch.id,
            "kind": patch.kind,
            "patch_sha256": lp.sha256,
            "notes": list(lp.notes),
            "unlocked": lp.unlocked,
        }
        for patch, lp in zip(patchset.patches, loaded, strict=True)
    ]
    doc["blanks"] = [
        {"file": str(patchset.path), "line": line, "patch_id": pid, "field": field, "text": text}
        for pid, line, field, text in blank_items(patchset)
    ]
    doc["overlaps"] = [  # patches that change one file with no declared order (notes)
        {
            "file": str(patchset.path),
            "line": patchset.patch_line(o.index, "id"),
            "later": o.later,
            "earlier": o.earlier,
            "path": o.path,
        }
        for o in unordered_overlaps(patchset, loaded)
    ]
    print_json(doc)
    return 0
