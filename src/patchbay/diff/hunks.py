"""Per-hunk state, decided by content, and the in-memory result of applying hunks.

A hunk is *pending* when its preimage (context and removed lines) is found in the file and its
postimage (context and added lines) is not; *applied* when the postimage is found and the
preimage is not; *ambiguous* when either is found more than once, or both are found (the hunk
must not be applied, or declared present, at a guessed occurrence); *conflict* when neither is
found. Matching is exact (zero fuzz, whitespace significant), as ``git apply`` does by default.

Anchoring follows git apply: a hunk whose old start line is 0 or 1 must match at the beginning
of the file, and a hunk without trailing context must match at its end.

A hunk found neither way may still have landed: upstream merged the same change and a later
refactor moved its context. Such a hunk is *upstream* when the content says so beyond doubt
(:func:`moved_context`). git's ``patch-id`` and ``git cherry`` already ignore line numbers to
recognise a change that landed elsewhere; this goes one step further and ignores the context
that moved, but only on strong evidence, and such a hunk is never reverse-applied. A hunk
whose preimage is found while its change is also there with its context moved is
*ambiguous* when the hunk only adds lines (or removes only generic ones): its preimage is no
evidence that the change is absent, and applying it would make the change twice. A hunk that
removes a line of substance found in place with its preimage is *pending*: the old code is
still there, and the similar block elsewhere is other code.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator
from enum import Enum
from typing import Any

import msgspec

from ..patterns import pattern
from .parse import Hunk, split_lines


class HunkState(str, Enum):
    """State of one hunk (or of one edit of a ``replace`` patch) on the current content.

    ``upstream``: the hunk's change is present by content although its context moved (see
    :func:`moved_context`); it counts as applied but is never reverse-applied.
    """

    PENDING = "pending"
    APPLIED = "applied"
    UPSTREAM = "upstream"
    CONFLICT = "conflict"
    AMBIGUOUS = "ambiguous"


#: states in which a hunk's change is in the file
PRESENT = frozenset({HunkState.APPLIED, HunkState.UPSTREAM})


class HunkResult(msgspec.Struct):
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
        offset: lines between where the hunk was found and where its header says it is
            (git apply's "succeeded at N (offset K lines)"); 0 when found where declared.
        moved: for an ``upstream`` hunk, the 1-based first and last line of its change in the
            file (its context moved).
        closest: for a conflict, the closest place line by line (a ``.rej``-like view).
    """

    file: str
    index: int
    declared_line: int
    state: HunkState
    line: int | None = None
    start: int | None = None
    detail: str = ""
    candidates: list[int] = msgspec.field(default_factory=list)
    text: str = ""
    patch_line: int = 0
    offset: int = 0
    moved: tuple[int, int] | None = None
    closest: list[CloseLine] = msgspec.field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "file": self.file,
            "hunk": self.index,
            "declared_line": self.declared_line,
            "state": self.state.value,
            "line": self.line,
        }
        if self.line is not None and self.index:
            out["offset"] = self.offset
        if self.moved is not None:
            out["moved"] = {"first_line": self.moved[0], "last_line": self.moved[1]}
        if self.detail:
            out["detail"] = self.detail
        if self.candidates:
            out["candidates"] = self.candidates
        if self.closest:
            out["closest"] = [c.to_json() for c in self.closest]
        if self.text:
            out["text"] = self.text
        if self.patch_line:
            out["patch_line"] = self.patch_line
        return out


class CloseLine(msgspec.Struct, frozen=True):
    """One line of a conflicting hunk's preimage beside the file at the closest place.

    Attributes:
        tag: the hunk line's tag (``' '`` context, ``'-'`` removed).
        hunk: the line the hunk expects (with its ending).
        line: 1-based line of the file it is compared with (None: past the end of the file).
        file: that file line (None: past the end).
    """

    tag: str
    hunk: str
    line: int | None
    file: str | None

    @property
    def same(self) -> bool:
        return self.hunk == self.file

    def to_json(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "hunk": self.hunk,
            "line": self.line,
            "file": self.file,
            "same": self.same,
        }


