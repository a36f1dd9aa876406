"""The ledger: what patchbay applied in an engine environment, kept inside that environment.

Like quilt's ``.pc`` folder and patch-package's recorded hashes, it records for every applied
patch the sha256 of the patch content and of every touched file before and after, plus the
original bytes of those files (content-addressed blobs) so ``revert`` restores them exactly.

Layout of the state folder::

    ledger.json      {"format": 2, "patchsets": {name: {"entries": [entry, ...],
                                                     "applied_identity": {...},
                                                     "source": "/path/patchset.yaml"}}}
    blobs/<sha256>   file contents from before each patch
    journal/         the open transaction (see transaction.py)
    lock             held by apply and revert
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from ..digests import sha256_hex
from ..errors import InputError
from .journal import fault_point, fsync_dir, write_atomic
from .noop import IDENTITY_KEY, LEDGER_FORMAT, READABLE_FORMATS
from .transaction import Transaction

# the key of a patchset's bucket that names the patchset file its entries come from
SOURCE_KEY = "source"


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data`` (a large input hashed once per run: :mod:`patchbay.digests`)."""
    return sha256_hex(data)


def sha256_or_none(data: bytes | None) -> str | None:
    """Hex sha256, or None for an absent file."""
    return None if data is None else sha256_bytes(data)


class FileRecord(msgspec.Struct):
    """One file a patch changed: root-relative path and sha256 before/after (None: absent).

    ``created_dirs`` lists the folders (root-relative, deepest first) that creating the file
    also created, so that a revert removes them again; ``mode_before`` the permission bits the
    file had, and ``owner_before`` its ``[uid, gid]``, so that a revert restores them too (the
    owner where the revert may: run as root); ``folders_before``, for a file the patch deleted,
    ``[folder, mode, uid, gid]`` of every folder above it (root-relative, deepest first), so
    that a revert makes a folder the deletion emptied, and removed as ``git apply`` does, again
    as it was.
    """

    target: str
    path: str
    before: str | None
    after: str | None
    created_dirs: list[str] = msgspec.field(default_factory=list)
    mode_before: int | None = None
    owner_before: list[int] | None = None
    folders_before: list[list[Any]] = msgspec.field(default_factory=list)


class LedgerEntry(msgspec.Struct):
    """One applied patch.

    Attributes:
        patch_id: the patch's id in its patchset.
        kind: the patch kind (``diff``, ``replace``, ...).
        patch_sha256: sha256 of the patch content when it was applied (the diff file's raw
            bytes).
        patch_identity: the patch's identity then (:mod:`patchbay.diff.identity`); None in an
            entry an older patchbay wrote (compared by ``patch_sha256`` then).
        applied_at: UTC time, ISO 8601.
        tool_version: the patchbay version that applied it.
        files: the files it changed, in the order it changed them.
        extra: kind-specific facts needed to revert (e.g. a previous package version).
        distributions: what the files were written against: ``{name: {"version": ...,
            "record": <sha256 of its RECORD>}}`` of each distribution that installed one of
            them (:mod:`patchbay.environment.owners`); another version or RECORD there now
            means a newer build was installed over the patch and this record is stale. Empty
            in an entry an older patchbay wrote, or of files no distribution installed.
    """

    patch_id: str
    kind: str
    patch_sha256: str
    applied_at: str
    tool_version: str
    files: list[FileRecord] = msgspec.field(default_factory=list)
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    patch_identity: str | None = None
    distributions: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LedgerEntry:
        files = [FileRecord(**f) for f in data.get("files", [])]
        return cls(**{**data, "files": files})

    def to_json(self) -> dict[str, Any]:
        """The entry as ``ledger.json`` holds it: every field, its file records as dicts (built
        directly: a run that records thousands of patches calls it for each)."""
        out: dict[str, Any] = {
            "patch_id": self.patch_id,
            "kind": self.kind,
            "patch_sha256": self.patch_sha256,
            "applied_at": self.applied_at,
            "tool_version": self.tool_version,
            "files": [
                {
                    "target": f.target,
                    "path": f.path,
                    "before": f.before,
                    "after": f.after,
                    "created_dirs": list(f.created_dirs),
                    "mode_before": f.mode_before,
                    "owner_before": f.owner_before,
                    "folders_before": f.folders_before,
                }
                for f in self.files
            ],
            "extra": copy.deepcopy(self.extra) if self.extra else {},
            "patch_identity": self.patch_identity,
        }
        if self.distributions:
            out["distributions"] = copy.deepcopy(self.distributions)
        return out


