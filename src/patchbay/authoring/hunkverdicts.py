"""What ``rebase`` did with each hunk, and the hunks it leaves out because upstream has them.

Per hunk, from ``check``'s judgement on the candidate and what the merge then did:

================ ===============================================================================
kept             pending on the candidate where its header says
re-anchored      pending on the candidate, found some lines away (``git apply``'s offset)
merged           not applicable as written; carried over by the 3-way merge (also onto the path
                 a file moved to upstream)
dropped upstream its change is in the candidate already (``check``: applied or upstream), so
                 the rebased patch no longer carries it
conflict         left for a person: the 3-way merge conflicts, or the patch was not merged
================ ===============================================================================

A hunk ``check`` calls upstream is taken out of the patch before the 3-way merge of its file:
the merge starts from the old file with the other hunks only, so a fix that landed with nearby
changes is not presented as a conflict (the candidate's version of those lines stands).
"""

from __future__ import annotations

from enum import Enum

import msgspec

from ..diff.hunks import PRESENT, HunkResult, HunkState, apply_hunks
from ..diff.parse import FilePatch
from ..kinds.diff import is_crlf, to_crlf


class HunkVerdict(str, Enum):
    """What ``rebase`` did with one hunk (the table of the module docstring)."""

    KEPT = "kept"
    REANCHORED = "re-anchored"
    MERGED = "merged"
    DROPPED = "dropped upstream"
    CONFLICT = "conflict"


class HunkRow(msgspec.Struct):
    """One row of the per-hunk table.

    Attributes:
        file: the hunk's file (root-relative, as the patch names it).
        index: the hunk's number in its file patch (0: a whole-file change).
        verdict: the :class:`HunkVerdict`.
        note: where it went (an offset, the path a file moved to), or "".
    """

    file: str
    index: int
    verdict: HunkVerdict
    note: str = ""


def hunk_rows(
    hunks: list[HunkResult], outcome: str, moved: dict[str, str], counts: dict[str, int]
) -> list[HunkRow]:
    """The per-hunk rows of one patch.

    Args:
        hunks: ``check``'s hunk results for the patch on the candidate (before the rebase).
        outcome: what ``rebase`` did with the patch (``unchanged``, ``refreshed``,
            ``dropped``, ``conflict``).
        moved: old path -> new path of the patch's files that moved upstream.
        counts: file -> number of hunks the patch has for it: a whole-file result (a file
            the candidate does not have) stands for each of them.
    """
    rows = []
    expanded: list[HunkResult] = []
    for h in hunks:
        if h.index == 0 and counts.get(h.file, 0) > 0:
            expanded += [msgspec.structs.replace(h, index=i) for i in range(1, counts[h.file] + 1)]
        else:
            expanded.append(h)
    for h in expanded:
        note = f"now in {moved[h.file]}" if h.file in moved else ""
        if h.state in PRESENT:
            verdict = HunkVerdict.DROPPED
        elif outcome == "conflict":
            verdict = HunkVerdict.CONFLICT
        elif h.file in moved:
            verdict = HunkVerdict.MERGED
        elif h.state is HunkState.PENDING:
            verdict = HunkVerdict.REANCHORED if h.offset else HunkVerdict.KEPT
            if h.offset:
                note = f"offset {h.offset:+d} lines"
        elif outcome == "dropped":
            verdict = HunkVerdict.DROPPED
        else:
            verdict = HunkVerdict.MERGED
        rows.append(HunkRow(h.file, h.index, verdict, note))
    return rows


def without_upstream_hunks(
    base: bytes, fp: FilePatch, old_hunks: list[HunkResult], upstream: set[int]
) -> bytes | None:
    """The old file with the patch's hunks applied except those in ``upstream`` (hunk
    numbers): the "ours" of a 3-way merge that no longer carries what upstream has.

    Args:
        base: the file on the old image before the patch.
        fp: the patch's file patch of it.
        old_hunks: the hunk results of the patch on the old image (pending, with their places).
        upstream: numbers of the hunks ``check`` finds in the candidate already.

    Returns:
        The bytes, or None when a kept hunk has no place on the old file (then the plain merge
        stands).
    """
    lines = base.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    crlf = is_crlf(base)
    by_number = {h.index: h for h in fp.hunks}
    placed = []
    for result in old_hunks:
        if result.file != fp.path or result.index in upstream:
            continue
        hunk = by_number.get(result.index)
        if hunk is None or result.start is None or result.state is not HunkState.PENDING:
            return None
        if crlf:
            hunk = to_crlf(hunk)
        placed.append((result.start, hunk))
    out = apply_hunks(lines, placed)
    return None if out is None else "".join(out).encode("utf-8", "surrogateescape")