class LineIndex:
    """The lines of one file content and how often each distinct line occurs, for block search.

    Built once per content (see :meth:`patchbay.environment.tree.Tree.line_index`) and shared by
    every hunk classified on it. A block is searched from its rarest line: the candidates are the
    places of that one line, so a search costs the occurrences of the block's rarest line times
    the block's length, not the occurrences of its first line (often a blank line, found at
    every tenth line of a large file). The place of a line is looked for outward from where the
    hunk header says the block is (as git apply starts at the declared line), so a patch made
    for this very file finds each hunk in a few comparisons; once searches have looked at more
    lines than the file has twice over, every line's places are mapped in one pass, which
    keeps the total linear in the file's size whatever the hunks.

    Args:
        lines: the file's lines with their endings (:func:`patchbay.diff.parse.split_lines`).
            :meth:`of` builds the index of a file's bytes; :meth:`derive` the index of the
            result of applying hunks, without reading that result again.
        counts: how often each line occurs in ``lines``, when known.
    """

    #: bytes decoded and split at a time by :meth:`of`
    SLICE = 1 << 20
    #: lines looked at by searches, in multiples of the file's lines, before mapping them all
    SCAN_BUDGET = 2

    def __init__(self, lines: list[str], counts: Counter[str] | None = None) -> None:
        self.lines = lines
        self._counts = Counter(lines) if counts is None else counts
        self._places: dict[str, list[int]] = {}
        self._scanned = 0
        self._mapped = False

    @classmethod
    def of(cls, data: bytes) -> LineIndex:
        """The index of a file's content, decoded as UTF-8 with ``surrogateescape`` (byte-exact,
        as patch files are read).

        The bytes are decoded and split a slice at a time (cut after a newline, which is never
        part of a multi-byte UTF-8 sequence), and equal lines share one ``str``: the decoded
        text of the whole file and a ``str`` per line are never alive at once.
        """
        canonical: dict[str, str] = {}
        lines: list[str] = []
        for part in _slices(data, cls.SLICE):
            chunk = split_lines(part.decode("utf-8", "surrogateescape"))
            lines += map(canonical.setdefault, chunk, chunk)
        return cls(lines)

    def derive(self, placed: list[tuple[int, Hunk]], lines: list[str]) -> LineIndex | None:
        """The index of ``lines``, the result of :func:`apply_hunks` with ``placed`` on these
        lines, from this index's counts (no new count of every line); None when that result
        would not split back into the same lines (a line without its newline inside it)."""
        if (self.lines and not self.lines[-1].endswith("\n")) or any(
            not text.endswith("\n") for _, hunk in placed for text in hunk.postimage
        ):
            return None
        counts = self._counts.copy()
        for start, hunk in placed:
            pre = hunk.preimage
            if self.lines[start : start + len(pre)] != pre:
                return None
            counts.subtract(pre)
            counts.update(hunk.postimage)
        return LineIndex(lines, counts)

    def count(self, text: str) -> int:
        """How many lines of the file are exactly ``text``."""
        return self._counts.get(text, 0)

    def positions(self, text: str, near: int = 0) -> list[int]:
        """0-based places of every line that is exactly ``text``, in order; ``near``: where to
        start looking for a line that occurs once."""
        n = self._counts.get(text, 0)
        if n <= 0:
            return []
        known = self._places.get(text)
        if known is not None:
            return known
        if not self._mapped and self._scanned > self.SCAN_BUDGET * len(self.lines):
            self._map_all()
        if self._mapped:
            return self._places[text]
        places = [self._near(text, near)] if n == 1 else self._scan(text, n)
        self._places[text] = places
        return places

    def _near(self, text: str, near: int) -> int:
        """Place of the one line that is ``text``, looked for in rings widening around
        ``near`` (each ring one C-level ``list.index``)."""
        find, total = self.lines.index, len(self.lines)
        lo = hi = min(max(near, 0), total)
        width = 64
        while lo > 0 or hi < total:
            new_lo, new_hi = max(0, lo - width), min(total, hi + width)
            self._scanned += new_hi - new_lo - (hi - lo)
            for a, b in ((new_lo, lo), (hi, new_hi)):
                if a < b:
                    try:
                        return find(text, a, b)
                    except ValueError:
                        pass
            lo, hi, width = new_lo, new_hi, width * 2
        raise AssertionError(f"counted line not found: {text!r}")

    def _scan(self, text: str, n: int) -> list[int]:
        places, at, find = [], -1, self.lines.index
        for _ in range(n):
            at = find(text, at + 1)
            places.append(at)
        self._scanned += at + 1
        return places

    def _map_all(self) -> None:
        places: dict[str, list[int]] = {}
        for i, line in enumerate(self.lines):
            known = places.get(line)
            if known is None:
                places[line] = [i]
            else:
                known.append(i)
        self._places = places
        self._mapped = True

    def find(self, block: list[str], *, at_start: bool, at_end: bool, near: int = 0) -> list[int]:
        """0-based starts of every exact occurrence of ``block``, in order, honouring anchors.

        ``at_start``: the block must match at the first line; ``at_end``: at the last (git
        apply's ``match_beginning`` and ``match_end``). Matching is exact: zero fuzz,
        whitespace and line endings significant; every occurrence is returned (more than one
        is an ambiguity for the caller, never a guess). ``near``: the 0-based line where the
        block is expected (a hint for speed; it never changes the result).
        """
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
        counts = self._counts
        anchor, fewest = 0, n + 1
        for k, text in enumerate(block):
            c = counts.get(text, 0)
            if c < fewest:
                anchor, fewest = k, c
                if c <= 1:
                    break
        if fewest <= 0:
            return []
        hits = []
        for p in self.positions(block[anchor], near + anchor):
            i = p - anchor
            if 0 <= i <= n - m and lines[i : i + m] == block:
                hits.append(i)
        return hits

    def closest(self, block: list[str], near: int = 0) -> tuple[int, int]:
        """Line (1-based) where the most lines of ``block`` agree position by position, and how
        many; the first such line on a tie. ``(0, 0)`` when no line of the block occurs.

        Each occurrence of a block line votes for the start it implies, so the cost is the
        number of occurrences of the block's lines, not file lines times block lines.
        """
        n, m = len(self.lines), len(block)
        starts = max(1, n - m + 1)
        votes: Counter[int] = Counter()
        for k, text in enumerate(block):
            if self._counts.get(text, 0) > 0:
                votes.update(p - k for p in self.positions(text, near + k))
        best_start, best = -1, 0
        for start, score in votes.items():
            if 0 <= start < starts and (score > best or (score == best and start < best_start)):
                best_start, best = start, score
        return (best_start + 1, best) if best else (0, 0)


