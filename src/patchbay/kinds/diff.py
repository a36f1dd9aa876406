"""The ``diff`` kind: unified or git-style diff files, applied with zero fuzz.

State comes from content, hunk by hunk (see :mod:`patchbay.diff.hunks`). When every hunk is pending
the result is computed in memory, at the places found, and written file by file as ``git apply``
run in the target root leaves the tree (:meth:`DiffKind.apply`); the engine then checks the
bytes on disk against the computed result. Binary git patches are classified by the blob ids on
their ``index`` line and their result is computed by git in a scratch folder (git never touches
the target tree).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ..apply.ledger import sha256_bytes
from ..diff.binary import BinaryPatchError, apply_hunk, git_blob_id, read_hunks
from ..diff.hunks import PRESENT, HunkResult, HunkState, apply_hunks, classify_hunk, set_offsets
from ..diff.identity import diff_identity
from ..diff.parse import FilePatch, Hunk, ParsedDiff, parse_diff
from ..digests import remembered
from ..environment.paths import quote_c
from ..environment.tree import NoFileHere
from ..errors import InputError, PatchbayError
from ..patchset.coverage import check_coverage
from ..patchset.inputfiles import read_input
from ..patchset.model import DiffPatch
from ..patterns import pattern
from .base import (
    ContentState,
    FileChange,
    FileKind,
    Inspection,
    LoadedPatch,
    PendingPatch,
    aggregate,
)
from .diffwrite import FileWrite, process_umask, write_results

if TYPE_CHECKING:
    from ..apply.transaction import Transaction
    from ..environment.tree import Tree
    from ..patchset.model import Patchset


def _bytes(lines: list[str]) -> bytes:
    return "".join(lines).encode("utf-8", "surrogateescape")


def is_crlf(data: bytes) -> bool:
    """Whether every line of ``data`` ends with CRLF: a patch's LF hunks are then matched and
    applied with CRLF endings (:func:`to_crlf`)."""
    if b"\r" not in data:
        return False
    n = data.count(b"\n")
    return n > 0 and data.count(b"\r\n") == n


def to_crlf(hunk: Hunk) -> Hunk:
    """``hunk`` with its LF line endings written as CRLF (for a file that uses CRLF)."""

    def conv(text: str) -> str:
        return text[:-1] + "\r\n" if text.endswith("\n") and not text.endswith("\r\n") else text

    return msgspec.structs.replace(hunk, lines=[(tag, conv(text)) for tag, text in hunk.lines])


def _mode_change(fp: FilePatch) -> str | None:
    """The ``new mode`` of a file patch that changes the mode (``old mode`` differs), else None."""
    return fp.new_mode if fp.old_mode and fp.new_mode and fp.old_mode != fp.new_mode else None


def _executable_flip(fp: FilePatch) -> tuple[bool, bool] | None:
    """Whether the file is executable before and after a file patch that changes its mode
    (git's ``old mode``/``new mode``; a new file is not executable before), else None."""
    if fp.is_new:
        return False, bool(int(fp.new_mode or "100644", 8) & 0o111)
    if _mode_change(fp) is None:
        return None
    return bool(int(fp.old_mode or "0", 8) & 0o111), bool(int(fp.new_mode or "0", 8) & 0o111)


class _Outcome(msgspec.Struct):
    """One file patch on the tree: hunk results, planned changes, how to write them, and, for
    a pending one, its hunks classified on its own result (None: not found on the way)."""

    results: list[HunkResult]
    changes: list[FileChange] = msgspec.field(default_factory=list)
    write: FileWrite | None = None
    undo: list[FileChange] = msgspec.field(default_factory=list)
    on_result: list[HunkResult] | None = None


def _reversed(hunk: Hunk) -> Hunk:
    """The hunk that undoes ``hunk`` (added and removed lines swapped)."""
    swap = {"+": "-", "-": "+", " ": " "}
    return msgspec.structs.replace(hunk, lines=[(swap[tag], text) for tag, text in hunk.lines])


_HUNK_LIKE = pattern(rb"^@@ ")
_HUNK_HEADER = pattern(rb"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
# git's base85 alphabet (base85.c), after the line's length character (A-Z: 1-26, a-z: 27-52)
_BASE85_LINE = pattern(r"^[A-Za-z][0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]+$")


def check_structure(parsed: ParsedDiff, data: bytes, source: Path) -> None:
    """Refuse diffs that parse but say nothing a patch can mean, as ``git apply`` does: a
    line that starts like a hunk header but is not one, a file patch that changes nothing (a
    ``diff --git`` header with no hunk, no rename, no mode change and no content), one with
    neither an old nor a new path, an empty hunk, and a binary payload that is not base85.

    Raises:
        InputError: ``corrupt diff: ...`` naming ``source`` and the line.
    """
    started = False  # text before the first file header is a message, not the diff
    for n, line in enumerate(data.split(b"\n"), start=1):
        started = started or line.startswith((b"diff --git ", b"--- "))
        if started and _HUNK_LIKE.match(line) and not _HUNK_HEADER.match(line):
            raise InputError("corrupt diff: malformed hunk header", file=source, line=n)
    for fp in parsed.files:
        if fp.old_path is None and fp.new_path is None:
            raise InputError(
                "corrupt diff: a file patch from /dev/null to /dev/null", file=source, line=fp.line
            )
        changes_mode = fp.old_mode != fp.new_mode and fp.old_mode and fp.new_mode
        meaningful = fp.hunks or fp.binary or fp.is_new or fp.is_delete or fp.is_rename
        if not meaningful and not changes_mode:
            raise InputError(
                f"corrupt diff: the file patch of {fp.path} changes nothing (no hunk)",
                file=source,
                line=fp.line,
            )
        for hunk in fp.hunks:
            if not hunk.lines:
                raise InputError(
                    f"corrupt diff: hunk {hunk.index} of {fp.path} is empty",
                    file=source,
                    line=hunk.line,
                )
        for text in fp.binary or []:
            line = text.rstrip("\r\n")
            if (
                line
                and not line.startswith(("literal ", "delta "))
                and not _BASE85_LINE.match(line)
            ):
                raise InputError(
                    f"corrupt diff: the binary patch of {fp.path} is not base85 data",
                    file=source,
                    line=fp.line,
                )
        if fp.binary:
            try:  # lengths, zlib data and sizes are checked as git apply checks them
                read_hunks(fp.binary)
            except BinaryPatchError as exc:
                raise InputError(
                    f"corrupt diff: the binary patch of {fp.path}: {exc}",
                    file=source,
                    line=fp.line,
                ) from None


def hunk_files(parsed: ParsedDiff) -> list[tuple[str, int]]:
    """``(path, hunk count)`` of every file of a parsed diff, in diff order (what ``covers``
    numbers count over)."""
    return [(fp.path, len(fp.hunks)) for fp in parsed.files]


_MAX_CANDIDATES = 20  # files of the same name looked at for a moved file


def moved_to(tree: Tree, target: str, fp: FilePatch) -> str | None:
    """Where the file ``fp`` edits went, when it is not at its path: the one file of the same
    name under its top folder (the package: ``aiter/...`` is looked for in ``aiter/``; the
    target's root for a file at the top) on which every hunk of ``fp`` is found (pending or already
    there: its preimage or its postimage, by the hunk rules of :mod:`patchbay.diff.hunks`),
    root-relative; None when there is no such file, or more than one. A content check rather
    than git's similarity score: the pinned file itself is not at hand, only the hunks' lines.
    At most :data:`_MAX_CANDIDATES` files of that name are read."""
    import os

    root = tree.roots.get(target)
    if root is None or not fp.hunks:
        return None
    name = os.path.basename(fp.path)
    top = fp.path.split("/", 1)[0] if "/" in fp.path else ""
    start = os.path.join(root, top)
    found: list[str] = []
    looked = 0
    for folder, dirs, files in os.walk(start):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".git") and not d.startswith(".")]
        if name not in files:
            continue
        rel = os.path.relpath(os.path.join(folder, name), root)
        looked += 1
        if looked > _MAX_CANDIDATES:
            return None
        try:
            data = tree.read_if_file(target, rel)
        except PatchbayError:
            continue
        if data is None:
            continue
        hunks = [to_crlf(h) for h in fp.hunks] if is_crlf(data) else fp.hunks
        index = tree.line_index(data)
        if all(classify_hunk(index, h, rel).state in _FOUND for h in hunks):
            found.append(rel)
    return found[0] if len(found) == 1 else None


