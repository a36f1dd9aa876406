"""How hunk states read to people: one wording per state, in ``status``, ``check``, ``apply``
and the report, and the ``.rej``-like view of a conflict's closest place.

A hunk's content state (:class:`~patchbay.diff.hunks.HunkState`) is worded by what it means, with
one word per state in every output (table, concise lines, JSON ``hunks[].state`` and
``hunk_counts``, the report, the docs):

============ =========================================================================
pending      to apply: its preimage is at line N (``offset K`` when N is not the header's)
applied      present, and the ledger says patchbay wrote this patch
upstream     present in the image (not written by patchbay), at line N; or, with its
             context moved, at lines A-B (never reverse-applied)
conflict     neither applies nor is present (the closest place follows, line by line)
ambiguous    found more than once; refusing to guess
============ =========================================================================

Units are ``hunk N`` (diff), ``edit N`` (replace), ``whole file`` (a file patch without hunks:
new, deleted, binary, renamed); other kinds name a unit by its file (a package, an artifact's
destination, a command's output).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .hunks import HunkResult, HunkState

#: the words, in the order counts are listed
WORDS = ("upstream", "applied", "present", "pending", "conflict", "ambiguous")

# kinds whose units are text hunks or edits ("upstream" means the image ships the change)
_TEXT_KINDS = frozenset({"diff", "replace"})


def unit_name(h: HunkResult, kind: str) -> str:
    """``hunk 2``, ``edit 1``, ``whole file``; empty for other kinds (their unit is named by
    its file: a package, an artifact's destination, a command's output)."""
    if kind == "diff":
        return f"hunk {h.index}" if h.index else "whole file"
    if kind == "replace":
        return f"edit {h.index}"
    return ""


def state_word(h: HunkResult, kind: str, *, by_patchbay: bool) -> str:
    """The one word for a hunk's state (see the module docstring).

    Args:
        h: the hunk's result.
        kind: the patch kind (``diff``, ``replace``, ``pip``...).
        by_patchbay: the ledger records this patch as applied by patchbay.
    """
    if h.state is HunkState.PENDING:
        return "pending"
    if h.state is HunkState.UPSTREAM:
        return "upstream"
    if h.state is HunkState.APPLIED:
        if by_patchbay:
            return "applied"
        return "upstream" if kind in _TEXT_KINDS else "present"
    return h.state.value


def _offset(h: HunkResult) -> str:
    return f", offset {h.offset:+d}" if h.offset and h.index else ""


def hunk_phrase(h: HunkResult, kind: str, *, by_patchbay: bool) -> str:
    """The state with where and why: ``pending at line 25, offset +19``, ``upstream at lines
    12-16 (context moved)``, ``conflict: context does not match; ...``."""
    word = state_word(h, kind, by_patchbay=by_patchbay)
    if h.moved is not None:
        a, b = h.moved
        return f"{word} at lines {a}-{b} (context moved)"
    where = f" at line {h.line}{_offset(h)}" if h.line else ""
    detail = f": {h.detail}" if h.detail else ""
    return f"{word}{where}{detail}"


def hunk_sentence(h: HunkResult, kind: str, *, by_patchbay: bool) -> str:
    """``FILE UNIT: PHRASE``, one line per hunk (tables, refusal details)."""
    unit = unit_name(h, kind)
    name = f"{h.file} {unit}" if unit else h.file
    return f"{name}: {hunk_phrase(h, kind, by_patchbay=by_patchbay)}"


def hunk_counts(hunks: Iterable[HunkResult], kind: str, *, by_patchbay: bool) -> dict[str, int]:
    """Hunks per word, in :data:`WORDS` order, only the words that occur."""
    counted = Counter(state_word(h, kind, by_patchbay=by_patchbay) for h in hunks)
    return {w: counted[w] for w in WORDS if counted[w]}


def counts_text(counts: dict[str, int]) -> str:
    """``1 upstream, 1 pending, 1 conflict``."""
    return ", ".join(f"{n} {w}" for w, n in counts.items())


def hunk_json(h: HunkResult, kind: str, *, by_patchbay: bool) -> dict[str, object]:
    """A hunk's JSON, its ``state`` the one word of :func:`state_word` (``applied`` only when
    patchbay wrote it; ``upstream`` or ``present`` when the image has it)."""
    return {**h.to_json(), "state": state_word(h, kind, by_patchbay=by_patchbay)}


def mixed(hunks: list[HunkResult], kind: str, *, by_patchbay: bool) -> bool:
    """Whether a patch's hunks are in more than one state (worth a count)."""
    return len(hunk_counts(hunks, kind, by_patchbay=by_patchbay)) > 1


def closest_lines(h: HunkResult) -> list[str]:
    """The ``.rej``-like view of a conflict: each line the hunk expects beside the file's line
    at the closest place, differing lines marked ``!`` (empty when there is no close place).

    Lines read ``MARK LINE | FILE TEXT`` for agreeing lines and, for a differing one, the
    file's line and below it the hunk's (``hunk:``), as ``diff`` shows two sides."""
    if not h.closest:
        return []
    agree = sum(1 for c in h.closest if c.same)
    first = h.closest[0].line
    out = [
        f"closest place: line {first} ({agree} of {len(h.closest)} lines agree; "
        "! marks a line that differs)"
    ]
    width = len(str(max((c.line or 0) for c in h.closest)))
    for c in h.closest:
        hunk_text = c.tag + c.hunk.rstrip("\r\n")
        if c.same:
            out.append(f"  {c.line:>{width}} | {hunk_text}")
            continue
        number = str(c.line) if c.line is not None else "-" * width
        file_text = " " + c.file.rstrip("\r\n") if c.file is not None else "(end of file)"
        out.append(f"! {number:>{width}} | file: {file_text}")
        out.append(f"  {'':>{width}} | hunk: {hunk_text}")
    return out
