"""Preflight, apply, revert and verify a patchset: the one place that decides and writes.

Data flows one way: load the patchset and every patch's content, resolve the targets, check the
base guard, classify every patch in order on a :class:`~patchbay.environment.tree.Tree` (each
pending patch stages its result for the next), decide, and only then write, inside one
:class:`~patchbay.apply.transaction.Transaction` that restores every touched file on any failure.

Per-patch status combines the content state with the ledger:

========== ===============================================================================
pending    applies cleanly
applied    present, and the ledger says patchbay applied this very patch content
redundant  present, but patchbay did not apply it: the image already ships it (remove it)
outdated   the ledger holds an older version of this patch (the patch file was edited)
partial    some hunks present, others pending
conflict   some hunk neither applies nor is present
ambiguous  some hunk's context occurs more than once; refusing to guess
unlocked   remote content or an artifact hash is not pinned yet (``patchbay vendor``)
========== ===============================================================================
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any

import msgspec

from .. import __version__
from ..diff.hunks import PRESENT, HunkState
from ..diff.hunkview import closest_lines, counts_text, hunk_counts, hunk_sentence, mixed
from ..diff.identity import same_patch
from ..environment.paths import PathRejected, resolve_under, unwritable_folder
from ..environment.targets import Environment, read_again
from ..environment.tree import DiskView, NoFileHere, Tree
from ..errors import ApplyFailed, InputError, PatchbayError, RefusedError
from ..kinds import KINDS, ContentState, Inspection, LoadedPatch, PendingPatch
from ..kinds.base import FileChange, aggregate
from ..kinds.diffwrite import permissions, process_umask
from ..options import RunOptions
from ..patchset.model import Patchset
from .journal import (
    ENTRY_BYTES,
    MANIFEST,
    MAX_ID,
    fault_point,
    folder_item_ok,
    folders_above,
    put_folder_back,
    write_atomic,
)
from .ledger import FileRecord, Ledger, LedgerEntry, sha256_bytes, sha256_or_none
from .noop import identity as noop_identity
from .recovery import recover
from .statelock import not_entered, state_lock, unwritable
from .transaction import Transaction


class PatchStatus(str, Enum):
    """Status of a patch in an environment (see the module docstring)."""

    PENDING = "pending"
    APPLIED = "applied"
    REDUNDANT = "redundant"
    OUTDATED = "outdated"
    PARTIAL = "partial"
    CONFLICT = "conflict"
    AMBIGUOUS = "ambiguous"
    UNLOCKED = "unlocked"


BLOCKING = {PatchStatus.PARTIAL, PatchStatus.CONFLICT, PatchStatus.AMBIGUOUS, PatchStatus.UNLOCKED}


class PatchReport(msgspec.Struct):
    """One patch's status, with its hunks and what applying it would change."""

    index: int
    patch: Any
    loaded: LoadedPatch
    inspection: Inspection
    status: PatchStatus
    entry: LedgerEntry | None
    notes: list[str] = msgspec.field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.patch.id)

    @property
    def by_patchbay(self) -> bool:
        """Whether what is present of this patch was written by patchbay: the ledger records
        it and it is applied (or an older version of it is)."""
        return self.entry is not None and self.status in (
            PatchStatus.APPLIED,
            PatchStatus.OUTDATED,
        )

    @property
    def applied_by(self) -> str | None:
        """``patchbay``, ``image`` (present, not applied by patchbay) or None (not present);
        never ``patchbay`` beside a status that says the patch is not there."""
        if self.by_patchbay:
            return "patchbay"
        return "image" if self.status is PatchStatus.REDUNDANT else None

    def to_json(self) -> dict[str, Any]:
        from ..diff.hunkview import hunk_counts

        kind = self.patch.kind
        return {
            "id": self.id,
            "kind": kind,
            "status": self.status.value,
            "content_state": self.inspection.state.value,
            "patch_sha256": self.loaded.sha256,
            "patch_identity": self.loaded.identity,
            "applied_by": self.applied_by,
            "ledger": None
            if self.entry is None
            else {
                "patch_sha256": self.entry.patch_sha256,
                "patch_identity": self.entry.patch_identity,
                "applied_at": self.entry.applied_at,
                "tool_version": self.entry.tool_version,
                "matches_tree": self.by_patchbay,
            },
            "hunk_counts": hunk_counts(self.inspection.hunks, kind, by_patchbay=self.by_patchbay),
            "hunks": [h.to_json() for h in self.inspection.hunks],
            "notes": self.notes,
        }


class GuardResult(msgspec.Struct):
    """Outcome of the base guard: one line per check, and the failed ones."""

    checks: list[dict[str, Any]] = msgspec.field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        return [c["message"] for c in self.checks if not c["ok"]]

    @property
    def ok(self) -> bool:
        return not self.failures


class Plan(msgspec.Struct):
    """Everything preflight learned; nothing has been written."""

    patchset: Patchset
    env: Environment
    ledger: Ledger
    guard: GuardResult
    reports: list[PatchReport]
    stale: list[LedgerEntry]
    seen: DiskView | None = None

    def with_status(self, *statuses: PatchStatus) -> list[PatchReport]:
        return [r for r in self.reports if r.status in statuses]

    def to_json(self) -> dict[str, Any]:
        return {
            "patchset": self.patchset.name,
            "image": msgspec.to_builtins(self.patchset.spec.image),
            "environment": self.env.describe(),
            "guard": {"ok": self.guard.ok, "checks": self.guard.checks},
            "patches": [r.to_json() for r in self.reports],
            "stale_ledger_entries": [e.patch_id for e in self.stale],
        }


class ApplyResult(msgspec.Struct):
    """What an apply did."""

    plan: Plan
    applied: list[str] = msgspec.field(default_factory=list)
    reverted: list[str] = msgspec.field(default_factory=list)
    recovered: list[Path] = msgspec.field(default_factory=list)

    @property
    def nothing_to_do(self) -> bool:
        return not self.applied and not self.reverted


def apply_notes(plan: Plan) -> list[str]:
    """``note:`` lines of ``apply``: each patch's notes (not a redundant one's: the redundant
    line says it), and each hunk found upstream with its context moved or away from its
    declared line."""
    out = []
    for report in plan.reports:
        if report.status is not PatchStatus.REDUNDANT:
            out += [f"note: {report.id}: {note}" for note in report.notes]
        for h in report.inspection.hunks:
            if h.moved is not None or (h.offset and h.index):
                sentence = hunk_sentence(h, report.patch.kind, by_patchbay=report.by_patchbay)
                out.append(f"note: {report.id}: {sentence}")
    return out


