"""The ``diff`` kind: unified or git-style diff files, applied with ``git apply`` and zero fuzz.

State comes from content, hunk by hunk (see :mod:`patchbay.hunks`). When every hunk is pending
the result is computed in memory, and the patch is handed to git rewritten with the exact line
numbers found, so git cannot place a hunk anywhere else; the bytes git writes are then checked
against the computed result. Binary git patches are classified by the blob ids on their
``index`` line and their result is computed by git in a scratch folder.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..diffparse import FilePatch, Hunk, ParsedDiff, parse_diff
from ..errors import InputError
from ..gitapply import git_apply
from ..hunks import HunkResult, HunkState, LineIndex, apply_hunks, classify_hunk
from ..ledger import sha256_bytes
from ..model import DiffPatch
from .base import ContentState, FileChange, Inspection, LoadedPatch, aggregate

if TYPE_CHECKING:
    from ..model import Patchset
    from ..transaction import Transaction
    from ..tree import Tree


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "surrogateescape").splitlines(keepends=True)


def _bytes(lines: list[str]) -> bytes:
    return "".join(lines).encode("utf-8", "surrogateescape")


def _is_crlf(data: bytes) -> bool:
    n = data.count(b"\n")
    return n > 0 and data.count(b"\r\n") == n


def _to_crlf(hunk: Hunk) -> Hunk:
    def conv(text: str) -> str:
        return text[:-1] + "\r\n" if text.endswith("\n") and not text.endswith("\r\n") else text

    return replace(hunk, lines=[(tag, conv(text)) for tag, text in hunk.lines])


def git_blob_id(data: bytes) -> str:
    """The id git gives a blob with these bytes (sha1 of ``blob <size>\\0<data>``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class DiffKind:
    """Implements :class:`~patchbay.kinds.base.PatchKind` for ``kind: diff``."""

    name = "diff"

    def load(self, patch: DiffPatch, patchset: Patchset, index: int) -> LoadedPatch:
        path = patchset.folder / patch.file
        try:
            data = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise InputError(
                f"patch file {patch.file} not found (looked at {path})",
                file=patchset.path,
                line=patchset.patch_line(index, "file"),
                patch_id=patch.id,
            ) from None
        parsed = parse_diff(data, source=path, strip=patch.strip)
        notes = []
        if parsed.crlf_normalised:
            notes.append(
                f"{patch.file} has CRLF line endings (a checkout conversion); read as LF and "
                "matched to each target file's own line endings"
            )
        return LoadedPatch(sha256=sha256_bytes(data), source=str(path), data=parsed, notes=notes)

    def describe(self, patch: DiffPatch, loaded: LoadedPatch) -> str:
        parsed: ParsedDiff = loaded.data
        files = ", ".join(fp.path for fp in parsed.files)
        hunks = sum(len(fp.hunks) for fp in parsed.files)
        return f"{patch.file}: {hunks} hunk(s) in {files}"

    # -- state --------------------------------------------------------------------------

    def inspect(self, patch: DiffPatch, loaded: LoadedPatch, tree: Tree) -> Inspection:
        parsed: ParsedDiff = loaded.data
        results: list[HunkResult] = []
        changes: list[FileChange] = []
        notes: list[str] = list(loaded.notes)
        pending_changes: list[FileChange] = []
        for fp in parsed.files:
            file_results, file_changes = self._inspect_file(patch.target, fp, tree, notes)
            results.extend(file_results)
            pending_changes.extend(file_changes)
        state = aggregate(results)
        if state is ContentState.PENDING:
            changes = pending_changes
        return Inspection(state=state, hunks=results, changes=changes, notes=notes)

    def _inspect_file(
        self, target: str, fp: FilePatch, tree: Tree, notes: list[str]
    ) -> tuple[list[HunkResult], list[FileChange]]:
        old = tree.read(target, fp.old_path) if fp.old_path else None
        new = tree.read(target, fp.new_path) if fp.new_path else None
        if fp.is_new:
            return self._whole_file(target, fp, tree, before=None, current=new)
        if fp.is_delete:
            return self._whole_file(target, fp, tree, before=old, current=old)
        if fp.is_rename:
            if old is not None and new is None:
                if not fp.hunks:
                    results, after = [self._file_result(fp, HunkState.PENDING)], old
                else:
                    results, after = self._modify(fp, old, notes)
                    if all(r.state is HunkState.APPLIED for r in results):
                        results = [
                            self._file_result(
                                fp, HunkState.CONFLICT, "content already changed, but not renamed"
                            )
                        ]
                changes = []
                if after is not None:
                    changes = [
                        FileChange(target, fp.old_path, old, None),
                        FileChange(target, fp.new_path, None, after),
                    ]
                return results, changes
            if old is None and new is not None:
                results, _ = self._modify(fp, new, notes)
                if not fp.hunks:
                    return [self._file_result(fp, HunkState.APPLIED)], []
                return results, []
            detail = (
                "both the old and the new name exist" if old is not None else "neither name exists"
            )
            return [self._file_result(fp, HunkState.CONFLICT, f"rename: {detail}")], []
        if old is None:
            return [self._file_result(fp, HunkState.CONFLICT, f"{fp.path} does not exist")], []
        if fp.binary is not None:
            return self._binary_modify(target, fp, tree, old)
        results, after = self._modify(fp, old, notes)
        if after is None:
            if fp.new_mode and fp.old_mode and not fp.hunks:
                return self._mode_only(target, fp, tree, old)
            return results, []
        return results, [FileChange(target, fp.path, old, after)]

    def _modify(
        self, fp: FilePatch, data: bytes, notes: list[str]
    ) -> tuple[list[HunkResult], bytes | None]:
        """Classify text hunks on ``data``; the result bytes when all are pending."""
        hunks = fp.hunks
        if _is_crlf(data):
            hunks = [_to_crlf(h) for h in hunks]
            notes.append(f"{fp.path} uses CRLF line endings; the patch was matched with CRLF")
        index = LineIndex(_lines(data))
        path = fp.path
        results = [classify_hunk(index, h, path) for h in hunks]
        if not results or any(r.state is not HunkState.PENDING for r in results):
            return results, None
        placed = [(r.start, h) for r, h in zip(results, hunks, strict=True)]
        out = apply_hunks(index.lines, placed)  # type: ignore[arg-type]
        if out is None:
            for r in results:
                r.state, r.detail = HunkState.CONFLICT, "hunks overlap at the places found"
            return results, None
        return results, _bytes(out)

    def _whole_file(
        self,
        target: str,
        fp: FilePatch,
        tree: Tree,
        *,
        before: bytes | None,
        current: bytes | None,
    ) -> tuple[list[HunkResult], list[FileChange]]:
        """New and deleted files: the whole file is the unit."""
        if fp.is_new:
            expected = self._new_content(target, fp, tree)
            if current is None:
                return [self._file_result(fp, HunkState.PENDING)], [
                    FileChange(target, fp.path, None, expected)
                ]
            if current == expected:
                return [self._file_result(fp, HunkState.APPLIED)], []
            return [self._file_result(fp, HunkState.CONFLICT, "file exists with other content")], []
        if current is None:
            return [self._file_result(fp, HunkState.APPLIED)], []
        if fp.binary is not None:
            matches = fp.index_old is not None and git_blob_id(current).startswith(fp.index_old)
        else:
            pre = [line for h in fp.hunks for line in h.preimage]
            if _is_crlf(current):
                pre = [line for h in fp.hunks for line in _to_crlf(h).preimage]
            matches = _bytes(pre) == current
        if matches:
            return [self._file_result(fp, HunkState.PENDING)], [
                FileChange(target, fp.path, current, None)
            ]
        return [self._file_result(fp, HunkState.CONFLICT, "file to delete has other content")], []

    def _new_content(self, target: str, fp: FilePatch, tree: Tree) -> bytes:
        if fp.binary is not None:
            return self._binary_result(fp, None)
        return _bytes([line for h in fp.hunks for line in h.postimage])

    def _binary_modify(
        self, target: str, fp: FilePatch, tree: Tree, current: bytes
    ) -> tuple[list[HunkResult], list[FileChange]]:
        blob = git_blob_id(current)
        if fp.index_new and blob.startswith(fp.index_new):
            return [self._file_result(fp, HunkState.APPLIED)], []
        if fp.index_old and blob.startswith(fp.index_old):
            after = self._binary_result(fp, current)
            return [self._file_result(fp, HunkState.PENDING)], [
                FileChange(target, fp.path, current, after)
            ]
        return [self._file_result(fp, HunkState.CONFLICT, "binary file has other content")], []

    def _mode_only(
        self, target: str, fp: FilePatch, tree: Tree, current: bytes
    ) -> tuple[list[HunkResult], list[FileChange]]:
        mode = stat.S_IMODE(os.stat(tree.resolve(target, fp.path)).st_mode)
        want = int(fp.new_mode or "0", 8) & 0o777
        state = (
            HunkState.APPLIED if (mode & 0o111 != 0) == (want & 0o111 != 0) else HunkState.PENDING
        )
        changes = (
            [] if state is HunkState.APPLIED else [FileChange(target, fp.path, current, current)]
        )
        return [self._file_result(fp, state)], changes

    def _binary_result(self, fp: FilePatch, before: bytes | None) -> bytes:
        """Let git compute a binary patch's result in a scratch folder."""
        with tempfile.TemporaryDirectory(prefix="patchbay-bin-") as scratch:
            root = Path(scratch)
            if before is not None and fp.old_path:
                (root / fp.old_path).parent.mkdir(parents=True, exist_ok=True)
                (root / fp.old_path).write_bytes(before)
            git_apply(render_file_patch(fp, None, mode="100644"), root)
            return (root / fp.path).read_bytes()

    @staticmethod
    def _file_result(fp: FilePatch, state: HunkState, detail: str = "") -> HunkResult:
        return HunkResult(file=fp.path, index=0, declared_line=0, state=state, detail=detail)

    # -- writing ------------------------------------------------------------------------

    def apply(
        self,
        patch: DiffPatch,
        loaded: LoadedPatch,
        inspection: Inspection,
        tree: Tree,
        txn: Transaction,
    ) -> None:
        parsed: ParsedDiff = loaded.data
        root = tree.roots[patch.target]
        by_file: dict[str, list[HunkResult]] = {}
        for r in inspection.hunks:
            by_file.setdefault(r.file, []).append(r)
        chunks = []
        for fp in parsed.files:
            placed = None
            if fp.hunks and not fp.is_new and not fp.is_delete and fp.binary is None:
                before = tree.on_disk(patch.target, fp.old_path or fp.path)
                hunks = [_to_crlf(h) for h in fp.hunks] if before and _is_crlf(before) else fp.hunks
                placed = [(r.start, h) for r, h in zip(by_file[fp.path], hunks, strict=True)]
            mode = None
            if fp.is_delete:
                mode = _mode_of(tree.resolve(patch.target, fp.path))
            elif fp.is_new:
                mode = fp.new_mode or "100644"
            chunks.append(render_file_patch(fp, placed, mode=mode))
        git_apply(b"".join(chunks), root)


def _mode_of(path: Path) -> str:
    return "100755" if os.stat(path).st_mode & 0o111 else "100644"


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
    old, new = fp.old_path, fp.new_path
    out = [f"diff --git a/{old or new} b/{new or old}\n"]
    if fp.is_new:
        out.append(f"new file mode {mode or fp.new_mode or '100644'}\n")
    elif fp.is_delete:
        out.append(f"deleted file mode {mode or fp.old_mode or '100644'}\n")
    elif fp.old_mode and fp.new_mode and fp.old_mode != fp.new_mode:
        out += [f"old mode {fp.old_mode}\n", f"new mode {fp.new_mode}\n"]
    if fp.is_rename:
        out += [f"rename from {old}\n", f"rename to {new}\n"]
    if fp.binary is not None:
        out.append(f"index {fp.index_old}..{fp.index_new}\n")
        out.append("GIT binary patch\n")
        out.extend(fp.binary)
        out.append("\n")
        return "".join(out).encode("utf-8", "surrogateescape")
    if fp.hunks:
        out.append(f"--- {'a/' + old if old else '/dev/null'}\n")
        out.append(f"+++ {'b/' + new if new else '/dev/null'}\n")
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
