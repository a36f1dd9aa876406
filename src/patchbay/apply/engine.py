"""Apply a patchset: the one place that writes.

Data flows one way: :func:`~patchbay.apply.plan.make_plan` loads the patchset and every
patch's content, resolves the targets, checks the base guard and judges every patch in order on
a :class:`~patchbay.environment.tree.Tree` (:mod:`patchbay.apply.judge`; each pending patch
stages its result for the next); this module decides, and only then writes, inside one
:class:`~patchbay.apply.transaction.Transaction` that restores every touched file on any
failure. Revert and verify are :mod:`patchbay.apply.revert` and :mod:`patchbay.apply.verify`.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..diff.hunkview import closest_lines, counts_text, hunk_counts, hunk_sentence, mixed
from ..environment.owners import Owners
from ..environment.paths import unwritable_folder
from ..environment.targets import Environment, read_again
from ..environment.tree import Tree
from ..errors import ApplyFailed, InputError, PatchbayError, RefusedError
from ..kinds import KINDS, LoadedPatch, PendingPatch
from ..options import RunOptions
from ..patchset.model import Patchset
from .applied_identity import identity as noop_identity
from .folders import (
    beside_replaced,
    drop_bytecode,
    folder_items_above,
    left_by_the_run,
    missing_parents,
    mode_after,
    mode_and_owner,
    replaced_folders,
    space_needed,
)
from .interrupted import interrupted, journal_roots, recover_interrupted, reread_patchset
from .journal import fault_point
from .ledger import FileRecord, Ledger, LedgerEntry, sha256_bytes, sha256_or_none
from .plan import load_patches, make_plan
from .results import BLOCKING, ApplyResult, PatchReport, PatchStatus, Plan
from .revert import entries_to_revert, revert_entries
from .statelock import state_lock

if TYPE_CHECKING:
    from .compiled import CompiledPlan
from .transaction import Transaction


def upgrade_command(plan: Plan) -> str:
    """The exact command that moves this environment to the patchset as it is now."""
    env = plan.env
    where = f"--python {env.python}" if env.python else f"--root {env.tree_root}"
    return f"patchbay apply {plan.patchset.folder} {where} --upgrade"


def _refuse_blocking(plan: Plan, upgrade: bool) -> None:
    """Refuse what blocks the run (a failed guard, stale ledger entries without ``upgrade``,
    a blocking patch, an unwritable folder); a distribution installed over recorded patches is
    said first in the details, since the patches were judged afresh on its files."""
    try:
        _refuse(plan, upgrade)
    except RefusedError as exc:
        exc.details[:0] = [r.sentence() for r in plan.replaced]
        raise


def _refuse(plan: Plan, upgrade: bool) -> None:
    if not plan.guard.ok:
        details = list(plan.guard.failures)
        if plan.ledger.has_orphan_blobs():
            details.append(
                f"the state folder {plan.env.state_dir} holds saved originals but no ledger: "
                "was the ledger deleted, or is --state-dir different from the first run?"
            )
        raise RefusedError(
            "base guard failed: this is not the image the patchset was written for (or it was "
            "modified outside patchbay); nothing was changed",
            file=plan.patchset.path,
            details=details,
        )
    if plan.stale and not upgrade:
        ids = ", ".join(e.patch_id for e in plan.stale)
        raise RefusedError(
            f"the ledger holds versions of {ids} that differ from the patchset (patch edited or "
            "removed after it was applied); nothing was changed. Run "
            f"`{upgrade_command(plan)}` to revert them and apply the patchset as it is now, in "
            "one all-or-nothing step",
            file=plan.patchset.path,
        )
    blocking = plan.with_status(*BLOCKING)
    if blocking:
        first = blocking[0]
        details = []
        for report in blocking:
            if report.status is PatchStatus.UNLOCKED:
                details.append(f"{report.id}: {report.loaded.unlocked}")
                continue
            source = report.loaded.source or str(plan.patchset.path)
            kind, mine = report.patch.kind, report.by_patchbay
            hunks = report.inspection.hunks
            if mixed(hunks, kind, by_patchbay=mine):
                counts = counts_text(hunk_counts(hunks, kind, by_patchbay=mine))
                details.append(f"{report.id}: {counts}")
            for h in hunks:
                origin = f"{source}:{h.patch_line}: " if h.patch_line else ""
                details.append(f"{origin}{report.id}: {hunk_sentence(h, kind, by_patchbay=mine)}")
                details.extend(f"    {line}" for line in closest_lines(h))
        raise RefusedError(
            f"{first.status.value}: {len(blocking)} patch(es) cannot be applied as they stand; "
            "nothing was changed",
            file=first.loaded.source or plan.patchset.path,
            patch_id=first.id,
            details=details,
        )
    _refuse_unwritable(plan)


def _refuse_unwritable(plan: Plan) -> None:
    """Refuse a pending patch that would write a file in a folder this user can enter but
    not write (:func:`patchbay.environment.paths.unwritable_folder`), before anything is
    written, as an unenterable folder is refused while planning.

    Raises:
        RefusedError: naming the file, the folder and the patch; nothing was changed.
    """
    checked: set[tuple[str, str]] = set()  # (target, folder of the file): one look each
    for report in plan.with_status(PatchStatus.PENDING):
        for change in report.inspection.changes:
            if change.before == change.after and change.executable is None:
                continue
            key = (change.target, os.path.dirname(change.path))
            if key in checked:
                continue
            checked.add(key)
            root = plan.env.roots[change.target]
            found = unwritable_folder(root, change.path)
            if found is None:
                continue
            folder, why = found
            shown = f"folder {folder}" if folder else "the target root"
            how = (
                "deletes a file by removing its name from its folder"
                if change.after is None
                else "writes a file as a new one renamed into its folder"
            )
            raise RefusedError(
                f"{shown} cannot be written ({why}): patchbay {how}; make it writable for "
                "this user, or run as its owner; nothing was changed",
                file=root / change.path,
                patch_id=report.id,
            )


def plan_apply(
    patchset: Patchset,
    env: Environment,
    *,
    upgrade: bool = False,
    options: RunOptions | None = None,
) -> Plan:
    """The plan ``apply`` would carry out, with the same refusals; nothing is written (no
    lock is taken, no pip dry run or download is made): ``apply --dry-run``.

    Raises:
        InputError: missing or corrupt patch content.
        RefusedError: as :func:`apply_patchset` (guard, conflicts, a stale ledger entry
            without ``upgrade``).
    """
    loaded = load_patches(patchset, _compiled(options, patchset))
    plan = make_plan(patchset, env, loaded, options=options)
    _refuse_blocking(plan, upgrade)
    return plan


def _compiled(options: RunOptions | None, patchset: Patchset) -> CompiledPlan | None:
    """The compiled plan of the bundle among ``options`` (:mod:`patchbay.apply.compiled`)."""
    if options is None or options.bundle is None:
        return None
    from .compiled import compiled_for

    return compiled_for(options.bundle, patchset.name)


def apply_patchset(
    patchset: Patchset,
    env: Environment,
    *,
    upgrade: bool = False,
    lock_timeout: float = 0.0,
    options: RunOptions | None = None,
    record_identity: bool = True,
) -> ApplyResult:
    """Apply every pending patch of ``patchset`` in ``env`` as one transaction.

    Args:
        patchset: the loaded patchset.
        env: the resolved engine environment.
        upgrade: revert ledger entries whose patch was edited or removed, then apply, all in
            the same transaction.
        lock_timeout: seconds to wait for another run's lock.
        options: network, cache and bundle options (artifacts, package pins).
        record_identity: record what a verified no-op checks (:mod:`patchbay.apply.noop`);
            False for a part of the patchset (``edit``'s patches up to one): its identity
            would match the whole patchset's file and answer "nothing to do" for it.

    Returns:
        The :class:`ApplyResult`; ``nothing_to_do`` when every patch was already present (no
        file, not even the ledger, is rewritten then).

    Raises:
        InputError: missing or corrupt patch content (nothing changed).
        RefusedError: base guard failed, a patch conflicts, is partial, ambiguous or outdated,
            or the lock is held (nothing changed).
        ApplyFailed: a write failed; every file the run touched was restored.
    """
    loaded = load_patches(patchset, _compiled(options, patchset))
    recovered = []
    if interrupted(env):
        # a killed run left its journal: put its files back before judging the tree
        with state_lock(env.state_dir, lock_timeout):
            recovered = recover_interrupted(env, patchset)
        # the environment was read before the recovery, which may have put packages back
        env = read_again(env)
        # and the patchset too, whose files a killed capture or refresh was writing
        patchset, loaded = reread_patchset(patchset, loaded, recovered)
    plan = make_plan(patchset, env, loaded, options=options)
    _refuse_blocking(plan, upgrade)
    if not plan.with_status(PatchStatus.PENDING) and not plan.stale and not plan.superseded:
        if record_identity:
            _refresh_identity(plan, loaded)
        return ApplyResult(plan, recovered=recovered)
    with state_lock(env.state_dir, lock_timeout):
        rolled_back = recover_interrupted(env, patchset)
        recovered += rolled_back
        if rolled_back or not _still_as_judged(plan):
            # another run moved the tree between the plan and the lock (its pins too): judge
            # it as it is now
            env = read_again(env)
            patchset, loaded = reread_patchset(patchset, loaded, rolled_back)
            plan = make_plan(patchset, env, loaded, options=options)
            _refuse_blocking(plan, upgrade)
        if not plan.stale:
            _preflight(plan, options)
        result = ApplyResult(plan, recovered=recovered)
        if not plan.with_status(PatchStatus.PENDING) and not plan.stale and not plan.superseded:
            return result
        journal = env.state_dir / "journal"
        with Transaction(journal, journal_roots(env, patchset), store=plan.ledger.blob_dir) as txn:
            ledger = plan.ledger
            if plan.stale:
                result.reverted = revert_entries(
                    patchset.name,
                    entries_to_revert(ledger, patchset.name, plan.stale),
                    env,
                    ledger,
                    txn,
                    options,
                ).ids
                txn.doing = "writing the ledger"
                ledger.save(txn)
                # the reverts moved distributions (a pin taken off): judge what is there now
                env = read_again(env)
                plan = make_plan(patchset, env, loaded, options=options)
                result.plan = plan
                _refuse_blocking(plan, upgrade=True)
                _preflight(plan, options)
                ledger = plan.ledger
            # records a newer build was installed over describe files no longer there: they
            # go (the patches were judged afresh; a pending one is recorded anew below)
            for pid in plan.superseded:
                ledger.remove(patchset.name, pid)
            result.forgot = plan.superseded
            pending = plan.with_status(PatchStatus.PENDING)
            _write_pending(patchset, pending, env, ledger, txn, options)
            result.applied = [r.id for r in pending]
            # what a re-run checks to answer "nothing to do" without the engine (noop.py)
            ledger.set_identity(
                patchset.name, noop_identity(plan, loaded) if record_identity else None
            )
            txn.doing = "writing the ledger"
            ledger.save(txn)
            txn.commit()
        if result.forgot:
            ledger.prune_blobs()
    return result


def _refresh_identity(plan: Plan, loaded: list[LoadedPatch]) -> None:
    """After the full engine found nothing to do: record the identity a verified no-op checks
    (:mod:`patchbay.apply.noop`) when the ledger's is missing or stale (an edited ``patchset.yaml``,
    a ledger of an older patchbay), so that the next re-run takes the fast path again.

    Only a cache: done only when a ledger exists, the lock is free at once and the tree is
    still as judged; anything in the way (a read-only state folder, another run) leaves
    everything as it was, silently.
    """
    ledger = plan.ledger
    if not ledger.path.is_file():
        return
    fresh = noop_identity(plan, loaded)
    if fresh is None or _same_identity(ledger.identity(plan.patchset.name), fresh):
        return
    env = plan.env
    try:
        with state_lock(env.state_dir, 0.0):
            if interrupted(env) or not _still_as_judged(plan):
                return
            with Transaction(env.state_dir / "journal", journal_roots(env, plan.patchset)) as txn:
                ledger.set_identity(plan.patchset.name, noop_identity(plan, loaded))
                txn.doing = "writing the ledger"
                ledger.save(txn)
                txn.commit()
    except (PatchbayError, OSError):
        pass


def _same_identity(recorded: dict[str, Any] | None, fresh: dict[str, Any]) -> bool:
    """Whether a recorded identity is ``fresh`` (compared as JSON: lists, not tuples)."""
    return recorded is not None and json.dumps(recorded, sort_keys=True) == json.dumps(
        fresh, sort_keys=True
    )


def _still_as_judged(plan: Plan) -> bool:
    """Whether the environment is still what ``plan`` judged: every file it read has the same
    bytes and mode (files it found absent are still absent), and the ledger the same entries.

    A plan is made before the lock is taken (a run with nothing to do needs no lock); under the
    lock this check stands in for planning again. Another run that wrote has changed the
    ledger; one that failed restored its files, and bytes are compared, never times.
    """
    if plan.seen is None or not plan.seen.unchanged():
        return False
    try:
        return Ledger(plan.env.state_dir).all_entries() == plan.ledger.all_entries()
    except InputError:
        return False


def _preflight(plan: Plan, options: RunOptions | None) -> None:
    """Each pending patch's last checks (fetches into the cache, pip's dry run), before any
    write; a refusal here leaves everything as it was."""
    tree = Tree(plan.env.roots, plan.env, options)
    tree.protected = set(plan.patchset.spec.protected)
    tree.folder = plan.patchset.folder
    for report in plan.with_status(PatchStatus.PENDING):
        item = PendingPatch(report.patch, report.loaded, report.inspection)
        try:
            KINDS[report.patch.kind].preflight(item, tree)
        except PatchbayError as exc:
            exc.patch_id = exc.patch_id or report.id
            raise


def _batches(reports: list[PatchReport]) -> list[list[PatchReport]]:
    """Runs of consecutive patches of one kind and one target (a kind may write a run at once;
    order across runs is kept, so a later patch always sees the result of an earlier one)."""
    runs: list[list[PatchReport]] = []
    for report in reports:
        key = (report.patch.kind, report.patch.target)
        if runs and (runs[-1][0].patch.kind, runs[-1][0].patch.target) == key:
            runs[-1].append(report)
        else:
            runs.append([report])
    return runs


def _write_pending(
    patchset: Patchset,
    reports: list[PatchReport],
    env: Environment,
    ledger: Ledger,
    txn: Transaction,
    options: RunOptions | None = None,
) -> None:
    """Write every pending patch, check the result against the plan, record it in the ledger.

    Every path is journaled before the first write; any failure propagates and the caller's
    transaction restores everything.
    """
    tree = Tree(env.roots, env, options)
    tree.folder = patchset.folder
    # keyed by location (a real path): one file reached through two targets is one file
    planned: dict[str, bytes | None] = {}
    owner: dict[str, str] = {}  # the first patch that changes each path
    created: dict[str, list[str]] = {}
    modes: dict[str, tuple[int, list[int]] | None] = {}  # permission bits, [uid, gid]
    emptied: dict[str, list[list[Any]]] = {}  # folders above a deleted file, as they were
    digests: dict[int, str] = {}  # id(original bytes) -> their sha256, hashed once
    for report in reports:  # a path through a file the run deletes first resolves (see Tree)
        for change in report.inspection.changes:
            if change.after is None:
                tree.stage(change.target, change.path, None)
    changes = [(tree.resolve(c.target, c.path), c) for r in reports for c in r.inspection.changes]
    changed = Counter(tree.location(c.target, c.path) for _, c in changes)
    txn.check_space(space_needed(env, ledger, [(p, c.before, c.after) for p, c in changes]))
    txn.doing = "journaling the files this run changes"
    folders: set[str] = set()  # folders found to exist (nothing is written yet)
    # files some patch deletes: a deletion may remove the folders it empties (as git does),
    # which a rollback then makes again as they were
    deleted = {tree.location(c.target, c.path) for _, c in changes if c.after is None}
    replaced = replaced_folders((p, c.before, c.after) for p, c in changes)
    for report in reports:
        for change in report.inspection.changes:
            path = tree.resolve(change.target, change.path)
            key = tree.location(change.target, change.path)
            if key not in created:  # folders missing before the first write of this file
                created[key] = missing_parents(path, env.roots[change.target], folders)
                modes[key] = mode_and_owner(path)
                if key in deleted:
                    emptied[key] = folder_items_above(path, env.roots[change.target])
                digest = None
                if change.before is not None:
                    digest = digests[id(change.before)] = sha256_bytes(change.before)
                # the original becomes the ledger's blob of it (a link), when it can
                txn.save(
                    path,
                    digest=digest,
                    deleting=key in deleted,
                    beside_in=beside_replaced(path, replaced),
                )
            planned[key] = change.after
            owner.setdefault(key, report.id)
    txn.sync()
    running: list[str] = []
    txn.doing = "writing the patches"
    try:
        for batch in _batches(reports):
            running = [r.id for r in batch]
            items = [PendingPatch(r.patch, r.loaded, r.inspection) for r in batch]
            KINDS[batch[0].patch.kind].apply(items, tree, txn)
            fault_point("batch-written")
        running = []
        pycache: dict[str, bool] = {}
        for where, data in planned.items():
            try:
                with open(where, "rb") as fh:
                    written: bytes | None = fh.read()
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                written = None  # (a file a folder of its name replaced, and the converse)
            if written != data:
                raise ApplyFailed(f"{where}: the written file differs from the planned result")
            drop_bytecode(where, txn, pycache)
    except (PatchbayError, OSError) as exc:
        raise _write_error(
            exc, running, _struck(exc, owner) or _first_unwritten(planned, owner)
        ) from None
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    owners = Owners(env.roots, patchset.spec.targets)  # read after the writes (a pin's too)
    txn.doing = "storing the originals in the ledger's blob store"
    for report in reports:
        records = []
        for change in report.inspection.changes:
            before = None
            if change.before is not None:
                digest = digests.get(id(change.before))
                before = ledger.store_blob(change.before, txn, digest=digest)
            key = tree.location(change.target, change.path)
            made = created.pop(key, [])
            after = sha256_or_none(change.after)
            mode, owner = modes.get(key) or (None, None)
            folders = []
            if change.after is None and key in emptied:
                root = env.roots[change.target]
                folders = left_by_the_run(emptied.pop(key), root, txn.id)
            records.append(
                FileRecord(change.target, change.path, before, after, made, mode, owner, folders)
            )
            changed[key] -= 1
            if changed[key]:  # what the next patch of this file starts from
                modes[key] = mode_after(change, modes.get(key), key)
        ledger.put(
            patchset.name,
            LedgerEntry(
                patch_id=report.id,
                kind=report.patch.kind,
                patch_sha256=report.loaded.sha256,
                patch_identity=report.loaded.identity,
                applied_at=now,
                tool_version=__version__,
                files=records,
                extra=report.inspection.record,
                distributions=owners.written_against(records),
            ),
        )
    if reports:
        ledger.set_source(patchset.name, patchset.path)


def _first_unwritten(
    planned: dict[str, bytes | None], owner: dict[str, str]
) -> tuple[Path, str] | None:
    """The first planned path (in patch order) whose bytes are not the planned ones yet, with
    the patch that changes it: where a write failure struck."""
    for where, data in planned.items():
        path = Path(where)
        try:
            on_disk: bytes | None = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            on_disk = None
        except OSError:
            return path, owner[where]
        if on_disk != data:
            return path, owner[where]
    return None


def _struck(exc: PatchbayError | OSError, owner: dict[str, str]) -> tuple[Path, str] | None:
    """The file (and its patch) a failed write names itself: the error's ``file`` (git's error
    line quotes it, :func:`patchbay.diff.gitapply.git_apply`) or an OSError's ``filename``."""
    named = exc.file if isinstance(exc, PatchbayError) else exc.filename
    if not named:
        return None
    where = os.fsdecode(named)
    return (Path(where), owner[where]) if where in owner else None


def _write_error(
    exc: PatchbayError | OSError, running: list[str], struck: tuple[Path, str] | None
) -> PatchbayError:
    """One error for a failed write, naming the patch and file where it struck."""
    if isinstance(exc, OSError):
        error: PatchbayError = ApplyFailed(f"write failed: {exc.strerror or exc}")
        error.file = exc.filename
    else:
        error = exc
    if struck is not None:
        path, patch_id = struck
        error.patch_id = patch_id
        error.file = str(path)
    elif len(running) == 1:
        error.patch_id = error.patch_id or running[0]
    return error  # the transaction adds whether every file was restored
