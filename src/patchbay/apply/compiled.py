"""A compiled plan: each diff patch's judgement on the pinned image's files, carried in a bundle,
so that a cold ``apply`` in the container checks hashes instead of searching hunks.

``patchbay bundle`` (:func:`patchbay.carry.compiler.compile_plan`) judges the patchset on the
engine environment it is given (the pinned image) as ``apply`` would, and keeps, for every diff
patch found pending there whose file patches all edit files in place (no new, deleted or
renamed file, no mode change)::

    OUT/plan/plan.json          format, patchbay version, and per patch: its id, target, the
                                sha256 and identity of its content, each file it edits (its
                                path, the sha256 of the bytes it was judged on, the sha256 of
                                its result), its hunks as judged there, notes
    OUT/plan/blobs/<sha256>     every result (post-image), named by its hash

Both are listed in the bundle's manifest, so ``apply --bundle`` checks them with the rest.

An inspection of such a patch depends only on the patch's content and the bytes of the files it
edits (the same rule that lets a plan reuse its backward pass, :meth:`Tree.reads_same`), and on
the rules of this patchbay release. So, given the same patchbay version, the same patch content
(sha256 and identity) and files whose bytes hash as recorded, the recorded judgement *is* the
judgement: :meth:`CompiledPlan.inspection` returns it with the recorded post-images, and the
hunk search is skipped. Any difference (another image, an edited file, an edited patch, another
release) is a miss, after which the patch is judged in full as without a plan, with the same
states and messages: a wrong image is refused exactly as without a bundle. The base guard is
checked as always; the plan only replaces the hunk search.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from .. import __version__
from ..diff.hunks import HunkResult, HunkState
from ..digests import sha256_hex
from ..errors import InputError
from ..kinds.base import ContentState, FileChange, Inspection, LoadedPatch

if TYPE_CHECKING:
    from ..environment.tree import Tree

PLAN_FORMAT = 1
PLAN_FILE = "plan/plan.json"
BLOBS = "plan/blobs"


class CompiledFile(msgspec.Struct, array_like=True):
    """One file a compiled patch edits: its root-relative ``path``, the sha256 of the bytes it
    was judged on (``before``) and of its result (``after``), and the git mode the patch gives
    it (``FileWrite.mode``; None: the patch does not say)."""

    path: str
    before: str
    after: str
    mode: str | None = None


class CompiledPatch(msgspec.Struct):
    """One diff patch's judgement on the pinned image (pending there), keyed by its content."""

    id: str
    target: str
    sha256: str
    identity: str
    strip: int
    hunk_files: list[tuple[str, int]]
    files: list[CompiledFile]
    hunks: list[HunkResult]
    load_notes: list[str] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)


class PlanDocument(msgspec.Struct):
    """``plan/plan.json``: the format, the patchbay release that judged, the patchset's name
    and the compiled patches by id."""

    format: int
    patchbay: str
    patchset: str
    patches: dict[str, CompiledPatch]


