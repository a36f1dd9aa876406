"""The files under the target roots, as seen by a run: disk plus the changes staged so far.

Preflight classifies patches in order; each pending patch stages its result here so the next
patch is classified against the tree as it will be, not as it is. Nothing in this module writes
to disk. Every path goes through :meth:`Tree.resolve`, which refuses paths that leave their root,
through ``..`` or through a symbolic link.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import RefusedError

_ABSENT = object()


class Tree:
    """A read view of the target roots with staged contents on top.

    Args:
        roots: target name -> root directory.
    """

    def __init__(self, roots: dict[str, Path]) -> None:
        self.roots = roots
        self._real_roots: dict[str, str] = {}
        self._staged: dict[tuple[str, str], bytes | None] = {}
        self._resolved: dict[tuple[str, str], Path] = {}

    def resolve(self, target: str, rel: str) -> Path:
        """Absolute path of ``rel`` under ``target``'s root.

        Raises:
            RefusedError: the path is absolute, has ``..``, is a symbolic link, or resolves
                (through a linked folder) to somewhere outside the root.
        """
        known = self._resolved.get((target, rel))
        if known is not None:
            return known
        root = self.roots[target]
        if rel.startswith("/") or ".." in rel.split("/"):
            raise RefusedError(f"path {rel!r} escapes target {target!r}", file=root)
        path = root / rel
        real_root = self._real_roots.get(target)
        if real_root is None:
            real_root = self._real_roots[target] = os.path.realpath(root)
        if os.path.islink(path):
            raise RefusedError(
                f"{rel} is a symbolic link; patchbay does not patch through links", file=path
            )
        real = os.path.realpath(path)
        if real != real_root and not real.startswith(real_root + os.sep):
            raise RefusedError(
                f"{rel} resolves to {real}, outside target {target!r} ({real_root})", file=path
            )
        self._resolved[(target, rel)] = path
        return path

    def read(self, target: str, rel: str) -> bytes | None:
        """Current content (staged, else on disk); None when the file does not exist.

        Raises:
            RefusedError: the path is unsafe (see :meth:`resolve`) or is a directory.
        """
        staged = self._staged.get((target, rel), _ABSENT)
        if staged is not _ABSENT:
            return staged  # type: ignore[return-value]
        path = self.resolve(target, rel)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise RefusedError(f"{rel} is a directory, expected a file", file=path) from None

    def on_disk(self, target: str, rel: str) -> bytes | None:
        """Content on disk, ignoring staged changes."""
        try:
            return self.resolve(target, rel).read_bytes()
        except FileNotFoundError:
            return None

    def stage(self, target: str, rel: str, data: bytes | None) -> None:
        """Record the content a pending patch will leave (None: the file will be deleted)."""
        self._staged[(target, rel)] = data
