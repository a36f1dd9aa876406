"""Where a file went: git's rename detection between a file's old content and a new tree.

``rebase`` carries a patch onto a candidate image; when upstream moved a patched file (aiter
4f632ddf34 moved ``mla_gluon.py`` into a subfolder), the patch should follow it as
``git rebase`` and ``git apply -3`` do. The question is answered by git itself: ``git diff
--no-index -M --name-status`` between a scratch folder holding the files that are gone (their
old content at their old paths) and one holding the candidate's files that the old image did
not have (hard links, or copies across file systems), so git's similarity index (50% by default,
``-M``) decides, as it would in a repository.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import msgspec

from .gitapply import run_git, scratch_folder

_MAX_CANDIDATES = 20_000  # git's diff.renameLimit default is 1000 pairs per side for -M


class Rename(msgspec.Struct, frozen=True):
    """A file found again under another path.

    Attributes:
        old, new: the paths (relative to the root both sides share).
        similarity: git's similarity index, 0-100 (100: the same bytes).
    """

    old: str
    new: str
    similarity: int


def find_renames(
    gone: dict[str, bytes], candidates: Iterable[str], root: Path, *, threshold: int = 50
) -> dict[str, Rename]:
    """Where each file of ``gone`` went among ``candidates``, as git's rename detection says.

    Args:
        gone: old path -> the file's old content (files the new tree no longer has).
        candidates: paths under ``root`` of files the old tree did not have (the places a
            moved file can be).
        root: the new tree's root.
        threshold: git's ``-M`` similarity threshold in percent.

    Returns:
        old path -> :class:`Rename`, for the files git pairs with one candidate; the others are
        absent (deleted, or changed past recognition).

    Raises:
        ApplyFailed: git is missing or failed.
    """
    names = sorted(set(candidates))[:_MAX_CANDIDATES]
    if not gone or not names:
        return {}
    with scratch_folder(prefix="patchbay-renames-") as scratch:
        old_side, new_side = scratch / "a", scratch / "b"
        for rel, data in gone.items():
            path = old_side / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        new_side.mkdir()
        for rel in names:
            source, dest = root / rel, new_side / rel
            if not source.is_file() or source.is_symlink():
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, dest)
            except OSError:
                shutil.copyfile(source, dest)
        _, out = run_git(
            [
                "diff", "--no-index", f"-M{threshold}%", "--name-status", "-z",
                "--no-ext-diff", "--", "a", "b",
            ],
            scratch,
            ok=(0, 1),
            what="git diff --no-index (rename detection)",
        )  # fmt: skip
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    found: dict[str, Rename] = {}
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status.startswith("R") and i + 2 < len(fields):
            old, new = fields[i + 1].removeprefix("a/"), fields[i + 2].removeprefix("b/")
            found[old] = Rename(old, new, int(status[1:] or 100))
            i += 3
        else:
            i += 2
    return found
