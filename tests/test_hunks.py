"""Per-hunk state decided by content, never at a guessed place."""

from __future__ import annotations

from patchbay.diffparse import Hunk
from patchbay.hunks import HunkState, LineIndex, apply_hunks, classify_hunk


def hunk(body: str, old_start: int = 5, new_start: int = 5) -> Hunk:
    lines = [(line[0], line[1:] + "\n") for line in body.splitlines()]
    pre = sum(1 for t, _ in lines if t != "+")
    post = sum(1 for t, _ in lines if t != "-")
    return Hunk(1, old_start, pre, new_start, post, lines, line=1)


def lines(*items: str) -> list[str]:
    return [f"{i}\n" for i in items]


H = hunk(" a\n b\n-c\n+C\n d\n e")


def classify(h: Hunk, content: list[str]):
    return classify_hunk(LineIndex(content), h, "f.py")


def test_pending_applied_conflict() -> None:
    assert classify(H, lines("x", "a", "b", "c", "d", "e", "y")).state is HunkState.PENDING
    applied = classify(H, lines("x", "a", "b", "C", "d", "e", "y"))
    assert applied.state is HunkState.APPLIED and applied.line == 2
    conflict = classify(H, lines("x", "a", "b", "Q", "d", "e"))
    assert conflict.state is HunkState.CONFLICT
    assert "closest match at line 2 (4 of 5 lines agree)" in conflict.detail


def test_whitespace_is_significant_zero_fuzz() -> None:
    assert classify(H, lines("a", "b ", "c", "d", "e")).state is HunkState.CONFLICT


def test_duplicated_context_is_ambiguous_never_guessed() -> None:
    content = lines("a", "b", "c", "d", "e", "z", "a", "b", "c", "d", "e")
    result = classify(H, content)
    assert result.state is HunkState.AMBIGUOUS
    assert result.candidates == [1, 7]
    # once applied at one place and pending at the other, it is still ambiguous
    mixed = lines("a", "b", "C", "d", "e", "z", "a", "b", "c", "d", "e")
    assert classify(H, mixed).state is HunkState.AMBIGUOUS


def test_pure_addition_counts_as_applied_when_its_lines_are_there() -> None:
    add = hunk(" a\n b\n+new\n c\n d")
    assert classify(add, lines("a", "b", "c", "d")).state is HunkState.PENDING
    assert classify(add, lines("a", "b", "new", "c", "d")).state is HunkState.APPLIED


def test_hunk_without_trailing_context_must_match_at_end_of_file() -> None:
    tail = hunk(" a\n b\n-c\n+C", old_start=8)
    assert classify(tail, lines("x", "a", "b", "c")).state is HunkState.PENDING
    assert classify(tail, lines("a", "b", "c", "x")).state is HunkState.CONFLICT


def test_hunk_at_line_one_must_match_at_start() -> None:
    head = hunk("-a\n+A\n b\n c", old_start=1, new_start=1)
    assert classify(head, lines("a", "b", "c", "z")).state is HunkState.PENDING
    assert classify(head, lines("z", "a", "b", "c")).state is HunkState.CONFLICT


def test_apply_hunks_in_memory_and_refuse_overlap() -> None:
    content = lines("a", "b", "c", "d", "e")
    assert apply_hunks(content, [(0, H)]) == lines("a", "b", "C", "d", "e")
    assert apply_hunks(content, [(0, H), (2, H)]) is None
