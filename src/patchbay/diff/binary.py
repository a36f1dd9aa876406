"""git's binary patches (``GIT binary patch``), read, applied and written in this process.

A binary file patch carries one or two hunks: the forward one (the new file from the old) and,
as ``git diff --binary`` writes it, the reverse one (for ``git apply -R``). Each hunk is
``literal <n>`` (the whole result) or ``delta <n>`` (copy and insert instructions against the
other side), zlib-deflated, then cut into lines of at most 52 bytes, each written as a length
character (``A``-``Z``: 1-26, ``a``-``z``: 27-52) and git's base85 of the bytes (5 characters
per 4 bytes, the last group padded with zero bytes), and ended by a blank line; ``<n>`` is the
inflated size. The delta data starts with the source and result sizes (7-bit little-endian
varints) followed by instructions: a byte ``0x01``-``0x7f`` inserts that many following bytes;
a byte with ``0x80`` set copies from the source, its bits ``0x01``-``0x08`` saying which offset
bytes follow (little-endian, 32 bits) and ``0x10``-``0x40`` which size bytes (24 bits; size 0
means 0x10000); ``0x00`` is reserved. The rules are git's: ``apply.c`` (``parse_binary``,
``apply_binary_fragment``), ``patch-delta.c``, ``base85.c`` and ``diff.c``
(``emit_binary_diff_body``).

Doing this here, rather than in a scratch ``git apply`` as before, spares writing the file twice
to a scratch folder: the cost that made a 1-byte edit of a 353 MB kernel take minutes to capture
(issue 24, part 9).
"""

from __future__ import annotations

import base64
import zlib

import msgspec

from ..digests import git_blob_id

__all__ = [
    "BinaryHunk",
    "BinaryPatchError",
    "apply_delta",
    "apply_hunk",
    "encode_hunk",
    "git_blob_id",
    "is_binary",
    "make_delta",
    "payload",
    "read_hunks",
]

_LINE_BYTES = 52  # the most bytes one base85 line carries (diff.c)
_COPY_MAX = 0xFFFFFF  # the largest size one copy instruction names (24 bits)
_OFFSET_MAX = 0xFFFFFFFF  # copy offsets are 32 bits: a bigger source gets a literal hunk
_INSERT_MAX = 0x7F
_CHUNK = 1 << 16  # the slice compared at a time when looking for common runs
_BLOCK = 1 << 12  # the granularity of a same-size middle scan
_BINARY_PROBE = 8000  # git's buffer_is_binary: a NUL among the first 8000 bytes


class BinaryPatchError(ValueError):
    """A binary hunk that is not what git writes, or that does not fit the file it is applied
    to (the message says which)."""


class BinaryHunk(msgspec.Struct, frozen=True):
    """One hunk of a binary file patch.

    Attributes:
        method: ``"literal"`` or ``"delta"``.
        data: the inflated payload: the whole result (literal) or delta instructions.
    """

    method: str
    data: bytes


def is_binary(data: bytes) -> bool:
    """Whether git calls these bytes binary (a NUL among the first 8000; ``xdiff-interface.c``
    ``buffer_is_binary``)."""
    return b"\0" in data[:_BINARY_PROBE]


def read_hunks(lines: list[str]) -> tuple[BinaryHunk, BinaryHunk | None]:
    """The forward and (when there is one) reverse hunk of a binary payload.

    Args:
        lines: the payload lines after ``GIT binary patch`` (``literal``/``delta`` headers,
            base85 lines and the blank lines between blocks), as the parser keeps them.

    Raises:
        BinaryPatchError: a line that is not base85 of its stated length, data that does not
            inflate, or an inflated size other than the header's.
    """
    hunks: list[BinaryHunk] = []
    method, size, encoded = "", 0, bytearray()

    def finish() -> None:
        if not method:
            return
        try:
            data = zlib.decompress(bytes(encoded))
        except zlib.error as exc:
            raise BinaryPatchError(f"{method} hunk does not inflate ({exc})") from None
        if len(data) != size:
            raise BinaryPatchError(
                f"{method} hunk inflates to {len(data)} bytes, its header says {size}"
            )
        hunks.append(BinaryHunk(method, data))

    for raw in lines:
        line = raw.rstrip("\r\n")
        head, _, count = line.partition(" ")
        if head in ("literal", "delta") and count.isdigit():
            finish()
            method, size, encoded = head, int(count), bytearray()
            continue
        if not line:
            continue
        if not method:
            raise BinaryPatchError("base85 data before a literal or delta header")
        encoded += _decode_line(line)
    finish()
    if not hunks or len(hunks) > 2:
        raise BinaryPatchError(f"{len(hunks)} binary hunks (one or two expected)")
    return hunks[0], hunks[1] if len(hunks) == 2 else None


