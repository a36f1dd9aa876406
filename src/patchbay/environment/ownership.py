"""Whose file is this: the distribution whose ``RECORD`` lists an installed file, or the
editable checkout it lives in.

``capture`` asks before it writes a patch, so that an edited file of any installed package
(not only the patchset's components) is captured as a change to the file that exists, never as
a new file that a ``revert`` would delete:

- a file some ``RECORD`` lists belongs to that distribution (PEP 376/627: ``RECORD`` sits in
  the ``.dist-info`` folder beside the files, paths relative to that folder's parent);
- a file below the project folder of an editable install belongs to that checkout (PEP 610:
  ``direct_url.json`` with ``dir_info.editable`` true and a ``file://`` URL); its original is
  what the checkout's git repository holds at ``HEAD``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from ..diff.gitapply import run_git
from ..errors import ApplyFailed, InputError, RefusedError
from .installed import RecordEntry, read_record
from .owners import name_and_version
from .targets import Environment


@dataclass(frozen=True)
class Checkout:
    """The project folder of an editable install.

    Attributes:
        distribution: the distribution's name (from its ``.dist-info`` folder).
        folder: the project folder ``direct_url.json`` names (absolute, resolved).
        dist_info: the ``.dist-info`` folder of the install.
    """

    distribution: str
    folder: Path
    dist_info: Path


def _dist_infos(folder: str) -> list[Path]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [Path(folder, n) for n in names if n.endswith(".dist-info")]


def _name_version(dist_info: Path) -> tuple[str, str | None]:
    """The distribution's name and version (the folder's name when METADATA does not say)."""
    return name_and_version(dist_info, dist_info.name[: -len(".dist-info")].split("-", 1)[0])


def record_owners(
    paths: Iterable[str], known: set[str]
) -> dict[str, tuple[Path, str | None, list[RecordEntry], set[str]]]:
    """The distributions whose ``RECORD`` lists one of ``paths``, found by climbing from each
    path to the nearest folder that holds ``.dist-info`` folders (the site folder it was
    installed into).

    Args:
        paths: absolute normalised paths of files (existing or deleted).
        known: paths already owned (left out).

    Returns:
        distribution name -> (its ``.dist-info``, its version, RECORD's hashed entries,
        RECORD's unhashed paths), for every distribution found. A malformed RECORD of a
        distribution is passed over (it owns nothing here).
    """
    found: dict[str, tuple[Path, str | None, list[RecordEntry], set[str]]] = {}
    read: dict[Path, tuple[list[RecordEntry], set[str], set[str]] | None] = {}
    for path in paths:
        if path in known:
            continue
        folder = os.path.dirname(path)
        while True:
            infos = _dist_infos(folder)
            if infos:
                break
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
        for info in infos:
            if info not in read:
                try:
                    entries, unhashed = read_record(info)
                    read[info] = (entries, unhashed, {e.path for e in entries} | unhashed)
                except InputError:  # a damaged RECORD of some other package
                    read[info] = None
            listing = read[info]
            if listing is None:
                continue
            entries, unhashed, listed = listing
            if path in listed:
                name, version = _name_version(info)
                found.setdefault(name, (info, version, entries, unhashed))
                known.update(listed)
                break
    return found


def editable_checkouts(env: Environment) -> list[Checkout]:
    """The editable installs of ``env``: every ``.dist-info`` on the interpreter's ``sys.path``
    (or, with ``--root``, beside the target roots) whose ``direct_url.json`` says
    ``dir_info.editable`` with a ``file://`` URL (PEP 610)."""
    folders: list[str] = [str(p) for p in env.sys_path]
    folders += [str(p.parent) for p in env.dist_info.values()]
    folders += [str(r) for r in env.roots.values()]
    seen: set[Path] = set()
    out: list[Checkout] = []
    for folder in dict.fromkeys(folders):
        for info in _dist_infos(folder):
            if info in seen:
                continue
            seen.add(info)
            try:
                data = json.loads((info / "direct_url.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if not isinstance(data, dict):
                continue
            dir_info = data.get("dir_info")
            url = data.get("url")
            if not (isinstance(dir_info, dict) and dir_info.get("editable") is True):
                continue
            if not isinstance(url, str) or not url.startswith("file://"):
                continue
            project = Path(unquote(urlparse(url).path))
            out.append(Checkout(_name_version(info)[0], project.resolve(), info))
    return out


def checkout_of(path: str, checkouts: list[Checkout]) -> Checkout | None:
    """The editable checkout whose project folder holds ``path`` (the deepest), or None."""
    real = os.path.realpath(path)
    holding = [
        c for c in checkouts if real == str(c.folder) or real.startswith(str(c.folder) + os.sep)
    ]
    return max(holding, key=lambda c: len(str(c.folder)), default=None)


def checkout_original(checkout: Checkout, path: str) -> tuple[bytes | None, str]:
    """What the checkout's git repository holds at ``HEAD`` for ``path`` (None: git tracks no
    such file there), and where that came from (for messages).

    Raises:
        RefusedError: the checkout is no git repository (nothing tells its original), or git
            cannot read it.
    """
    folder = checkout.folder
    status, out = run_git(["rev-parse", "--show-toplevel"], folder, ok=(0, 128))
    if status != 0:
        raise RefusedError(
            f"{path} lies in the editable checkout of {checkout.distribution} ({folder}), "
            "which is no git repository: nothing tells what the file was before the edit; "
            "make it one (git init, git add, git commit before editing) or capture the edit "
            "against a pristine copy with --from-git DIR|URL",
            file=path,
        )
    top = Path(os.fsdecode(out.strip()))
    rel = Path(os.path.relpath(os.path.realpath(path), top.resolve())).as_posix()
    try:
        _, head = run_git(["rev-parse", "--short=12", "HEAD"], top)
        status, data = run_git(["cat-file", "blob", f"HEAD:{rel}"], top, ok=(0, 128))
    except ApplyFailed as exc:
        raise RefusedError(
            f"cannot read {rel} at HEAD of the editable checkout {top}: {exc}", file=path
        ) from None
    where = f"the editable checkout's git HEAD ({head.decode().strip()})"
    if status != 0:
        return None, f"not in {where} (a new file)"
    return data, where


def checkout_executable(checkout: Checkout, path: str) -> bool | None:
    """Whether git's ``HEAD`` of the checkout holds ``path`` as executable (tree mode
    ``100755``); None when it does not track the file or the checkout is no repository."""
    folder = checkout.folder
    status, out = run_git(["rev-parse", "--show-toplevel"], folder, ok=(0, 128))
    if status != 0:
        return None
    top = Path(os.fsdecode(out.strip()))
    rel = Path(os.path.relpath(os.path.realpath(path), top.resolve())).as_posix()
    _, listing = run_git(["ls-tree", "-z", "HEAD", "--", rel], top)
    if not listing:
        return None
    return listing.split(b" ", 1)[0] == b"100755"


def changed_in_checkout(checkout: Checkout) -> list[str]:
    """The tracked files of the checkout that differ from ``HEAD`` (edited or deleted), as
    absolute paths; none when it is no git repository."""
    folder = checkout.folder
    status, out = run_git(["rev-parse", "--show-toplevel"], folder, ok=(0, 128))
    if status != 0:
        return []
    top = Path(os.fsdecode(out.strip()))
    _, listing = run_git(["diff", "--name-only", "-z", "--no-renames", "HEAD", "--", "."], folder)
    names = [n for n in os.fsdecode(listing).split("\0") if n]
    return [os.path.normpath(os.path.join(top, n)) for n in names]