# -- loading and planning -------------------------------------------------------------------


def load_patches(patchset: Patchset) -> list[LoadedPatch]:
    """Read every patch's content (diff files parsed, paths checked).

    Raises:
        InputError: the first missing or corrupt patch, with every other problem as details.
    """
    loaded: list[LoadedPatch] = []
    problems: list[InputError] = []
    for i, patch in enumerate(patchset.patches):
        try:
            loaded.append(KINDS[patch.kind].load(patch, patchset, i))
        except InputError as exc:
            exc.patch_id = exc.patch_id or patch.id
            problems.append(exc)
    if not problems:
        problems.extend(_whole_file_overlaps(patchset, loaded))
    if problems:
        first = problems[0]
        first.details.extend(str(p) for p in problems[1:])
        raise first
    return loaded


def _touched_paths(patch: Any, loaded: LoadedPatch) -> tuple[list[str], list[str]]:
    """(paths the patch writes whole, paths it edits), relative to its target root."""
    if patch.kind == "artifact":
        return [f.dest for f in patch.files], []
    if patch.kind == "replace":
        return [], [e.file for e in patch.edits]
    if patch.kind == "diff" and loaded.data is not None:
        return [], [p for fp in loaded.data.files for p in (fp.old_path, fp.new_path) if p]
    return [], []


def _whole_file_overlaps(patchset: Patchset, loaded: list[LoadedPatch]) -> list[InputError]:
    """A file an artifact writes whole may be written by no other patch: the two would undo
    each other on every run (neither could ever be found applied) and a revert could not tell
    whose bytes to restore."""
    targets = patchset.spec.targets

    def key(target: str, rel: str) -> tuple[str, str]:
        t = targets[target]
        if t.package is None:  # a home folder: its own root, shared with no package
            return f"~{target}", rel
        return t.package, f"{t.path}/{rel}" if t.path else rel

    whole: dict[tuple[str, str], str] = {}
    edits: dict[tuple[str, str], str] = {}
    problems = []
    for i, (patch, lp) in enumerate(zip(patchset.patches, loaded, strict=True)):
        if patch.target is None:
            continue
        written, edited = _touched_paths(patch, lp)
        for rel in written:
            k = key(patch.target, rel)
            other = whole.get(k) or edits.get(k)
            if other is not None:
                problems.append(_overlap(patchset, i, patch.id, rel, other))
            whole.setdefault(k, patch.id)
        for rel in edited:
            k = key(patch.target, rel)
            if k in whole and whole[k] != patch.id:
                problems.append(_overlap(patchset, i, patch.id, rel, whole[k]))
            edits.setdefault(k, patch.id)
    return problems


def _overlap(patchset: Patchset, index: int, patch_id: str, rel: str, other: str) -> InputError:
    return InputError(
        f"{rel} is also written by patch {other}, and one of them replaces the whole file (an "
        "artifact): they would undo each other; give each file to one patch",
        file=patchset.path,
        line=patchset.patch_line(index),
        patch_id=patch_id,
    )


def check_guard(
    patchset: Patchset, env: Environment, ledger: Ledger, tree: Tree | None = None
) -> GuardResult:
    """Check the base guard: distribution versions and pristine file hashes.

    A guarded file that patchbay itself patched passes when the ledger shows it started from
    the pristine hash and the file still has the hash patchbay last wrote. ``tree``: the run's
    tree, to read the guarded files through (and record them as seen); a fresh one by default.
    """
    result = GuardResult()
    guard = patchset.spec.base
    for name, spec in guard.distributions.items():
        from packaging.specifiers import SpecifierSet  # only where a pin is guarded
        from packaging.version import InvalidVersion, Version

        installed = env.distributions.get(name)
        check: dict[str, Any] = {
            "kind": "distribution",
            "name": name,
            "required": spec,
            "installed": installed,
        }
        if env.python is None and installed is None:
            check.update(
                ok=False,
                message=f"{name}: no {name}-*.dist-info under {env.tree_root}, so {spec!r} "
                "cannot be checked (give --python, or unpack the image with its dist-info "
                "folders)",
            )
        elif installed is None:
            check.update(ok=False, message=f"{name} is not installed (required {spec})")
        else:
            try:
                ok = SpecifierSet(spec, prereleases=True).contains(
                    Version(installed), prereleases=True
                )
            except InvalidVersion:
                ok = False
            check.update(
                ok=ok,
                message=f"{name} {installed} {'satisfies' if ok else 'does not satisfy'} {spec}",
            )
        result.checks.append(check)
    tree = tree or Tree(env.roots)
    history = _file_history(ledger, patchset.name, tree)
    for fg in guard.files:
        data = tree.on_disk(fg.target, fg.path)
        current = sha256_or_none(data)
        ok = current == fg.sha256
        how = "is pristine"
        if not ok:
            first_before, last_after = history.get(
                tree.location_of(fg.target, fg.path), (None, None)
            )
            if first_before == fg.sha256 and current == last_after and current is not None:
                ok, how = True, "was pristine before patchbay patched it"
            else:
                how = "is missing" if data is None else f"has sha256 {current}, not {fg.sha256}"
        result.checks.append(
            {
                "kind": "file",
                "target": fg.target,
                "path": fg.path,
                "ok": ok,
                "message": f"{fg.path} {how}",
            }
        )
    return result


def _file_history(
    ledger: Ledger, patchset: str, tree: Tree
) -> dict[object, tuple[str | None, str | None]]:
    """Each file's first recorded ``before`` and last ``after`` hash, keyed by its location
    (:meth:`Tree.location`: one file reached through two targets has one history)."""
    history: dict[object, tuple[str | None, str | None]] = {}
    for entry in ledger.entries(patchset):
        for rec in entry.files:
            key = tree.location_of(rec.target, rec.path)
            first = history[key][0] if key in history else rec.before
            history[key] = (first, rec.after)
    return history