def _decode_line(line: str) -> bytes:
    first = line[0]
    if "A" <= first <= "Z":
        length = ord(first) - ord("A") + 1
    elif "a" <= first <= "z":
        length = ord(first) - ord("a") + 27
    else:
        raise BinaryPatchError(f"bad length character {first!r} of a base85 line")
    body = line[1:]
    if len(body) != (length + 3) // 4 * 5:
        raise BinaryPatchError(f"a base85 line of {len(body)} characters for {length} bytes")
    try:
        return base64.b85decode(body)[:length]
    except ValueError as exc:
        raise BinaryPatchError(f"bad base85 data ({exc})") from None


def apply_hunk(hunk: BinaryHunk, source: bytes | None) -> bytes:
    """The result of one hunk on ``source`` (the file it starts from; None for a new file).

    Raises:
        BinaryPatchError: a delta without a source, or one that does not fit it.
    """
    if hunk.method == "literal":
        return hunk.data
    if source is None:
        raise BinaryPatchError("a delta hunk for a file that does not exist")
    return apply_delta(source, hunk.data)


def apply_delta(source: bytes, delta: bytes) -> bytes:
    """git's ``patch_delta``: the result of ``delta`` instructions on ``source``.

    Raises:
        BinaryPatchError: the sizes in its header do not match, an instruction reads past the
            source or the delta, or the result is not of the stated size.
    """
    pos, src_size = _varint(delta, 0)
    pos, dst_size = _varint(delta, pos)
    if src_size != len(source):
        raise BinaryPatchError(f"the delta is for a {src_size}-byte file, not {len(source)}")
    parts: list[bytes] = []
    produced, end = 0, len(delta)
    view = memoryview(source)
    while pos < end:
        cmd = delta[pos]
        pos += 1
        if cmd & 0x80:
            offset = size = 0
            for bit, shift in ((0x01, 0), (0x02, 8), (0x04, 16), (0x08, 24)):
                if cmd & bit:
                    offset |= _byte(delta, pos) << shift
                    pos += 1
            for bit, shift in ((0x10, 0), (0x20, 8), (0x40, 16)):
                if cmd & bit:
                    size |= _byte(delta, pos) << shift
                    pos += 1
            size = size or 0x10000
            if offset + size > len(source) or produced + size > dst_size:
                raise BinaryPatchError("a delta copy outside the file")
            parts.append(view[offset : offset + size])
        elif cmd:
            if pos + cmd > end or produced + cmd > dst_size:
                raise BinaryPatchError("a delta insert past the end of the delta")
            parts.append(delta[pos : pos + cmd])
            pos += cmd
            size = cmd
        else:
            raise BinaryPatchError("the reserved delta instruction 0")
        produced += size
    if produced != dst_size:
        raise BinaryPatchError(f"the delta gives {produced} bytes, its header says {dst_size}")
    return b"".join(parts)


def _byte(data: bytes, pos: int) -> int:
    if pos >= len(data):
        raise BinaryPatchError("a delta instruction cut short")
    return data[pos]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = _byte(data, pos)
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return pos, value


