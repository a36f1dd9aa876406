"""``verify --installed``: the engine's installed files against their ``RECORD``, explained by
the ledger.

Every file a distribution installed is listed in its ``.dist-info/RECORD`` with a hash
(the wheel binary distribution format, PEP 376/627). A file whose bytes differ from that hash
was modified after installation; the modification is *declared* when the ledger shows patchbay
wrote exactly these bytes, and *undeclared* otherwise. Entries without a hash (``RECORD``
itself, ``.pyc`` files compiled at install time) are skipped, as pip does. Files inside the
distribution's package folders that ``RECORD`` does not list are reported as *added*
(``__pycache__`` excepted) unless a declared patch created them (a command's declared output
counts as declared): an added file is an undeclared modification like a changed one.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..apply.ledger import Ledger
from ..errors import InputError, PatchbayError, RefusedError
from ..patchset.model import Patchset
from .targets import Environment

_HASHES = {"sha256", "sha384", "sha512"}  # the algorithms RECORD may use (PEP 376 / PEP 627)
_CHUNK = 1 << 20


@dataclass
class RecordEntry:
    """One hashed line of a RECORD file (``path`` absolute and normalised)."""

    path: str
    algorithm: str
    digest: bytes
    line: int


@dataclass
class Finding:
    """A file that is not as installed (or not installed at all)."""

    kind: str  # modified | missing | added
    distribution: str
    path: str
    detail: str = ""
    declared_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"kind": self.kind, "distribution": self.distribution, "path": self.path}
        if self.detail:
            out["detail"] = self.detail
        if self.declared_by:
            out["declared_by"] = self.declared_by
        return out


@dataclass
class InstalledResult:
    """Outcome of :func:`verify_installed`.

    ``ok`` is true when nothing undeclared was found: the environment holds the image as
    shipped plus exactly the patches the ledger records.
    """

    distributions: dict[str, dict[str, Any]] = field(default_factory=dict)
    declared: list[Finding] = field(default_factory=list)
    undeclared: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.undeclared

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "distributions": self.distributions,
            "declared": [f.to_json() for f in self.declared],
            "undeclared": [f.to_json() for f in self.undeclared],
        }


def read_record(dist_info: Path) -> tuple[list[RecordEntry], set[str]]:
    """The hashed entries of ``dist_info/RECORD``, and the paths it lists without a hash.

    Paths are made absolute (plain strings: this runs over tens of thousands of lines).

    Raises:
        InputError: RECORD is missing, or a line is malformed (wrong number of fields, an
            unknown hash algorithm, a digest that is not url-safe base64); names file and line.
    """
    record = dist_info / "RECORD"
    try:
        text = record.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            "RECORD is missing: cannot tell installed files from modified ones", file=record
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"RECORD is unreadable: {exc}", file=record) from None
    site = str(dist_info.parent)
    entries = []
    unhashed: set[str] = set()
    normpath, join = os.path.normpath, os.path.join
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row:
            continue
        if len(row) != 3:
            raise InputError(
                f"malformed RECORD line: expected path,hash,size, got {len(row)} field(s)",
                file=record,
                line=number,
            )
        path, hash_field, size = row
        if size and not size.isdigit():
            raise InputError(f"malformed RECORD size {size!r}", file=record, line=number)
        full = normpath(join(site, path))
        if not hash_field:
            unhashed.add(full)  # RECORD itself, install-time .pyc: not checked (as pip)
            continue
        algorithm, _, encoded = hash_field.partition("=")
        if algorithm not in _HASHES or not encoded:
            raise InputError(f"malformed RECORD hash {hash_field!r}", file=record, line=number)
        try:
            digest = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        except ValueError:
            raise InputError(
                f"RECORD hash {hash_field!r} is not url-safe base64", file=record, line=number
            ) from None
        entries.append(RecordEntry(full, algorithm, digest, number))
    if not entries:
        raise InputError(
            "RECORD lists no hashed file: cannot tell installed files from modified ones",
            file=record,
        )
    return entries, unhashed


def _digest(path: str, algorithm: str) -> bytes | None:
    h = hashlib.new(algorithm)
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except PermissionError:
        raise RefusedError(
            "cannot read this installed file (permission denied), so it cannot be checked "
            "against RECORD; run as a user who can read it",
            file=path,
        ) from None
    return h.digest()


def _sha256_hex(entry: RecordEntry, digest: bytes | None) -> str | None:
    """The file's sha256 (the ledger's hash), reusing the RECORD digest when it is one."""
    if digest is None:
        return None
    if entry.algorithm == "sha256":
        return digest.hex()
    again = _digest(entry.path, "sha256")
    return None if again is None else again.hex()


def _ledger_map(ledger: Ledger, env: Environment) -> dict[str, tuple[str | None, str]]:
    """Absolute path -> (sha256 patchbay last wrote, "patchset/patch-id, ..." of every patch
    that changed it)."""
    written: dict[str, tuple[str | None, str]] = {}
    for patchset, entries in ledger.all_entries().items():
        for entry in entries:
            for rec in entry.files:
                root = env.roots.get(rec.target)
                if root is None:
                    continue
                path = os.path.normpath(os.path.join(root, rec.path))
                name = f"{patchset}/{entry.patch_id}"
                earlier = written[path][1] + ", " if path in written else ""
                written[path] = (rec.after, earlier + name)
            output, target = entry.extra.get("output"), entry.extra.get("target")
            if entry.kind == "command" and output and target in env.roots:
                path = os.path.normpath(os.path.join(env.roots[target], output))
                written[path] = (_file_sha256(path), f"{patchset}/{entry.patch_id}")
    return written


def not_installed(
    env: Environment, name: str, error: type[PatchbayError] = RefusedError
) -> PatchbayError:
    """The error for a distribution whose RECORD is wanted but not found: not installed in the
    interpreter's environment, or, with ``--root``, no ``<name>-*.dist-info`` in the tree."""
    if env.python is None:
        return error(
            f"no {name}-*.dist-info under {env.tree_root}: RECORD tells edited files from "
            "installed ones; unpack the image with its dist-info folders, or give --python",
            file=str(env.tree_root) if env.tree_root else None,
        )
    return error(f"distribution {name!r} is not installed", file=env.python)