def blob_dir_of(state_dir: Path) -> Path:
    """The folder of a state folder where originals are kept by sha256 (``blobs``)."""
    return state_dir / "blobs"


def keep_blob(blob_dir: Path, data: bytes, txn: Transaction, *, digest: str | None = None) -> str:
    """Keep ``data`` in ``blob_dir`` (a state folder's ``blobs``) under its sha256, journaled in
    ``txn`` so that a rollback removes a new blob; returns the sha256 (``digest``, when the
    caller computed it already)."""
    digest = digest or sha256_bytes(data)
    path = blob_dir / digest
    if not path.exists():
        blob_dir.mkdir(parents=True, exist_ok=True)
        txn.save(path)
        write_atomic(path, data, mode=0o644)
    return digest


def read_blob(blob_dir: Path, digest: str) -> bytes | None:
    """The bytes kept in ``blob_dir`` under ``digest``, or None when missing or damaged."""
    try:
        data = (blob_dir / digest).read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return data if sha256_bytes(data) == digest else None


class Ledger:
    """The ledger of one engine environment.

    Args:
        state_dir: the state folder (``Environment.state_dir``).

    Raises:
        InputError: ``ledger.json`` exists but is not a ledger this version can read.
    """

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.path = state_dir / "ledger.json"
        self.blob_dir = blob_dir_of(state_dir)
        self._data: dict[str, Any] = {"format": LEDGER_FORMAT, "patchsets": {}}
        self._parsed: dict[str, list[LedgerEntry]] = {}
        self._index: dict[str, dict[str, LedgerEntry]] = {}
        self._ids: dict[str, set[str]] = {}
        try:
            exists = self.path.exists()
        except PermissionError:  # the state folder cannot be entered
            from .statelock import not_entered

            raise not_entered(state_dir) from None
        if exists:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise InputError(f"ledger is unreadable: {exc}", file=self.path) from None
            if not isinstance(data, dict) or data.get("format") not in READABLE_FORMATS:
                raise InputError(
                    f"ledger format {data.get('format') if isinstance(data, dict) else '?'} "
                    f"is not one this patchbay reads ({', '.join(map(str, READABLE_FORMATS))}): "
                    "was it written by a newer patchbay?",
                    file=self.path,
                )
            self._data = data
            try:
                for name in self._data["patchsets"]:
                    self.entries(name)
            except (KeyError, TypeError, AttributeError) as exc:
                raise InputError(
                    f"ledger is damaged ({type(exc).__name__}: {exc}); restore it from a backup "
                    "or remove the environment's patches by reinstalling",
                    file=self.path,
                ) from None

    @classmethod
    def empty(cls, state_dir: Path) -> Ledger:
        """A ledger that ignores what is on disk (to judge a candidate image as shipped)."""
        ledger = cls.__new__(cls)
        ledger.state_dir = state_dir
        ledger.path = state_dir / "ledger.json"
        ledger.blob_dir = blob_dir_of(state_dir)
        ledger._data = {"format": LEDGER_FORMAT, "patchsets": {}}
        ledger._parsed = {}
        ledger._index = {}
        ledger._ids = {}
        return ledger

    def all_entries(self) -> dict[str, list[LedgerEntry]]:
        """Entries of every patchset in this environment, by patchset name."""
        return {name: self.entries(name) for name in self._data["patchsets"]}

    def entries(self, patchset: str) -> list[LedgerEntry]:
        """Entries of ``patchset``, oldest first."""
        cached = self._parsed.get(patchset)
        if cached is None:
            raw = (
                self._data["patchsets"].get(patchset, {})["entries"]
                if patchset in self._data["patchsets"]
                else []
            )
            cached = self._parsed[patchset] = [LedgerEntry.from_json(e) for e in raw]
        return list(cached)

    def find(self, patchset: str, patch_id: str) -> LedgerEntry | None:
        """The entry of ``patch_id``, or None."""
        index = self._index.get(patchset)
        if index is None:
            index = self._index[patchset] = {e.patch_id: e for e in self.entries(patchset)}
        return index.get(patch_id)

    def prune_blobs(self) -> int:
        """Delete stored originals that no entry refers to any more (after a revert); returns
        how many were removed. Call once the run is committed.

        Only cleanup: the run is done whatever happens here, so a blob that cannot be removed
        (a folder made read-only since the lock checked it, an immutable file) stays, harmless,
        for a later run to remove, and never fails the command."""
        wanted = {
            rec.before
            for entries in self.all_entries().values()
            for entry in entries
            for rec in entry.files
            if rec.before
        }
        removed = 0
        try:
            blobs = list(self.blob_dir.iterdir()) if self.blob_dir.is_dir() else []
        except OSError:
            blobs = []
        for blob in blobs:
            if blob.name not in wanted:
                try:
                    blob.unlink(missing_ok=True)
                except OSError:
                    continue
                removed += 1
        return removed

    def has_orphan_blobs(self) -> bool:
        """Stored originals but no entry at all: the ledger was probably deleted."""
        return (
            not self._data["patchsets"] and self.blob_dir.is_dir() and any(self.blob_dir.iterdir())
        )

    def identity(self, patchset: str) -> dict[str, Any] | None:
        """The identity of ``patchset`` as its last apply left it (:mod:`patchbay.apply.noop`), or
        None."""
        return self._data["patchsets"].get(patchset, {}).get(IDENTITY_KEY)

    def set_identity(self, patchset: str, identity: dict[str, Any] | None) -> None:
        """Record (None: drop) the identity of ``patchset`` in memory; saved with the ledger.
        Every other change of the patchset's entries drops it, so a recorded identity always
        describes the entries it was saved with."""
        bucket = self._data["patchsets"].get(patchset)
        if bucket is None:
            return
        bucket.pop(IDENTITY_KEY, None)
        if identity is not None:
            bucket[IDENTITY_KEY] = identity

    def source(self, patchset: str) -> Path | None:
        """The ``patchset.yaml`` that ``patchset``'s entries were last recorded from (absolute),
        or None (none recorded: a ledger an older patchbay wrote)."""
        value = self._data["patchsets"].get(patchset, {}).get(SOURCE_KEY)
        return Path(value) if isinstance(value, str) else None

    def set_source(self, patchset: str, path: Path) -> None:
        """Record (in memory) the ``patchset.yaml`` that ``patchset``'s entries come from, so
        that another patchset's ``capture`` can rebuild what they wrote."""
        bucket = self._data["patchsets"].get(patchset)
        if bucket is not None:
            bucket[SOURCE_KEY] = str(path.absolute())

    def put(self, patchset: str, entry: LedgerEntry) -> None:
        """Add ``entry`` (replacing an older one of the same patch id) in memory."""
        if entry.patch_id in self._ids_of(patchset):
            self.remove(patchset, entry.patch_id)
        bucket = self._data["patchsets"].setdefault(patchset, {"entries": []})
        bucket.pop(IDENTITY_KEY, None)
        bucket["entries"].append(entry.to_json())
        self._ids_of(patchset).add(entry.patch_id)
        self._parsed.pop(patchset, None)
        self._index.pop(patchset, None)

    def replace_entry(self, patchset: str, entry: LedgerEntry) -> None:
        """Put ``entry`` in place of the entry of the same patch id, keeping its position (the
        order of entries is the order patches were applied, which revert and the history of
        each file follow); appended when there is none. In memory, like :meth:`put`."""
        bucket = self._data["patchsets"].setdefault(patchset, {"entries": []})
        bucket.pop(IDENTITY_KEY, None)
        self._parsed.pop(patchset, None)
        self._index.pop(patchset, None)
        self._ids.pop(patchset, None)
        for i, old in enumerate(bucket["entries"]):
            if old["patch_id"] == entry.patch_id:
                bucket["entries"][i] = entry.to_json()
                return
        bucket["entries"].append(entry.to_json())

    def remove(self, patchset: str, patch_id: str) -> None:
        """Drop the entry of ``patch_id`` in memory."""
        bucket = self._data["patchsets"].get(patchset)
        self._parsed.pop(patchset, None)
        self._index.pop(patchset, None)
        self._ids.pop(patchset, None)
        if bucket:
            bucket.pop(IDENTITY_KEY, None)
            bucket["entries"] = [e for e in bucket["entries"] if e["patch_id"] != patch_id]
            if not bucket["entries"]:
                del self._data["patchsets"][patchset]

    def _ids_of(self, patchset: str) -> set[str]:
        # the patch ids of a patchset's entries, kept while entries are added, so that a run
        # that records many patches does not scan the entries once per patch
        ids = self._ids.get(patchset)
        if ids is None:
            bucket = self._data["patchsets"].get(patchset)
            raw = bucket["entries"] if bucket else []
            ids = self._ids[patchset] = {e["patch_id"] for e in raw}
        return ids

    def store_blob(self, data: bytes, txn: Transaction, *, digest: str | None = None) -> str:
        """Keep ``data`` under its sha256 (journaled, so a rollback removes a new blob);
        ``digest``: that sha256, when the caller computed it already."""
        return keep_blob(self.blob_dir, data, txn, digest=digest)

    def blob(self, digest: str) -> bytes | None:
        """The stored bytes with this sha256, or None when missing or damaged."""
        return read_blob(self.blob_dir, digest)

    def save(self, txn: Transaction) -> None:
        """Write ``ledger.json`` atomically and durably (fsynced, with its folder), as part of
        ``txn``; the caller commits ``txn`` only after this returned.

        Raises:
            OSError: the write failed (no space, no permission); the old ledger is intact.
        """
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if self.blob_dir.is_dir():  # the blobs it names (links, mostly) are durable before it
            fsync_dir(self.blob_dir)
        txn.save(self.path)
        self._data["format"] = LEDGER_FORMAT
        # written piece by piece: a ledger of 10,000 entries is ~12 MB of text, which joined
        # (and then encoded) would be held two or three times over at the run's peak
        pieces = (piece.encode() for piece in _ledger_pieces(self._data))
        write_atomic(self.path, pieces, mode=0o644, durable=True)
        fault_point("ledger-written")


