"""Patchsets stacked on one file: another patchset's records that start from what this one
left, as quilt's stacked patches start from the ones below them.

Two patchsets of one environment may patch the same file, the second on top of the first (a
``capture`` into a second patchset starts from the first one's result). The first patchset is
then judged on its own result, which the second one's ledger keeps as the original of its
patch (``blobs/<before>``): it stays ``applied`` while the second is on top, a patch of it that
would write the file is a conflict (writing would undo the second one's change), and its
``revert`` is refused naming the second (see revert.py).
"""

from __future__ import annotations

from pathlib import Path

from ..environment.tree import Tree
from .ledger import Ledger, sha256_or_none


class OnTop:
    """Another patchset's patches on a file this patchset wrote last.

    Attributes:
        patchset: the other patchset's name; patch_id: its first patch on the file.
        source: its ``patchset.yaml`` as the ledger recorded it (None: not recorded).
        target, path: the file, as this patchset's record names it.
        ours: the bytes this patchset left (the other patch's recorded original).
    """

    # a plain class: the planning path imports no dataclasses (see tests/cli/test_imports.py)
    def __init__(
        self,
        patchset: str,
        patch_id: str,
        source: Path | None,
        target: str,
        path: str,
        ours: bytes,
    ) -> None:
        self.patchset, self.patch_id, self.source = patchset, patch_id, source
        self.target, self.path, self.ours = target, path, ours

    def sentence(self) -> str:
        """What status says of the file."""
        return (
            f"{self.path}: patch {self.patch_id} of patchset {self.patchset} is applied on top "
            "of it (judged on what this patchset left, which that patch's record keeps)"
        )

    def blocks(self) -> str:
        """Why a pending patch of this patchset may not write the file."""
        where = f" {self.source.parent}" if self.source is not None else ""
        return (
            f"{self.path}: patch {self.patch_id} of patchset {self.patchset} is applied on top of "
            f"this patchset's result, and writing the file would undo it; revert it first "
            f"(patchbay revert{where} {self.patch_id}), apply this patchset, then apply "
            f"{self.patchset} again"
        )


def on_top(
    ledger: Ledger,
    patchset: str,
    tree: Tree,
    history: dict[object, tuple[str | None, str | None]],
) -> dict[object, OnTop]:
    """The files of ``patchset`` that another patchset's records start from, while the file
    still holds what those records left (changed again by hand: none, and status says the file
    changed), keyed by location (:meth:`Tree.location_of`).

    Args:
        ledger: the environment's ledger.
        patchset: this patchset's name.
        tree: the run's tree (its roots name this patchset's targets).
        history: this patchset's file history (first ``before``, last ``after`` by location).
    """
    out: dict[object, OnTop] = {}
    others = [name for name in ledger.all_entries() if name != patchset]
    for name in others:
        chains: dict[object, list] = {}
        for entry in ledger.entries(name):
            for rec in entry.files:
                if rec.target not in tree.roots:
                    continue
                key = tree.location_of(rec.target, rec.path)
                if key in chains:
                    chains[key][3] = rec.after
                else:
                    chains[key] = [rec, entry.patch_id, rec.before, rec.after]
        for key, (rec, patch_id, first, last) in chains.items():
            mine = history.get(key)
            if mine is None or first is None or first != mine[1]:
                continue
            if sha256_or_none(tree.on_disk_if_file(rec.target, rec.path)) != last:
                continue
            ours = ledger.blob(first)
            if ours is None:
                continue
            out[key] = OnTop(name, patch_id, ledger.source(name), rec.target, rec.path, ours)
    return out