def verify_installed(
    patchset: Patchset, env: Environment, distributions: list[str] | None = None
) -> InstalledResult:
    """Compare every installed file of ``distributions`` (default: the patchset's components)
    with its RECORD hash, and explain each difference with the ledger.

    Raises:
        InputError: no distribution to check; a RECORD is missing or malformed.
        RefusedError: a distribution is not installed (with ``--root``: no dist-info folder
            of it in the tree).
    """
    names = distributions or [c.distribution for c in patchset.spec.components]
    if not names:
        raise InputError(
            "no distribution to check: the patchset has no components; name them with --dist",
            file=patchset.path,
        )
    ledger = Ledger(env.state_dir)
    written = _ledger_map(ledger, env)
    result = InstalledResult()
    recorded_paths: set[str] = set()
    jobs: list[tuple[str, RecordEntry]] = []
    for name in names:
        dist_info = env.dist_info.get(name)
        if dist_info is None:
            error = InputError if distributions else RefusedError  # named by hand: bad input
            raise not_installed(env, name, error)
        entries, unhashed = read_record(dist_info)
        recorded_paths.update(e.path for e in entries)
        recorded_paths.update(unhashed)
        result.distributions[name] = {
            "version": env.distributions.get(name),
            "dist_info": str(dist_info),
            "checked": len(entries),
        }
        jobs.extend((name, e) for e in entries)
    digests = _hash_all([e for _, e in jobs])
    for (name, entry), digest in zip(jobs, digests, strict=True):
        if digest == entry.digest:
            continue
        declared = written.get(entry.path)
        sha256 = _sha256_hex(entry, digest)
        if declared is not None and declared[0] == sha256:
            kind = "missing" if digest is None else "modified"
            result.declared.append(Finding(kind, name, entry.path, declared_by=declared[1]))
            continue
        if digest is None:
            result.undeclared.append(Finding("missing", name, entry.path, "file is gone"))
        else:
            detail = "differs from RECORD"
            if declared is not None:
                detail = f"changed since {declared[1]} wrote it"
            result.undeclared.append(Finding("modified", name, entry.path, detail))
    for name in names:
        for path in _unrecorded(env.dist_info[name], recorded_paths):
            declared = written.get(path)
            if declared is not None and declared[0] == _file_sha256(path):
                result.declared.append(Finding("added", name, path, declared_by=declared[1]))
            elif declared is not None:
                detail = f"changed since {declared[1]} wrote it"
                result.undeclared.append(Finding("added", name, path, detail))
            else:
                # a file the distribution did not install is a modification too
                result.undeclared.append(Finding("added", name, path, "not in RECORD"))
    return result


def _file_sha256(path: str) -> str | None:
    digest = _digest(path, "sha256")
    return None if digest is None else digest.hex()


def _hash_all(entries: list[RecordEntry]) -> list[bytes | None]:
    """Digests of every entry's file, in order. hashlib and file reads release the GIL, so a
    few threads over large contiguous slices use the cores without per-file scheduling cost."""
    workers = max(1, min(4, os.cpu_count() or 1))
    if workers == 1 or len(entries) < 64:
        return [_digest(e.path, e.algorithm) for e in entries]
    size = -(-len(entries) // workers)
    slices = [entries[i : i + size] for i in range(0, len(entries), size)]
    with ThreadPoolExecutor(max_workers=len(slices)) as pool:
        parts = pool.map(lambda part: [_digest(e.path, e.algorithm) for e in part], slices)
    return [digest for part in parts for digest in part]


def _unrecorded(dist_info: Path, recorded: set[str]) -> list[str]:
    """Files inside the distribution's top-level folders that RECORD does not list."""
    site = str(dist_info.parent) + os.sep
    tops = set()
    for path in recorded:
        if not path.startswith(site):
            continue  # scripts in bin/ and the like
        top, sep, _ = path[len(site) :].partition(os.sep)
        if sep and not top.endswith((".dist-info", ".egg-info")):
            tops.add(site + top)
    extra = []
    for top in sorted(tops):
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                path = os.path.join(folder, name)
                if path not in recorded:
                    extra.append(path)
    return extra