def make_delta(source: bytes, result: bytes, ends: tuple[int, int] | None = None) -> bytes | None:
    """Delta instructions that turn ``source`` into ``result``: the common start and end are
    copied, and between them, when the sizes are equal, every 4 KiB block that is equal at the
    same offset is copied too; the rest is inserted. Linear in the size and cheap for the
    change that matters here (a few bytes of a large file patched in place); it does not look
    for moved data as git's ``diff-delta`` does.

    Args:
        source, result: the two versions.
        ends: the lengths of their common start and end (:func:`common_ends`), when known.

    Returns:
        The delta, or None when the source is too large for a delta's 32-bit offsets.
    """
    n, m = len(source), len(result)
    if n > _OFFSET_MAX:
        return None
    prefix, suffix = common_ends(source, result) if ends is None else ends
    out = bytearray(_size(n) + _size(m))
    _copy(out, 0, prefix)
    if n == m:
        start = prefix
        while start < m - suffix:
            stop = min(start + _BLOCK, m - suffix)
            if source[start:stop] == result[start:stop]:
                _copy(out, start, stop - start)
            else:
                _insert(out, result[start:stop])
            start = stop
    else:
        _insert(out, result[prefix : m - suffix])
    _copy(out, n - suffix, suffix)
    return bytes(out)


def common_ends(a: bytes, b: bytes) -> tuple[int, int]:
    """The lengths of the longest common start and, in what is left, the longest common end
    of ``a`` and ``b`` (the same both ways round)."""
    prefix = _common_prefix(a, b)
    return prefix, _common_suffix(a, b, min(len(a), len(b)) - prefix)


def _size(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _copy(out: bytearray, offset: int, size: int) -> None:
    while size > 0:
        step = min(size, _COPY_MAX)
        cmd, args = 0x80, bytearray()
        for i in range(4):
            if (offset >> (8 * i)) & 0xFF:
                cmd |= 1 << i
                args.append((offset >> (8 * i)) & 0xFF)
        for i in range(3):
            if (step >> (8 * i)) & 0xFF:
                cmd |= 0x10 << i
                args.append((step >> (8 * i)) & 0xFF)
        out.append(cmd)
        out += args
        offset, size = offset + step, size - step


def _insert(out: bytearray, data: bytes) -> None:
    for start in range(0, len(data), _INSERT_MAX):
        piece = data[start : start + _INSERT_MAX]
        out.append(len(piece))
        out += piece


def _common_prefix(a: bytes, b: bytes) -> int:
    limit = min(len(a), len(b))
    i = 0
    while i < limit and a[i : i + _CHUNK] == b[i : i + _CHUNK]:
        i += _CHUNK
    i = min(i, limit)
    while i < limit and a[i] == b[i]:  # within the first differing chunk
        i += 1
    return i


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    n, m = len(a), len(b)
    k = 0
    while k + _CHUNK <= limit and a[n - k - _CHUNK : n - k] == b[m - k - _CHUNK : m - k]:
        k += _CHUNK
    while k < limit and a[n - k - 1] == b[m - k - 1]:
        k += 1
    return k


def encode_hunk(method: str, data: bytes) -> list[str]:
    """A hunk written as git writes it: ``<method> <len(data)>``, the deflated data in base85
    lines, a blank line."""
    packed = zlib.compress(data)
    lines = [f"{method} {len(data)}\n"]
    for start in range(0, len(packed), _LINE_BYTES):
        piece = packed[start : start + _LINE_BYTES]
        n = len(piece)
        lead = chr(ord("A") + n - 1) if n <= 26 else chr(ord("a") + n - 27)
        lines.append(lead + base64.b85encode(piece, pad=True).decode("ascii") + "\n")
    lines.append("\n")
    return lines


def payload(before: bytes, after: bytes) -> list[str]:
    """The lines after ``GIT binary patch`` for a file changed from ``before`` to ``after``:
    the forward hunk, then the reverse one, each a delta when one is possible and smaller than
    half the file it makes, else a literal (git picks the smaller of the two deflated; deflating
    a large file only to compare would cost what this module saves)."""
    lines: list[str] = []
    ends = common_ends(before, after)
    for source, result in ((before, after), (after, before)):
        delta = make_delta(source, result, ends)
        if delta is not None and len(delta) < len(result) // 2:
            lines += encode_hunk("delta", delta)
        else:
            lines += encode_hunk("literal", result)
    return lines
