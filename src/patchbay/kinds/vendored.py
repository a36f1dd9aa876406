"""The vendored content of a patch's upstream ``source`` (a diff, or a ``replace`` patch's
constants), as ``patchbay vendor`` wrote and locked it: read only when the lock pins this very
source and the bytes match its sha256. ``apply`` never fetches; what is not there yet is
*not locked* (or *not vendored here*), with the command that fixes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..apply.ledger import sha256_bytes
from ..errors import InputError
from ..patchset.inputfiles import read_input

if TYPE_CHECKING:
    from ..patchset.model import DiffPatch, Patchset, ReplacePatch


@dataclass
class Vendored:
    """The vendored bytes of a source and the file they were read from."""

    data: bytes
    path: Path


def vendored_content(
    patch: DiffPatch | ReplacePatch, patchset: Patchset, index: int, *, paths: list[str]
) -> Vendored | str:
    """The vendored bytes of ``patch.source``, or why they cannot be used yet (a sentence for
    ``validate``'s NOT LOCKED line and ``apply``'s refusal).

    Args:
        patch: a diff or replace patch with a ``source``.
        patchset: its patchset (the lock and the vendored files are in its folder).
        index: the patch's position, for the line in errors.
        paths: the source's ``paths`` filter, which the lock entry must match too.

    Raises:
        InputError: the vendored file does not match the lock's sha256, or cannot be read.
    """
    from ..patchset.lockfile import Lock  # only a remote source needs the lock (cold path)

    src = patch.source
    assert src is not None
    locked = Lock.load(patchset.folder).sources.get(patch.id)
    local = f"`patchbay vendor --from <a copy of {src.file}> {patchset.folder}`"
    if locked is None or locked.ref != src.ref or locked.paths != paths:
        how = (
            f"{local}, or vendor it with network access"
            if src.file is not None
            else f"`patchbay vendor {patchset.folder}` with network access"
        )
        return f"upstream source {src.ref} is not locked yet: run {how}"
    path = patchset.folder / locked.file
    if not path.exists() and not path.is_symlink():
        # the lock pins it, its bytes are not here (a clone of a patchset whose vendored
        # content is not committed): vendor writes them, checked by that hash
        how = local if src.file is not None else f"`patchbay vendor {patchset.folder}`"
        return (
            f"upstream source {src.ref} is locked (sha256 {locked.sha256[:12]}) but not "
            f"vendored here: run {how}"
        )
    data = read_input(
        path,
        what=f"vendored {patch.content_path}",
        file=patchset.path,
        line=patchset.patch_line(index, "source"),
        patch_id=patch.id,
    )
    if sha256_bytes(data) != locked.sha256:
        raise InputError(
            f"vendored content of {src.ref} does not match the lock (sha256 "
            f"{sha256_bytes(data)}, locked {locked.sha256}); run `patchbay vendor` again",
            file=path,
            patch_id=patch.id,
        )
    return Vendored(data, path)