def make_plan(
    patchset: Patchset,
    env: Environment,
    loaded: list[LoadedPatch] | None = None,
    *,
    use_ledger: bool = True,
    options: RunOptions | None = None,
) -> Plan:
    """Classify every patch of ``patchset`` in ``env``, in order; writes nothing.

    With ``use_ledger=False`` the environment is judged as shipped (``patchbay check`` of a
    candidate image): nothing counts as applied by patchbay.

    Raises:
        InputError: a patch's content is missing or corrupt; the ledger is unreadable.
        RefusedError: a patch path is unsafe (escapes its root, goes through a link).
    """
    loaded = loaded if loaded is not None else load_patches(patchset)
    ledger = Ledger(env.state_dir) if use_ledger else Ledger.empty(env.state_dir)
    tree = Tree(env.roots, env, options)
    tree.protected = set(patchset.spec.protected)
    tree.folder = patchset.folder
    guard = check_guard(patchset, env, ledger, tree)
    history = _file_history(ledger, patchset.name, tree)
    pairs = list(zip(patchset.patches, loaded, strict=True))
    # Backward pass, as quilt pops a stack: a patch is judged on the tree with every later
    # applied patch taken off again, so that a later patch editing the same lines does not
    # hide an earlier one. Only content the kind can take off again is unwound.
    unwound = tree.fork()
    # each patch's judgement there, with the contents it read: it holds on the forward tree
    # too when that reads the same contents (most patches of a cold apply: nothing before
    # them is staged on their files, nothing after them was taken off)
    backward: dict[str, tuple[list[tuple[str, str, bytes | None]], Inspection]] = {}
    for patch, lp in reversed(pairs):
        if lp.unlocked:
            continue
        with unwound.tracing() as reads:
            inspection = _inspect(patch, lp, unwound)
        if inspection.state is ContentState.APPLIED and inspection.undo:
            backward[patch.id] = (reads, inspection)
            # taken off as git apply of the reverse patch would: its deletions first, so
            # that a file put back under a folder whose name a file of the patch takes
            # goes through that file staged as deleted (a rename into its folder's place)
            for change in sorted(inspection.undo, key=lambda c: c.before is not None):
                unwound.stage(change.target, change.path, change.before)
                if change.executable is not None:
                    unwound.stage_executable(change.target, change.path, change.executable[0])
        elif getattr(KINDS[patch.kind], "content_only", False):
            backward[patch.id] = (reads, inspection)
    staged: set[str] = set()  # locations the pending patches so far change
    reports = []
    for i, (patch, lp) in enumerate(pairs):
        entry = ledger.find(patchset.name, patch.id)
        if lp.unlocked:
            inspection = Inspection(state=ContentState.CONFLICT, notes=[lp.unlocked])
            reports.append(
                PatchReport(i, patch, lp, inspection, PatchStatus.UNLOCKED, entry, [lp.unlocked])
            )
            continue
        inspection = _judge(patch, lp, tree, backward.pop(patch.id, None), entry, staged)
        if (
            inspection.state is ContentState.PENDING
            and getattr(KINDS[patch.kind], "recheck", False)
            and any(c.before != c.after for c in inspection.changes)
        ):
            _check_reaches_applied(patch, lp, inspection, tree)
        status, notes = _status(inspection, entry, lp, tree, history)
        if status is PatchStatus.PENDING:
            for change in inspection.changes:
                tree.stage(change.target, change.path, change.after)
                if change.executable is not None:
                    tree.stage_executable(change.target, change.path, change.executable[1])
                staged.add(tree.location(change.target, change.path))
            tree.changed.add(patch.id)
        reports.append(PatchReport(i, patch, lp, inspection, status, entry, notes))
    outdated = {r.id for r in reports if r.status is PatchStatus.OUTDATED}
    ids = {p.id for p in patchset.patches}
    stale = [
        e for e in ledger.entries(patchset.name) if e.patch_id not in ids or e.patch_id in outdated
    ]
    return Plan(patchset, env, ledger, guard, reports, stale, tree.seen)


def _judge(
    patch: Any,
    loaded: LoadedPatch,
    tree: Tree,
    backward: tuple[list[tuple[str, str, bytes | None]], Inspection] | None,
    entry: LedgerEntry | None,
    staged: set[str],
) -> Inspection:
    """The inspection of ``patch`` on the forward ``tree`` (disk plus the earlier pending
    patches staged), reusing ``backward``, its ``(reads, inspection)`` on the tree with every
    later applied patch taken off, where that judgement holds.

    It holds when the forward tree reads the very same contents. A patch found applied there
    also stays applied when the difference is only the later patches taken off (quilt's
    stack), unless it is pending on the forward tree and either an earlier pending patch
    changes a file it read or the ledger does not record it: then the stack is not pushed
    (a later patch undoes an earlier one: create then delete, an edit and its reverse, a
    rename and back), and each patch is applied in order, as ``git apply`` of each would.
    """
    if backward is None:
        return _inspect(patch, loaded, tree)
    reads, inspection = backward
    if tree.reads_same(reads):
        return inspection
    if inspection.state is not ContentState.APPLIED:
        return _inspect(patch, loaded, tree)
    if entry is not None and not any(tree.location_of(t, rel) in staged for t, rel, _ in reads):
        return inspection
    forward = _inspect(patch, loaded, tree)
    return forward if forward.state is ContentState.PENDING else inspection


def _check_reaches_applied(
    patch: Any, loaded: LoadedPatch, inspection: Inspection, tree: Tree
) -> None:
    """A pending patch must leave the tree in a state recognised as applied; otherwise a re-run
    would apply it again (e.g. an edit whose result contains its own old text). Such a patch is
    turned into a conflict here, before anything is written."""
    if inspection.on_result is not None:  # the kind classified its result on the way
        hunks, inspection.on_result = inspection.on_result, None  # not kept in the plan
        state = aggregate(hunks)
    else:
        trial = [(c.target, c.path, c.after) for c in inspection.changes]
        with tree.trying(trial):
            again = _inspect(patch, loaded, tree)
        hunks, state = again.hunks, again.state
    if state is ContentState.APPLIED:
        return
    mode_only = {c.path for c in inspection.changes if c.before == c.after}  # not in the trial
    units = [h for h in hunks if h.state not in PRESENT and h.file not in mode_only]
    if not units:
        return
    where = (
        ", ".join(
            f"{h.file} {'edit' if patch.kind == 'replace' else 'hunk'} {h.index}" for h in units
        )
        or "the patch"
    )
    inspection.state = ContentState.CONFLICT
    for h in inspection.hunks:
        if any(u.file == h.file and u.index == h.index for u in units):
            h.state = HunkState.CONFLICT
            h.detail = (
                "not idempotent: after applying it, its old text is still there, so a re-run "
                "would apply it again; give it more context"
            )
    inspection.notes.append(f"applying would not make it present ({where}); refusing")