_FOUND = frozenset({HunkState.PENDING, HunkState.APPLIED, HunkState.UPSTREAM})


def _patch_file(patch: DiffPatch, patchset: Patchset, index: int) -> tuple[bytes, Path]:
    """The bytes of ``patch``'s file and its path.

    Raises:
        InputError: missing, unreadable, not a regular file or too large, naming the
            patchset's line.
    """
    path = patchset.folder / patch.content_path
    data = read_input(
        path,
        what=f"patch file {patch.content_path}",
        file=patchset.path,
        line=patchset.patch_line(index, "file"),
        patch_id=patch.id,
    )
    return data, path


class DeferredDiff:
    """A diff whose parse is deferred (:meth:`DiffKind.load_known`): ``edited_paths`` (every
    path it names, in order) is known without it; any other attribute of
    :class:`~patchbay.diff.parse.ParsedDiff` parses the bytes on first use, as
    :meth:`DiffKind.load` would have."""

    def __init__(self, data: bytes, source: Path, strip: int, paths: list[str]) -> None:
        self.edited_paths = paths
        self._bytes, self._source, self._strip = data, source, strip
        self._parsed: ParsedDiff | None = None

    def __getattr__(self, name: str) -> object:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._parsed is None:
            self._parsed = parse_diff(self._bytes, source=self._source, strip=self._strip)
        return getattr(self._parsed, name)


