"""Blanks left to fill in a patchset: the ``TO FILL`` lines of ``validate``, and the count
``import`` prints for the draft it wrote (one function for both, so that the two agree)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .placeholders import placeholder_in

if TYPE_CHECKING:
    from .model import Patchset


def blank_items(patchset: Patchset) -> list[tuple[str | None, int | None, str, str]]:
    """``(patch id or None, line, field, placeholder)`` for every blank left to fill: the
    patchset's ``description``, ``image.reference`` and each target's ``package``
    (``TODO_...``), and each patch's description and upstream state (``<TODO: ...>`` written
    by ``capture``, ``TODO`` by ``import``); a placeholder is what
    :func:`patchbay.patchset.placeholders.placeholder_in` finds (the audit's rule for waivers).

    Args:
        patchset: a loaded patchset.

    Returns:
        ``(patch id, 1-based line or None, dotted field, placeholder text)``, the patchset's own
        fields first (``patch id`` None), then each patch's in order.
    """
    spec = patchset.spec
    out: list[tuple[str | None, int | None, str, str]] = []
    top: list[tuple[tuple[str, ...], str, str]] = [
        (("description",), spec.description or "", ""),
        (("image", "reference"), spec.image.reference, ""),
    ]
    for name, target in spec.targets.items():
        # an import name holds no space: the importer's blank is TODO_<what>, read as words
        package = target.package or ""
        top.append((("targets", name, "package"), package.replace("_", " "), package))
    for keys, text, shown in top:
        blank = placeholder_in(text)
        if blank:
            line = patchset.document.line_of(keys)
            out.append((None, line, ".".join(keys), shown or blank))
    for i, patch in enumerate(patchset.patches):
        fields: list[tuple[tuple[str, ...], str]] = [(("description",), patch.description)]
        if patch.upstream_status is not None:
            fields.append((("upstream_status", "reason"), patch.upstream_status.reason))
        for keys, text in fields:
            blank = placeholder_in(text)
            if blank:
                out.append((patch.id, patchset.patch_line(i, *keys), ".".join(keys), blank))
    return out
