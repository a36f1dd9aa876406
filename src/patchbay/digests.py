"""Digests of file contents (sha256, RECORD's algorithms, git's blob ids), each large input
hashed once per run.

A large file passes several checks in one run: ``capture`` of an edited 353 MB kernel
compares it with RECORD, writes the ``index`` line of its binary patch, judges that patch on
the edited and on the pristine bytes and records both in the ledger, each of which hashes the
same bytes. Hashing is the cost there (a quarter of a second per pass), so the digests of the
last few inputs of 1 MiB or more are kept: found again by identity (the same ``bytes`` object)
or, where the caller expects the bytes to be known already (the result of applying a binary
patch, checked against the file it should give), by equality with a remembered input of the
same length (a ``memcmp`` is several times cheaper than a hash);
never by anything weaker. The inputs stay referenced while they are remembered: at most
:data:`_KEPT` of them.
"""

from __future__ import annotations

import hashlib

_LARGE = 1 << 20  # smaller inputs are hashed every time: cheaper than looking them up
_KEPT = 3  # a file's two versions and one more


class _Remembered:
    __slots__ = ("data", "digests")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.digests: dict[str, bytes] = {}


_RECENT: list[_Remembered] = []  # newest first


def digest(algorithm: str, data: bytes, *, by_value: bool = False) -> bytes:
    """The raw digest of ``data`` with ``algorithm`` (a :func:`hashlib.new` name, or
    ``"git-blob"`` for git's blob id: sha1 of ``blob <size>\\0`` and the bytes);
    ``by_value``: look for equal bytes among the remembered inputs too.

    Raises:
        ValueError: ``hashlib`` has no such algorithm.
    """
    if len(data) < _LARGE:
        return _compute(algorithm, data)
    entry = _find(data, by_value)
    if entry is None:
        entry = _Remembered(data)
        _RECENT.insert(0, entry)
        del _RECENT[_KEPT:]
    known = entry.digests.get(algorithm)
    if known is None:
        known = entry.digests[algorithm] = _compute(algorithm, data)
    return known


def prefetch(algorithm: str, inputs: list[bytes]) -> None:
    """Compute the digests of several large inputs side by side, one thread each (``hashlib``
    releases the GIL while it hashes), and remember them, for a caller that is about to ask
    for them one after the other (``capture`` of a large binary: the blob ids of both
    versions). Small inputs and ones already known are left alone; at most :data:`_KEPT`."""
    todo = [data for data in inputs[:_KEPT] if len(data) >= _LARGE]
    todo = [d for d in todo if (e := _find(d)) is None or algorithm not in e.digests]
    if len(todo) < 2:
        return
    from concurrent.futures import ThreadPoolExecutor  # only here: no other path needs it

    with ThreadPoolExecutor(max_workers=len(todo)) as pool:
        found = list(pool.map(lambda d: _compute(algorithm, d), todo))
    for data, value in zip(todo, found, strict=True):
        entry = _find(data)
        if entry is None:
            entry = _Remembered(data)
            _RECENT.insert(0, entry)
            del _RECENT[_KEPT:]
        entry.digests[algorithm] = value


def remembered(algorithm: str, hex_prefix: str) -> bytes | None:
    """A remembered input whose ``algorithm`` digest starts with ``hex_prefix`` (a full git
    blob id from a binary patch's ``index`` line: the bytes git would name by it), or None."""
    if len(hex_prefix) < 40:
        return None  # an abbreviated id is no name for bytes
    for entry in _RECENT:
        value = entry.digests.get(algorithm)
        if value is not None and value.hex().startswith(hex_prefix):
            return entry.data
    return None


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return digest("sha256", data).hex()


def git_blob_id(data: bytes, *, by_value: bool = False) -> str:
    """The id git gives a blob with these bytes (``git hash-object``), the form of a diff's
    ``index`` line (``by_value``: as :func:`digest`)."""
    return digest("git-blob", data, by_value=by_value).hex()


def _find(data: bytes, by_value: bool = False) -> _Remembered | None:
    for entry in _RECENT:
        if entry.data is data:
            return entry
    if not by_value:
        return None
    for entry in _RECENT:
        if len(entry.data) == len(data) and entry.data == data:
            return entry
    return None


def _compute(algorithm: str, data: bytes) -> bytes:
    if algorithm == "git-blob":
        h = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
        h.update(data)
        return h.digest()
    if algorithm == "sha256":
        return hashlib.sha256(data).digest()
    return hashlib.new(algorithm, data).digest()