def _ledger_pieces(data: dict[str, Any]) -> Iterator[str]:
    """``ledger.json``'s text, in pieces that join to it (one per ledger entry, mostly): the
    document indented by two spaces with sorted keys, but each ledger entry on one line of its
    own (readable and greppable, one line per applied patch; and written by the json module's C
    encoder, which an indented document does not use, so a ledger of thousands of entries costs
    no pure-Python encoding and is never held whole as text)."""
    buckets = data.get("patchsets")
    if set(data) != {"format", "patchsets"} or not isinstance(buckets, dict):
        yield json.dumps(data, indent=2, sort_keys=True) + "\n"  # no ledger of today's shape
        return
    if not all(isinstance(b, dict) for b in buckets.values()):
        yield json.dumps(data, indent=2, sort_keys=True) + "\n"
        return
    yield "{\n" + f'  "format": {json.dumps(data["format"])},\n' + '  "patchsets": {'
    names = sorted(buckets)
    for n, name in enumerate(names):
        bucket = buckets[name]
        yield f"\n    {json.dumps(name)}: {{"
        keys = sorted(bucket)
        for k, key in enumerate(keys):
            yield f"\n      {json.dumps(key)}: "
            value = bucket[key]
            if key == "entries" and isinstance(value, list) and value:
                yield "[\n        "
                for i, entry in enumerate(value):
                    yield (",\n        " if i else "") + json.dumps(entry, sort_keys=True)
                yield "\n      ]"
            else:
                yield from _json_pieces(value, 2)  # the applied identity: one item per file
            yield "," if k < len(keys) - 1 else ""
        yield "\n    }" + ("," if n < len(names) - 1 else "")
    yield "\n  }\n" if names else "}\n"
    yield "}\n"


def _json_pieces(value: Any, depth: int) -> Iterator[str]:
    """``json.dumps(value, sort_keys=True)`` in pieces: the items of lists and of mappings
    with string keys, ``depth`` levels down, each encoded apart (and whole below that)."""
    if depth and isinstance(value, list):
        yield "["
        for i, item in enumerate(value):
            if i:
                yield ", "
            yield from _json_pieces(item, depth - 1)
        yield "]"
    elif depth and isinstance(value, dict) and all(isinstance(k, str) for k in value):
        yield "{"
        for i, key in enumerate(sorted(value)):
            yield (", " if i else "") + json.dumps(key) + ": "
            yield from _json_pieces(value[key], depth - 1)
        yield "}"
    else:
        yield json.dumps(value, sort_keys=True)