def _inspect(patch: Any, loaded: LoadedPatch, tree: Tree) -> Inspection:
    try:
        return KINDS[patch.kind].inspect(patch, loaded, tree)
    except PatchbayError as exc:
        exc.patch_id = exc.patch_id or patch.id
        raise


def _status(
    inspection: Inspection,
    entry: LedgerEntry | None,
    loaded: LoadedPatch,
    tree: Tree,
    history: dict[object, tuple[str | None, str | None]],
) -> tuple[PatchStatus, list[str]]:
    notes = list(inspection.notes)
    state = inspection.state
    if entry is None and inspection.unproven:
        # present by a guess only, and patchbay did not write it: fail closed
        for index, why in inspection.unproven:
            for hunk in inspection.hunks:
                if hunk.index == index:
                    hunk.state, hunk.detail = HunkState.CONFLICT, why
        inspection.state = state = ContentState.CONFLICT
    if entry is not None and not same_patch(entry, loaded):
        recorded = entry.patch_identity or entry.patch_sha256
        now = loaded.identity if entry.patch_identity else loaded.sha256
        notes.append(
            f"the patch changed since it was applied on {entry.applied_at} (recorded "
            f"{'identity' if entry.patch_identity else 'sha256'} {recorded[:12]}, now "
            f"{now[:12]}); "
            "`patchbay apply --upgrade` reverts the recorded version and applies this one"
        )
        return PatchStatus.OUTDATED, notes
    if entry is not None and entry.patch_sha256 != loaded.sha256:
        notes.append(
            "the patch file's bytes changed since it was applied, not its content (same "
            "identity: index lines, hunk headers or mail headers differ)"
        )
    if entry is not None:
        back = []
        for rec in entry.files:
            first_before, last_written = history[
                tree.location_of(rec.target, rec.path)
            ]  # later patches too
            current = sha256_or_none(tree.on_disk_if_file(rec.target, rec.path))
            if current in (rec.before, first_before) and current != last_written:
                back.append(rec.path)
            elif current != last_written:
                notes.append(f"{rec.path} changed since patchbay wrote it")
        if back:
            notes.append(
                f"the ledger records it as applied, but its files are back to what they were "
                f"before it ({', '.join(back)}; the package was reinstalled?): `patchbay "
                "apply` applies it again, `patchbay revert` clears the record"
            )
    if state is ContentState.APPLIED:
        if entry is None:
            notes.append(
                "present in the image, not applied by patchbay: the patch is redundant "
                "and can be removed from the patchset"
            )
            return PatchStatus.REDUNDANT, notes
        return PatchStatus.APPLIED, notes
    return PatchStatus(state.value), notes


# -- writing --------------------------------------------------------------------------------


def interrupted(env: Environment) -> bool:
    """Whether a run was killed mid-write and left its journal (the next apply or revert rolls
    it back before doing anything else).

    Raises:
        RefusedError: something else sits where the journal goes (see :func:`_journal_place`),
            or the state folder cannot be entered.
    """
    try:
        os.stat(env.state_dir / "journal" / MANIFEST)
    except (FileNotFoundError, NotADirectoryError):
        _journal_place(env.state_dir)
        return False
    except PermissionError:  # the state folder (or its journal) cannot be entered
        raise not_entered(env.state_dir) from None
    _journal_place(env.state_dir)
    return True


def _journal_place(state_dir: Path) -> None:
    """Refuse a ``journal`` in the state folder that is not a folder (a file, a link): no run
    could keep its journal there, and it is not one to roll back.

    Raises:
        RefusedError: naming it; nothing was changed.
    """
    journal = state_dir / "journal"
    if os.path.lexists(journal) and (os.path.islink(journal) or not journal.is_dir()):
        what = "a link" if os.path.islink(journal) else "not a folder"
        raise RefusedError(
            f"{journal} is {what}: patchbay keeps a run's journal there; move it away and run "
            "again (nothing was changed)",
            file=journal,
        )


def upgrade_command(plan: Plan) -> str:
    """The exact command that moves this environment to the patchset as it is now."""
    env = plan.env
    where = f"--python {env.python}" if env.python else f"--root {env.tree_root}"
    return f"patchbay apply {plan.patchset.folder} {where} --upgrade"


def _refuse_blocking(plan: Plan, upgrade: bool) -> None:
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
    plan = make_plan(patchset, env, load_patches(patchset), options=options)
    _refuse_blocking(plan, upgrade)
    return plan


