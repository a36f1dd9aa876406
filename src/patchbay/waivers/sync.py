"""``patchbay waiver sync``: a waiver's generated parts written again from the patchset, every
other line kept (the blocks between ``<!-- patchbay:NAME begin ... -->`` and ``<!-- patchbay:NAME
end -->`` of :mod:`.template`, and the front matter's ``patches`` list)."""

from __future__ import annotations

from ..errors import InputError
from ..patchset.describe import patch_summaries
from ..patchset.model import Patchset
from .document import Waiver
from .template import (
    PATCHES_BLOCK,
    UPSTREAM_BLOCK,
    patch_table,
    replace_block,
    upstream_list,
    yaml_word,
)


def synced_text(
    text: str,
    waiver: Waiver,
    patchset: Patchset,
    patch_ids: list[str],
    shared: set[str],
    source: str,
) -> tuple[str, int]:
    """``text`` (of ``waiver``, which has front matter) with its ``patches`` list and generated
    blocks written from ``patchset``: the patches of it the waiver lists, plus ``patch_ids``
    (all of the patchset's when it lists none); a waiver without a patch table gets one at its
    end. ``shared``: ids other patchsets have too (named ``patchset/id``); ``source``: the
    patchset as the blocks name it.

    Returns:
        (the new text, the number of patches of ``patchset`` it now lists).

    Raises:
        InputError: a patch id ``patchset`` does not have.
    """
    by_id = {p.id: (i, p) for i, p in enumerate(patchset.patches)}
    unknown = [pid for pid in patch_ids if pid not in by_id]
    if unknown:
        raise InputError(
            f"no patch {', '.join(unknown)} in patchset {patchset.name}", file=patchset.path
        )
    wanted = [pid for pid in by_id if waiver.lists(patchset.name, pid) or pid in patch_ids] or list(
        by_id
    )
    chosen = [by_id[pid] for pid in wanted]
    summaries = patch_summaries(patchset, chosen, shared)
    text = with_patches(text, waiver, [s.ref or s.id for s in summaries], patchset.name)
    table = replace_block(text, PATCHES_BLOCK, patch_table(summaries, source))
    text = (
        table
        if table is not None
        else text.rstrip("\n") + f"\n\n## Patches of patchset {patchset.name}\n\n"
        + patch_table(summaries, source) + "\n"
    )  # fmt: skip
    text = replace_block(text, UPSTREAM_BLOCK, upstream_list(summaries, source)) or text
    return text, len(summaries)


def with_patches(text: str, waiver: Waiver, refs: list[str], patchset_name: str) -> str:
    """``text`` with the front matter's ``patches`` key (its line and its item lines) rewritten
    as one flow list: the references of other patchsets it held, then ``refs``."""
    others = [r for r in waiver.patches if "/" in r and r.split("/", 1)[0] != patchset_name]
    items = ", ".join(yaml_word(r) for r in [*others, *refs])
    lines = text.split("\n")
    key = waiver.line_of("patches", 0)
    if key == 0:  # no patches key: after the id
        at = waiver.line_of("id", 2)
        lines.insert(at, f"patches: [{items}]")
        return "\n".join(lines)
    last = max(
        [
            key,
            *(v for k, v in waiver.key_lines.items() if isinstance(k, tuple) and k[0] == "patches"),
        ]
    )
    lines[key - 1 : last] = [f"patches: [{items}]"]
    return "\n".join(lines)
