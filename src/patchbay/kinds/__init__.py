"""Patch kinds: one module per kind, all behind :class:`~patchbay.kinds.base.PatchKind`.

Adding a kind means adding its spec model to :mod:`patchbay.patchset.model` and a module here that
is registered in :data:`KINDS`. A kind's module is imported the first time :data:`KINDS` is asked
for it, so that a run over diffs loads neither pip's nor the downloads' code. A kind is a
plug-in of the apply core: it stages on the core's tree, writes and journals through the
:class:`~patchbay.apply.transaction.Transaction` it is handed and reads the ledger's records;
the artifact kind downloads through :mod:`patchbay.carry.fetch`. Nothing here imports the CLI.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from .base import ContentState, FileChange, Inspection, LoadedPatch, PatchKind, PendingPatch

_MODULES = {
    "diff": ("diff", "DiffKind"),
    "replace": ("replace", "ReplaceKind"),
    "pip": ("pip", "PipKind"),
    "artifact": ("artifact", "ArtifactKind"),
    "command": ("command", "CommandKind"),
}
"""kind name -> (module in this package, class implementing it)."""


class _Registry(Mapping[str, PatchKind]):
    """kind name -> the one instance of its implementation, imported when first asked for."""

    def __init__(self) -> None:
        self._loaded: dict[str, PatchKind] = {}

    def __getitem__(self, name: str) -> PatchKind:
        kind = self._loaded.get(name)
        if kind is None:
            module, cls = _MODULES[name]  # KeyError: no such kind
            kind = getattr(importlib.import_module(f".{module}", __name__), cls)()
            self._loaded[name] = kind
        return kind

    def __contains__(self, name: object) -> bool:
        return name in _MODULES  # without importing the kind

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


KINDS: Mapping[str, PatchKind] = _Registry()

__all__ = [
    "KINDS",
    "ContentState",
    "FileChange",
    "Inspection",
    "LoadedPatch",
    "PatchKind",
    "PendingPatch",
]
