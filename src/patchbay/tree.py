"""The files under the target roots, as seen by a run: disk plus the changes staged so far.

Preflight classifies patches in order; each pending patch stages its result here so the next
patch is classified against the tree as it will be, not as it is. Nothing in this module writes
to disk. Every path goes through :meth:`Tree.resolve`, the path gate of :mod:`patchbay.paths`,
which refuses paths that leave their root, through ``..`` or through a symbolic link.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from .diffparse import split_lines
from .errors import RefusedError
from .hunks import LineIndex
from .options import RunOptions
from .paths import PathRejected, resolve_under

if TYPE_CHECKING:
    from .targets import Environment

_ABSENT = object()


class Tree:
    """A read view of the target roots with staged contents on top.

    Args:
        roots: target name -> root directory.
        env: the engine environment (kinds that act on packages need its interpreter).
        options: network, cache and bundle options of the run.

    Attributes:
        changed: ids of the patches staged as pending so far (a ``command`` patch runs when one
            it depends on is among them).
        protected: distributions no package pin may change unless it allows them.
    """

    def __init__(
        self,
        roots: dict[str, Path],
        env: Environment | None = None,
        options: RunOptions | None = None,
    ) -> None:
        self.roots = roots
        self.env = env
        self.options = options or RunOptions()
        self.changed: set[str] = set()
        self.protected: set[str] = set()
        self.folder: Path | None = None  # the patchset folder (relative find-links)
        self._real_roots: dict[str, str] = {}
        self._staged: dict[tuple[str, str], bytes | None] = {}
        self._resolved: dict[tuple[str, str], Path] = {}
        self._disk: dict[tuple[str, str], bytes | None] = {}
        self._indexes: dict[int, tuple[bytes, LineIndex]] = {}

    def resolve(self, target: str, rel: str) -> Path:
        """Absolute path of ``rel`` under ``target``'s root, through the path gate
        (:func:`patchbay.paths.resolve_under`).

        Raises:
            RefusedError: the path is absolute, has ``..``, a NUL, is a symbolic link, or
                resolves (through a linked folder) to somewhere outside the root.
        """
        known = self._resolved.get((target, rel))
        if known is not None:
            return known
        root = self.roots[target]
        real_root = self._real_roots.get(target)
        if real_root is None:
            real_root = self._real_roots[target] = os.path.realpath(root)
        try:
            path = resolve_under(root, rel, real_root=real_root)
        except PathRejected as exc:
            raise RefusedError(f"{exc} (target {target!r})", file=root / rel) from None
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
        known = self._disk.get((target, rel), _ABSENT)  # a plan reads each file once
        if known is not _ABSENT:
            return known  # type: ignore[return-value]
        path = self.resolve(target, rel)
        data = _read_regular(path, rel)
        self._disk[(target, rel)] = data
        return data

    def line_index(self, data: bytes) -> LineIndex:
        """The :class:`LineIndex` of some file content, built once per content object."""
        cached = self._indexes.get(id(data))
        if cached is not None and cached[0] is data:
            return cached[1]
        index = LineIndex(split_lines(data.decode("utf-8", "surrogateescape")))
        self._indexes[id(data)] = (data, index)
        return index

    def fork(self) -> Tree:
        """A copy whose staged changes are its own (to try a result without committing to it)."""
        other = Tree(self.roots, self.env, self.options)
        other._staged = dict(self._staged)
        other._resolved = self._resolved
        other._disk = self._disk
        other._real_roots = self._real_roots
        other.changed = set(self.changed)
        other.protected = self.protected
        other.folder = self.folder
        return other

    def on_disk(self, target: str, rel: str) -> bytes | None:
        """Content on disk, ignoring staged changes."""
        return _read_regular(self.resolve(target, rel), rel)

    def stage(self, target: str, rel: str, data: bytes | None) -> None:
        """Record the content a pending patch will leave (None: the file will be deleted)."""
        self._staged[(target, rel)] = data


def _read_regular(path: Path, rel: str) -> bytes | None:
    """The bytes of a regular file; None when it does not exist. A FIFO or a device would
    hang or never end, and a folder is no file: those are refused."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISDIR(st.st_mode):
        raise RefusedError(f"{rel} is a directory, expected a file", file=path)
    if not stat.S_ISREG(st.st_mode):
        raise RefusedError(f"{rel} is not a regular file (a FIFO, socket or device)", file=path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
