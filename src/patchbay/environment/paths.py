"""The one path gate: every path patchbay takes from its input is decided here, once.

git's ``apply.c`` unquotes and checks every path of a patch in one place before it writes
anything; patchbay does the same for every path it will touch, whatever it came from: a diff
header (``---``/``+++``, ``diff --git``, ``rename``/``copy from``/``to``), a ``replace`` edit's
``file``, an artifact's ``dest``, a command's ``output``/``remove``/``cwd``, and the paths a
journal names when a killed run is recovered. The rules:

1. :func:`unquote_c` undoes git's C-style quoting exactly once (``quote.c``:
   ``unquote_c_style``); an escape git does not define (``\\q``, ``\\777``, ``\\0`` without
   three octal digits) or a NUL byte anywhere is an error, never a guess.
2. :func:`check_relative` normalises a root-relative path (``./`` and ``//`` dropped) and refuses
   what could name anything outside the root or be read two ways: absolute paths, ``..``, a
   backslash (a Windows separator, or a second layer of quoting), control characters, bytes
   that are not UTF-8, ``.git`` components (git refuses those too), and, for files, a
   trailing ``/``.
3. :func:`resolve_under` joins a checked path to its root and refuses, on disk, a final
   component that is a symbolic link, a parent that is a file, and any folder link that leads
   out of the root, or into patchbay's own state folder (:class:`InStateFolder`).
4. :func:`contained` is the same decision for an absolute path read back from a journal.

Paths given to ``git apply`` are rendered by :func:`quote_c` from paths that passed these
checks, so git never unquotes anything patchbay did not see.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from ..patterns import pattern

_CONTROL = pattern(r"[\x00-\x1f\x7f]")
_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34}
_QUOTE = {v: k for k, v in _ESCAPES.items()}


class PathRejected(ValueError):
    """A path the gate refuses; ``str()`` is the reason (loaders show it as-is)."""


class FolderNotEntered(PathRejected):
    """A folder on a path's way that this user cannot enter (no search permission, as for a
    root-owned ``0700`` folder seen by another user or from a user namespace): refused, since
    patchbay can neither judge nor write what lies under it.

    ``str()`` is ``PATH: REASON``; :attr:`reason` is the reason alone (naming the folder),
    for a message that names the path already.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class ParentIsFile(PathRejected):
    """A path with a regular file (no link) where one of its folders should be: refused, but
    for a file the run deletes first (``git apply`` deletes before it creates: a patch may
    replace a file by a folder of the same name).

    Attributes:
        file: the root-relative path of that file.
    """

    def __init__(self, reason: str, file: str) -> None:
        super().__init__(reason)
        self.file = file


class InStateFolder(PathRejected):
    """A path that resolves into patchbay's own state folder (ledger, saved originals,
    journal): bad input whatever patch kind named it, since writing there would destroy what
    revert needs."""


def unquote_c(text: str) -> tuple[str, str]:
    """Undo git's C-style quoting of a path at the start of ``text``.

    Args:
        text: starts with ``"``; what follows the closing quote is returned untouched (a
            ``---`` line may carry a tab and a timestamp after it).

    Returns:
        ``(path, rest)``: the unquoted path (bytes decoded as UTF-8 with surrogateescape) and
        the text after the closing quote.

    Raises:
        PathRejected: no closing quote, an escape git does not define (git's
            ``unquote_c_style`` accepts only ``\\a \\b \\f \\n \\r \\t \\v \\\\ \\"`` and three
            octal digits starting with 0-3), or a NUL byte (written as ``\\000`` or raw).
    """
    if not text.startswith('"'):
        raise PathRejected(f"{text!r} is not a quoted path")
    raw = text.encode("utf-8", "surrogateescape")
    out = bytearray()
    i = 1
    while i < len(raw):
        c = raw[i]
        if c == 0x22:  # the closing quote
            return _checked_bytes(bytes(out), text), raw[i + 1 :].decode("utf-8", "surrogateescape")
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        esc = chr(raw[i + 1]) if i + 1 < len(raw) else ""
        if esc in _ESCAPES:
            out.append(_ESCAPES[esc])
            i += 2
            continue
        digits = raw[i + 1 : i + 4].decode("ascii", "replace")
        if len(digits) == 3 and digits[0] in "0123" and all(d in "01234567" for d in digits):
            out.append(int(digits, 8))
            i += 4
            continue
        shown = raw[i : i + 4].split(b'"')[0].decode("utf-8", "surrogateescape")
        raise PathRejected(
            f"invalid escape {shown!r} in quoted path {text!r} (git accepts \\a \\b \\f \\n \\r "
            '\\t \\v \\\\ \\" and three octal digits 000-377)'
        )
    raise PathRejected(f"quoted path {text!r} has no closing quote")