class CompiledPlan:
    """A compiled plan read from a bundle (see the module docstring).

    Attributes:
        document: what ``plan/plan.json`` holds.
        folder: the bundle it was read from (its post-images are under ``plan/blobs``).
        hits: ids of the patches whose recorded judgement held in this run.
        misses: ids of the compiled patches whose files read other bytes in this run.
    """

    def __init__(self, document: PlanDocument, folder: Path) -> None:
        self.document = document
        self.folder = folder
        self.hits: set[str] = set()
        self.misses: set[str] = set()
        # a run asks each patch twice (the plan's backward and forward passes) and a stacked
        # patch reads the post-image of the one before: each content is hashed and each
        # post-image read once, the bytes kept alive with their digest (ids stay theirs)
        self._digests: dict[int, tuple[bytes, str]] = {}
        self._blobs: dict[str, tuple[tuple[int, int], bytes]] = {}  # digest -> (stat, bytes)

    def _sha256(self, data: bytes) -> str:
        known = self._digests.get(id(data))
        if known is None or known[0] is not data:
            known = self._digests[id(data)] = (data, sha256_hex(data))
        return known[1]

    def loaded(self, patch: Any, patchset: Any, index: int) -> LoadedPatch | None:
        """``patch`` loaded with its parse deferred when its file holds the bytes this plan
        judged (:meth:`~patchbay.kinds.diff.DiffKind.load_known`); None when the plan has no
        such patch (load it as usual). A file of other bytes is loaded in full from what was
        read.

        Raises:
            InputError: as :meth:`~patchbay.kinds.diff.DiffKind.load`.
        """
        entry = self.document.patches.get(patch.id)
        if (
            entry is None
            or patch.kind != "diff"
            or getattr(patch, "source", None) is not None
            or entry.strip != patch.strip
            or entry.target != patch.target
        ):
            return None
        from ..kinds import KINDS

        return KINDS["diff"].load_known(  # type: ignore[attr-defined,no-any-return]
            patch, patchset, index, entry.sha256, entry.identity, entry.hunk_files,
            entry.load_notes,
        )  # fmt: skip

    def inspection(self, patch: Any, loaded: LoadedPatch, tree: Tree) -> Inspection | None:
        """The recorded judgement of ``patch`` when it holds on ``tree``, else None.

        It holds when the patch's content is the one compiled (sha256, identity, target) and
        every file it edits reads (through ``tree``: staged, else on disk; traced as any read)
        bytes with the recorded sha256. The returned inspection is a fresh one (its hunks are
        copies), pending, with the recorded post-images as its changes.

        Raises:
            InputError: a post-image the plan names is missing from the bundle or does not
                hash to its name (the bundle is damaged; its manifest check says so first).
        """
        entry = self.document.patches.get(patch.id)
        if (
            entry is None
            or entry.sha256 != loaded.sha256
            or entry.identity != loaded.identity
            or entry.target != patch.target
        ):
            return None
        befores = []
        for f in entry.files:
            data = tree.read_if_file(entry.target, f.path)
            if data is None or self._sha256(data) != f.before:
                self.misses.add(patch.id)
                return None
            befores.append(data)
        from ..kinds.diffwrite import FileWrite

        changes, writes = [], []
        for f, before in zip(entry.files, befores, strict=True):
            after = self._blob(f.after)
            changes.append(FileChange(entry.target, f.path, before, after))
            writes.append(FileWrite(f.path, f.path, after, f.mode))
        self.hits.add(patch.id)
        return Inspection(
            state=ContentState.PENDING,
            hunks=[msgspec.structs.replace(h) for h in entry.hunks],
            changes=changes,
            notes=[*loaded.notes, *entry.notes],
            data=writes,
            # the engine's recheck of the result passed where the plan was compiled (the
            # patch stayed pending), and the result is the same bytes: present, every hunk
            on_result=[msgspec.structs.replace(h, state=HunkState.APPLIED) for h in entry.hunks],
        )

    def _blob(self, digest: str) -> bytes:
        path = self.folder / BLOBS / digest
        try:
            st = path.stat()
            known = self._blobs.get(digest)
            if known is not None and known[0] == (st.st_size, st.st_mtime_ns):
                return known[1]  # read and checked in this run (the file is as it was then)
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(
                f"the compiled plan's post-image is unreadable: {exc.strerror or exc}", file=path
            ) from None
        if sha256_hex(data) != digest:
            raise InputError("the compiled plan's post-image does not match its name", file=path)
        self._blobs[digest] = ((st.st_size, st.st_mtime_ns), data)
        self._digests[id(data)] = (data, digest)  # what the next patch of the file reads
        return data


_READ: dict[tuple[str, str], tuple[tuple[int, int], CompiledPlan | None]] = {}


def compiled_for(bundle: Path | None, patchset: str) -> CompiledPlan | None:
    """:func:`load_compiled`, read once per process while the file is unchanged (size and
    mtime): the load of the patches and the plan of one run share it. None without a bundle."""
    if bundle is None:
        return None
    try:
        st = (bundle / PLAN_FILE).stat()
    except OSError:
        return load_compiled(bundle, patchset)  # (absent: None; unreadable: its error)
    key, stamp = (str(bundle), patchset), (st.st_size, st.st_mtime_ns)
    known = _READ.get(key)
    if known is None or known[0] != stamp:
        known = _READ[key] = (stamp, load_compiled(bundle, patchset))
    return known[1]


def load_compiled(bundle: Path, patchset: str) -> CompiledPlan | None:
    """The compiled plan of bundle ``bundle`` for the patchset named ``patchset``, or None
    when the bundle has none, it was compiled by another patchbay release (whose hunk rules
    may differ) or for another patchset.

    Raises:
        InputError: ``plan/plan.json`` exists but is not a compiled plan (naming the file).
    """
    path = bundle / PLAN_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"compiled plan unreadable: {exc.strerror or exc}", file=path) from None
    try:
        doc = msgspec.json.decode(raw, type=PlanDocument)
    except msgspec.DecodeError as exc:
        raise InputError(f"not a compiled plan: {exc}", file=path) from None
    if doc.format != PLAN_FORMAT or doc.patchbay != __version__ or doc.patchset != patchset:
        return None
    return CompiledPlan(doc, bundle)
