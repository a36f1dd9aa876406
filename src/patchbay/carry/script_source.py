"""A diff cut from a here-document of a pinned script (``source: {repo, commit, file,
heredoc}``): the script's bytes come from the forge, or from a local copy of the same file
(``vendor --from PATH``, no network), and the diff is the body of the named here-document
(:mod:`patchbay.analysis.heredocs`).

A local copy is taken for a source when its file name is the source file's, and it is checked
against the sha256 of the script the lock recorded: a copy that is not that file is refused,
whatever its name. With no lock entry yet, the copy's hash becomes the pin (the forge's answer
would be taken the same way); ``vendor`` says which copy it took.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..analysis.heredocs import here_document
from ..analysis.pyconstants import string_constants
from ..apply.ledger import sha256_bytes
from ..errors import InputError, RefusedError
from ..patchset.lockfile import LockedSource
from ..patchset.model import DiffPatch, RemoteSource, ReplacePatch
from ..upstream.queries import GitHubClient

MAX_SCRIPT_BYTES = 16 << 20


@dataclass
class ScriptDiff:
    """The diff of one here-document source.

    Attributes:
        locked: the lock entry to record.
        content: the here-document's bytes (the diff).
        origin: where the script came from: the local copy's path, or the forge URL.
    """

    locked: LockedSource
    content: bytes
    origin: str


def _local_copy(
    patch: DiffPatch | ReplacePatch,
    src: RemoteSource,
    old: LockedSource | None,
    copies: Sequence[Path],
) -> tuple[Path, bytes] | None:
    """The ``--from`` copy for ``src`` (by file name), checked against the lock.

    Raises:
        InputError: a copy cannot be read.
        RefusedError: copies of that name exist but none is the locked file, or (no lock
            entry yet) two of them differ.
    """
    assert src.file is not None
    name = PurePosixPath(src.file).name
    candidates = []
    for path in copies:
        if path.name != name:
            continue
        try:
            if path.stat().st_size > MAX_SCRIPT_BYTES:
                raise InputError(f"larger than {MAX_SCRIPT_BYTES} bytes", file=path)
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read the local copy: {exc.strerror}", file=path) from None
        candidates.append((path, data))
    if not candidates:
        return None
    pinned = old.origin_sha256 if old is not None and old.ref == src.ref else None
    if pinned is not None:
        for path, data in candidates:
            if sha256_bytes(data) == pinned:
                return path, data
        shown = ", ".join(f"{p} (sha256 {sha256_bytes(d)})" for p, d in candidates)
        raise RefusedError(
            f"the local copy {shown} is not {src.file} at {src.commit} as locked (sha256 "
            f"{pinned}); nothing was changed",
            patch_id=patch.id,
        )
    if len({sha256_bytes(d) for _, d in candidates}) > 1:
        raise RefusedError(
            f"the local copies {', '.join(str(p) for p, _ in candidates)} of {src.file} differ, "
            "and no lock entry says which one is the file at the pinned commit",
            patch_id=patch.id,
        )
    return candidates[0]


def script_diff(
    gh: GitHubClient,
    patch: DiffPatch | ReplacePatch,
    src: RemoteSource,
    old: LockedSource | None,
    copies: Sequence[Path] = (),
) -> ScriptDiff:
    """Read ``src``'s script (a ``--from`` copy, else the forge) and cut its here-document
    (for a ``replace`` patch, the Python program whose constants are its texts).

    Args:
        gh: the forge client (not used when a local copy answers).
        patch: the diff patch whose source this is.
        src: a source with ``file`` and ``heredoc`` at ``commit``.
        old: the lock's entry for the patch, if any (its ``origin_sha256`` checks the script).
        copies: local files given with ``vendor --from``.

    Raises:
        RefusedError: the forge failed or has no such file, or the script is not the locked
            one (from a copy or from the forge).
        InputError: the script has no such here-document (or several), or cannot be parsed.
    """
    assert src.file is not None and src.heredoc is not None and src.commit is not None
    local = _local_copy(patch, src, old, copies)
    url = f"{gh.api}/repos/{src.repo}/contents/{src.file}?ref={src.commit}"
    if local is not None:
        origin, data = str(local[0]), local[1]
    else:
        fetched = gh.file_at(src.repo, src.file, src.commit)
        if fetched is None:
            raise RefusedError(
                f"{src.repo} has no file {src.file} at {src.commit} ({url})", patch_id=patch.id
            )
        origin, data = url, fetched
        got = sha256_bytes(data)
        if old is not None and old.ref == src.ref and old.origin_sha256 not in (None, got):
            raise RefusedError(
                f"{url} serves other bytes (sha256 {got}) than the locked "
                f"{old.origin_sha256}; nothing was changed",
                patch_id=patch.id,
            )
    try:
        doc = here_document(data, src.heredoc, origin)
    except InputError as exc:
        exc.patch_id = exc.patch_id or patch.id
        raise
    locked = LockedSource(
        repo=src.repo,
        ref=src.ref,
        commit=src.commit,
        url=url,
        file=patch.content_path,
        sha256=sha256_bytes(doc.body),
        origin_sha256=sha256_bytes(data),
    )
    return ScriptDiff(locked=locked, content=doc.body, origin=origin)


def replace_constants(patch: ReplacePatch, program: bytes, origin: str) -> bytes:
    """The vendored content of a ``replace`` patch's source: the string constants its edits
    name, from the here-document's Python program, as sorted JSON (what the lock hashes).

    Raises:
        InputError: the program does not parse, or does not define a named constant.
    """
    import json

    constants = string_constants(program.decode("utf-8", "surrogateescape"), origin)
    names = [n for e in patch.edits for n in (e.old_from, e.new_from) if n is not None]
    missing = [n for n in names if n not in constants]
    if missing:
        raise InputError(
            f"the here-document <<{patch.source.heredoc if patch.source else '?'} defines no "
            f"string constant {', '.join(sorted(set(missing)))} (a NAME = '...' of literals, "
            "+ and earlier constants)",
            file=origin,
            patch_id=patch.id,
        )
    used = {n: constants[n] for n in sorted(set(names))}
    return (json.dumps(used, indent=2, sort_keys=True) + "\n").encode()