class DiffKind(FileKind):
    """Implements :class:`~patchbay.kinds.base.PatchKind` for ``kind: diff``."""

    name = "diff"

    def load(self, patch: DiffPatch, patchset: Patchset, index: int) -> LoadedPatch:
        if patch.source is not None:
            from .vendored import vendored_content

            got = vendored_content(patch, patchset, index, paths=patch.source.paths)
            if isinstance(got, str):
                return LoadedPatch(sha256="", source=None, data=None, unlocked=got)
            data, path = got.data, got.path
        else:
            data, path = _patch_file(patch, patchset, index)
        return self._from_bytes(patch, patchset, index, data, path)

    def _from_bytes(
        self, patch: DiffPatch, patchset: Patchset, index: int, data: bytes, path: Path
    ) -> LoadedPatch:
        parsed = parse_diff(data, source=path, strip=patch.strip)
        check_structure(parsed, data, path)
        check_coverage(patch, hunk_files(parsed), patchset, index)
        notes = []
        if parsed.crlf_normalised:
            notes.append(
                f"{patch.content_path} has CRLF line endings (a checkout conversion); read as "
                "LF and matched to each target file's own line endings"
            )
        return LoadedPatch(
            sha256=sha256_bytes(data),
            source=str(path),
            data=parsed,
            notes=notes,
            identity=diff_identity(parsed),
        )

    def load_known(
        self,
        patch: DiffPatch,
        patchset: Patchset,
        index: int,
        sha256: str,
        identity: str,
        files: list[tuple[str, int]],
        notes: list[str],
    ) -> LoadedPatch:
        """:meth:`load`, knowing what a diff of ``sha256`` parses to (a bundle's compiled
        plan recorded it with the same strip level: its ``identity``, its ``(path, hunk
        count)`` ``files`` and its load ``notes``): when the file holds those bytes, the parse
        and the structure check, which gave exactly that for them, are deferred
        (:class:`DeferredDiff`) and the ``covers`` of the patchset are checked against
        ``files``; else the bytes read are loaded in full.

        Raises:
            InputError: as :meth:`load`.
        """
        data, path = _patch_file(patch, patchset, index)
        digest = sha256_bytes(data)
        if digest != sha256:
            return self._from_bytes(patch, patchset, index, data, path)
        check_coverage(patch, files, patchset, index)
        return LoadedPatch(
            sha256=digest,
            source=str(path),
            data=DeferredDiff(data, path, patch.strip, [p for p, _ in files]),
            notes=list(notes),
            identity=identity,
        )

    def describe(self, patch: DiffPatch, loaded: LoadedPatch) -> str:
        parsed: ParsedDiff = loaded.data
        files = ", ".join(fp.path for fp in parsed.files)
        hunks = sum(len(fp.hunks) for fp in parsed.files)
        return f"{patch.content_path}: {hunks} hunk(s) in {files}"

    # -- state --------------------------------------------------------------------------

    def inspect(self, patch: DiffPatch, loaded: LoadedPatch, tree: Tree) -> Inspection:
        parsed: ParsedDiff = loaded.data
        target = patch.target
        notes: list[str] = list(loaded.notes)
        # git apply deletes before it creates (write_out_results: deletions and the old names
        # of renames first): deletions are judged first, and the rest on the tree with them
        # done, so that a new file may take the place of a folder the patch empties, and a
        # folder of a file it deletes; they are journaled and written in that order too
        deletions = [i for i, fp in enumerate(parsed.files) if fp.is_delete]
        outcomes = {i: self._inspect_file(target, parsed.files[i], tree, notes) for i in deletions}
        gone = [(c.target, c.path, None) for i in deletions for c in outcomes[i].changes]
        renamed_from: dict[int, bytes | None] = {}
        for i, fp in enumerate(parsed.files):
            if fp.is_rename and fp.old_path:
                renamed_from[i] = old = tree.read_if_file(target, fp.old_path)
                if old is not None:
                    gone.append((target, fp.old_path, None))
        rest = [i for i in range(len(parsed.files)) if i not in outcomes]
        with tree.trying(gone) if gone else contextlib.nullcontext(tree):
            for i in rest:
                fp = parsed.files[i]
                outcomes[i] = self._inspect_file(target, fp, tree, notes, renamed_from.get(i))
        ordered = [outcomes[i] for i in (*deletions, *rest)]
        results = [r for i in range(len(parsed.files)) for r in outcomes[i].results]
        state = aggregate(results)
        if state is ContentState.APPLIED:
            # taken off in the other order: the new files first, then what was deleted
            undo = [c for outcome in reversed(ordered) for c in outcome.undo]
            return Inspection(state=state, hunks=results, notes=notes, undo=undo)
        if state is not ContentState.PENDING:
            return Inspection(state=state, hunks=results, notes=notes)
        on_result: list[HunkResult] | None = []
        for i in range(len(parsed.files)):
            if on_result is not None and outcomes[i].on_result is not None:
                on_result.extend(outcomes[i].on_result)  # type: ignore[arg-type]
            else:
                on_result = None
        # how apply writes each file patch's result (in order)
        return Inspection(
            state=state,
            hunks=results,
            changes=[c for outcome in ordered for c in outcome.changes],
            notes=notes,
            data=[outcome.write for outcome in ordered if outcome.write is not None],
            on_result=on_result,
        )

    def _inspect_file(
        self,
        target: str,
        fp: FilePatch,
        tree: Tree,
        notes: list[str],
        renamed_from: bytes | None = None,
    ) -> _Outcome:
        if fp.is_new:
            return self._new_file(target, fp, tree, tree.read_if_file(target, fp.path))
        if fp.is_delete:
            return self._deleted_file(target, fp, tree, tree.read_if_file(target, fp.path))
        if fp.is_rename:
            new = tree.read_if_file(target, fp.new_path)  # type: ignore[arg-type]
            return self._renamed_file(target, fp, renamed_from, new, notes, tree)
        try:
            old = tree.read(target, fp.old_path) if fp.old_path else None
        except NoFileHere as exc:  # a folder there, or a file above it (an earlier patch's)
            return _Outcome([self._file_result(fp, HunkState.CONFLICT, exc.reason)])
        if old is None:
            moved = moved_to(tree, target, fp)
            where = f"; {moved} holds every hunk's context (moved upstream? rename the " \
                "file in the patch, or `patchbay rebase` it)" if moved else ""  # fmt: skip
            return _Outcome(
                [self._file_result(fp, HunkState.CONFLICT, f"{fp.path} does not exist{where}")]
            )
        if fp.binary is not None:
            return self._binary_modify(target, fp, old)
        if not fp.hunks and fp.old_mode and fp.new_mode:
            return self._mode_only(target, fp, tree, old)
        results, after, _ = self._modify(fp, old, notes, tree)
        flip = _executable_flip(fp)
        if after is None:
            undone = self._undo(fp, old, results, tree)
            undo = [] if undone is None else [FileChange(target, fp.path, undone, old, flip)]
            return _Outcome(results, undo=undo)
        return _Outcome(
            results,
            [FileChange(target, fp.path, old, after, flip)],
            FileWrite(fp.path, fp.path, after, _mode_change(fp)),
            on_result=self._on_result(fp, after, tree),
        )

    def _renamed_file(
        self,
        target: str,
        fp: FilePatch,
        old: bytes | None,
        new: bytes | None,
        notes: list[str],
        tree: Tree,
    ) -> _Outcome:
        if old is not None and new is None:
            if not fp.hunks:
                results, after = [self._file_result(fp, HunkState.PENDING)], old
                on_result = [self._file_result(fp, HunkState.APPLIED)]
            else:
                results, after, _ = self._modify(fp, old, notes, tree)
                if all(r.state in PRESENT for r in results):
                    detail = "content already changed, but not renamed"
                    return _Outcome([self._file_result(fp, HunkState.CONFLICT, detail)])
                on_result = None if after is None else self._on_result(fp, after, tree)
            if after is None:
                return _Outcome(results)
            blocked = tree.creation_blocked(target, fp.new_path)  # type: ignore[arg-type]
            if blocked is not None:
                return _Outcome([self._file_result(fp, HunkState.CONFLICT, blocked)])
            changes = [
                FileChange(target, fp.old_path, old, None),  # type: ignore[arg-type]
                FileChange(target, fp.new_path, None, after),  # type: ignore[arg-type]
            ]
            write = FileWrite(fp.old_path, fp.new_path, after, _mode_change(fp))
            return _Outcome(results, changes, write, on_result=on_result)
        if old is None and new is not None:
            undone: bytes | None = new
            if not fp.hunks:
                results = [self._file_result(fp, HunkState.APPLIED)]
            else:
                results, _, _ = self._modify(fp, new, notes, tree)
                undone = self._undo(fp, new, results, tree)
            undo = []
            if undone is not None:
                undo = [
                    FileChange(target, fp.old_path, undone, None),  # type: ignore[arg-type]
                    FileChange(target, fp.new_path, None, new),  # type: ignore[arg-type]
                ]
            return _Outcome(results, undo=undo)
        detail = "both the old and the new name exist" if old is not None else "neither name exists"
        return _Outcome([self._file_result(fp, HunkState.CONFLICT, f"rename: {detail}")])

    def _modify(
        self, fp: FilePatch, data: bytes, notes: list[str], tree: Tree
    ) -> tuple[list[HunkResult], bytes | None, list[tuple[int | None, Hunk]] | None]:
        """Classify text hunks on ``data``; when all are pending, also the result bytes and
        the hunks (with the file's line endings) at the places found."""
        hunks = fp.hunks
        if is_crlf(data):
            hunks = [to_crlf(h) for h in hunks]
            notes.append(f"{fp.path} uses CRLF line endings; the patch was matched with CRLF")
        index = tree.line_index(data)
        results = [classify_hunk(index, h, fp.path) for h in hunks]
        set_offsets(results, hunks)
        if not results or any(r.state is not HunkState.PENDING for r in results):
            return results, None, None
        placed: list[tuple[int | None, Hunk]] = [
            (r.start, h) for r, h in zip(results, hunks, strict=True)
        ]
        out = apply_hunks(index.lines, placed)  # type: ignore[arg-type]
        if out is None:
            for r in results:
                r.state, r.detail = HunkState.CONFLICT, "hunks overlap at the places found"
            return results, None, None
        after = _bytes(out)
        # the recheck on the result, and the next patch of this file, search it
        tree.keep_line_index(after, index.derive(placed, out))  # type: ignore[arg-type]
        return results, after, placed

    def _on_result(self, fp: FilePatch, after: bytes, tree: Tree) -> list[HunkResult]:
        """The text hunks of ``fp`` classified on ``after``, its result, as an inspection of
        the tree holding that result would classify them (the engine's recheck: a pending
        patch must then be present), without staging it and looking again."""
        hunks = [to_crlf(h) for h in fp.hunks] if is_crlf(after) else fp.hunks
        index = tree.line_index(after)  # the index derived from the original's, mostly
        results = [classify_hunk(index, h, fp.path) for h in hunks]
        set_offsets(results, hunks)
        return results

    def _undo(
        self, fp: FilePatch, data: bytes, results: list[HunkResult], tree: Tree
    ) -> bytes | None:
        """The file before the patch, when every hunk is applied at a known place."""
        if not results or any(r.state is not HunkState.APPLIED or r.start is None for r in results):
            return None
        hunks = [to_crlf(h) for h in fp.hunks] if is_crlf(data) else fp.hunks
        placed = [(r.start, _reversed(h)) for r, h in zip(results, hunks, strict=True)]
        index = tree.line_index(data)
        out = apply_hunks(index.lines, placed)  # type: ignore[arg-type]
        if out is None:
            return None
        before = _bytes(out)
        # an earlier patch of this file is judged on it (the backward pass of a plan)
        tree.keep_line_index(before, index.derive(placed, out))  # type: ignore[arg-type]
        return before

    def _new_file(self, target: str, fp: FilePatch, tree: Tree, current: bytes | None) -> _Outcome:
        expected = self._new_content(fp)
        if current is None:
            blocked = tree.creation_blocked(target, fp.path)
            if blocked is not None:
                return _Outcome([self._file_result(fp, HunkState.CONFLICT, blocked)])
            return _Outcome(
                [self._file_result(fp, HunkState.PENDING)],
                [FileChange(target, fp.path, None, expected, _executable_flip(fp))],
                FileWrite(None, fp.path, expected, fp.new_mode or "100644"),
                on_result=[self._file_result(fp, HunkState.APPLIED)],  # it is then `expected`
            )
        if current == expected:
            # taken off, it is absent again (the backward pass of a plan)
            undo = [FileChange(target, fp.path, None, current)]
            return _Outcome([self._file_result(fp, HunkState.APPLIED)], undo=undo)
        return _Outcome(
            [self._file_result(fp, HunkState.CONFLICT, "file exists with other content")]
        )

    def _deleted_file(
        self, target: str, fp: FilePatch, tree: Tree, current: bytes | None
    ) -> _Outcome:
        if current is None:
            if fp.binary is None:
                content: bytes | None = _bytes([line for h in fp.hunks for line in h.preimage])
            else:
                content = self._binary_before(fp, None)
            undo = [] if content is None else [FileChange(target, fp.path, content, None)]
            return _Outcome([self._file_result(fp, HunkState.APPLIED)], undo=undo)
        if fp.binary is not None:
            matches = fp.index_old is not None and git_blob_id(current).startswith(fp.index_old)
        else:
            hunks = [to_crlf(h) for h in fp.hunks] if is_crlf(current) else fp.hunks
            matches = _bytes([line for h in hunks for line in h.preimage]) == current
        if not matches:
            detail = "file to delete has other content"
            return _Outcome([self._file_result(fp, HunkState.CONFLICT, detail)])
        return _Outcome(
            [self._file_result(fp, HunkState.PENDING)],
            [FileChange(target, fp.path, current, None)],
            FileWrite(fp.path, None, None, None),
            on_result=[self._file_result(fp, HunkState.APPLIED)],  # it is then absent
        )

    def _new_content(self, fp: FilePatch) -> bytes:
        if fp.binary is not None:
            return self._binary_result(fp, None)
        return _bytes([line for h in fp.hunks for line in h.postimage])

    def _binary_modify(self, target: str, fp: FilePatch, current: bytes) -> _Outcome:
        blob = git_blob_id(current)
        if fp.index_new and blob.startswith(fp.index_new):
            before = self._binary_before(fp, current)
            undo = [] if before is None else [FileChange(target, fp.path, before, current)]
            return _Outcome([self._file_result(fp, HunkState.APPLIED)], undo=undo)
        if fp.index_old and blob.startswith(fp.index_old):
            after = self._binary_result(fp, current)
            return _Outcome(
                [self._file_result(fp, HunkState.PENDING)],
                [FileChange(target, fp.path, current, after)],
                FileWrite(fp.path, fp.path, after, _mode_change(fp)),
            )
        detail = "binary file has other content"
        return _Outcome([self._file_result(fp, HunkState.CONFLICT, detail)])

    def _mode_only(self, target: str, fp: FilePatch, tree: Tree, current: bytes) -> _Outcome:
        want = bool(int(fp.new_mode or "0", 8) & 0o111)
        flip = (not want, want)
        if tree.executable(target, fp.path) == want:
            # taken off, it has the other executable bit (the backward pass of a plan)
            undo = [FileChange(target, fp.path, current, current, flip)]
            return _Outcome([self._file_result(fp, HunkState.APPLIED)], undo=undo)
        return _Outcome(
            [self._file_result(fp, HunkState.PENDING)],
            [FileChange(target, fp.path, current, current, flip)],
            FileWrite(fp.path, fp.path, current, fp.new_mode),
        )

    def _binary_result(self, fp: FilePatch, before: bytes | None) -> bytes:
        """A binary patch's result on ``before`` (None: a new file), checked against its
        ``index`` line as ``git apply`` checks it.

        Raises:
            ApplyFailed: the binary hunk is corrupt, does not fit ``before``, or gives bytes
                whose blob id is not the one the patch names.
        """
        from ..errors import ApplyFailed

        try:
            forward, _ = read_hunks(fp.binary or [])
            after = apply_hunk(forward, before)
        except BinaryPatchError as exc:
            raise ApplyFailed(f"{fp.path}: the binary patch does not apply: {exc}") from None
        if fp.index_new and not git_blob_id(after, by_value=True).startswith(fp.index_new):
            raise ApplyFailed(
                f"{fp.path}: the binary patch gives a result other than blob {fp.index_new} "
                "(git: 'creates incorrect result')"
            )
        return after

    def _binary_before(self, fp: FilePatch, after: bytes | None) -> bytes | None:
        """The file before a binary patch, from its result ``after`` (None: deleted), with the
        patch's reverse hunk (the backward pass of a plan: an earlier patch of this file is
        judged on it); None when it cannot tell (no reverse hunk, or one that does not fit)."""
        if fp.is_new:
            return None
        known = remembered("git-blob", fp.index_old or "")
        if known is not None:  # the very bytes, seen in this run already (capture's base)
            return known
        try:
            _, reverse = read_hunks(fp.binary or [])
            before = None if reverse is None else apply_hunk(reverse, after)
        except BinaryPatchError:
            return None
        if before is None or (
            fp.index_old and not git_blob_id(before, by_value=True).startswith(fp.index_old)
        ):
            return None
        return before

    @staticmethod
    def _file_result(fp: FilePatch, state: HunkState, detail: str = "") -> HunkResult:
        return HunkResult(
            file=fp.path, index=0, declared_line=0, state=state, detail=detail, patch_line=fp.line
        )

    # -- writing ------------------------------------------------------------------------

    def apply(self, batch: list[PendingPatch], tree: Tree, txn: Transaction) -> None:
        # patch by patch, file patch by file patch, each on the result of the ones before (the
        # batch is consecutive patches of one target), as their inspections planned them
        umask = process_umask()
        for item in batch:
            write_results(tree, item.patch.target, item.inspection.data, umask)


