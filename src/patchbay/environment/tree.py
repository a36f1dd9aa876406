"""The files under the target roots, as seen by a run: disk plus the changes staged so far.

Preflight classifies patches in order; each pending patch stages its result here so the next
patch is classified against the tree as it will be, not as it is. Nothing in this module writes
to disk. Every path goes through :meth:`Tree.resolve`, the path gate of
:mod:`patchbay.environment.paths`, which refuses paths that leave their root, through ``..`` or
through a symbolic link.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ..diff.hunks import LineIndex
from ..errors import InputError, PatchbayError, RefusedError
from ..options import RunOptions
from .paths import (
    FolderNotEntered,
    InStateFolder,
    ParentIsFile,
    PathRejected,
    resolve_real_under,
)

if TYPE_CHECKING:
    from .targets import Environment

_ABSENT = object()
# what a trace holds for a look at a file's executable bit: no content is this object, so an
# inspection that looked at a mode is never taken as holding on another tree
_MODE_READ = b"<mode>"
# what a trace holds for a path where no file can be (see Tree.read_if_file): it is judged
# again on any other tree
_NOT_A_FILE = b"<not a file>"
# what a trace holds for a new file's path whose folders no staged file stands in (see
# Tree.creation_blocked): it holds on a tree where that is still so
_NO_FILE_ABOVE = b"<no file above>"

Key = tuple[str, str]  # (target, root-relative path)
Location = str  # a file's real absolute path: one file, whichever target names it


class _LineIndexes:
    """Line indexes of recently used contents, shared by a tree and all its forks.

    A content is identified by its ``bytes`` object (kept alive by the entry, so an id is never
    reused while cached): staged results and disk reads are handed around as the same object,
    so the classifications of one run build each index once. Least recently used entries are
    dropped while the contents cached exceed :attr:`BUDGET` bytes (an index costs a few times
    its content), but the two most recent are always kept: several patches of one large file
    are each judged on the file as it is on disk and hand on the index of their result.
    """

    BUDGET = 8 * 1024 * 1024

    def __init__(self) -> None:
        self._entries: OrderedDict[int, tuple[bytes, LineIndex]] = OrderedDict()
        self._size = 0

    def get(self, data: bytes) -> LineIndex:
        cached = self._entries.get(id(data))
        if cached is not None and cached[0] is data:
            self._entries.move_to_end(id(data))
            return cached[1]
        index = LineIndex.of(self._make_room(data))
        self.put(data, index)
        return index

    def put(self, data: bytes, index: LineIndex) -> None:
        old = self._entries.pop(id(data), None)
        if old is not None:
            self._size -= len(old[0])
        self._make_room(data)
        self._entries[id(data)] = (data, index)
        self._size += len(data)

    def _make_room(self, data: bytes) -> bytes:
        # before building a new index, so that no index is kept alive only by the cache
        while len(self._entries) > 1 and self._size + len(data) > self.BUDGET:
            self._size -= len(self._entries.popitem(last=False)[1][0])
        return data


class NoFileHere(RefusedError):
    """No file can be read at the path: a folder stands there, or a file where one of its
    folders should be (refused as before; a patch that deletes a file there finds it absent,
    see :meth:`Tree.read_if_file`)."""


class DiskView(msgspec.Struct):
    """What a run saw on disk: every file content and mode it read, to tell later whether the
    tree is still as it was judged (a run that waited for the lock must judge the tree as it is).

    Attributes:
        paths: location (:meth:`Tree.location`) -> the absolute path to read it at.
        contents: location -> bytes read (None: absent).
        modes: location -> ``st_mode`` read (None: absent).
    """

    paths: dict[Location, Path]
    contents: dict[Location, bytes | None]
    modes: dict[Location, int | None]

    def unchanged(self) -> bool:
        """Whether every file seen still has the same bytes and mode (and is still absent, for
        those that were), and none became a symbolic link. Bytes are compared, never times.
        (Paths are not resolved again: whatever is written is resolved again before.)"""
        for key, data in self.contents.items():
            path = self.paths[key]
            if os.path.islink(path):
                return False
            try:
                now: bytes | None = path.read_bytes()
            except (FileNotFoundError, NotADirectoryError):
                now = None
            except OSError:
                return False
            if now != data:
                return False
        for key, mode in self.modes.items():
            try:
                now_mode: int | None = os.stat(self.paths[key]).st_mode
            except (FileNotFoundError, NotADirectoryError):
                now_mode = None
            except OSError:
                return False
            if now_mode != mode:
                return False
        return True


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
        self._folders: dict[str, str] = {}  # checked folders -> real path (see resolve_real_under)
        # no patch may write into patchbay's own state folder (an Environment made without
        # one, as some library callers do, has the empty path: then there is none)
        state = env.state_dir if env is not None else Path()
        self._state_real = os.path.realpath(state) if state != Path() else None
        # keyed by location: two targets that reach one file (``engine`` and a ``meta``
        # target whose root is a folder of the same package) see one file, so a later patch
        # is judged on what an earlier one staged, whichever target it goes through
        self._staged: dict[Location, bytes | None] = {}
        self._executable: dict[Location, bool] = {}  # staged by pending mode changes
        self._resolved: dict[Key, Path] = {}
        self._located: dict[Key, Location] = {}
        # shared with forks: what is on disk does not depend on what a fork stages
        self._disk: dict[Location, bytes | None] = {}
        self._modes: dict[Location, int | None] = {}
        self._indexes = _LineIndexes()
        self._trace: list[tuple[str, str, bytes | None]] | None = None

    def resolve(self, target: str, rel: str) -> Path:
        """Absolute path of ``rel`` under ``target``'s root, through the path gate
        (:func:`patchbay.environment.paths.resolve_under`). A regular file where one of its folders
        should be passes only when this tree has it staged as deleted (``git apply`` deletes before
        it creates: a patch may replace a file by a folder of the same name).

        Raises:
            RefusedError: the path is absolute, has ``..``, a NUL, is a symbolic link, or
                resolves (through a linked folder) to somewhere outside the root.
            NoFileHere: a file stands where one of its folders should be.
            InputError: the path resolves into the environment's state folder.
        """
        return self._resolve(target, rel)[0]

    def _resolve(self, target: str, rel: str) -> tuple[Path, Location, bool]:
        """``(path, location, whether it went through a file staged as deleted)``."""
        known = self._resolved.get((target, rel))
        if known is not None:
            return known, self._located[(target, rel)], False
        root = self.roots[target]
        real_root = self._real_roots.get(target)
        if real_root is None:
            real_root = self._real_roots[target] = os.path.realpath(root)
        through: list[str] = []  # staged deletions the path goes through (then not cached)

        def deleted(real: str) -> bool:
            if self._staged.get(real, _ABSENT) is None:
                through.append(real)
                return True
            return False

        try:
            path, real = resolve_real_under(
                root,
                rel,
                real_root=real_root,
                folders=self._folders,
                state_real=self._state_real,
                deleted=deleted,
            )
        except InStateFolder as exc:
            raise InputError(f"{exc} (target {target!r})", file=root / rel) from None
        except FolderNotEntered as exc:  # the file is the message's: named once
            raise RefusedError(f"{exc.reason} (target {target!r})", file=root / rel) from None
        except ParentIsFile as exc:
            raise NoFileHere(f"{exc} (target {target!r})", file=root / rel) from None
        except PathRejected as exc:
            raise RefusedError(f"{exc} (target {target!r})", file=root / rel) from None
        if not through:  # a resolution through a staged deletion holds for this plan only
            self._resolved[(target, rel)] = path
            self._located[(target, rel)] = real
        return path, real, bool(through)

    def forget_folders(self) -> None:
        """Forget the folders checked so far (after something outside patchbay's own writes,
        a command, may have made or removed folders and links): paths not resolved yet are
        then checked from the root again."""
        self._folders.clear()

    def location(self, target: str, rel: str) -> Location:
        """The file ``rel`` of ``target`` names, as one identity for every target that reaches
        it: its real absolute path (the root's links resolved once; the gate refuses a link as
        the last component). Staged contents, disk reads, the ledger's file history and a
        revert's originals are all keyed by it.

        Raises:
            RefusedError, InputError: the path is refused (see :meth:`resolve`).
        """
        known = self._located.get((target, rel))
        if known is None:
            known = self._resolve(target, rel)[1]  # the gate finds the real path on its way
        return known

    def location_of(self, target: str, rel: str) -> Location | tuple[str, str]:
        """:meth:`location`, or ``(target, rel)`` itself for a target this tree has no root
        for (a ledger record of a target the patchset no longer has) or a path the gate
        refuses now."""
        if target not in self.roots:
            return target, rel
        try:
            return self.location(target, rel)
        except PatchbayError:  # judged where the record is used, with its own message
            return target, rel

    def read(self, target: str, rel: str) -> bytes | None:
        """Current content (staged, else on disk); None when the file does not exist, also
        when a folder stands at ``rel`` that the staged deletions empty (``git apply``
        removes a folder its deletions empty, and a new file may take its place).

        Raises:
            RefusedError: the path is unsafe (see :meth:`resolve`).
            NoFileHere: a folder stands at ``rel`` (and stays), or a file where one of its
                folders should be.
        """
        where, through = self._located.get((target, rel)), False
        try:
            if where is None:
                _, where, through = self._resolve(target, rel)
            staged = self._staged.get(where, _ABSENT)
            if staged is _ABSENT:
                try:
                    data = self.on_disk(target, rel)
                except NoFileHere:
                    if self.left_in_folder(target, rel) is not None:
                        raise
                    data, through = None, True
        except NoFileHere:
            if self._trace is not None:  # judged again where the tree differs
                self._trace.append((target, rel, _NOT_A_FILE))
            raise
        if staged is not _ABSENT:
            data = staged  # type: ignore[assignment]
        if self._trace is not None:
            # what holds only while the staged deletions do is judged again on another tree
            self._trace.append((target, rel, _NOT_A_FILE if through else data))
        return data

    def read_if_file(self, target: str, rel: str) -> bytes | None:
        """:meth:`read`, but None also where no file can be: a folder stands at ``rel``, or
        a file where one of its folders should be (a deletion there is done; whether a new
        file may be made there is :meth:`creation_blocked`'s question).

        Raises:
            RefusedError: the path is unsafe (see :meth:`resolve`).
        """
        try:
            return self.read(target, rel)
        except NoFileHere:  # (traced as such)
            return None

    def creation_blocked(self, target: str, rel: str) -> str | None:
        """Why a new file cannot be made at ``rel`` on this tree (disk plus what is staged),
        or None. ``git apply`` deletes before it creates, and makes a file where a folder
        stood once that folder is empty (``create_one_file``): a folder at ``rel`` is fine
        when every file under it is staged as deleted and it holds no other folder than the
        ones those deletions empty (``remove_path`` removes only those).

        Raises:
            RefusedError: the path gate refuses ``rel`` (see :meth:`resolve`).
        """
        try:
            path, real, _ = self._resolve(target, rel)
        except NoFileHere as exc:  # a file where one of its folders should be, that stays
            return exc.reason
        made = self._file_above(target, real)
        if self._trace is not None:  # a later tree may stage a file there: judged again
            self._trace.append((target, rel, _NO_FILE_ABOVE if made is None else _NOT_A_FILE))
        if made is not None:
            return f"{rel}: {made} is a file (made by an earlier patch), not a folder"
        if not os.path.isdir(path) or os.path.islink(path):
            return None
        left = self.left_in_folder(target, rel)
        if left is None:
            return None
        return (
            f"{rel} is a directory, expected a file ({left} stays in it: not everything "
            "under it is deleted first)"
        )

    def _file_above(self, target: str, real: str) -> str | None:
        """The root-relative path of a file staged (by an earlier pending patch) where one of
        the folders of the location ``real`` should be, or None. By real paths: a folder on
        the way may be a link, which the gate takes inside a path."""
        folder, root = os.path.dirname(real), self._real_roots[target]
        while folder.startswith(root + os.sep):
            if isinstance(self._staged.get(folder), bytes):
                return folder[len(root) + 1 :]
            folder = os.path.dirname(folder)
        return None

    def left_in_folder(self, target: str, rel: str) -> str | None:
        """The first thing (a root-relative path) that stays in the folder ``rel`` once the
        staged deletions are done, or None when nothing does (the folder is gone, or empty):
        a file not staged as deleted, a link, a folder empty before (no deletion removes
        it), or a file an earlier pending patch makes under it.

        Raises:
            RefusedError: the path is unsafe (see :meth:`resolve`).
        """
        path, real, _ = self._resolve(target, rel)
        for where, data in self._staged.items():
            if data is not None and where.startswith(real + os.sep):
                return f"{rel}/{where[len(real) + 1 :]}"
        return self._staying(str(path), real, rel, top=True)

    def _staying(self, path: str, real: str, rel: str, *, top: bool = False) -> str | None:
        try:
            with os.scandir(path) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except FileNotFoundError:
            return None
        except OSError:
            return rel
        if not entries and not top:
            return f"{rel}/"  # empty before: no deletion removes it
        for entry in entries:
            sub, where = f"{rel}/{entry.name}", os.path.join(real, entry.name)
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                return sub
            if is_folder:
                left = self._staying(entry.path, where, sub)
                if left is not None:
                    return left
            elif self._staged.get(where, _ABSENT) is not None:
                return sub
        return None

    def on_disk(self, target: str, rel: str) -> bytes | None:
        """Content on disk, ignoring staged changes; read once per tree and its forks.

        Raises:
            RefusedError: the path is unsafe (see :meth:`resolve`).
            NoFileHere: it is a directory, or a file stands where one of its folders should be.
        """
        where = self.location(target, rel)
        known = self._disk.get(where, _ABSENT)
        if known is not _ABSENT:
            return known  # type: ignore[return-value]
        data = _read_regular(self.resolve(target, rel), rel)
        self._disk[where] = data
        return data

    def on_disk_if_file(self, target: str, rel: str) -> bytes | None:
        """:meth:`on_disk`, but None where no file can be: a folder stands at ``rel``, or a
        file where one of its folders should be (what a ledger record of a file a patch
        deleted finds once a file or a folder of its name took its place).

        Raises:
            RefusedError: the path is unsafe (see :meth:`resolve`).
        """
        try:
            return self.on_disk(target, rel)
        except NoFileHere:
            return None

    def mode(self, target: str, rel: str) -> int | None:
        """``st_mode`` of the file on disk (None: absent); read once per tree and its forks.

        Raises:
            RefusedError: the path is unsafe (see :meth:`resolve`).
        """
        where = self.location(target, rel)
        known = self._modes.get(where, _ABSENT)
        if known is not _ABSENT:
            return known  # type: ignore[return-value]
        try:
            mode: int | None = os.stat(self.resolve(target, rel)).st_mode
        except (FileNotFoundError, NotADirectoryError):
            mode = None
        self._modes[where] = mode
        return mode

    def executable(self, target: str, rel: str) -> bool:
        """Whether the file is executable (any ``x`` bit) as a pending mode change staged it
        (:meth:`stage_executable`), else on disk; False for an absent file. Traced as a look
        that no other tree is taken to see the same (see :meth:`reads_same`).

        Raises:
            RefusedError: the path is unsafe (see :meth:`resolve`).
        """
        staged = self._executable.get(self.location(target, rel))
        if staged is None:
            staged = bool((self.mode(target, rel) or 0) & 0o111)
        if self._trace is not None:
            self._trace.append((target, rel, _MODE_READ))
        return staged

    def stage_executable(self, target: str, rel: str, executable: bool) -> None:
        """Record the executable bit a pending mode change will leave (git's ``new mode``)."""
        self._executable[self.location(target, rel)] = executable

    def line_index(self, data: bytes) -> LineIndex:
        """The :class:`LineIndex` of some file content, built once per content object for the
        tree and all its forks (while recently used; see :class:`_LineIndexes`)."""
        return self._indexes.get(data)

    def keep_line_index(self, data: bytes, index: LineIndex | None) -> None:
        """Remember ``index`` as the :class:`LineIndex` of ``data`` (a result computed from
        another content's index, see :meth:`LineIndex.derive`); None: nothing to remember."""
        if index is not None:
            self._indexes.put(data, index)

    @contextlib.contextmanager
    def tracing(self) -> Iterator[list[tuple[str, str, bytes | None]]]:
        """Collect ``(target, path, content)`` of every :meth:`read` inside the block: an
        inspection that depends on contents alone holds on any tree that reads the same."""
        reads: list[tuple[str, str, bytes | None]] = []
        outer, self._trace = self._trace, reads
        try:
            yield reads
        finally:
            self._trace = outer

    def reads_same(self, reads: list[tuple[str, str, bytes | None]]) -> bool:
        """Whether :meth:`read` returns the very same content objects as in ``reads`` (never
        for a path where no file could be read: see :meth:`read_if_file`)."""
        for target, rel, data in reads:
            if data is _NOT_A_FILE:
                return False
            try:
                if data is _NO_FILE_ABOVE:
                    if self._file_above(target, self.location(target, rel)) is not None:
                        return False
                elif self.read(target, rel) is not data:
                    return False
            except NoFileHere:  # no file there now (a folder, or a file above it)
                return False
        return True

    @property
    def seen(self) -> DiskView:
        """Everything this tree and its forks read from disk so far."""
        paths = {where: Path(where) for where in (*self._disk, *self._modes)}
        return DiskView(paths, self._disk, self._modes)

    @contextlib.contextmanager
    def trying(self, changes: list[tuple[str, str, bytes | None]]) -> Iterator[Tree]:
        """Stage ``(target, path, content)`` changes for the block only (to judge a result
        without committing to it, and without copying the tree as :meth:`fork` does); what was
        staged before is put back after it."""
        keys = [self.location(t, r) for t, r, _ in changes]
        saved = [(key, self._staged.get(key, _ABSENT)) for key in keys]
        for key, (_, _, data) in zip(keys, changes, strict=True):
            self._staged[key] = data
        try:
            yield self
        finally:
            for key, old in reversed(saved):
                if old is _ABSENT:
                    self._staged.pop(key, None)
                else:
                    self._staged[key] = old  # type: ignore[assignment]

    def fork(self) -> Tree:
        """A copy whose staged changes are its own (to try a result without committing to it);
        what is on disk, resolved paths and line indexes are shared."""
        other = Tree(self.roots, self.env, self.options)
        other._staged = dict(self._staged)
        other._executable = dict(self._executable)
        other._resolved = self._resolved
        other._located = self._located
        other._disk = self._disk
        other._modes = self._modes
        other._indexes = self._indexes
        other._real_roots = self._real_roots
        other._folders = self._folders
        other._state_real = self._state_real
        other.changed = set(self.changed)
        other.protected = self.protected
        other.folder = self.folder
        return other

    def stage(self, target: str, rel: str, data: bytes | None) -> None:
        """Record the content a pending patch will leave (None: the file will be deleted)."""
        self._staged[self.location(target, rel)] = data


def _read_regular(path: Path, rel: str) -> bytes | None:
    """The bytes of a regular file; None when it does not exist. A FIFO or a device would
    hang or never end, a folder is no file, and a file this user cannot read cannot be
    judged: those are refused."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISDIR(st.st_mode):
        raise NoFileHere(f"{rel} is a directory, expected a file", file=path)
    if not stat.S_ISREG(st.st_mode):
        raise RefusedError(f"{rel} is not a regular file (a FIFO, socket or device)", file=path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except PermissionError:
        raise RefusedError(
            f"{rel} cannot be read (permission denied); patchbay cannot judge a patch of it",
            file=path,
        ) from None
