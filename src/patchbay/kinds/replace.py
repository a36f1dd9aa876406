"""The ``replace`` kind: exact-text edits of installed files.

It replaces the Python heredocs that did ``src.replace(old, new)`` on installed sources, with
the guarantees they lacked. Each edit is one unit (like a hunk):

- *pending* when ``old`` occurs exactly ``count`` times (and, if ``new`` contains ``old``,
  ``new`` does not occur yet);
- *applied* when ``new`` occurs at least ``count`` times and ``old`` no longer does (if ``new``
  contains ``old``: when ``new`` occurs exactly ``count`` times);
- otherwise *conflict*, saying how many times each text was found: an edit never applies when
  ``old`` matches a different number of times than declared.

*Applied* found by counts alone is a guess: a typo in ``old`` makes it absent, and ``new`` (say
``return False``) may occur elsewhere by chance. So an applied edit is *unproven* (a conflict
unless the ledger says patchbay applied the patch, see :attr:`Inspection.unproven`) when
``new`` does not occur exactly ``count`` times, or when the file, with every occurrence of
``new`` blanked out, still holds text close to ``old`` (:func:`near_match`: the place the edit
aims at is still there, unchanged or mistyped).

Edits of one patch apply in order; YAML text uses LF, and is matched with CRLF in a CRLF file.
"""

from __future__ import annotations

import difflib
import json
from typing import TYPE_CHECKING

import msgspec

from ..apply.journal import write_atomic
from ..apply.ledger import sha256_bytes
from ..diff.hunks import HunkResult, HunkState
from ..errors import InputError
from ..patchset.model import ReplaceEdit, ReplacePatch
from .base import (
    ContentState,
    FileChange,
    FileKind,
    Inspection,
    LoadedPatch,
    PendingPatch,
    aggregate,
)

if TYPE_CHECKING:
    from ..apply.transaction import Transaction
    from ..environment.tree import Tree
    from ..patchset.model import Patchset


def _is_crlf(text: str) -> bool:
    """Every line ends in CRLF (and there is one): the edits' LF text is matched as CRLF."""
    return "\r\n" in text and text.count("\r\n") == text.count("\n")


def _classify(text: str, edit: ReplaceEdit, old: str, new: str) -> tuple[HunkState, str]:
    n_old, n_new = text.count(old), text.count(new)
    if old in new:
        if n_new == 0 and n_old == edit.count:
            return HunkState.PENDING, ""
        if n_new == edit.count:
            return HunkState.APPLIED, ""
    else:
        if n_old == edit.count:
            return HunkState.PENDING, ""
        if n_old == 0 and n_new >= edit.count:
            return HunkState.APPLIED, ""
    return (
        HunkState.CONFLICT,
        f"old text found {n_old} time(s), expected {edit.count}; new text found {n_new} time(s)",
    )


# share of ``old``'s characters found, in order and in runs of 3 or more, for a near match
NEAR_SHARE = 0.85


def near_match(text: str, old: str, new: str) -> int | None:
    """The 1-based line of a text close to ``old`` in ``text`` outside the occurrences of
    ``new``, or None.

    ``text`` is compared line window by line window (as many lines as ``old`` has) with
    ``old``, leading and trailing blanks stripped; a window matches when runs of 3 or more
    characters common to both, in order (:class:`difflib.SequenceMatcher`), cover
    :data:`NEAR_SHARE` of ``old``.
    """
    target = old.strip()
    if len(target) < 4:
        return None
    masked = text
    if new:
        masked = text.replace(new, "".join(c if c == "\n" else " " for c in new))
    lines = masked.split("\n")
    size = target.count("\n") + 1
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(target)
    for start in range(len(lines)):
        window = "\n".join(lines[start : start + size]).strip()
        if not window:
            continue
        matcher.set_seq1(window)
        if matcher.real_quick_ratio() * (len(window) + len(target)) < 2 * NEAR_SHARE * len(target):
            continue
        found = sum(b.size for b in matcher.get_matching_blocks() if b.size >= 3)
        if found >= NEAR_SHARE * len(target):
            return start + 1
    return None


def _unproven(text: str, edit: ReplaceEdit, old: str, new: str) -> str | None:
    """Why an edit found applied by counts may not be (None: the counts are evidence)."""
    n_new = text.count(new)
    if n_new != edit.count:
        return (
            f"old text not found; new text found {n_new} time(s), expected {edit.count}, "
            "so it is not known to be this edit's"
        )
    line = near_match(text, old, new)
    if line is not None:
        return (
            f"old text not found, but line {line} is close to it (a typo in old, or the "
            "line changed); new text found elsewhere"
        )
    return None


