"""What a file was before the edits ``capture`` (and ``refresh``) diff: the result of the
patch that wrote it last, of this patchset or of another one in the environment, rebuilt from
the ledger's original and checked against the recorded hash; else the image's pristine bytes
(see environment/pristine.py), and the mode it had, as git keeps it."""

from __future__ import annotations

import os

from ..apply.ledger import FileRecord, Ledger, LedgerEntry, sha256_or_none
from ..apply.plan import load_patches
from ..diff.identity import same_patch
from ..environment.pristine import Pristine
from ..environment.targets import Environment
from ..environment.tree import Tree
from ..errors import PatchbayError, RefusedError
from ..kinds import KINDS, LoadedPatch
from ..patchset.loading import load_patchset
from ..patchset.model import Patchset


def state_before(
    patchset: Patchset,
    env: Environment,
    ledger: Ledger,
    loaded: list[LoadedPatch],
    pristine: Pristine,
    path: str,
    target: str,
    rel: str,
) -> tuple[bytes | None, str]:
    """What ``path`` (absolute; ``rel`` under ``target``) held before the edits, and where that
    came from: the result of the last patch patchbay applied to it, rebuilt from the ledger's
    original and checked against the recorded hash, or else its pristine bytes.

    Raises:
        RefusedError: another patchset wrote it last; the patch that did changed since; its
            result cannot be rebuilt; no pristine copy matches RECORD.
    """
    last = _last_record(ledger, env, path)
    if last is None:
        return pristine.original(target, rel)
    name, entry, rec = last
    who = f"patch {entry.patch_id}"
    if name != patchset.name:
        who = f"patch {entry.patch_id} of patchset {name}"
        patchset, loaded = _writer(ledger, name, who, rel, path, patchset, entry.files)
    index = next((i for i, p in enumerate(patchset.patches) if p.id == entry.patch_id), None)
    if index is None or not same_patch(entry, loaded[index]):
        raise RefusedError(
            f"{rel} was last written by {who}, which the patchset no longer has as applied "
            f"(edited or removed since); run `patchbay apply --upgrade` on {patchset.path} "
            "first",
            file=path,
            patch_id=entry.patch_id,
        )
    if rec.after is None:
        return None, f"the result of {who} (which deleted it)"
    patch = patchset.patches[index]
    if patch.kind not in ("diff", "replace"):
        raise RefusedError(
            f"{rel} is written whole by {who} ({patch.kind}); edit its source instead",
            file=path,
            patch_id=patch.id,
        )
    # the ledger keeps what each file was before the patch; the patch on it gives its result
    tree = Tree(env.roots, env)
    for r in entry.files:
        tree.stage(r.target, r.path, None if r.before is None else ledger.blob(r.before))
    inspection = KINDS[patch.kind].inspect(patch, loaded[index], tree)
    for change in inspection.changes:
        same = (change.target, change.path) == (rec.target, rec.path)
        if same and sha256_or_none(change.after) == rec.after:
            return change.after, f"the result of {who} (from the ledger)"
    raise RefusedError(
        f"cannot rebuild what {who} wrote to {rel} from the ledger's original (the result does "
        f"not have the recorded sha256 {rec.after})",
        file=path,
        patch_id=patch.id,
    )


def _last_record(
    ledger: Ledger, env: Environment, path: str
) -> tuple[str, LedgerEntry, FileRecord] | None:
    """The newest ledger record (of any patchset) of the file at ``path`` (absolute):
    ``(patchset name, entry, record)``, or None."""
    last = None
    for name, entries in ledger.all_entries().items():
        for entry in entries:
            for rec in entry.files:
                root = env.roots.get(rec.target)
                if root is not None and os.path.normpath(os.path.join(root, rec.path)) == path:
                    last = (name, entry, rec)
    return last


def executable_before(
    env: Environment, ledger: Ledger, pristine: Pristine, path: str, target: str, rel: str,
    base: bytes | None,
) -> bool | None:  # fmt: skip
    """Whether the file was executable before the edits (git keeps that one bit: ``old
    mode``/``new mode``): as the newest ledger record of it found it, or as the image shipped
    it (:meth:`Pristine.executable`); None when nothing tells (the file's mode now stands)."""
    if base is None:
        return None
    last = _last_record(ledger, env, path)
    if last is not None:
        mode = last[2].mode_before
        return None if mode is None else bool(mode & 0o100)
    return pristine.executable(target, rel, base)


def _writer(
    ledger: Ledger,
    name: str,
    who: str,
    rel: str,
    path: str,
    mine: Patchset,
    records: list[FileRecord],
) -> tuple[Patchset, list[LoadedPatch]]:
    """Another patchset that wrote ``rel`` last, loaded from the file the ledger recorded its
    entries from, so that the new patch starts from what that patchset's patch left.

    Args:
        ledger, name: the ledger and the other patchset's name in it.
        who, rel, path: how messages name the patch and the file (relative, absolute).
        mine: the patchset the capture is for; records: the other patch's file records.

    Raises:
        RefusedError: the ledger names no file for it (recorded by an older patchbay), the file
            is gone, it is no longer that patchset, or its patch goes through a target that
            ``mine`` does not declare alike (the files could not be found the same way).
    """
    source = ledger.source(name)
    redo = (
        f"apply patchset {name} again with this patchbay (so the ledger names its file), "
        "or capture the edits in that patchset"
    )
    if source is None or not source.is_file():
        where = "names no file of it" if source is None else f"names {source}, which is gone"
        raise RefusedError(
            f"{rel} was last written by {who}, and the ledger {where}: the new patch must "
            f"start from what that patch left; {redo}",
            file=path,
        )
    try:
        other = load_patchset(source)
        other_loaded = load_patches(other)
    except PatchbayError as exc:
        raise RefusedError(
            f"{rel} was last written by {who}; its patchset file {source} does not load "
            f"({exc}); {redo}",
            file=path,
        ) from None
    if other.name != name:
        raise RefusedError(
            f"{rel} was last written by {who}, but {source} is now patchset {other.name}; {redo}",
            file=path,
        )
    for target in {r.target for r in records}:
        if other.spec.targets.get(target) != mine.spec.targets.get(target):
            raise RefusedError(
                f"{rel} was last written by {who} through its target {target!r}, which "
                f"{mine.path} does not declare alike; declare it the same way, or capture the "
                "edits in that patchset",
                file=path,
            )
    return other, other_loaded