def _checked_bytes(data: bytes, shown: str) -> str:
    if b"\0" in data:
        raise PathRejected(f"quoted path {shown!r} holds a NUL byte")
    return data.decode("utf-8", "surrogateescape")


def quote_c(path: str) -> str:
    """``path`` as git writes it in a diff header: as it is when that is unambiguous, else
    C-quoted (``quote.c``: ``quote_c_style`` with ``core.quotePath``; a space is quoted too,
    which git accepts, so that a header never has to be split on a guess)."""
    data = path.encode("utf-8", "surrogateescape")
    if all(0x20 < b < 0x7F and b not in (0x22, 0x5C) for b in data):
        return path
    out = ['"']
    for b in data:
        if b in _QUOTE:
            out.append("\\" + _QUOTE[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    out.append('"')
    return "".join(out)


@functools.lru_cache(maxsize=1 << 16)  # a pure function, asked again for the same paths
def check_relative(raw: str, *, folder: bool = False) -> str:
    """Normalise a path relative to some root, or refuse it.

    Args:
        raw: the path as given (already unquoted, when it came quoted).
        folder: the path names a folder (a trailing ``/`` is then fine).

    Returns:
        The path with ``/`` separators, ``.`` and empty components dropped (``./a//b`` ->
        ``a/b``).

    Raises:
        PathRejected: empty, absolute, ``..``, a backslash, a NUL or other control character,
            bytes that are not UTF-8, a ``.git`` component (git's ``verify_path`` refuses it
            in any case), or, for a file, a trailing ``/``.
    """
    if "\0" in raw:
        raise PathRejected(f"path {raw!r} holds a NUL byte")
    if _CONTROL.search(raw):
        raise PathRejected(f"path {raw!r} holds a control character")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise PathRejected(f"path {raw!r} is not valid UTF-8") from None
    if "\\" in raw:
        raise PathRejected(
            f"path {raw!r} holds a backslash (a Windows separator, or quoting left in the name)"
        )
    if raw.startswith("/"):
        raise PathRejected(f"path {raw!r} is absolute")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if not parts:
        raise PathRejected(f"path {raw!r} is empty")
    if ".." in parts:
        raise PathRejected(f"path {raw!r} escapes its folder ('..')")
    if any(p.lower() == ".git" for p in parts):
        raise PathRejected(f"path {raw!r} points into a .git folder")
    if not folder and raw.endswith("/"):
        raise PathRejected(f"path {raw!r} ends with '/': it names a folder, not a file")
    return "/".join(parts)


def inside(real: str, folder: str) -> bool:
    """Whether ``real`` is ``folder`` or lies under it (both absolute real paths, as
    ``os.path.realpath`` gives them)."""
    return real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)


def resolve_under(
    root: Path,
    rel: str,
    *,
    real_root: str | None = None,
    folders: dict[str, str] | None = None,
    state_real: str | None = None,
) -> Path:
    """``root / rel`` after checking ``rel`` (:func:`check_relative`) and the disk: the path
    of :func:`resolve_real_under`, which gives the arguments and the errors."""
    return resolve_real_under(
        root, rel, real_root=real_root, folders=folders, state_real=state_real
    )[0]


def resolve_real_under(
    root: Path,
    rel: str,
    *,
    real_root: str | None = None,
    folders: dict[str, str] | None = None,
    state_real: str | None = None,
    deleted: Callable[[str], bool] | None = None,
) -> tuple[Path, str]:
    """``root / rel`` after checking ``rel`` (:func:`check_relative`) and the disk, with its
    real path (what ``os.path.realpath`` gives for it, found on the way: the last component is
    no link, so it is its folder's real path and its name).

    Args:
        root: the folder ``rel`` is relative to (a target root).
        rel: a root-relative path.
        real_root: ``os.path.realpath(root)``, when the caller has it already.
        folders: a cache the caller keeps while no folder or link under ``root`` can change
            (one plan): absolute folder -> its real path, for folders found to exist, to be
            folders and to resolve inside the root; filled as a side effect. A path whose
            folder is in it costs one ``lstat`` (is it a link?): its real path is its
            folder's plus its name; a folder not in it costs one ``lstat`` more per folder
            down from the deepest one known.
        state_real: the real path of patchbay's state folder, when it may lie under ``root``
            (``<root>/.patchbay`` with ``--root``): no path may resolve into it.
        deleted: given the real path of a regular file that stands where one of ``rel``'s
            folders should be, whether the caller's run deletes it before it makes ``rel``
            (``git apply`` deletes first); then the path resolves as if the file were gone
            (such a result depends on the run's plan: the caller must not cache it).

    Raises:
        PathRejected: ``rel`` is refused by :func:`check_relative`, its last component is a
            symbolic link, one of its parents is a link to a file, or a linked folder leads
            out of the root.
        FolderNotEntered: a folder on the way cannot be entered (``EACCES``).
        ParentIsFile: one of its parents is a regular file (that ``deleted`` does not take).
        InStateFolder: ``rel`` resolves into ``state_real``.
    """
    clean = check_relative(rel, folder=True)
    path = root / clean
    real_root = real_root or os.path.realpath(root)
    real_folder = None if folders is None else folders.get(os.path.dirname(path))
    if real_folder is None:
        real_folder = _real_folder(str(root), real_root, clean, folders, deleted)
    try:
        is_link = stat.S_ISLNK(os.lstat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        is_link = False
    except PermissionError:
        raise _not_entered(clean, os.path.dirname(clean)) from None
    if is_link:
        raise PathRejected(f"{clean} is a symbolic link; patchbay does not patch through links")
    # not a link (checked above): its real path is its folder's real path and its name
    real = os.path.join(real_folder, path.name)
    if not inside(real, real_root):
        raise PathRejected(f"{clean} resolves to {real}, outside target root {real_root}")
    if state_real is not None and inside(real, state_real):
        raise InStateFolder(
            f"{clean} lies in patchbay's state folder {state_real} (its ledger and saved "
            "originals); no patch may write there"
        )
    return path, real


def _real_folder(
    root: str,
    real_root: str,
    clean: str,
    folders: dict[str, str] | None,
    deleted: Callable[[str], bool] | None = None,
) -> str:
    """The real path of the folder of ``clean`` (a checked path under ``root``), as
    ``os.path.realpath`` gives it, walking down from the deepest folder ``folders`` knows (or
    the root): one ``lstat`` per folder not known yet, a ``realpath`` only at a link; a
    regular file on the way for which ``deleted`` (given its real path) is true counts as
    missing; every folder found (to exist and be a folder, whatever it resolves to: the caller
    checks the result) that resolves inside the root is added to ``folders``.

    Raises:
        PathRejected: a parent is a link to a file.
        ParentIsFile: a parent is a regular file.
        FolderNotEntered: a folder on the way cannot be entered.
    """
    parts = clean.split("/")[:-1]
    known, real = len(parts), None
    while folders is not None and known > 0 and real is None:
        real = folders.get(os.path.join(root, *parts[:known]))
        known -= real is None
    if real is None:
        real, known = real_root, 0
    current = os.path.join(root, *parts[:known])
    for i in range(known, len(parts)):
        current = os.path.join(current, parts[i])
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return os.path.join(real, *parts[i:])  # the rest does not exist (yet)
        except PermissionError:
            raise _not_entered(clean, "/".join(parts[:i])) from None
        if stat.S_ISLNK(mode):
            real = os.path.realpath(current)
            if not os.path.isdir(real):
                if os.path.exists(real):
                    raise PathRejected(
                        f"{clean}: {'/'.join(parts[: i + 1])} is a file, not a folder"
                    )
                return os.path.join(real, *parts[i + 1 :])  # a dangling link
        elif stat.S_ISDIR(mode):
            real = os.path.join(real, parts[i])
        else:
            if deleted is not None and deleted(os.path.join(real, parts[i])):
                return os.path.join(real, *parts[i:])  # gone before the path is made
            file = "/".join(parts[: i + 1])
            raise ParentIsFile(f"{clean}: {file} is a file, not a folder", file)
        if folders is not None and inside(real, real_root):  # one out is refused every time
            folders[current] = real
    return real


def _not_entered(clean: str, folder: str) -> FolderNotEntered:
    shown = f"folder {folder}" if folder else "the target root"
    return FolderNotEntered(
        clean,
        f"{shown} cannot be entered (permission denied); patchbay cannot read or write what "
        "lies under it",
    )


def unwritable(folder: os.PathLike[str] | str) -> str | None:
    """Why this user cannot make or remove entries in ``folder`` (None: it can): ``no write
    permission`` or ``a read-only file system`` (``os.access``, which also sees a read-only
    mount and an immutable folder, for root too)."""
    if os.access(folder, os.W_OK | os.X_OK):
        return None
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "a read-only file system"
    except OSError:
        pass
    return "no write permission"


def unwritable_folder(root: Path, rel: str) -> tuple[str, str] | None:
    """The folder where ``rel`` (a checked path under ``root``, see :func:`resolve_under`) is
    written, when this user cannot write it: its folder, or the nearest one above it that
    exists (the missing ones are made there), as ``(folder relative to root, or "" for the
    root itself; why, as :func:`unwritable` says it)``; None when it can be written.

    A file is written as a new one renamed into its folder, and deleted from it, as ``git
    apply`` does: a folder this user can enter but not write refuses both.
    """
    parts = rel.split("/")[:-1]
    while parts and not os.path.isdir(os.path.join(root, *parts)):
        parts.pop()
    why = unwritable(os.path.join(root, *parts))
    return None if why is None else ("/".join(parts), why)


def contained(
    path: str, roots: Iterable[Path], *, real: dict[str, str] | None = None
) -> Path | None:
    """The root that holds ``path``, an absolute path read back from a journal, or None.

    ``path`` must be normalised (no ``.``, ``..`` or doubled ``/``), lie lexically under one
    of ``roots``, pass :func:`check_relative` relative to it, and its folder must resolve
    (through links) inside that root's real path. The path itself may be a link: replacing or
    removing a link never touches what it points to.

    Args:
        path: the absolute path to judge.
        roots: the folders it may lie under.
        real: a cache of ``os.path.realpath`` (folder -> real path) the caller keeps for
            one run; filled as a side effect.
    """
    cache: dict[str, str] = {} if real is None else real

    def realpath(folder: str) -> str:
        known = cache.get(folder)
        if known is None:
            known = cache[folder] = os.path.realpath(folder)
        return known

    if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
        return None
    if os.path.normpath(path) != path:
        return None
    for root in roots:
        root_text = os.path.normpath(os.path.abspath(root))
        if not path.startswith(root_text.rstrip("/") + "/"):
            continue
        rel = path[len(root_text.rstrip("/")) + 1 :]
        try:
            check_relative(rel)
        except PathRejected:
            return None
        real_root = realpath(str(root))
        real_parent = realpath(os.path.dirname(path))
        if real_parent == real_root or real_parent.startswith(real_root + os.sep):
            return Path(root)
    return None
