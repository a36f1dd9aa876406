"""What an analysis read outside its own script: the repository files it followed or probed.

The walk of one script also depends on files next to it: a ``source``d helper, a checked-in
patch file, whether ``./tools/x.sh`` exists, what a glob over ``patches/*.patch`` lists, what a
``PYTHONPATH`` folder holds. Every such look goes through one :class:`Inputs` object, which
answers it and records the answer (a content digest for a read). A cached analysis is reused
only when every recorded answer is still the same (:func:`unchanged`), as a build tool checks
its recorded inputs before reusing an output.

The walk looks at absolute paths (below the resolved root, or the root as given). What the
cache keeps is :func:`portable`: every path below the audited root written relative to it, so
that the answers hold for another clone of the same tree in another folder, and are asked
again below the current root (:func:`unchanged` with ``root``). A path outside the root stays
absolute and is asked as it is.
"""

from __future__ import annotations

import glob as globbing
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["Inputs", "Probe", "portable", "unchanged"]

Probe = tuple[str, str, object]
"""``(kind, path, answer)``: ``("file", path, bool)``, ``("read", path, sha256 hex or None)``,
``("glob", pattern, [paths])``, ``("folder", path, [is a folder, names or None])``. The paths
are absolute as the walk records them; in their :func:`portable` form a path that does not
start with ``/`` is relative to the audited root (``.`` for the root itself)."""


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


def portable(probes: Iterable[Probe], root: Path) -> list[Probe] | None:
    """The probes with every path below ``root`` relative to it (see :data:`Probe`).

    A path counts as below ``root`` when it starts with the root's resolved path or its path
    as given, then ``/``; the rest is kept as written (``lib/../x.sh`` stays so: the walk of
    another clone builds the same string below its own root). A glob's pattern counts with
    the root escaped as the walk escapes it (:func:`glob.escape`), and every path it listed
    must be below the root too, else the whole probe stays absolute.

    Args:
        probes: as :attr:`Inputs.probes` records them.
        root: the audited root (the one the walk was given).

    Returns:
        The portable probes, or None when one has a relative path that is not below ``root``
        (a path relative to the working folder: not one the cache can ask again).
    """
    prefixes = _prefixes(root)
    patterns = [globbing.escape(p) for p in prefixes]
    out: list[Probe] = []
    for kind, path, answer in probes:
        if kind == "glob" and isinstance(answer, list):
            rel = _below(path, patterns)
            listed = [_below(p, prefixes) for p in answer if isinstance(p, str)]
            if rel is not None and len(listed) == len(answer) and None not in listed:
                out.append((kind, rel, listed))
                continue
        else:
            rel = _below(path, prefixes)
            if rel is not None:
                out.append((kind, rel, answer))
                continue
        if not path.startswith("/"):
            return None
        out.append((kind, path, answer))
    return out


def _prefixes(root: Path) -> list[str]:
    """The root's resolved path and its path as given, each ending in ``/``, longest first."""
    forms = {os.fspath(root.resolve()), os.fspath(root)}
    return sorted((f if f.endswith("/") else f + "/" for f in forms), key=len, reverse=True)


def _below(path: str, prefixes: list[str]) -> str | None:
    for prefix in prefixes:
        if path.startswith(prefix):
            return path[len(prefix) :] or "."
        if path == prefix[:-1]:
            return "."
    return None


def unchanged(
    probes: Iterable[Probe],
    root: Path | None = None,
    answers: dict[tuple[str, str], object] | None = None,
) -> bool:
    """True when every recorded look gets the same answer now (False for a probe of an
    unknown kind or shape: it is not trusted).

    Args:
        probes: as :attr:`Inputs.probes` records them, or their :func:`portable` form.
        root: the audited root that the relative paths of portable probes are asked below
            (its resolved path); None: a relative path is not trusted.
        answers: the answers of the looks asked before in this run, by kind and absolute
            path (a helper that every script sources is read and hashed once per run, not
            once per script); filled in. None: every look is asked afresh.
    """
    answers = {} if answers is None else answers
    base = None
    if root is not None:
        base = answers.get(("root", os.fspath(root)))  # type: ignore[assignment]
        if base is None:
            resolved = os.fspath(root.resolve())
            base = resolved if resolved.endswith("/") else resolved + "/"
            answers[("root", os.fspath(root))] = base
    for probe in probes:
        kind, path, answer = probe
        if not isinstance(path, str):
            return False
        relative = not path.startswith("/")
        if relative:
            if base is None:
                return False
            path = (globbing.escape(base) if kind == "glob" else base) + path
        if kind not in ("file", "read", "glob", "folder"):
            return False
        now = answers.get((kind, path), _UNASKED)
        if now is _UNASKED:
            now = answers[(kind, path)] = _ask(kind, path)
        if kind == "glob" and relative:
            assert base is not None and isinstance(now, list)
            now = [p[len(base) :] if p.startswith(base) else p for p in now]
        if now != answer:
            return False
    return True


_UNASKED = object()


def _ask(kind: str, path: str) -> object:
    """The answer to one look of :func:`unchanged` (its kind is one of :data:`Probe`'s)."""
    if kind == "file":
        return os.path.isfile(path)
    if kind == "read":
        try:
            return hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            return None
    if kind == "glob":
        return sorted(globbing.glob(path))
    return list(Inputs().folder(Path(path)))
