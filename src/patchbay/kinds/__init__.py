"""Patch kinds: one module per kind, all behind :class:`~patchbay.kinds.base.PatchKind`.

Adding a kind means adding its spec model to :mod:`patchbay.model` and a module here that is
registered in :data:`KINDS`.
"""

from __future__ import annotations

from .artifact import ArtifactKind
from .base import ContentState, FileChange, Inspection, LoadedPatch, PatchKind, PendingPatch
from .command import CommandKind
from .diff import DiffKind
from .pip import PipKind
from .replace import ReplaceKind

KINDS: dict[str, PatchKind] = {
    kind.name: kind
    for kind in (DiffKind(), ReplaceKind(), PipKind(), ArtifactKind(), CommandKind())
}

__all__ = [
    "KINDS",
    "ContentState",
    "FileChange",
    "Inspection",
    "LoadedPatch",
    "PatchKind",
    "PendingPatch",
]
