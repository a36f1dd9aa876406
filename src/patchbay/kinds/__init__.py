"""Patch kinds: one module per kind, all behind :class:`~patchbay.kinds.base.PatchKind`.

Adding a kind means adding its spec model to :mod:`patchbay.model` and a module here that is
registered in :data:`KINDS`.
"""

from __future__ import annotations

from .base import ContentState, FileChange, Inspection, LoadedPatch, PatchKind, PendingPatch
from .diff import DiffKind
from .replace import ReplaceKind

KINDS: dict[str, PatchKind] = {kind.name: kind for kind in (DiffKind(), ReplaceKind())}

__all__ = [
    "KINDS",
    "ContentState",
    "FileChange",
    "Inspection",
    "LoadedPatch",
    "PatchKind",
    "PendingPatch",
]