def apply_patchset(
    patchset: Patchset,
    env: Environment,
    *,
    upgrade: bool = False,
    lock_timeout: float = 0.0,
    options: RunOptions | None = None,
) -> ApplyResult:
    """Apply every pending patch of ``patchset`` in ``env`` as one transaction.

    Args:
        patchset: the loaded patchset.
        env: the resolved engine environment.
        upgrade: revert ledger entries whose patch was edited or removed, then apply, all in
            the same transaction.
        lock_timeout: seconds to wait for another run's lock.
        options: network, cache and bundle options (artifacts, package pins).

    Returns:
        The :class:`ApplyResult`; ``nothing_to_do`` when every patch was already present (no
        file, not even the ledger, is rewritten then).

    Raises:
        InputError: missing or corrupt patch content (nothing changed).
        RefusedError: base guard failed, a patch conflicts, is partial, ambiguous or outdated,
            or the lock is held (nothing changed).
        ApplyFailed: a write failed; every file the run touched was restored.
    """
    loaded = load_patches(patchset)
    recovered = []
    if interrupted(env):
        # a killed run left its journal: put its files back before judging the tree
        with state_lock(env.state_dir, lock_timeout):
            recovered = _recover(env, patchset)
        # the environment was read before the recovery, which may have put packages back
        env = read_again(env)
    plan = make_plan(patchset, env, loaded, options=options)
    _refuse_blocking(plan, upgrade)
    if not plan.with_status(PatchStatus.PENDING) and not plan.stale:
        _refresh_identity(plan, loaded)
        return ApplyResult(plan, recovered=recovered)
    with state_lock(env.state_dir, lock_timeout):
        rolled_back = _recover(env, patchset)
        recovered += rolled_back
        if rolled_back or not _still_as_judged(plan):
            # another run moved the tree between the plan and the lock (its pins too): judge
            # it as it is now
            env = read_again(env)
            plan = make_plan(patchset, env, loaded, options=options)
            _refuse_blocking(plan, upgrade)
        if not plan.stale:
            _preflight(plan, options)
        result = ApplyResult(plan, recovered=recovered)
        if not plan.with_status(PatchStatus.PENDING) and not plan.stale:
            return result
        journal = env.state_dir / "journal"
        with Transaction(journal, _roots(env, patchset), store=plan.ledger.blob_dir) as txn:
            ledger = plan.ledger
            if plan.stale:
                result.reverted = _revert_entries(
                    patchset.name,
                    _entries_from(ledger, patchset.name, plan.stale),
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
            pending = plan.with_status(PatchStatus.PENDING)
            _write_pending(patchset, pending, env, ledger, txn, options)
            result.applied = [r.id for r in pending]
            # what a re-run checks to answer "nothing to do" without the engine (noop.py)
            ledger.set_identity(patchset.name, noop_identity(plan, loaded))
            txn.doing = "writing the ledger"
            ledger.save(txn)
            txn.commit()
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
            with Transaction(env.state_dir / "journal", _roots(env, plan.patchset)) as txn:
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


def _roots(env: Environment, patchset: Patchset) -> list[Path]:
    """Every folder a run in ``env`` may change: the target roots, the state folder, and the
    patchset's folder (``capture`` and ``refresh`` journal patch files there)."""
    return [*env.roots.values(), env.state_dir, patchset.folder]


def _recover(env: Environment, patchset: Patchset) -> list[Path]:
    """Finish a journal a killed run left (call with the lock held); returns the restored
    paths.

    Raises:
        RefusedError: some file could not be restored, or the journal names paths outside
            the environment or is damaged; nothing else was done, and the journal stays. The
            first problem is the message (with the journal's line, for a refused entry), the
            others are details. Also when it was recovered but cannot be removed (a journal
            folder this user cannot write), which the next run would take for an open one.
    """
    return finish_journal(env.state_dir, _roots(env, patchset), python=env.python)


def finish_journal(state_dir: Path, roots: list[Path], *, python: str | None = None) -> list[Path]:
    """Recover the journal of ``state_dir`` (see :func:`patchbay.apply.transaction.recover`)
    with the lock held; returns the restored paths.

    Args:
        state_dir: the environment's state folder.
        roots: every folder its runs may change (target roots, the state folder; the patchset
            folder for a run that writes patch files).
        python: the engine interpreter of this run (``--python``), or None. The package
            installs a killed run journaled are undone only in that same interpreter
            (:func:`patchbay.kinds.pip.undo_journaled`): the journal never decides which
            program recovery runs.

    Raises:
        RefusedError: as :func:`_recover`; also when a journaled package install could not be
            undone (the journal stays, so the next run tries again).
    """
    _journal_place(state_dir)
    journal = state_dir / "journal"

    def undo(kind: str, data: dict[str, Any]) -> None:  # the kind that journaled it
        handler = getattr(KINDS.get(kind), "undo_journaled", None)
        if handler is None:
            raise RefusedError(f"this patchbay does not know how to undo {kind!r}")
        handler(data, python, state_dir / "logs" / "recovery.log")

    outcome = recover(journal, roots, undo)
    if outcome.complete and outcome.undo_problems:
        first, *rest = outcome.undo_problems
        raise RefusedError(
            f"{first}; an earlier run (failed or killed) was rolled back but for that: fix it "
            "and run again (the journal stays, and the next apply or revert tries again); "
            "nothing else was done",
            file=journal / MANIFEST,
            details=rest,
        )
    if not outcome.complete:
        first, *rest = outcome.problems()
        line = outcome.refused[0][0] if outcome.refused and not outcome.failed else None
        if line is not None:
            first = outcome.refused[0][1]
            rest = outcome.problems()[1:]
        how = (
            "once the files are as you want them, remove the journal by hand"
            if outcome.refused
            else "fix that and run again (the journal keeps the originals)"
        )
        raise RefusedError(
            f"{first}; an earlier run (failed or killed) could not be rolled back completely: "
            f"{how}; nothing else was done",
            file=journal / MANIFEST,
            line=line,
            details=rest,
        )
    if (journal / MANIFEST).exists():  # recovered, not removed: it would stay "still open"
        raise RefusedError(
            "the journal of an earlier run (failed or killed) was recovered, but cannot be "
            f"removed ({unwritable(journal) or 'removing it failed'}): make the journal folder "
            "writable for this user (or run as its owner) and run again; nothing else was done",
            file=journal,
        )
    return outcome.restored


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


def _entries_from(ledger: Ledger, patchset: str, stale: list[LedgerEntry]) -> list[LedgerEntry]:
    """Stale entries and every entry recorded after the oldest of them (they may build on it)."""
    entries = ledger.entries(patchset)
    ids = {e.patch_id for e in stale}
    first = next(i for i, e in enumerate(entries) if e.patch_id in ids)
    return entries[first:]


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
    txn.check_space(_space_needed(env, ledger, [(p, c.before, c.after) for p, c in changes]))
    txn.doing = "journaling the files this run changes"
    folders: set[str] = set()  # folders found to exist (nothing is written yet)
    # files some patch deletes: a deletion may remove the folders it empties (as git does),
    # which a rollback then makes again as they were
    deleted = {tree.location(c.target, c.path) for _, c in changes if c.after is None}
    replaced = _replaced_folders((p, c.before, c.after) for p, c in changes)
    for report in reports:
        for change in report.inspection.changes:
            path = tree.resolve(change.target, change.path)
            key = tree.location(change.target, change.path)
            if key not in created:  # folders missing before the first write of this file
                created[key] = _missing_parents(path, env.roots[change.target], folders)
                modes[key] = _mode_and_owner(path)
                if key in deleted:
                    emptied[key] = _folders_above(path, env.roots[change.target])
                digest = None
                if change.before is not None:
                    digest = digests[id(change.before)] = sha256_bytes(change.before)
                # the original becomes the ledger's blob of it (a link), when it can
                txn.save(
                    path,
                    digest=digest,
                    deleting=key in deleted,
                    beside_in=_beside_replaced(path, replaced),
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
            _drop_bytecode(where, txn, pycache)
    except (PatchbayError, OSError) as exc:
        raise _write_error(
            exc, running, _struck(exc, owner) or _first_unwritten(planned, owner)
        ) from None
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
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
                folders = _left_by_the_run(emptied.pop(key), root, txn.id)
            records.append(
                FileRecord(change.target, change.path, before, after, made, mode, owner, folders)
            )
            changed[key] -= 1
            if changed[key]:  # what the next patch of this file starts from
                modes[key] = _mode_after(change, modes.get(key), key)
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
            ),
        )


