"""Per-hunk state, decided by content, and the in-memory result of applying hunks.

A hunk is *pending* when its preimage (context and removed lines) is found in the file and its
postimage (context and added lines) is not; *applied* when the postimage is found and the
preimage is not; *ambiguous* when either is found more than once, or both are found (the hunk
must not be applied, or declared present, at a guessed occurrence); *conflict* when neither is
found. Matching is exact (zero fuzz, whitespace significant), as ``git apply`` does by default.

Anchoring follows git apply: a hunk whose old start line is 0 or 1 must match at the beginning
of the file, and a hunk without trailing context must match at its end.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from enum import Enum

from .diffparse import Hunk


class HunkState(str, Enum):
    """State of one hunk (or of one edit of a ``replace`` patch) on the current content."""

    PENDING = "pending"
    APPLIED = "applied"
    CONFLICT = "conflict"
    AMBIGUOUS = "ambiguous"


@dataclass
class HunkResult:
    """Where a hunk stands on a file.

    Attributes:
        file: root-relative path of the file.
        index: 1-based hunk number within its file patch (or edit number).
        declared_line: the line the patch says the hunk starts at.
        state: the :class:`HunkState`.
        line: 1-based line where the preimage (pending) or postimage (applied) was found.
        start: 0-based index of that line, for applying.
        detail: a human sentence for conflicts and ambiguities.
        candidates: 1-based lines of every occurrence, when ambiguous.
        text: the hunk as written in the patch, for conflicts and ambiguities.
        patch_line: line of the hunk's header in the patch file (0: not from a patch file).
    """

    file: str
    index: int
    declared_line: int
    state: HunkState
    line: int | None = None
    start: int | None = None
    detail: str = ""
    candidates: list[int] = field(default_factory=list)
    text: str = ""
    patch_line: int = 0

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "file": self.file,
            "hunk": self.index,
            "declared_line": self.declared_line,
            "state": self.state.value,
            "line": self.line,
        }
        if self.detail:
            out["detail"] = self.detail
        if self.candidates:
            out["candidates"] = self.candidates
        if self.text:
            out["text"] = self.text
        if self.patch_line:
            out["patch_line"] = self.patch_line
        return out


class LineIndex:
    """The lines of a file with an index from line text to positions, for fast block search."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._positions: dict[str, list[int]] | None = None

    def positions(self, text: str) -> list[int]:
        if self._positions is None:
            index: dict[str, list[int]] = defaultdict(list)
            for i, line in enumerate(self.lines):
                index[line].append(i)
            self._positions = index
        return self._positions.get(text, [])

    def find(self, block: list[str], *, at_start: bool, at_end: bool) -> list[int]:
        """0-based starts of every exact occurrence of ``block``, honouring the anchors."""
        lines, m = self.lines, len(block)
        n = len(lines)
        if m > n:
            return []
        if at_start and at_end:
            return [0] if lines == block else []
        if at_start:
            return [0] if lines[:m] == block else []
        if at_end:
            return [n - m] if lines[n - m :] == block else []
        if m == 0:
            return []
        return [i for i in self.positions(block[0]) if i + m <= n and lines[i : i + m] == block]


def classify_hunk(index: LineIndex, hunk: Hunk, path: str) -> HunkResult:
    """Classify one hunk on a file's lines (see the module docstring for the rules)."""
    pre, post = hunk.preimage, hunk.postimage
    result = HunkResult(
        file=path,
        index=hunk.index,
        declared_line=hunk.old_start,
        state=None,  # type: ignore[arg-type]
        patch_line=hunk.line,
    )
    if pre == post:
        result.state = HunkState.APPLIED
        return result
    if hunk.leading_context == 0 and hunk.trailing_context == 0 and hunk.old_start > 1:
        result.state = HunkState.CONFLICT
        result.detail = "hunk has no context lines, so its place cannot be found by content"
        return result
    at_end = hunk.trailing_context == 0
    pre_hits = index.find(pre, at_start=hunk.old_start <= 1, at_end=at_end)
    post_hits = index.find(post, at_start=hunk.new_start <= 1, at_end=at_end)
    # a pure addition's preimage sits inside its own postimage (and vice versa for a removal)
    pre_only = [i for i in pre_hits if not any(_inside(i, pre, j, post) for j in post_hits)]
    post_only = [j for j in post_hits if not any(_inside(j, post, i, pre) for i in pre_hits)]
    if len(pre_only) == 1 and not post_only:
        result.state, result.start = HunkState.PENDING, pre_only[0]
    elif len(post_only) == 1 and not pre_only:
        result.state, result.start = HunkState.APPLIED, post_only[0]
    elif not pre_only and not post_only:
        result.state = HunkState.CONFLICT
        loose = index.find(pre, at_start=False, at_end=False)
        if loose and (hunk.old_start <= 1 or at_end):
            edge = "start" if hunk.old_start <= 1 else "end"
            why = "it starts at line 1" if edge == "start" else "it has no trailing context"
            result.detail = (
                f"context found at line {loose[0] + 1}, but the hunk must match at the {edge} "
                f"of the file ({why}, as git apply requires)"
            )
        else:
            line, matched = closest_match(index.lines, pre)
            result.detail = (
                f"context does not match; closest match at line {line} "
                f"({matched} of {len(pre)} lines agree)"
                if matched
                else "context does not match anywhere in the file"
            )
    else:
        result.state = HunkState.AMBIGUOUS
        result.candidates = sorted(i + 1 for i in pre_only + post_only)
        kinds = []
        if pre_only:
            kinds.append(f"its preimage occurs {len(pre_only)} times")
        if post_only:
            kinds.append(f"its postimage occurs {len(post_only)} times")
        result.detail = (
            f"{' and '.join(kinds)} (lines {', '.join(map(str, result.candidates))}); "
            "refusing to guess which one is meant"
        )
    if result.start is not None:
        result.line = result.start + 1
    else:
        result.text = hunk.render()
    return result


def _inside(i: int, block: list[str], j: int, outer: list[str]) -> bool:
    return j <= i and i + len(block) <= j + len(outer)


def closest_match(lines: list[str], block: list[str]) -> tuple[int, int]:
    """Line (1-based) where the most lines of ``block`` agree position by position, and how many.

    Used to point at where a conflicting hunk's context went. Returns ``(0, 0)`` when no line
    of the block is found at all.
    """
    best_line, best = 0, 0
    m = len(block)
    for i in range(max(1, len(lines) - m + 1)):
        score = sum(1 for k in range(min(m, len(lines) - i)) if lines[i + k] == block[k])
        if score > best:
            best_line, best = i + 1, score
    return best_line, best


def apply_hunks(lines: list[str], placed: list[tuple[int, Hunk]]) -> list[str] | None:
    """Apply hunks at their located starts; None when two hunks overlap.

    Args:
        lines: the file's current lines (with endings).
        placed: ``(start, hunk)`` pairs, ``start`` being the 0-based preimage position.
    """
    out: list[str] = []
    pos = 0
    for start, hunk in sorted(placed, key=lambda p: p[0]):
        if start < pos:
            return None
        out.extend(lines[pos:start])
        out.extend(hunk.postimage)
        pos = start + len(hunk.preimage)
    out.extend(lines[pos:])
    return out
