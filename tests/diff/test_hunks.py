"""Per-hunk state decided by content, never at a guessed place."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from patchbay.diff.hunks import HunkState, LineIndex, apply_hunks, classify_hunk
from patchbay.diff.parse import Hunk


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


# -- the block search: every occurrence, found from the block's rarest line -------------------

# lines that recur everywhere in real files (blank, closing, CRLF twins, a form feed), a few
# rarer ones, and one that may end the file without its newline
COMMON = ["\n", "\n", "\n", "    return result\n", "a\n", "a\r\n", "b \n", "b\n", "\x0c\n", "}\n"]


def brute_find(content: list[str], block: list[str], at_start: bool, at_end: bool) -> list[int]:
    """Every start of ``block``, by comparing at every line (git apply's zero-fuzz rule)."""
    n, m = len(content), len(block)
    if m > n or (m == 0 and not (at_start or at_end)):
        return []
    starts = range(n - m + 1)
    if at_start:
        starts = [0]
    if at_end:
        starts = [s for s in starts if s == n - m]
    return [s for s in starts if content[s : s + m] == block]


def brute_closest(content: list[str], block: list[str]) -> tuple[int, int]:
    best_line, best = 0, 0
    for i in range(max(1, len(content) - len(block) + 1)):
        score = sum(
            1 for k in range(min(len(block), len(content) - i)) if content[i + k] == block[k]
        )
        if score > best:
            best_line, best = i + 1, score
    return best_line, best


def random_content(rng: random.Random, n: int) -> list[str]:
    out = [
        rng.choice(COMMON) if rng.random() < 0.85 else f"rare {rng.randrange(40)}\n"
        for _ in range(n)
    ]
    if out and out[-1] != "\n" and rng.random() < 0.3:
        out[-1] = out[-1][:-1]  # no newline at end of file
    return out


def random_block(rng: random.Random, content: list[str]) -> list[str]:
    m = rng.randint(1, 7)
    if content and rng.random() < 0.7:  # a slice of the file, sometimes changed a little
        i = rng.randrange(len(content))
        block = content[i : i + m]
        if rng.random() < 0.3:
            block[rng.randrange(len(block))] = rng.choice(COMMON)
        return block
    return [rng.choice(COMMON) for _ in range(m)]


def indexes_of(content: list[str], monkeypatch: pytest.MonkeyPatch) -> list[LineIndex]:
    """The same content indexed three ways: from lines, from bytes read in tiny slices, and
    with every line's places mapped at the first search (no scan budget)."""
    monkeypatch.setattr(LineIndex, "SLICE", 7)
    mapped = LineIndex(content)
    mapped.SCAN_BUDGET = -1
    data = "".join(content).encode("utf-8", "surrogateescape")
    return [LineIndex(content), LineIndex.of(data), mapped]


def test_search_finds_every_occurrence_a_scan_at_every_line_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Anchoring on the rarest line, looking outward from a hint (right or far off), never
    changes the result: each index returns exactly the starts a comparison at every line
    finds, with git's start/end anchoring, on files of common lines, CRLF twins, and a last
    line without its newline."""
    rng = random.Random(14)
    for _ in range(300):
        content = random_content(rng, rng.randint(0, 120))
        indexes = indexes_of(content, monkeypatch)
        assert indexes[1].lines == content
        for _ in range(8):
            block = random_block(rng, content)
            at_start, at_end = rng.random() < 0.2, rng.random() < 0.2
            near = rng.randint(-20, len(content) + 20)
            expected = brute_find(content, block, at_start, at_end)
            for index in indexes:
                found = index.find(block, at_start=at_start, at_end=at_end, near=near)
                assert found == expected, (content, block, at_start, at_end, near)
            assert indexes[0].closest(block, near) == brute_closest(content, block)


def test_a_block_of_common_lines_is_found_at_each_place_and_nowhere_else() -> None:
    content = lines("x", "", "", "y", "", "", "", "z", "", "")
    blank2 = ["\n", "\n"]
    assert LineIndex(content).find(blank2, at_start=False, at_end=False) == [1, 4, 5, 8]
    many = ["\n"] * 2000 + ["end\n"]
    index = LineIndex(many)
    assert index.find(["\n"] * 3 + ["end\n"], at_start=False, at_end=False) == [1997]
    assert index.find(["\n", "end\n", "\n"], at_start=False, at_end=False) == []


def test_derived_index_answers_as_one_built_from_the_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The index of a patch's result, derived from the index it was applied on, counts and
    finds exactly as an index of the result's own lines; and is refused when the result would
    not split back into the same lines."""
    rng = random.Random(3)
    for _ in range(200):
        content = [line if line.endswith("\n") else line + "\n" for line in random_content(rng, 60)]
        index = LineIndex(content)
        placed, pos = [], 0
        while pos < len(content) - 4 and len(placed) < 4:
            start = rng.randint(pos, len(content) - 4)
            old = content[start : start + rng.randint(1, 3)]
            body = [(" ", old[0])] + [("-", t) for t in old[1:]]
            body += [("+", rng.choice(COMMON)) for _ in range(rng.randint(0, 3))]
            h = Hunk(1, start + 1, len(old), start + 1, 0, body, line=1)
            placed.append((start, h))
            pos = start + len(old)
        result = apply_hunks(content, placed)
        assert result is not None
        derived = index.derive(placed, result)
        assert derived is not None
        fresh = LineIndex(result)
        for text in set(content) | set(result):
            assert derived.count(text) == fresh.count(text)
        for _ in range(5):
            block = random_block(rng, result)
            assert derived.find(block, at_start=False, at_end=False) == fresh.find(
                block, at_start=False, at_end=False
            )
    no_newline = Hunk(1, 1, 1, 1, 2, [(" ", "a\n"), ("+", "b")], line=1)
    content = lines("a", "c")
    assert (
        LineIndex(content).derive([(0, no_newline)], apply_hunks(content, [(0, no_newline)]))
        is None
    )


def test_ambiguity_when_the_rare_line_is_unique_but_the_other_image_repeats() -> None:
    """The removed line is the only unique line, so the preimage is found once; its postimage
    (common lines only) occurs elsewhere: present there, pending here, never a guess."""
    removal = hunk(" a\n b\n-only-here\n c\n d")
    content = lines("a", "b", "only-here", "c", "d", "z", "a", "b", "c", "d")
    result = classify(removal, content)
    assert result.state is HunkState.AMBIGUOUS
    assert result.candidates == [1, 7]
    # and a repeated block whose rarest line occurs twice: both places reported
    twice = lines("q", "a", "b", "c", "d", "e", "q", "a", "b", "c", "d", "e", "q")
    assert classify(H, twice).candidates == [2, 8]


def test_hunk_at_line_one_matches_only_at_the_start_even_when_its_block_recurs() -> None:
    head = hunk("-a\n+A\n b\n c", old_start=1, new_start=1)
    result = classify(head, lines("a", "b", "c", "a", "b", "c"))
    assert (result.state, result.line) == (HunkState.PENDING, 1)


def test_conflict_detail_points_at_the_closest_place_in_a_large_file() -> None:
    content = ["\n"] * 5000 + lines("a", "b", "Q", "d", "e") + ["\n"] * 5000
    result = classify(H, content)
    assert result.state is HunkState.CONFLICT
    assert "closest match at line 5001 (4 of 5 lines agree)" in result.detail


def _git_apply_result(tmp_path: Path, content: list[str], h: Hunk) -> bytes | None:
    """What real ``git apply`` (zero fuzz) makes of ``content`` with the one hunk ``h``."""
    work = tmp_path / "git"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    target = work / "f.txt"
    target.write_bytes("".join(content).encode("utf-8", "surrogateescape"))
    patch = work / "p.diff"
    patch.write_bytes(b"--- a/f.txt\n+++ b/f.txt\n" + h.render().encode("utf-8", "surrogateescape"))
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    proc = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "p.diff"], cwd=work, env=env, capture_output=True
    )
    return target.read_bytes() if proc.returncode == 0 else None