# Words that say nothing about which change a line belongs to: flow keywords and literals
# found in every language a patch touches (a lone ``return``, ``else:``, ``fi``, ``None``).
_GENERIC_WORDS = frozenset(
    [
        "return",
        "pass",
        "break",
        "continue",
        "else",
        "elif",
        "try",
        "finally",
        "except",
        "end",
        "fi",
        "done",
        "do",
        "then",
        "esac",
        "begin",
        "None",
        "True",
        "False",
        "null",
        "nullptr",
        "true",
        "false",
        "self",
        "this",
    ]
)
_WORD = pattern(r"\w+")


def is_generic(line: str) -> bool:
    """Whether a line is too common to be evidence that a change is present: blank, only
    punctuation (a closing bracket), only flow keywords and literals (a lone ``return``,
    ``return []``, ``else:``), or fewer than three word characters in all (``x = 1``)."""
    words = _WORD.findall(line)
    return all(w in _GENERIC_WORDS for w in words) or sum(map(len, words)) < 3


def moved_context(index: LineIndex, hunk: Hunk) -> tuple[int, int] | None:
    """Where a hunk's change is in the file although its context moved: the 0-based start and
    end (exclusive) of its changed block, or None when the content does not prove it.

    The rule, every part required:

    - the block from the hunk's first to its last changed line, as it reads after the change
      (added lines and the context between them), occurs exactly once in the file;
    - at least one added line is evidence: not generic (:func:`is_generic`: blank, a lone
      ``return``, a closing bracket) and found once in the whole file; a line that occurs
      more than once never counts;
    - at least part of the hunk's context (a line that is not generic) is nearby: within the
      hunk's length before or after the block;
    - none of the removed lines (not generic, not re-added by the hunk) is nearby.

    A variant in which only some of the added lines are present fails the first rule and stays
    a conflict. Cost: the occurrences of the block's rarest line and of the hunk's context and
    removed lines (through the shared :class:`LineIndex`), never a scan per hunk.
    """
    lines = hunk.lines
    changed = [k for k, (tag, _) in enumerate(lines) if tag != " "]
    if not changed:
        return None
    first, last = changed[0], changed[-1]
    block = [text for tag, text in lines[first : last + 1] if tag != "-"]
    added = {text for tag, text in lines if tag == "+"}
    if not any(not is_generic(t) and index.count(t) == 1 for t in added):
        return None
    near = max(hunk.new_start - 1, 0) + sum(1 for tag, _ in lines[:first] if tag != "-")
    hits = index.find(block, at_start=False, at_end=False, near=near)
    if len(hits) != 1:
        return None
    start, end = hits[0], hits[0] + len(block)
    reach = max(len(lines), 6)
    lo, hi = max(0, start - reach), end + reach

    def nearby(text: str) -> bool:
        places = index.positions(text, start)
        k = bisect_left(places, lo)
        return any(p < start or p >= end for p in places[k : bisect_left(places, hi)])

    context = {text for tag, text in lines if tag == " " and not is_generic(text)}
    if not any(nearby(t) for t in context):
        return None
    removed = {text for tag, text in lines if tag == "-" and text not in added}
    if any(nearby(t) for t in removed if not is_generic(t)):
        return None
    return start, end


