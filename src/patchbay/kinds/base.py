"""The protocol every patch kind implements: load, inspect, apply, revert, describe.

A kind never decides on its own to write: the engine inspects every patch first (against the
tree with earlier pending patches staged), then, inside one transaction, asks each pending patch
to write exactly the changes its inspection planned, and checks the result against the plan.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from ..diff.hunks import PRESENT, HunkResult, HunkState

if TYPE_CHECKING:
    from ..apply.ledger import LedgerEntry
    from ..apply.transaction import Transaction
    from ..environment.tree import Tree
    from ..patchset.model import Patchset


class ContentState(str, Enum):
    """State of a whole patch on the current content, from the states of its hunks."""

    PENDING = "pending"
    APPLIED = "applied"
    PARTIAL = "partial"
    CONFLICT = "conflict"
    AMBIGUOUS = "ambiguous"


def aggregate(results: list[HunkResult]) -> ContentState:
    """Patch state from hunk states: any conflict wins, then any ambiguity; all pending is
    pending, all present (applied, or upstream with its context moved) is applied, a mix of
    pending and present is partial."""
    states = {HunkState.APPLIED if r.state in PRESENT else r.state for r in results}
    if HunkState.CONFLICT in states:
        return ContentState.CONFLICT
    if HunkState.AMBIGUOUS in states:
        return ContentState.AMBIGUOUS
    if states == {HunkState.PENDING}:
        return ContentState.PENDING
    if not states or states == {HunkState.APPLIED}:
        return ContentState.APPLIED
    return ContentState.PARTIAL


class FileChange(msgspec.Struct):
    """A planned change of one file: its bytes before and after (None: absent), and, for a
    change of its git mode, whether it is executable before and after (None: not changed)."""

    target: str
    path: str
    before: bytes | None
    after: bytes | None
    executable: tuple[bool, bool] | None = None


class LoadedPatch(msgspec.Struct):
    """A patch's content, read and checked at load time.

    Attributes:
        sha256: hash of the patch content (the diff file's bytes, or the canonical edits);
            the ledger compares it to notice a patch edited after it was applied.
        source: the file the content came from (for messages), if any.
        data: kind-specific parsed content.
        notes: things worth telling the user (e.g. CRLF line endings normalised).
        unlocked: why the content is not pinned yet (a remote source or an artifact without a
            hash): ``validate`` accepts it, marked; ``apply`` refuses it.
        identity: what the patch is (:mod:`patchbay.diff.identity`): for a diff, the hash of its
            canonical form; for other kinds (whose ``sha256`` is canonical already) the same
            as ``sha256``.
    """

    sha256: str
    source: str | None
    data: Any
    notes: list[str] = msgspec.field(default_factory=list)
    unlocked: str | None = None
    identity: str = ""

    def __post_init__(self) -> None:
        if not self.identity:
            self.identity = self.sha256


class Inspection(msgspec.Struct):
    """The state of one patch on a tree, and what applying it would change.

    ``changes`` (when pending) says what applying would write; ``data`` is the kind's own
    record of how to write it (e.g. hunks at the places found), so that writing needs no second
    look at the tree. ``undo`` (when applied, and the kind can tell) says what the files were
    before the patch, so that the patches before it can be judged on the tree as they left it.
    ``unproven`` lists ``(hunk index, why)`` of units found present only by a guess that the
    ledger must confirm: with no ledger entry of the patch they are conflicts, not present.
    ``on_result`` (when pending, and the kind found it on the way) holds the units classified
    on the patch's own result, as inspecting the tree with ``changes`` staged would: the
    engine's recheck (see :class:`FileKind`) then needs no second inspection.
    """

    state: ContentState
    hunks: list[HunkResult] = msgspec.field(default_factory=list)
    changes: list[FileChange] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    data: Any = None
    undo: list[FileChange] = msgspec.field(default_factory=list)
    record: dict[str, Any] = msgspec.field(default_factory=dict)
    unproven: list[tuple[int, str]] = msgspec.field(default_factory=list)
    on_result: list[HunkResult] | None = None


class PendingPatch(msgspec.Struct):
    """A pending patch handed to its kind for writing."""

    patch: Any
    loaded: LoadedPatch
    inspection: Inspection


class Trial(msgspec.Struct):
    """What a pending patch's :meth:`PatchKind.preflight` would say, found without writing
    anything: ``status`` asks a kind that offers ``trial(item, tree) -> Trial`` (``pip``: the
    same dry run apply makes), so its exit code tells whether apply would refuse.

    Attributes:
        refusal: why apply would refuse the patch; None when it would not, or was not checked.
        details: further lines of the refusal (pip's error block).
        unchecked: why it could not be checked (an index unreachable), else None.
        summary: what the check found, when it passed (pip's planned changes).
        unreachable: a place the check could not reach on the way although it came to an
            answer (pip resolved from find-links while the index was down): the outcome is
            shown, never kept for a later ``status`` (:mod:`patchbay.apply.trial`).
    """

    refusal: str | None = None
    details: list[str] = msgspec.field(default_factory=list)
    unchecked: str | None = None
    summary: str | None = None
    unreachable: str | None = None


class FileKind:
    """Defaults for kinds whose whole effect is file contents (diff, replace, artifact).

    ``recheck``: the engine re-inspects a pending patch on its own result and refuses it
    unless it is then applied (so a re-run can never apply it twice).

    ``content_only``: an inspection depends on nothing but the contents ``tree.read`` returns
    (and what is on disk), so the engine may reuse it on another tree that reads the very same
    contents instead of inspecting again.
    """

    recheck = True
    content_only = True

    def preflight(self, item: PendingPatch, tree: Tree) -> None:
        return None

    def revert(self, entry: LedgerEntry, tree: Tree, txn: Transaction) -> bool:
        return False


class PatchKind(Protocol):
    """One kind of patch (``diff``, ``replace``, ...). Implementations live in ``kinds/``.

    A kind may also offer ``trial(item, tree) -> Trial``: what its :meth:`preflight` would say,
    without writing (``status`` runs it; see :mod:`patchbay.apply.trial`); and, when it journals an
    undo under its own name (:meth:`patchbay.apply.transaction.Transaction.on_rollback` with
    ``journal``), ``undo_journaled(data, python, log)``, which the next run's recovery calls
    (see :func:`patchbay.apply.interrupted.finish_journal`).
    """

    name: str

    def load(self, patch: Any, patchset: Patchset, index: int) -> LoadedPatch:
        """Read and check the patch's content.

        Raises:
            InputError: missing or corrupt content, naming the patchset file, the patch id and
                the path.
        """
        ...

    def inspect(self, patch: Any, loaded: LoadedPatch, tree: Tree) -> Inspection:
        """Classify the patch on ``tree`` (disk plus staged changes); never writes."""
        ...

    def apply(self, batch: list[PendingPatch], tree: Tree, txn: Transaction) -> None:
        """Write the changes the inspections planned, for consecutive pending patches of this
        kind on one target, in order (a kind may write them in one go). Every path was
        already saved in the run's transaction, and the engine checks the written bytes
        against the plan afterwards. Effects beyond file contents
        (a package install) register their undo with ``txn.on_rollback``; facts the ledger
        must keep go into ``item.inspection.record``.

        Raises:
            ApplyFailed or OSError: a write failed (the engine rolls the run back).
        """
        ...

    def describe(self, patch: Any, loaded: LoadedPatch) -> str:
        """One line saying what the patch does, for tables and waivers."""
        ...

    def preflight(self, item: PendingPatch, tree: Tree) -> None:
        """Last checks of a pending patch before anything is written (may fetch into the
        cache, or ask pip for a dry run, and complete ``item.inspection.changes``).

        Raises:
            RefusedError: the patch must not be applied (nothing has been written).
        """
        ...

    def revert(self, entry: LedgerEntry, tree: Tree, txn: Transaction) -> bool:
        """Undo what ``entry`` recorded beyond its files (e.g. reinstall a package version).

        Returns:
            True when the kind handled the entry; False to let the engine restore its files.
        """
        ...