def test_a_pending_hunk_is_placed_where_git_apply_places_it(tmp_path: Path) -> None:
    """On files made mostly of blank and other common lines, with the hunk's header off by an
    offset (lines added above it), starting at line 1, or at the end of a file without a
    final newline: whenever patchbay finds a hunk pending at one place, real git apply accepts
    it and leaves the very bytes patchbay computes."""
    rng = random.Random(2024)
    checked = 0
    while checked < 40:
        content = random_content(rng, rng.randint(8, 60))
        if not content[-1].endswith("\n") and rng.random() < 0.5:
            content[-1] += "\n"
        m = rng.randint(2, 6)
        i = rng.choice([0, len(content) - m, rng.randrange(len(content) - m + 1)])
        old = content[i : i + m]
        k = rng.randrange(m)
        body = [(" ", t) for t in old[:k]] + [("-", old[k])]
        body += [("+", f"new {checked}\n")] + [(" ", t) for t in old[k + 1 :]]
        offset = rng.choice([0, 0, 3, 25])
        declared = i + 1 + (offset if i else 0)
        h = Hunk(1, declared, m, declared, m, body, line=1)
        result = classify_hunk(LineIndex(content), h, "f.txt")
        if result.state is not HunkState.PENDING:
            continue
        ours = apply_hunks(content, [(result.start, h)])
        assert ours is not None
        theirs = _git_apply_result(tmp_path, content, h)
        assert theirs == "".join(ours).encode("utf-8", "surrogateescape"), (content, body)
        checked += 1


def test_a_pending_replacement_with_a_similar_block_elsewhere_stays_pending() -> None:
    """Repetitive code: the hunk replaces ``limit + 1`` by ``limit + 3`` in one function while
    another function already reads ``limit + 3`` near the same kind of lines. The removed line
    is still in place here, so the change has not landed here: pending, as git apply sees it."""
    change = hunk(
        " def one():\n     blocks = ceil(n)\n"
        "-    limit = blocks + 1\n+    limit = blocks + 3\n     return limit"
    )
    content = lines(
        "def one():", "    blocks = ceil(n)", "    limit = blocks + 1", "    return limit",
        *[f"x{k} = {k}" for k in range(12)],
        "def two():", "    blocks = ceil(n)", "    limit = blocks + 3", "    other()",
    )  # fmt: skip
    result = classify(change, content)
    assert result.state is HunkState.PENDING
    assert result.start == 0
    # a pure addition whose lines are there with their context moved is still never doubled
    addition = hunk(
        " def one():\n     blocks = ceil(n)\n+    check(blocks, 4096)\n     return limit"
    )
    moved = lines(
        "def one():", "    blocks = ceil(n)", "    return limit",
        "", "def two():", "    blocks = ceil(n)", "    check(blocks, 4096)", "    other()",
    )  # fmt: skip
    assert classify(addition, moved).state is HunkState.AMBIGUOUS