def _removes_evidence(hunk: Hunk) -> bool:
    """Whether the hunk removes a line that is not generic and that it does not add back: when
    its preimage is found, such a line is still in place there, so the change has not landed
    at that place (a similar change elsewhere is other code, as in generated or repetitive
    modules; ``git apply`` applies such a hunk too)."""
    added = {text for tag, text in hunk.lines if tag == "+"}
    return any(
        tag == "-" and text not in added and not is_generic(text) for tag, text in hunk.lines
    )


def _declared_start(start: int, count: int) -> int:
    """The 0-based line a hunk header's ``start,count`` points at (a count of 0 names the
    line after which the hunk goes)."""
    return start - 1 if count else start


def _closest_view(index: LineIndex, pre: list[str], tags: list[str], line: int) -> list[CloseLine]:
    n = len(index.lines)
    rows = []
    for k, (tag, text) in enumerate(zip(tags, pre, strict=True)):
        i = line - 1 + k
        rows.append(
            CloseLine(tag, text, i + 1 if i < n else None, index.lines[i] if i < n else None)
        )
    return rows


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
    old_at, new_at = hunk.old_start - 1, hunk.new_start - 1  # where the header says: a hint
    pre_hits = index.find(pre, at_start=hunk.old_start <= 1, at_end=at_end, near=old_at)
    post_hits = index.find(post, at_start=hunk.new_start <= 1, at_end=at_end, near=new_at)
    # a pure addition's preimage sits inside its own postimage (and vice versa for a removal)
    pre_only = [i for i in pre_hits if not any(_inside(i, pre, j, post) for j in post_hits)]
    post_only = [j for j in post_hits if not any(_inside(j, post, i, pre) for i in pre_hits)]
    if len(pre_only) == 1 and not post_only:
        result.state, result.start = HunkState.PENDING, pre_only[0]
        result.offset = pre_only[0] - _declared_start(hunk.old_start, hunk.old_count)
        moved = moved_context(index, hunk)
        if (
            moved is not None
            and not pre_only[0] <= moved[0] < pre_only[0] + len(pre)
            and not _removes_evidence(hunk)
        ):
            # it would apply, and its change is already there with its context moved: applying
            # would make the change twice, skipping it would be a guess. (A hunk that removes a
            # line of substance still found here is pending: the old code is still in place.)
            result.state, result.start, result.offset = HunkState.AMBIGUOUS, None, 0
            result.candidates = [pre_only[0] + 1, moved[0] + 1]
            result.detail = (
                f"it applies at line {pre_only[0] + 1}, but its change is already at lines "
                f"{moved[0] + 1}-{moved[1]} (context moved): applying would make it twice; "
                "refusing to guess (give the patch more context, or drop it)"
            )
    elif len(post_only) == 1 and not pre_only:
        result.state, result.start = HunkState.APPLIED, post_only[0]
        result.offset = post_only[0] - _declared_start(hunk.new_start, hunk.new_count)
    elif not pre_only and not post_only:
        moved = moved_context(index, hunk)
        if moved is not None:
            result.state = HunkState.UPSTREAM
            result.line, result.moved = moved[0] + 1, (moved[0] + 1, moved[1])
            result.detail = f"context moved: lines {moved[0] + 1}-{moved[1]}"
            return result
        result.state = HunkState.CONFLICT
        loose = index.find(pre, at_start=False, at_end=False, near=old_at)
        if loose and (hunk.old_start <= 1 or at_end):
            edge = "start" if hunk.old_start <= 1 else "end"
            why = "it starts at line 1" if edge == "start" else "it has no trailing context"
            result.detail = (
                f"context found at line {loose[0] + 1}, but the hunk must match at the {edge} "
                f"of the file ({why}, as git apply requires)"
            )
        else:
            line, matched = index.closest(pre, old_at)
            result.detail = (
                f"context does not match; closest match at line {line} "
                f"({matched} of {len(pre)} lines agree)"
                if matched
                else "context does not match anywhere in the file"
            )
            if matched:
                tags = [tag for tag, _ in hunk.lines if tag != "+"]
                result.closest = _closest_view(index, pre, tags, line)
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