def _space_needed(
    env: Environment, ledger: Ledger, changes: list[tuple[Path, bytes | None, bytes | None]]
) -> list[tuple[Path, int]]:
    """What a run will write, by folder (for :meth:`Transaction.check_space`): the new
    contents beside the originals (kept as links, so they keep their space), the originals in
    the blob store, the journal and a new ledger. An estimate that errs on the large side."""
    needs = [(path.parent, len(after or b"")) for path, _, after in changes]
    needs += [(ledger.blob_dir, len(before)) for _, before, _ in changes if before is not None]
    try:
        ledger_size = ledger.path.stat().st_size
    except OSError:
        ledger_size = 0
    journal = ENTRY_BYTES * (len(changes) + 8)
    needs.append((env.state_dir, journal + ledger_size + ENTRY_BYTES * len(changes)))
    return needs


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


def _mode_and_owner(path: Path | str) -> tuple[int, list[int]] | None:
    """Permission bits and ``[uid, gid]`` of the file ``path`` (None: absent, or a folder
    stands there that a new file replaces)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISDIR(st.st_mode):
        return None
    return st.st_mode & 0o7777, [st.st_uid, st.st_gid]


def _mode_after(
    change: FileChange, before: tuple[int, list[int]] | None, path: str
) -> tuple[int, list[int]] | None:
    """The permission bits and owner ``change`` left its file with, which the next patch of
    the same file starts from (its record's ``mode_before``): a change of the content alone
    keeps both (every writer keeps them), one of git's mode flips the executable bits as the
    diff writer does; else (a file made or replaced whole) what is on disk now, after every
    write of the run (a later patch of the same file may have changed it since: the best
    known)."""
    if change.before is not None and change.after is not None and before is not None:
        if change.executable is None:
            return before
        want = "100755" if change.executable[1] else "100644"
        flipped = permissions(before[0], want, process_umask())
        return flipped, before[1]
    return _mode_and_owner(path)


def _owner(rec: FileRecord) -> tuple[int, int] | None:
    """The ``(uid, gid)`` a revert gives the file back: its recorded owner, when this process
    may set it (root) and the record holds one a uid can be (an edited ledger's is not)."""
    owner = rec.owner_before
    if os.geteuid() != 0 or not isinstance(owner, list) or len(owner) != 2:
        return None
    if not all(type(v) is int and 0 <= v <= MAX_ID for v in owner):
        return None
    return owner[0], owner[1]


def _mode_before(rec: FileRecord) -> int | None:
    """The permission bits a revert gives the file back (None: write_atomic's default): the
    recorded ones, when they are permission bits (an edited ledger's may not be)."""
    mode = rec.mode_before
    return mode if type(mode) is int and 0 <= mode <= 0o7777 else None


def _folders_above(path: Path, root: Path) -> list[list[Any]]:
    """:func:`~patchbay.apply.transaction.folders_above`, root-relative (as the ledger keeps
    paths)."""
    cut = len(str(root).rstrip(os.sep)) + 1
    return [[f[cut:], *rest] for f, *rest in folders_above(str(path), root)]


def _left_by_the_run(folders: list[list[Any]], root: Path, journal_id: str) -> list[list[Any]]:
    """Of ``folders`` (:func:`_folders_above` of a file the run deleted, as they were before
    it), the ones the run removed or changed, each with what it left: ``[rel, mode, uid, gid,
    left]``, ``left`` None when the folder is gone (or holds only this run's originals, kept
    beside their files, and goes with them at the commit), else its ``[mode, uid, gid]`` now
    (a later write made it again through the umask)."""
    out: list[list[Any]] = []
    going: set[str] = set()  # folders that hold nothing but what goes at the commit
    for rel, mode, uid, gid in folders:  # deepest first
        folder = os.path.join(root, rel)
        try:
            st = os.lstat(folder)
            kept = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            out.append([rel, mode, uid, gid, None])
            continue
        if all(
            name.startswith(f".patchbay-{journal_id}-") or os.path.join(folder, name) in going
            for name in kept
        ):
            going.add(folder)
            out.append([rel, mode, uid, gid, None])
        elif (left := [st.st_mode & 0o7777, st.st_uid, st.st_gid]) != [mode, uid, gid]:
            out.append([rel, mode, uid, gid, left])
    return out


def _make_folders_again(root: Path, below: str, folders: list[list[Any]]) -> None:
    """Give back the folders a record's ``folders_before`` says the apply removed or made
    again (:func:`_left_by_the_run`), outermost first: a missing one is made with its own
    mode and owner, and one still as the apply left it gets them back; one made or changed
    since by someone else is theirs and left alone. An item that is malformed, is no folder
    above the record's file ``below``, or that the path gate refuses (the ledger was edited)
    is skipped: nothing outside the root is ever made or changed."""
    for item in reversed(folders if isinstance(folders, list) else []):
        if folder_item_ok(item, below):  # as recorded before what the run left was
            item = [*item, None]
        if not folder_item_ok(item, below, size=5):
            continue
        rel, mode, uid, gid, left = item
        if left is not None and not (isinstance(left, list) and len(left) == 3):
            continue
        try:
            folder = str(resolve_under(root, rel))
        except PathRejected:
            continue
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            put_folder_back(folder, mode, uid, gid, [root])
            continue
        if left is not None and [st.st_mode & 0o7777, st.st_uid, st.st_gid] == left:
            put_folder_back(folder, mode, uid, gid, [root])


def _replaced_folders(
    changes: Iterable[tuple[Path, bytes | None, bytes | None]],
) -> list[str]:
    """The folders that stand where a run writes a new file (``(path, before, after)`` of
    each change; only a file absent before can have one): the run's deletions empty them
    first, and the file takes their place (as ``git apply`` does)."""
    return [
        str(path)
        for path, before, after in changes
        if before is None and after is not None and path.is_dir() and not path.is_symlink()
    ]


def _folders_made_above(path: Path, rel: str, created: list[Any]) -> list[str]:
    """The absolute folders of ``created`` (root-relative, as a ledger record's
    ``created_dirs``) that are folders above ``rel``, whose absolute path (through the path
    gate) is ``path``, in their order; any other entry is left out."""
    parts = rel.split("/")
    out = []
    for folder in created:
        if not isinstance(folder, str):
            continue
        depth = folder.count("/") + 1
        if depth < len(parts) and parts[:depth] == folder.split("/"):
            out.append(str(path.parents[len(parts) - depth - 1]))
    return out


def _beside_replaced(path: Path, replaced: list[str]) -> Path | None:
    """Where the original of ``path`` goes when it must be kept beside its file
    (:meth:`Transaction.save`'s ``beside_in``): beside the outermost of the ``replaced``
    folders that holds it, which must be empty when its file is written; None: beside it."""
    outer = [f for f in replaced if str(path).startswith(f + os.sep)]
    return Path(os.path.dirname(min(outer, key=len))) if outer else None


def _missing_parents(path: Path, root: Path, existing: set[str] | None = None) -> list[str]:
    """Root-relative folders above ``path`` that do not exist yet, deepest first.
    ``existing``: folders found to exist so far, kept by the caller while nothing is written
    (filled as a side effect)."""
    missing = []
    prefix = str(root).rstrip(os.sep) + os.sep
    folder = os.path.dirname(str(path))
    while folder.startswith(prefix) and len(folder) > len(prefix):
        if existing is not None and folder in existing:
            break
        if os.path.isdir(folder):  # (a file where a folder goes is deleted first)
            if existing is not None:
                existing.add(folder)
            break
        missing.append(folder[len(prefix) :])
        folder = os.path.dirname(folder)
    return missing


def _drop_bytecode(
    path: Path | str, txn: Transaction, caches: dict[str, bool] | None = None
) -> None:
    """Remove ``__pycache__/<name>.*.pyc`` of a changed ``.py`` file: hash-based pyc files are
    not invalidated by the source's mtime and would keep the old code running. ``caches``:
    which ``__pycache__`` folders exist, kept by the caller for one run (nothing it writes
    makes one)."""
    if not str(path).endswith(".py"):
        return
    folder = os.path.join(os.path.dirname(path), "__pycache__")
    there = None if caches is None else caches.get(folder)
    if there is None:
        there = os.path.isdir(folder)
        if caches is not None:
            caches[folder] = there
    if not there:
        return
    path, cache = Path(path), Path(folder)
    for pyc in cache.glob(f"{path.stem}.*.pyc"):
        txn.save(pyc)
        pyc.unlink()


class RevertResult(msgspec.Struct):
    """What a revert did.

    Attributes:
        ids: every patch id taken off the ledger, newest first.
        cleared: those whose files were already back to what they were before the patch
            (the package was reinstalled): their ledger entries were removed, nothing written.
        recovered: files restored from the journal of an interrupted earlier run, before
            the revert itself (as :attr:`ApplyResult.recovered`).
    """

    ids: list[str] = msgspec.field(default_factory=list)
    cleared: list[str] = msgspec.field(default_factory=list)
    recovered: list[Path] = msgspec.field(default_factory=list)

    @property
    def reverted(self) -> list[str]:
        """The ids whose recorded files were restored, newest first."""
        return [pid for pid in self.ids if pid not in self.cleared]


def _revert_entries(
    patchset: str,
    entries: list[LedgerEntry],
    env: Environment,
    ledger: Ledger,
    txn: Transaction,
    options: RunOptions | None = None,
) -> RevertResult:
    """Undo ``entries`` newest first, restoring recorded bytes (and, through the kind, effects
    beyond files, e.g. a package version); every file is checked before anything is written.

    A file already back to what it was before (its recorded ``before``, or the original the
    oldest of these entries started from: a reinstall put the pristine file back) is left as
    it is; an entry whose every file is back is cleared from the ledger without a write, as
    quilt would not pop what is no longer pushed.
    """
    tree = Tree(env.roots, env, options)
    originals: dict[object, str | None] = {}
    for entry in entries:
        for rec in entry.files:
            originals.setdefault(tree.location_of(rec.target, rec.path), rec.before)
    # each write with its path as resolved when staged: a file put back under a folder
    # that a file of a later entry had taken goes through that file staged as deleted then
    steps: list[tuple[LedgerEntry, list[tuple[FileRecord, bytes | None, Path]]]] = []
    result = RevertResult(ids=[e.patch_id for e in reversed(entries)])
    for entry in reversed(entries):
        writes = []
        back = 0
        for rec in reversed(entry.files):
            if rec.target not in env.roots:
                raise RefusedError(
                    f"ledger names unknown target {rec.target!r}",
                    patch_id=entry.patch_id,
                    file=ledger.path,
                )
            try:
                current = sha256_or_none(tree.read(rec.target, rec.path))
            except PatchbayError as exc:  # a folder on its way cannot be entered now
                exc.patch_id = exc.patch_id or entry.patch_id
                raise
            if current != rec.after:
                if current in (rec.before, originals[tree.location_of(rec.target, rec.path)]):
                    back += 1  # already as it was before patchbay wrote it
                    continue
                original = ledger.blob_dir / rec.before if rec.before else None
                hint = f"; its original is kept at {original}" if original else ""
                raise RefusedError(
                    f"{rec.path} changed since patchbay wrote it (sha256 {current or 'absent'}, "
                    f"recorded {rec.after or 'absent'}, and not what it was before either); "
                    f"refusing to revert over it; nothing was changed. Undo the edit by hand "
                    f"(or reinstall the package){hint}",
                    file=tree.resolve(rec.target, rec.path),
                    patch_id=entry.patch_id,
                )
            before = None
            if rec.before is not None:
                before = ledger.blob(rec.before)
                if before is None:
                    raise RefusedError(
                        f"the ledger's copy of {rec.path} before this patch is missing or "
                        f"damaged ({ledger.blob_dir / rec.before})",
                        patch_id=entry.patch_id,
                        file=ledger.path,
                    )
            writes.append((rec, before, tree.resolve(rec.target, rec.path)))
            tree.stage(rec.target, rec.path, before)
        if entry.files and back == len(entry.files):
            result.cleared.append(entry.patch_id)
        else:
            steps.append((entry, writes))
    flat = [(path, data) for _, writes in steps for _, data, path in writes]
    txn.check_space(_space_needed(env, ledger, [(p, None, d) for p, d in flat]))
    txn.doing = "journaling the files this run changes"
    # the folders each file's patch made, which the revert removes once empty: folders above
    # the file's path, which passed the gate (one that is not above it: the ledger was
    # edited, and nothing outside the root is removed); not resolved on their own, since a
    # file a later entry made in place of one of them is deleted first
    made: dict[int, list[str]] = {}
    # (a file the patch deleted is absent now: a folder may stand in its place)
    replaced = _replaced_folders(
        (path, None if r.after is None else b"", data)
        for _, writes in steps
        for r, data, path in writes
    )
    for _, writes in steps:
        for rec, data, path in writes:
            folders = made[id(rec)] = []
            if data is None and isinstance(rec.created_dirs, list):
                folders.extend(_folders_made_above(path, rec.path, rec.created_dirs))
            txn.save(path, then_remove=folders, beside_in=_beside_replaced(path, replaced))
    txn.sync()
    txn.doing = "reverting"
    try:
        for entry, writes in steps:
            kind = KINDS.get(entry.kind)
            if kind is not None:
                kind.revert(entry, tree, txn)
            for rec, data, path in writes:
                root = env.roots[rec.target]
                if data is None:
                    path.unlink(missing_ok=True)
                    for folder in made[id(rec)]:
                        with contextlib.suppress(OSError):  # not empty: something else is there
                            os.rmdir(folder)
                else:
                    _make_folders_again(root, rec.path, rec.folders_before)
                    if path.is_dir() and not path.is_symlink():
                        path.rmdir()  # a folder that replaced the file, emptied just before
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_atomic(path, data, mode=_mode_before(rec), owner=_owner(rec))
                _drop_bytecode(path, txn)
    except OSError as exc:
        raise ApplyFailed(f"write failed: {exc.strerror or exc}", file=exc.filename) from None
    for entry in entries:
        ledger.remove(patchset, entry.patch_id)
    return result


def revert_patchset(
    patchset: Patchset,
    env: Environment,
    patch_ids: list[str] | None = None,
    *,
    lock_timeout: float = 0.0,
    options: RunOptions | None = None,
) -> RevertResult:
    """Undo what the ledger records for ``patchset``, newest first, as one transaction.

    Args:
        patchset: the loaded patchset.
        env: the resolved environment.
        patch_ids: None: everything the ledger records; else these patches and every entry
            recorded after the oldest of them (they may build on it), as quilt's ``pop`` down
            to a patch. Ids the ledger does not record are ignored.
        lock_timeout: seconds to wait for another run's lock.
        options: network and bundle options (a package pin's previous version).

    Returns:
        The :class:`RevertResult` (empty: nothing recorded). Entries whose files a reinstall
        already put back are cleared, not refused.

    Raises:
        RefusedError: a file changed since patchbay wrote it into something that is neither
            its recorded result nor its original (named), a recorded original is missing, or
            the lock is held; nothing changed.
        ApplyFailed: a write failed; every file touched was restored.
    """
    with state_lock(env.state_dir, lock_timeout):
        recovered = _recover(env, patchset)
        ledger = Ledger(env.state_dir)
        entries = ledger.entries(patchset.name)
        if patch_ids is not None:
            wanted = set(patch_ids)
            chosen = [e for e in entries if e.patch_id in wanted]
            entries = _entries_from(ledger, patchset.name, chosen) if chosen else []
        if not entries:
            return RevertResult(recovered=recovered)
        with Transaction(env.state_dir / "journal", _roots(env, patchset)) as txn:
            result = _revert_entries(patchset.name, entries, env, ledger, txn, options)
            result.recovered = recovered
            txn.doing = "writing the ledger"
            ledger.save(txn)
            txn.commit()
        ledger.prune_blobs()
    return result


# -- verify ---------------------------------------------------------------------------------

_COMPILE = r"""
import json, sys
errors = {}
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as fh:
            compile(fh.read(), path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, OSError) as exc:
        errors[path] = "%s: %s" % (type(exc).__name__, exc)
print(json.dumps(errors))
"""


class VerifyResult(msgspec.Struct):
    """Outcome of :func:`verify_patchset`."""

    plan: Plan
    problems: list[str]
    compiled: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_patchset(patchset: Patchset, env: Environment) -> VerifyResult:
    """Check that every patch is present and every touched Python file compiles.

    Compilation runs in the engine's interpreter (its Python version decides the syntax), or in
    patchbay's own with ``--root``. A redundant patch counts as present.
    """
    plan = make_plan(patchset, env)
    problems = list(plan.guard.failures)
    for report in plan.reports:
        if report.status not in (PatchStatus.APPLIED, PatchStatus.REDUNDANT):
            problems.append(f"{report.id}: {report.status.value}, not applied")
    tree = Tree(env.roots)
    found: set[str] = set()
    for report in plan.reports:
        for h in report.inspection.hunks:
            if h.file.endswith(".py"):
                # (no file can be under a file: a deleted one whose folder a file replaced)
                with contextlib.suppress(NoFileHere):
                    found.add(str(tree.resolve(report.patch.target, h.file)))
    py_files = [p for p in sorted(found) if os.path.isfile(p)]
    if py_files:
        import subprocess  # verify's compile check only (not the apply path)

        python = env.python or sys.executable
        proc = subprocess.run(
            [python, "-c", _COMPILE, *py_files], capture_output=True, text=True, check=False
        )
        try:
            import json

            errors = json.loads(proc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            errors = {"(interpreter)": proc.stderr.strip() or "compile check failed"}
        problems.extend(f"{path}: does not compile: {msg}" for path, msg in errors.items())
    return VerifyResult(plan, problems, py_files)


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    return sha256_bytes(path.read_bytes())