def render_file_patch(
    fp: FilePatch,
    placed: list[tuple[int | None, Hunk]] | None,
    *,
    mode: str | None = None,
) -> bytes:
    """Write one file patch back out as a git diff, with hunk headers at the places found.

    Args:
        fp: the parsed file patch.
        placed: ``(start, hunk)`` with 0-based preimage starts, or None to keep the headers.
        mode: mode for new/deleted file headers.
    """
    # only paths that passed the path gate, quoted by git's rules: git unquotes them once and
    # finds exactly the names patchbay checked (it never sees the patch file's own spelling)
    old, new = fp.old_path, fp.new_path
    a, b = quote_c(f"a/{old or new}"), quote_c(f"b/{new or old}")
    out = [f"diff --git {a} {b}\n"]
    if fp.is_new:
        out.append(f"new file mode {mode or fp.new_mode or '100644'}\n")
    elif fp.is_delete:
        out.append(f"deleted file mode {mode or fp.old_mode or '100644'}\n")
    elif fp.old_mode and fp.new_mode and fp.old_mode != fp.new_mode:
        out += [f"old mode {fp.old_mode}\n", f"new mode {fp.new_mode}\n"]
    if fp.is_rename:
        out += [f"rename from {quote_c(str(old))}\n", f"rename to {quote_c(str(new))}\n"]
    if fp.binary is not None:
        out.append(f"index {fp.index_old}..{fp.index_new}\n")
        out.append("GIT binary patch\n")
        out.extend(fp.binary)
        out.append("\n")
        return "".join(out).encode("utf-8", "surrogateescape")
    if fp.hunks:
        out.append(f"--- {a if old else '/dev/null'}\n")
        out.append(f"+++ {b if new else '/dev/null'}\n")
        pairs = placed if placed is not None else [(None, h) for h in fp.hunks]
        delta = 0
        for start, hunk in sorted(pairs, key=lambda p: -1 if p[0] is None else p[0]):
            pre, post = len(hunk.preimage), len(hunk.postimage)
            if start is None:
                old_start, new_start = hunk.old_start, hunk.new_start
            else:
                old_start = start + 1 if pre else start
                new_start = start + 1 + delta if post else start + delta
            delta += post - pre
            out.append(f"@@ -{old_start},{pre} +{new_start},{post} @@\n")
            for tag, text in hunk.lines:
                if text.endswith("\n"):
                    out.append(tag + text)
                else:
                    out.append(tag + text + "\n\\ No newline at end of file\n")
    return "".join(out).encode("utf-8", "surrogateescape")