def set_offsets(results: list[HunkResult], hunks: list[Hunk]) -> None:
    """Each located hunk's offset from where its header puts it, the hunks of one file patch
    taken together: a hunk is expected at its old start moved by what the present hunks before
    it added or removed (so, with every hunk applied, at its new start), as git apply counts
    an offset from where the earlier hunks left it."""
    delta = 0
    for result, hunk in zip(results, hunks, strict=True):
        if result.start is not None:
            result.offset = result.start - (_declared_start(hunk.old_start, hunk.old_count) + delta)
        if result.state in PRESENT:
            delta += hunk.new_count - hunk.old_count


def _slices(data: bytes, size: int) -> Iterator[bytes]:
    """``data`` in pieces of about ``size`` bytes, each ending just after a newline (but the
    last)."""
    start, n = 0, len(data)
    while start < n:
        end = data.find(b"\n", start + size - 1)
        end = n if end < 0 else end + 1
        yield data[start:end]
        start = end


def _inside(i: int, block: list[str], j: int, outer: list[str]) -> bool:
    return j <= i and i + len(block) <= j + len(outer)


def closest_match(lines: list[str], block: list[str]) -> tuple[int, int]:
    """Line (1-based) where the most lines of ``block`` agree position by position, and how many.

    Used to point at where a conflicting hunk's context went. Returns ``(0, 0)`` when no line
    of the block is found at all. (Builds an index; with one at hand use
    :meth:`LineIndex.closest`.)
    """
    return LineIndex(lines).closest(block)


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
