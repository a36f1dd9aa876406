"""``edit`` and ``refresh``: change an existing patch by editing the tree, as quilt does.

``edit PATCHSET ID`` brings the tree to the state just after patch ``ID``: the patches applied
after it are taken off (quilt's ``pop``, through the ledger: every file is checked before it is
restored) and the patches up to it are applied. The files are then edited in place.

``refresh PATCHSET ID`` rewrites the patch's diff from the tree: each of its files from what
the ledger says it was before the patch (the original kept as a blob) to what it is now, with
the patch file's own path prefixes and strip level, and its header text (a DEP-3 block before
the first file) kept; the metadata in ``patchset.yaml`` is not touched. The ledger's entry then
takes the new content's identity (the one the ``diff`` kind computes when it loads the file),
so the next ``apply`` says ``applied``, not ``outdated``. Before anything is written the
patches after it are checked on the patchset as it will be: a later patch that no longer
applies refuses the refresh, with its name and hunk.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from ..apply.engine import apply_patchset
from ..apply.interrupted import recovered_first
from ..apply.ledger import Ledger, LedgerEntry
from ..apply.plan import load_patches, make_plan
from ..apply.results import BLOCKING
from ..apply.revert import revert_patchset
from ..diff.gitdiff import FileVersions
from ..diff.parse import parse_diff
from ..environment.pristine import Pristine, read_shipped
from ..environment.targets import Environment
from ..environment.tree import Tree
from ..errors import InputError, PatchbayError, RefusedError
from ..kinds import LoadedPatch
from ..options import RunOptions
from ..patchset.model import DiffPatch, Patchset
from .adopt import MadeFile, record_made_patch
from .bases import state_before
from .capture import PristineSources, checked_diff, locate, writable_patchset


@dataclass
class EditResult:
    """What ``edit`` did: the later patches taken off, the patches applied, and the files of
    the patch (absolute paths) to edit."""

    reverted: list[str] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


@dataclass
class RefreshResult:
    """What ``refresh`` wrote: the patch file, its files, and the later patches re-checked
    (id -> status on the patchset as it now is)."""

    patch_file: Path
    files: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    later: dict[str, str] = field(default_factory=dict)


def _local_diff(patchset: Patchset, patch_id: str) -> tuple[int, DiffPatch]:
    for i, patch in enumerate(patchset.patches):
        if patch.id == patch_id:
            if not isinstance(patch, DiffPatch):
                raise InputError(
                    f"patch {patch_id} is a {patch.kind} patch; edit and refresh work on diff "
                    "patches",
                    file=patchset.path,
                    line=patchset.patch_line(i),
                )
            if patch.file is None:
                raise InputError(
                    f"patch {patch_id} is vendored from upstream ({patch.content_path}); refresh "
                    "works on patch files kept in the patchset",
                    file=patchset.path,
                    line=patchset.patch_line(i),
                )
            return i, patch
    raise InputError(
        f"no patch {patch_id} in patchset {patchset.name} "
        f"(patches: {', '.join(p.id for p in patchset.patches) or 'none'})",
        file=patchset.path,
    )


def edit_patch(
    patchset: Patchset,
    env: Environment,
    patch_id: str,
    *,
    lock_timeout: float = 0.0,
    options: RunOptions | None = None,
) -> EditResult:
    """Bring the tree to the state just after ``patch_id`` (see the module docstring).

    Raises:
        InputError: no such patch, or not a diff kept in the patchset.
        RefusedError: a later patch's file changed since patchbay wrote it, or a patch up to
            ``patch_id`` cannot be applied; nothing changed.
    """
    patchset = recovered_first(patchset, env, lock_timeout)
    index, patch = _local_diff(patchset, patch_id)
    later = [p.id for p in patchset.patches[index + 1 :]]
    reverted = revert_patchset(patchset, env, later, lock_timeout=lock_timeout, options=options).ids
    head = Patchset(
        spec=msgspec.structs.replace(patchset.spec, patches=patchset.spec.patches[: index + 1]),
        path=patchset.path,
        folder=patchset.folder,
        document=patchset.document,
    )
    # no no-op identity for the head: it would stand for the whole patchset, whose later
    # patches are off now, and a re-run of apply would answer "nothing to do"
    applied = apply_patchset(
        head, env, lock_timeout=lock_timeout, options=options, record_identity=False
    ).applied
    loaded = load_patches(head)[index]
    rels = sorted({p for fp in loaded.data.files for p in (fp.old_path, fp.new_path) if p})
    tree = Tree(env.roots, env)
    return EditResult(reverted, applied, [tree.resolve(patch.target, rel) for rel in rels])


def refresh_patch(
    patchset: Patchset,
    env: Environment,
    patch_id: str,
    paths: Sequence[str] = (),
    *,
    sources: PristineSources | None = None,
    lock_timeout: float = 0.0,
    allow_delete: bool = False,
) -> RefreshResult:
    """Rewrite patch ``patch_id``'s diff from the tree (see the module docstring).

    Args:
        patchset: the loaded patchset.
        env: the environment whose files hold the edited patch.
        patch_id: the patch (a ``diff`` with a ``file``).
        paths: more files to take into the patch (edited after the patch was applied, or new).
        sources: pristine copies for ``paths`` patchbay never patched.
        lock_timeout: seconds to wait for another run's lock.
        allow_delete: a file of the patch that is gone now (the patch left it in place) becomes
            a deletion in the refreshed patch; without it that is refused, since a file lost
            while editing (a stray ``rm``, a checkout) would otherwise turn silently into a
            patch that deletes it, as ``quilt refresh`` never does for a tracked file.

    Raises:
        InputError: no such patch, or not a diff kept in the patchset; a path under no root.
        RefusedError: a file of the patch is gone and ``allow_delete`` is false; the ledger
            does not record the patch here; a file of it is also changed by a patch applied
            after it (run ``edit`` first); the result would be empty; a later patch would no
            longer apply (named); nothing was written.
    """
    patchset = recovered_first(patchset, env, lock_timeout)
    index, patch = _local_diff(patchset, patch_id)
    writable_patchset(patchset)
    ledger = Ledger(env.state_dir)
    entry = ledger.find(patchset.name, patch_id)
    if entry is None:
        raise RefusedError(
            f"patchbay has not applied {patch_id} here, so there is nothing to refresh it from; "
            f"run `patchbay edit {patchset.folder} {patch_id}` first",
            patch_id=patch_id,
            file=ledger.path,
        )
    root = env.roots[patch.target]
    entries = ledger.entries(patchset.name)
    after = entries[next(i for i, e in enumerate(entries) if e.patch_id == patch_id) + 1 :]
    loaded = load_patches(patchset)
    old = loaded[index]
    versions: list[FileVersions] = []
    made: list[MadeFile] = []
    tree = Tree(env.roots, env)
    for rec in entry.files:
        before = None
        if rec.before is not None:
            before = ledger.blob(rec.before)
            if before is None:
                raise RefusedError(
                    f"the ledger's copy of {rec.path} before {patch_id} is missing or damaged",
                    file=ledger.blob_dir / rec.before,
                    patch_id=patch_id,
                )
        path = tree.resolve(rec.target, rec.path)
        now = tree.on_disk(rec.target, rec.path)
        executable = bool((rec.mode_before or 0) & 0o100)
        versions.append(FileVersions(rec.path, before, now, executable, _executable(path)))
        made.append(MadeFile(rec.target, rec.path, before, now, rec.mode_before, rec.created_dirs))
    gone = [r for r, v in zip(entry.files, versions, strict=True) if r.after and v.after is None]
    if gone and not allow_delete:
        raise RefusedError(
            f"{', '.join(r.path for r in gone)} of {patch_id} is gone from the tree, which the "
            "patch leaves in place: the refreshed patch would delete it. Put the file back, or "
            "give --allow-delete if the patch is to delete it; nothing was written",
            file=tree.resolve(gone[0].target, gone[0].path),
            patch_id=patch_id,
        )
    known = {os.path.normpath(tree.resolve(r.target, r.path)) for r in entry.files}
    if paths:
        _more_files(patchset, env, ledger, loaded, sources, paths, known, versions, made)
    for f in versions:
        _not_under_later(Path(root, f.path), after, env, patchset, patch_id)
    dropped = [f.path for f in versions if not f.changed]
    kept = [f for f in versions if f.changed]
    if not kept:
        raise RefusedError(
            f"every file of {patch_id} is back to what it was before the patch: the refreshed "
            "patch would be empty; remove it from the patchset instead",
            patch_id=patch_id,
        )
    prefixes, preamble = patch_layout(patchset, patch, old)
    text = patchset.path.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="patchbay-refresh-") as scratch:
        made_diff = checked_diff(
            patchset, text, patch_id, kept, env, Path(scratch), prefixes=prefixes, preamble=preamble
        )
        later = _recheck_later(made_diff.trial, env, index, patchset.path)
        record_made_patch(
            patchset.name,
            env.state_dir,
            patch_id=patch_id,
            sha256=made_diff.loaded.sha256,
            identity=made_diff.loaded.identity,
            files=[m for m in made if m.path not in dropped],
            writes={patchset.folder / patch.content_path: made_diff.data},
            keep_position=True,
            lock_timeout=lock_timeout,
            roots=list(env.roots.values()),
            source=patchset.path,
        )
    return RefreshResult(
        patchset.folder / patch.content_path, [f.path for f in kept], dropped, later
    )


def _executable(path: Path) -> bool:
    try:
        return bool(os.stat(path).st_mode & 0o100)
    except FileNotFoundError:
        return False


def _not_under_later(
    path: Path, later: list[LedgerEntry], env: Environment, patchset: Patchset, patch_id: str
) -> None:
    """Refuse when a patch applied after ``patch_id`` changed ``path`` too: the tree then holds
    its change as well, and the refreshed diff would take it in."""
    for entry in later:
        for rec in entry.files:
            other = os.path.normpath(os.path.join(env.roots[rec.target], rec.path))
            if other == os.path.normpath(path):
                raise RefusedError(
                    f"{rec.path} is also changed by {entry.patch_id}, applied after {patch_id}; "
                    f"run `patchbay edit {patchset.folder} {patch_id}` first (it takes the later "
                    "patches off), then edit and refresh",
                    file=path,
                    patch_id=patch_id,
                )


def _more_files(
    patchset: Patchset,
    env: Environment,
    ledger: Ledger,
    loaded: list[LoadedPatch],
    sources: PristineSources | None,
    paths: Sequence[str],
    known: set[str],
    versions: list[FileVersions],
    made: list[MadeFile],
) -> None:
    """Add files named on the command line to the patch, from what they were before it."""
    target = made[0].target if made else next(iter(env.roots))
    components = [c.distribution for c in patchset.spec.components]
    shipped = read_shipped(env, components) if env.python is not None and components else None
    listed = shipped.listed if shipped else set()
    tree = Tree(env.roots, env)
    with tempfile.TemporaryDirectory(prefix="patchbay-pristine-") as scratch:
        copies = (sources or PristineSources()).copies(patchset, env, Path(scratch))
        pristine = Pristine(env, ledger, patchset.name, shipped, copies)
        for arg in paths:
            path = locate(arg, env, listed)
            if path in known:
                continue
            root = str(env.roots[target])
            if not path.startswith(root + os.sep):
                raise InputError(f"{path} is not under the patch's target root ({root})")
            rel = Path(os.path.relpath(path, root)).as_posix()
            before, _ = state_before(patchset, env, ledger, loaded, pristine, path, target, rel)
            now = tree.on_disk(target, rel)
            executable = now is not None and bool(os.stat(path).st_mode & 0o100)
            versions.append(FileVersions(rel, before, now, executable, executable))
            mode = os.stat(path).st_mode & 0o7777 if before is not None and now else None
            made.append(MadeFile(target, rel, before, now, mode))


def patch_layout(
    patchset: Patchset, patch: DiffPatch, loaded: LoadedPatch
) -> tuple[tuple[str, str], bytes]:
    """The path prefixes the patch file uses (what its strip level removes: ``a/`` and ``b/``
    at strip 1) and the text before its first file header (a DEP-3 block), so that a rewritten
    patch file reads like the old one and is read with the same strip level.

    Raises:
        RefusedError: the prefixes cannot be told (a strip level other than 1 whose paths do
            not parse at strip 0).
    """
    path = patchset.folder / patch.content_path
    data = path.read_bytes()
    parsed = loaded.data
    src, dst = "a/", "b/"
    if patch.strip != 1:
        try:
            raw = parse_diff(data, source=path, strip=0)
        except PatchbayError:
            raw = None
        if raw is None or not raw.files:
            raise RefusedError(
                f"cannot tell the path prefixes of {patch.content_path} (strip {patch.strip})",
                file=path,
                patch_id=patch.id,
            )
        fp0, fp = raw.files[0], parsed.files[0]
        full, short = (fp0.old_path, fp.old_path) if fp.old_path else (fp0.new_path, fp.new_path)
        prefix = full[: len(full) - len(short)] if full and short else ""
        rest = prefix.partition("/")[2]
        src = f"a/{rest}" if prefix.startswith(("a/", "b/")) else prefix
        dst = f"b/{rest}" if prefix.startswith(("a/", "b/")) else prefix
    first = parsed.files[0].line if parsed.files else 1
    lines = data.split(b"\n")
    preamble = b"\n".join(lines[: first - 1]) + b"\n" if first > 1 else b""
    return (src, dst), preamble


def _recheck_later(
    trial: Patchset, env: Environment, index: int, real_path: Path
) -> dict[str, str]:
    """The status of every patch after ``index`` on the patchset as it will be; refuses when
    one of them would no longer apply."""
    plan = make_plan(trial, env)
    later = plan.reports[index + 1 :]
    broken = [r for r in later if r.status in BLOCKING]
    if broken:
        details = []
        for r in broken:
            for h in r.inspection.hunks:
                if h.state.value not in ("applied", "pending"):
                    unit = "edit" if r.patch.kind == "replace" else "hunk"
                    details.append(f"{r.id}: {h.file} {unit} {h.index}: {h.state.value}")
        raise RefusedError(
            f"refreshing {plan.reports[index].id} would break the patch(es) after it: "
            + ", ".join(f"{r.id} ({r.status.value})" for r in broken)
            + "; nothing was written",
            file=real_path,
            details=details,
        )
    return {r.id: r.status.value for r in later}
