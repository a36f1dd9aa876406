"""git's binary patches read, applied and written in-process (patchbay.diff.binary), checked
against real ``git diff --binary`` and ``git apply`` both ways."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from patchbay.diff.binary import (
    BinaryPatchError,
    apply_delta,
    apply_hunk,
    git_blob_id,
    make_delta,
    read_hunks,
)
from patchbay.diff.gitdiff import FileVersions, write_diff
from patchbay.diff.parse import parse_diff

GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, input=stdin, capture_output=True, check=True
    ).stdout


def _binary(rng: random.Random, size: int) -> bytes:
    """Bytes git calls binary: a NUL first, then random and repeated runs."""
    out = bytearray(b"\0ELF")
    while len(out) < size:
        out += rng.randbytes(300) if rng.random() < 0.5 else rng.randbytes(7) * 90
    return bytes(out[:size])


def _variants(rng: random.Random) -> list[tuple[str, bytes, bytes]]:
    base = _binary(rng, 200_000)
    one = bytearray(base)
    one[123_457] ^= 0xFF
    spread = bytearray(base)
    for at in (5, 70_000, 70_001, 199_999):
        spread[at] ^= 0x11
    moved = base[100_000:] + base[:100_000]
    return [
        ("one byte", base, bytes(one)),
        ("bytes spread over the file", base, bytes(spread)),
        ("grown", base, base[:150_000] + rng.randbytes(5000) + base[150_000:]),
        ("shrunk", base, base[:10] + base[90_000:]),
        ("halves swapped", base, moved),
        ("tiny", b"\0a", b"\0b"),
    ]


def _git_patch(tmp_path: Path, before: bytes | None, after: bytes | None) -> bytes:
    repo = tmp_path / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    if before is not None:
        (repo / "k.so").write_bytes(before)
    _git(repo, "add", "-A")
    _git(
        repo,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "a",
    )
    if after is None:
        (repo / "k.so").unlink()
    else:
        (repo / "k.so").write_bytes(after)
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached", "--binary", "--full-index")


@pytest.mark.parametrize("case", range(6))
def test_git_written_binary_patches_apply_in_process_both_ways(tmp_path: Path, case: int) -> None:
    """Each hunk git writes (delta or literal, forward and reverse) gives git's bytes."""
    name, before, after = _variants(random.Random(7))[case]
    (fp,) = parse_diff(_git_patch(tmp_path, before, after), source=Path("k.patch")).files
    forward, reverse = read_hunks(fp.binary or [])
    assert reverse is not None, name
    assert apply_hunk(forward, before) == after, name
    assert apply_hunk(reverse, after) == before, name


def test_git_written_new_and_deleted_binary_files(tmp_path: Path) -> None:
    data = _binary(random.Random(3), 50_000)
    (new,) = parse_diff(_git_patch(tmp_path / "new", None, data), source=Path("k.patch")).files
    forward, _ = read_hunks(new.binary or [])
    assert forward.method == "literal" and apply_hunk(forward, None) == data
    (gone,) = parse_diff(_git_patch(tmp_path / "gone", data, None), source=Path("k.patch")).files
    _, reverse = read_hunks(gone.binary or [])
    assert reverse is not None and apply_hunk(reverse, None) == data


@pytest.mark.parametrize("case", range(6))
def test_patchbay_written_binary_patches_are_what_git_apply_reads(
    tmp_path: Path, case: int
) -> None:
    """A big binary's patch written in-process: ``git apply`` turns before into after and
    ``git apply -R`` back; the index line names both blobs as git would."""
    name, before, after = _variants(random.Random(11))[case]
    pad = _binary(random.Random(case), 1 << 20)  # over the size from which patchbay writes it
    before, after = before + pad, after + pad
    diff = write_diff([FileVersions("lib/k.so", before, after, False, case % 2 == 1)])
    (fp,) = parse_diff(diff, source=Path("k.patch")).files
    assert (fp.index_old, fp.index_new) == (git_blob_id(before), git_blob_id(after))
    assert len(diff) < len(after) // 2, name  # a delta, not the whole file again
    tree = tmp_path / "tree"
    (tree / "lib").mkdir(parents=True)
    (tree / "lib" / "k.so").write_bytes(before)
    _git(tree, "apply", "-", stdin=diff)
    assert (tree / "lib" / "k.so").read_bytes() == after, name
    assert os.access(tree / "lib" / "k.so", os.X_OK) == (case % 2 == 1)
    _git(tree, "apply", "-R", "-", stdin=diff)
    assert (tree / "lib" / "k.so").read_bytes() == before, name


def test_a_mixed_diff_keeps_git_order_and_git_text(tmp_path: Path) -> None:
    """Text files keep git's own diff; the big binary's section sits in path order."""
    rng = random.Random(5)
    big = _binary(rng, 2 << 20)
    edited = big[:1000] + b"X" + big[1001:]
    files = [
        FileVersions("z.py", b"a = 1\n", b"a = 2\n"),
        FileVersions("m/k.so", big, edited),
        FileVersions("a.py", b"b = 1\n", b"b = 3\n"),
    ]
    diff = write_diff(files)
    paths = [fp.path for fp in parse_diff(diff, source=Path("k.patch")).files]
    assert paths == ["a.py", "m/k.so", "z.py"]
    text_only = write_diff([files[2], files[0]])
    assert text_only in diff.replace(
        diff[diff.index(b"diff --git a/m/") : diff.index(b"diff --git a/z")], b""
    )


def test_delta_round_trip_and_its_limits() -> None:
    rng = random.Random(1)
    src = rng.randbytes(300_000)
    for dst in (src, src[:-1], src + b"x", b"", src[::-1], src[:5] + b"\0" * 70_000 + src[5:]):
        delta = make_delta(src, dst)
        assert delta is not None and apply_delta(src, delta) == dst
    delta = make_delta(src, src[:-5] + b"tail!")
    assert delta is not None and len(delta) < 40  # a copy and one short insert
    with pytest.raises(BinaryPatchError, match="for a 300000-byte file, not 10"):
        apply_delta(b"0123456789", delta)
    with pytest.raises(BinaryPatchError, match=r"cut short|past the end|gives"):
        apply_delta(src, delta[:-3])


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["delta 12\n", "zzzzz\n"], "bad length character|characters for"),
        (["literal 5\n", "Bc${\n"], "base85|characters for"),
        (["literal 6\n", "Mc$~{f&B@6J00t}q6#xJL\n"], "inflates to 5 bytes, its header says 6"),
        (["literal 5\n", "EXk~0{ZvX%Q\n"], "does not inflate"),
        (["zcmZ\n"], "before a literal or delta header"),
    ],
)
def test_corrupt_binary_hunks_are_named_errors(lines: list[str], message: str) -> None:
    with pytest.raises(BinaryPatchError, match=message):
        read_hunks(lines)
