"""What an analysis read outside its own script: the repository files it followed or probed.

The walk of one script also depends on files next to it: a ``source``d helper, a checked-in
patch file, whether ``./tools/x.sh`` exists, what a glob over ``patches/*.patch`` lists, what a
``PYTHONPATH`` folder holds. Every such look goes through one :class:`Inputs` object, which
answers it and records the answer (a content digest for a read). A cached analysis is reused
only when every recorded answer is still the same (:func:`unchanged`), as a build tool checks
its recorded inputs before reusing an output.
"""

from __future__ import annotations

import glob as globbing
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["Inputs", "Probe", "unchanged"]

Probe = tuple[str, str, object]
"""``(kind, path, answer)``: ``("file", path, bool)``, ``("read", path, sha256 hex or None)``,
``("glob", pattern, [paths])``, ``("folder", path, [is a folder, names or None])``."""


class Inputs:
    """The file-system looks of one analysis, answered and recorded (each asked once)."""

    def __init__(self) -> None:
        self.answers: dict[tuple[str, str], object] = {}

    @property
    def probes(self) -> list[Probe]:
        """Every look with its answer, in the order they were first made."""
        return [(kind, path, answer) for (kind, path), answer in self.answers.items()]

    def isfile(self, path: str) -> bool:
        """:func:`os.path.isfile`."""
        key = ("file", path)
        known = self.answers.get(key)
        if known is None:
            known = self.answers[key] = os.path.isfile(path)
        return bool(known)

    def read_text(self, path: Path | str) -> str:
        """The file's text as ``Path.read_text(encoding="utf-8", errors="replace")`` reads it.

        Raises:
            OSError: it cannot be read (recorded as such).
        """
        key = ("read", os.fspath(path))
        try:
            data = Path(path).read_bytes()
        except OSError:
            self.answers[key] = None
            raise
        self.answers[key] = hashlib.sha256(data).hexdigest()
        text = data.decode("utf-8", "replace")
        if "\r" in text:  # universal newlines, as text mode reads them
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        return text

    def glob(self, pattern: str) -> list[str]:
        """:func:`glob.glob`, sorted."""
        key = ("glob", pattern)
        known = self.answers.get(key)
        if known is None:
            known = self.answers[key] = sorted(globbing.glob(pattern))
        return list(known)  # type: ignore[call-overload]

    def folder(self, path: Path) -> tuple[bool, list[str] | None]:
        """Whether ``path`` (resolved) is a folder, and its entries (sorted; None when it
        cannot be listed)."""
        key = ("folder", os.fspath(path))
        known = self.answers.get(key)
        if known is None:
            names: list[str] | None = None
            resolved = path.resolve()
            is_dir = resolved.is_dir()
            if is_dir:
                try:
                    names = sorted(os.listdir(resolved))
                except OSError:
                    names = None
            known = self.answers[key] = [is_dir, names]
        is_dir, names = known  # type: ignore[misc]
        return bool(is_dir), names


def unchanged(probes: Iterable[Probe]) -> bool:
    """True when every recorded look gets the same answer now (False for a probe of an
    unknown kind or shape: it is not trusted)."""
    fresh = Inputs()
    for probe in probes:
        kind, path, answer = probe
        if not isinstance(path, str):
            return False
        if kind == "file":
            now: object = fresh.isfile(path)
        elif kind == "read":
            try:
                now = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            except OSError:
                now = None
        elif kind == "glob":
            now = fresh.glob(path)
        elif kind == "folder":
            now = list(fresh.folder(Path(path)))
        else:
            return False
        if now != answer:
            return False
    return True