def _named_edits(patch: ReplacePatch, patchset: Patchset, index: int) -> list[ReplaceEdit] | str:
    """The edits of a patch whose texts are constants of its source program: resolved from the
    vendored ``vendor/<id>.json`` (checked against the lock), or why they are not there yet.

    Raises:
        InputError: the vendored file does not match the lock, is not a JSON object of
            strings, or lacks a named constant.
    """
    from .vendored import vendored_content

    got = vendored_content(patch, patchset, index, paths=[])
    if isinstance(got, str):
        return got
    data, path = got.data, got.path
    try:
        constants = json.loads(data)
        if not isinstance(constants, dict) or not all(
            isinstance(v, str) for v in constants.values()
        ):
            raise ValueError("not a JSON object of strings")
    except ValueError as exc:
        raise InputError(
            f"unreadable vendored constants: {exc}", file=path, patch_id=patch.id
        ) from None
    out = []
    for n, edit in enumerate(patch.edits):
        names = (edit.old_from, edit.new_from)
        if any(name not in constants for name in names):
            raise InputError(
                f"edit {n + 1} names {' and '.join(map(str, names))}; the vendored constants "
                f"are {', '.join(constants) or 'none'}: run `patchbay vendor` again",
                file=patchset.path,
                line=patchset.patch_line(index, "edits", n),
                patch_id=patch.id,
            )
        old, new = constants[str(edit.old_from)], constants[str(edit.new_from)]
        out.append(ReplaceEdit(file=edit.file, old=old, new=new, count=edit.count))
    return out


class ReplaceKind(FileKind):
    """Implements :class:`~patchbay.kinds.base.PatchKind` for ``kind: replace``."""

    name = "replace"

    def load(self, patch: ReplacePatch, patchset: Patchset, index: int) -> LoadedPatch:
        edits = patch.edits
        if patch.source is not None:
            named = _named_edits(patch, patchset, index)
            if isinstance(named, str):
                return LoadedPatch(sha256="", source=None, data=None, unlocked=named)
            edits = named
        canonical = json.dumps(msgspec.to_builtins(edits), sort_keys=True)
        return LoadedPatch(sha256=sha256_bytes(canonical.encode()), source=None, data=edits)

    def describe(self, patch: ReplacePatch, loaded: LoadedPatch) -> str:
        files = sorted({e.file for e in patch.edits})
        return f"{len(patch.edits)} exact-text edit(s) in {', '.join(files)}"

    def inspect(self, patch: ReplacePatch, loaded: LoadedPatch, tree: Tree) -> Inspection:
        results: list[HunkResult] = []
        notes: list[str] = []
        texts: dict[str, str | None] = {}
        originals: dict[str, bytes | None] = {}
        crlf_files: dict[str, bool] = {}  # of each text as it is now (it changes with an edit)
        unproven: list[tuple[int, str]] = []
        edits: list[ReplaceEdit] = loaded.data  # the texts (a source's constants resolved)
        for number, edit in enumerate(edits, start=1):
            if edit.file not in texts:
                data = tree.read(patch.target, edit.file)
                originals[edit.file] = data
                text = None if data is None else data.decode("utf-8", "surrogateescape")
                texts[edit.file] = text
                crlf_files[edit.file] = text is not None and _is_crlf(text)
            text = texts[edit.file]
            result = HunkResult(
                file=edit.file, index=number, declared_line=0, state=HunkState.CONFLICT
            )
            results.append(result)
            if text is None:
                result.detail = f"{edit.file} does not exist"
                continue
            old, new = edit.old, edit.new
            if crlf_files[edit.file] and "\n" in old:
                old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
                notes.append(f"{edit.file} uses CRLF line endings; edit {number} matched with CRLF")
            result.state, result.detail = _classify(text, edit, old, new)
            if result.state is HunkState.APPLIED:
                why = _unproven(text, edit, old, new)
                if why is not None:
                    unproven.append((number, why))
            where = text.find(old if result.state is HunkState.PENDING else new)
            if where >= 0 and result.state is not HunkState.CONFLICT:
                result.line = text.count("\n", 0, where) + 1
            if result.state is HunkState.PENDING:
                texts[edit.file] = text.replace(old, new)
                crlf_files[edit.file] = _is_crlf(texts[edit.file])  # type: ignore[arg-type]
        state = aggregate(results)
        undo = self._undo(patch, edits, originals) if state is ContentState.APPLIED else []
        changes = []
        if all(r.state is HunkState.PENDING for r in results):
            changes = [
                FileChange(
                    patch.target,
                    f,
                    originals[f],
                    (texts[f] or "").encode("utf-8", "surrogateescape"),
                )
                for f in texts
            ]
        return Inspection(
            state=state,
            hunks=results,
            changes=changes,
            notes=notes,
            undo=undo,
            unproven=unproven,
        )

    @staticmethod
    def _undo(
        patch: ReplacePatch, edits: list[ReplaceEdit], originals: dict[str, bytes | None]
    ) -> list[FileChange]:
        """The files before the edits, when each new text occurs exactly as often as it was
        put there (otherwise which occurrences to undo is unknown, and nothing is said)."""
        texts = {f: (d or b"").decode("utf-8", "surrogateescape") for f, d in originals.items()}
        crlf_files = {f: _is_crlf(t) for f, t in texts.items()}
        for edit in reversed(edits):
            text = texts[edit.file]
            old, new = str(edit.old), str(edit.new)
            if crlf_files[edit.file] and "\n" in old:
                old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
            if not new or text.count(new) != edit.count:
                return []
            texts[edit.file] = text.replace(new, old)
            crlf_files[edit.file] = _is_crlf(texts[edit.file])
        return [
            FileChange(patch.target, f, texts[f].encode("utf-8", "surrogateescape"), originals[f])
            for f in texts
        ]

    def apply(self, batch: list[PendingPatch], tree: Tree, txn: Transaction) -> None:
        for item in batch:
            for change in item.inspection.changes:
                assert change.after is not None
                write_atomic(tree.resolve(change.target, change.path), change.after)
