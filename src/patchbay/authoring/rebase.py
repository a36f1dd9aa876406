"""``rebase``: carry a patchset onto a new image.

Every patch is judged on the candidate as ``check`` judges it (check.py), then:

=========== ==================================================================================
upstream    already in the candidate: dropped from the result (proposed for removal)
applies     unchanged
partial,    a 3-way merge with git's merge machinery (``git merge-file``), file by file:
conflict,   base = the file on the old image before the patch, ours = the same file after it,
ambiguous   theirs = the file on the candidate before the patch (earlier patches of the
            result applied). A clean merge becomes the refreshed diff (candidate -> merged);
            a merge with conflicts leaves the patch as it was and writes the merged file, with
            git's conflict markers (diff3 style: the old image's lines between them too), to a
            side folder, and the patch is listed; nothing is half-merged silently.
=========== ==================================================================================

The old states come from simulating the patchset, in memory, on the old image's pristine files
(see pristine.py: the ledger's originals, the old image's files when they match ``RECORD``, or
the component repository at its pinned commit), so a patch in the middle of a stack merges from
the state the earlier patches left. After each merge the result is judged again on the
candidate, so later patches merge onto the refreshed earlier ones. The result (a copy of the
patchset, or with ``write`` the patchset itself) is checked once more at the end: ``check`` on
the candidate reports it all clear except the listed conflicts.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from ..apply.check import CheckResult, Verdict, check_patchset
from ..apply.interrupted import finish_journal, tidy_side
from ..apply.journal import fault_point, write_atomic
from ..apply.ledger import Ledger, sha256_bytes
from ..apply.plan import load_patches, make_plan
from ..apply.results import PatchStatus
from ..apply.statelock import state_lock
from ..apply.transaction import Transaction
from ..diff.gitapply import run_git
from ..diff.gitdiff import FileVersions, write_diff
from ..diff.hunks import PRESENT, HunkResult
from ..diff.renames import Rename, find_renames
from ..environment.paths import inside
from ..environment.pristine import Pristine, read_shipped
from ..environment.targets import Environment
from ..environment.tree import Location, Tree
from ..errors import InputError, PatchbayError, RefusedError
from ..kinds import KINDS, ContentState, FileChange
from ..patchset.inputfiles import patchset_side
from ..patchset.loading import load_patchset
from ..patchset.model import DiffPatch, Patchset
from ..patchset.text import remove_patch, set_scalar
from .capture import PristineSources
from .hunkverdicts import HunkRow, hunk_rows, without_upstream_hunks
from .refresh import patch_layout

_MARKERS = re.compile(rb"^(?:<{7} |>{7} |\|{7} |={7}$)", re.MULTILINE)
REFRESHED_VERDICTS = frozenset({Verdict.PARTIAL, Verdict.CONFLICT, Verdict.AMBIGUOUS})
_CONTEXTS = (3, 6, 12, 25)


def patches_to_refresh(result: CheckResult) -> list[str]:
    """Ids of the patches ``rebase`` would refresh by a 3-way merge, from ``check``'s verdicts
    on a candidate: the ``diff`` patches that are partial, in conflict or ambiguous there."""
    return [
        item.report.id
        for item in result.items
        if item.verdict in REFRESHED_VERDICTS and item.report.patch.kind == "diff"
    ]


@dataclass
class RebaseItem:
    """What ``rebase`` did with one patch.

    Attributes:
        id: the patch.
        verdict: ``check``'s verdict on the candidate before the rebase.
        outcome: ``unchanged``, ``dropped`` (already upstream), ``refreshed`` (merged cleanly)
            or ``conflict`` (left as it was; see ``details`` and ``conflict_files``).
        details: one line per thing worth saying (a file merged, why it conflicts).
        conflict_files: merged files with conflict markers, in the side folder.
        hunks: what happened to each hunk (:mod:`patchbay.authoring.hunkverdicts`).
        moved: old path -> new path of the patch's files that moved upstream (git's rename
            detection), which the rebased patch follows.
    """

    id: str
    verdict: str
    outcome: str = "unchanged"
    details: list[str] = field(default_factory=list)
    conflict_files: list[Path] = field(default_factory=list)
    hunks: list[HunkRow] = field(default_factory=list)
    moved: dict[str, str] = field(default_factory=dict)


@dataclass
class RebaseResult:
    """The rebased patchset and what happened to each patch.

    Attributes:
        folder: where the result is (the patchset's own folder with ``write``).
        items: one per patch of the original patchset, in order.
        conflicts_dir: the side folder holding merged files with conflict markers (None when
            nothing conflicted).
        final: ``check`` of the result on the candidate.
        guard: what was done to the base guard (one line each).
    """

    folder: Path
    items: list[RebaseItem]
    conflicts_dir: Path | None
    final: CheckResult
    guard: list[str] = field(default_factory=list)

    @property
    def conflicts(self) -> list[RebaseItem]:
        """The patches left for a person to merge."""
        return [i for i in self.items if i.outcome == "conflict"]

    @property
    def ok(self) -> bool:
        """True when nothing conflicts: the result is all clear on the candidate."""
        return not self.conflicts and self.final.ok


def rebase_patchset(
    patchset: Patchset,
    old_env: Environment,
    new_env: Environment,
    *,
    out: Path | None = None,
    write: bool = False,
    conflicts_dir: Path | None = None,
    sources: PristineSources | None = None,
    resolved: Path | None = None,
) -> RebaseResult:
    """Rebase ``patchset`` from the image ``old_env`` onto the candidate ``new_env``.

    Args:
        patchset: the loaded patchset.
        old_env: the image the patchset was written for (its ledger and files give the old
            pristine content).
        new_env: the candidate image (judged as shipped; never written).
        out: a new folder for the result (a copy of the patchset, rebased).
        write: rewrite the patchset itself instead (patch files and ``patchset.yaml``).
        conflicts_dir: the side folder for merged files with conflict markers (default
            ``OUT/conflicts``, or ``rebase-conflicts/<name>`` in the current folder with
            ``write``).
        sources: pristine copies for old files that no longer match RECORD.
        resolved: a side folder of an earlier run whose files a person merged by hand
            (``<id>/<path>``, no conflict markers left): taken as the merge result.

    Returns:
        The :class:`RebaseResult`.

    Raises:
        InputError: neither or both of ``out`` and ``write``; ``out`` exists and is not empty, or
            lies inside the patchset's folder.
        RefusedError: a patch does not apply on the old image's pristine files; a pristine copy
            does not match RECORD (named).
    """
    if (out is None) == (not write):
        raise InputError("give a folder for the result (--out DIR) or --write, one of the two")
    if out is not None and out.exists() and any(out.iterdir()):
        raise InputError("the result folder exists and is not empty", file=out)
    if out is not None and inside(os.path.realpath(out), os.path.realpath(patchset.folder)):
        raise InputError(
            f"the result folder lies inside the patchset {patchset.folder} (it would become part "
            "of it): give a folder beside it, e.g. patchsets/NAME-rebased",
            file=out,
        )
    if conflicts_dir is None:
        conflicts_dir = out / "conflicts" if out is not None else Path("rebase-conflicts")
        if write:
            conflicts_dir = conflicts_dir / patchset.name
    loaded = load_patches(patchset)
    with tempfile.TemporaryDirectory(prefix="patchbay-rebase-") as scratch_name:
        scratch = Path(scratch_name)
        old_states, old_hunks = _old_states(
            patchset, old_env, loaded, sources or PristineSources(), scratch
        )
        work = scratch / "work"
        shutil.copytree(patchset.folder, work, symlinks=True)
        yaml_name = patchset.path.name
        first = check_patchset(patchset, new_env)
        items = {i.report.id: RebaseItem(i.report.id, i.verdict.value) for i in first.items}
        moves = _moves(patchset, old_states, old_env, new_env)
        for patch in patchset.patches:
            items[patch.id].moved = {
                c.path: moves[(c.target, c.path)].new
                for c in old_states.get(patch.id, [])
                if (c.target, c.path) in moves
            }
        done: set[str] = set()
        while True:
            current = load_patchset(work / yaml_name)
            result = check_patchset(current, new_env)
            todo = [
                i
                for i in result.items
                if i.verdict in REFRESHED_VERDICTS and i.report.id not in done
            ]
            if not todo:
                break
            item = todo[0]
            done.add(item.report.id)
            _merge(
                current,
                result,
                item.report.index,
                (old_states, old_hunks),
                new_env,
                items,
                scratch,
                resolved,
            )
        _drop_upstream(work / yaml_name, new_env, items)
        guard = _move_guard(work / yaml_name, new_env)
        final_patchset = load_patchset(work / yaml_name)
        final = check_patchset(final_patchset, new_env)
        verdicts = {i.report.id: i for i in final.items}
        for rebase_item in items.values():
            done_item = verdicts.get(rebase_item.id)
            if (
                rebase_item.outcome == "refreshed"
                and done_item
                and done_item.verdict
                not in (
                    Verdict.APPLIES,
                    Verdict.UPSTREAM,
                )
            ):
                rebase_item.outcome = "conflict"
                rebase_item.details.append(
                    f"merged, but the refreshed diff is {done_item.verdict.value} on the candidate"
                )
        folder = _publish(work, patchset, out, write, scratch)
        conflict_items = [i for i in items.values() if i.outcome == "conflict"]
        side = None
        if any(i.conflict_files for i in conflict_items):
            side = conflicts_dir.resolve()
            _write_side(scratch / "conflicts", side, conflict_items)
        if folder != work:
            final = check_patchset(load_patchset(folder), new_env)
        for judged, lp in zip(first.items, loaded, strict=True):
            rebased = items[judged.report.id]
            files = getattr(lp.data, "files", None) or []
            counts = {fp.path: len(fp.hunks) for fp in files}
            rebased.hunks = hunk_rows(
                judged.report.inspection.hunks, rebased.outcome, rebased.moved, counts
            )
    ordered = [items[p.id] for p in patchset.patches]
    return RebaseResult(folder, ordered, side, final, guard)


def _file_paths(patch: object, loaded: object) -> list[str]:
    """Root-relative paths a diff or replace patch edits."""
    if getattr(patch, "kind", None) == "diff" and getattr(loaded, "data", None) is not None:
        files = loaded.data.files  # type: ignore[attr-defined]
        return [p for fp in files for p in (fp.old_path, fp.new_path) if p]
    if getattr(patch, "kind", None) == "replace":
        return [e.file for e in patch.edits]  # type: ignore[attr-defined]
    return []


def _old_states(
    patchset: Patchset,
    env: Environment,
    loaded: list,
    sources: PristineSources,
    scratch: Path,
) -> tuple[dict[str, list[FileChange]], dict[str, list[HunkResult]]]:
    """patch id -> its file changes on the old image (before: the file before the patch, with
    the earlier patches applied; after: the file after it), from a simulation of the patchset
    on the old image's pristine files; and patch id -> its hunks there (pending, placed)."""
    pairs = [
        (p, lp)
        for p, lp in zip(patchset.patches, loaded, strict=True)
        if p.kind in ("diff", "replace") and p.target in env.roots
    ]
    if not pairs:
        return {}, {}
    components = [c.distribution for c in patchset.spec.components]
    shipped = read_shipped(env, components) if env.python is not None and components else None
    copies = sources.copies(patchset, env, scratch)
    pristine = Pristine(env, Ledger(env.state_dir), patchset.name, shipped, copies)
    common = os.path.commonpath([str(r) for r in env.roots.values()])
    roots = {t: scratch / "old" / os.path.relpath(r, common) for t, r in env.roots.items()}
    for root in roots.values():
        root.mkdir(parents=True, exist_ok=True)
    for patch, lp in pairs:
        for rel in _file_paths(patch, lp):
            data, _ = pristine.original(patch.target, rel)
            if data is not None:
                path = roots[patch.target] / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
    sub = Patchset(
        spec=msgspec.structs.replace(patchset.spec, patches=[p for p, _ in pairs]),
        path=patchset.path,
        folder=patchset.folder,
        document=patchset.document,
    )
    simulated = Environment(
        python=None,
        prefix=None,
        python_version=None,
        roots=roots,
        state_dir=scratch / "old-state",
    )
    plan = make_plan(sub, simulated, [lp for _, lp in pairs], use_ledger=False)
    states: dict[str, list[FileChange]] = {}
    hunks: dict[str, list[HunkResult]] = {}
    for report in plan.reports:
        if report.status is PatchStatus.PENDING:
            states[report.id] = report.inspection.changes
            hunks[report.id] = report.inspection.hunks
        elif report.status is not PatchStatus.REDUNDANT:
            raise RefusedError(
                f"patch {report.id} is {report.status.value} on the old image's pristine files: "
                "the old image is not the one the patchset was written for",
                file=patchset.path,
                patch_id=report.id,
            )
    return states, hunks


def _moves(
    patchset: Patchset,
    old_states: dict[str, list[FileChange]],
    old_env: Environment,
    new_env: Environment,
) -> dict[tuple[str, str], Rename]:
    """(target, old path) -> where git's rename detection finds each patched file that the
    candidate no longer has, among the candidate's files (with the same suffix, in the same
    top folder) that the old image did not have."""
    gone: dict[str, dict[str, bytes]] = {}
    new_tree, old_tree = Tree(new_env.roots, new_env), Tree(old_env.roots, old_env)
    for changes in old_states.values():
        for c in changes:
            if c.before is None or c.target not in new_env.roots:
                continue
            if new_tree.on_disk_if_file(c.target, c.path) is None:
                gone.setdefault(c.target, {})[c.path] = c.before
    found: dict[tuple[str, str], Rename] = {}
    for target, files in gone.items():
        root = Path(new_env.roots[target])
        suffixes = {os.path.splitext(rel)[1] for rel in files}
        tops = {rel.split("/", 1)[0] for rel in files if "/" in rel}
        candidates = []
        for top in sorted(tops):
            for folder, _, names in os.walk(root / top):
                for name in names:
                    if os.path.splitext(name)[1] not in suffixes:
                        continue
                    rel = Path(os.path.relpath(os.path.join(folder, name), root)).as_posix()
                    if target not in old_env.roots or (
                        old_tree.on_disk_if_file(target, rel) is None
                    ):
                        candidates.append(rel)
        for old, rename in find_renames(files, candidates, root).items():
            found[(target, old)] = rename
    return found


def _theirs(
    result: CheckResult, index: int, tree: Tree
) -> dict[Location | tuple[str, str], bytes | None]:
    """Each file's content on the candidate before patch ``index``: the candidate's bytes with
    the earlier patches that apply there staged (as ``check`` judged them), keyed by
    :meth:`~patchbay.environment.tree.Tree.location` (one file reached through two targets is one
    file)."""
    state: dict[Location | tuple[str, str], bytes | None] = {}
    for report in result.plan.reports[:index]:
        if report.status is PatchStatus.PENDING:
            for change in report.inspection.changes:
                state[tree.location_of(change.target, change.path)] = change.after
    return state


_BINARY = "a binary file changed on both sides"
_SIDES = ("base", "ours", "theirs")


def _merge(
    current: Patchset,
    result: CheckResult,
    index: int,
    old: tuple[dict[str, list[FileChange]], dict[str, list[HunkResult]]],
    env: Environment,
    items: dict[str, RebaseItem],
    scratch: Path,
    resolved: Path | None = None,
) -> None:
    """3-way merge patch ``index`` onto the candidate; write the refreshed diff into the work
    copy, or record the conflict (markers under ``scratch/conflicts``). A file merged by hand
    under ``resolved`` stands for the merge of that file. A file upstream moved is merged at
    its new path; hunks ``check`` finds upstream are left out of the merge."""
    old_states, old_hunks = old
    patch = current.patches[index]
    item = items[patch.id]
    if not isinstance(patch, DiffPatch) or patch.file is None:
        item.outcome = "conflict"
        what = (
            "vendored from upstream: run `patchbay vendor` with a new source"
            if isinstance(patch, DiffPatch)
            else f"a {patch.kind} patch: edit it by hand"
        )
        item.details.append(f"not merged: {what}")
        for h in result.items[index].report.inspection.hunks:
            if h.state.value not in ("applied", "pending"):
                item.details.append(f"{h.file} {h.index}: {h.state.value}")
        return
    changes = old_states.get(patch.id)
    if changes is None:
        item.outcome = "conflict"
        item.details.append("not merged: the patch is not pending on the old image's files")
        return
    tree = Tree(env.roots, env)
    staged = _theirs(result, index, tree)
    blocked = _blocked_by(current, index, changes, old_states, items, tree)
    if blocked:
        item.outcome = "conflict"
        item.details.append(
            f"not merged: {blocked}, before it, changes the same file and is in conflict; "
            f"resolve {blocked} first, then rebase again"
        )
        return
    versions: list[FileVersions] = []
    conflicted: list[tuple[str, bytes | None, str]] = []
    binaries: dict[str, tuple[bytes, bytes, bytes]] = {}  # rel -> base, ours, theirs
    upstream = {
        (h.file, h.index) for h in result.items[index].report.inspection.hunks if h.state in PRESENT
    }
    parsed = load_patches(current)[index].data
    for change in changes:
        rel = item.moved.get(change.path, change.path)  # upstream moved it: merged there
        key = (change.target, rel)
        where = tree.location_of(*key)
        theirs = staged[where] if where in staged else tree.on_disk(*key)
        merged, problem = _merge_file(patch.id, change, theirs, scratch)
        if rel != change.path:
            item.details.append(f"{change.path}: moved upstream to {rel}; merged there")
        dropped = {i for f, i in upstream if f == change.path}
        if problem and dropped and change.before is not None and theirs is not None:
            fp = next((f for f in parsed.files if f.path == change.path), None)
            ours = None
            if fp is not None:
                ours = without_upstream_hunks(
                    change.before, fp, old_hunks.get(patch.id, []), dropped
                )
            if ours is not None:
                fewer = msgspec.structs.replace(change, after=ours)
                merged, problem = _merge_file(patch.id, fewer, theirs, scratch)
                numbers = ", ".join(str(i) for i in sorted(dropped))
                item.details.append(
                    f"{change.path}: hunk(s) {numbers} already upstream, left out of the merge"
                )
        by_hand = resolved / patch.id / rel if resolved is not None else None
        if problem and by_hand is not None and os.path.lexists(by_hand):
            hand, problem = _resolved_file(by_hand, resolved)  # type: ignore[arg-type]
            merged = merged if hand is None else hand  # a refused one: the 3-way result stays
            if not problem:
                item.details.append(f"{change.path}: taken from {by_hand}")
        if problem:
            conflicted.append((rel, merged, problem))
            if problem == _BINARY and change.before and change.after and theirs:
                binaries[rel] = (change.before, change.after, theirs)
            continue
        executable = _executable(tree, key)
        versions.append(FileVersions(rel, theirs, merged, executable, executable))
    if conflicted:
        item.outcome = "conflict"
        for rel, marked, problem in conflicted:
            item.details.append(f"{rel}: {problem}")
            if marked is not None:
                side = scratch / "conflicts" / patch.id / rel
                side.parent.mkdir(parents=True, exist_ok=True)
                side.write_bytes(marked)
                item.conflict_files.append(Path(patch.id) / rel)
            elif rel in binaries:
                # no markers fit bytes: the three versions side by side, as a merge tool gets
                # them (git mergetool's BASE/LOCAL/REMOTE); the one wanted, put at the file's
                # own path there, is what --resolved takes
                for suffix, data in zip(_SIDES, binaries[rel], strict=True):
                    side = scratch / "conflicts" / patch.id / f"{rel}.{suffix}"
                    side.parent.mkdir(parents=True, exist_ok=True)
                    side.write_bytes(data)
                    item.conflict_files.append(Path(patch.id) / f"{rel}.{suffix}")
                item.details.append(
                    f"{rel}: binary: {rel}.base (old image), {rel}.ours (the patch's result "
                    f"there) and {rel}.theirs (candidate) are in the conflicts folder; copy the "
                    f"version wanted to {patch.id}/{rel} there and rebase again with --resolved"
                )
        return
    if not any(v.changed for v in versions):
        item.outcome = "dropped"
        item.details.append("merged: every change is already in the candidate")
        return
    prefixes, preamble = patch_layout(current, patch, load_patches(current)[index])
    target_file = current.folder / patch.file
    for context in _CONTEXTS:
        data = preamble + write_diff(
            versions, src_prefix=prefixes[0], dst_prefix=prefixes[1], context=context
        )
        target_file.write_bytes(data)
        if _pending_with(current, index, versions, env, scratch / f"check-{patch.id}-{context}"):
            break
    item.outcome = "refreshed"
    by_hand = {d.split(":", 1)[0] for d in item.details}
    item.details.extend(
        f"{v.path}: merged" for v in versions if v.changed and v.path not in by_hand
    )


def _blocked_by(
    current: Patchset,
    index: int,
    changes: list[FileChange],
    old_states: dict[str, list[FileChange]],
    items: dict[str, RebaseItem],
    tree: Tree,
) -> str | None:
    """The id of an earlier patch left in conflict that changes one of the files of patch
    ``index`` (through any target), or None: merged onto the candidate without that patch's
    change, the refreshed diff would carry it."""
    mine = {tree.location_of(c.target, c.path) for c in changes}
    for earlier in current.patches[:index]:
        if items[earlier.id].outcome != "conflict":
            continue
        theirs = {tree.location_of(c.target, c.path) for c in old_states.get(earlier.id, [])}
        if mine & theirs:
            return earlier.id
    return None


def _resolved_file(path: Path, folder: Path) -> tuple[bytes | None, str]:
    """A file merged by hand (``--resolved``): its bytes and "" when it is a regular file
    inside ``folder`` without conflict markers, else None (or the bytes) and the problem.
    A link is refused, as ``apply`` refuses one: it could name any file on the machine."""
    within = inside(os.path.realpath(path), os.path.realpath(folder))
    if os.path.islink(path) or not within:
        return None, f"the resolved file {path} is a symbolic link (or leaves {folder}): refused"
    if not path.is_file():
        return None, f"the resolved file {path} is not a regular file"
    merged = path.read_bytes()
    return merged, "" if not _MARKERS.search(merged) else "the resolved file still has markers"


def _merge_file(
    patch_id: str, change: FileChange, theirs: bytes | None, scratch: Path
) -> tuple[bytes | None, str]:
    """(merged bytes, "") or (bytes with conflict markers or None, why it conflicts)."""
    base, ours = change.before, change.after
    if theirs == base:
        return ours, ""  # the candidate did not touch this file: the patch's result stands
    if theirs == ours:
        return ours, ""  # the candidate already has the patch's result for this file
    if base is None:
        return None, "the patch creates it, and the candidate has it with other content"
    if theirs is None:
        return None, "the candidate no longer has this file"
    if ours is None:
        return theirs, "the patch deletes it, and the candidate changed it"
    if any(b"\0" in data for data in (base, ours, theirs)):
        return None, _BINARY
    folder = scratch / "merge" / patch_id / change.path
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ours").write_bytes(ours)
    (folder / "base").write_bytes(base)
    (folder / "theirs").write_bytes(theirs)
    labels = [f"{patch_id} on the old image", "old image", "candidate image"]
    status, merged = run_git(
        [
            "merge-file",
            "-p",
            "--diff3",
            *(arg for label in labels for arg in ("-L", label)),
            "ours",
            "base",
            "theirs",
        ],
        folder,
        ok=tuple(range(0, 128)),
    )
    if status:
        return merged, f"{status} conflict(s) in the 3-way merge"
    return merged, ""


def _pending_with(
    current: Patchset,
    index: int,
    versions: list[FileVersions],
    env: Environment,
    folder: Path,
) -> bool:
    """Whether the patch file now in the work copy is pending on the candidate's files (as
    the earlier patches leave them) with exactly the merged bytes as result."""
    patch = current.patches[index]
    try:
        lp = KINDS[patch.kind].load(patch, current, index)
    except PatchbayError:
        return False
    folder.mkdir(parents=True)
    for v in versions:
        if v.before is not None:
            (folder / v.path).parent.mkdir(parents=True, exist_ok=True)
            (folder / v.path).write_bytes(v.before)
    inspection = KINDS[patch.kind].inspect(patch, lp, Tree({patch.target: folder}))
    if inspection.state is not ContentState.PENDING:
        return False
    results = {c.path: c.after for c in inspection.changes}
    return all(results.get(v.path, v.before) == v.after for v in versions)


def _executable(tree: Tree, key: tuple[str, str]) -> bool:
    try:
        return bool(os.stat(tree.resolve(*key)).st_mode & 0o100)
    except FileNotFoundError:
        return False


def _drop_upstream(yaml_path: Path, env: Environment, items: dict[str, RebaseItem]) -> None:
    """Remove from the work copy every patch the candidate already has (``check``: upstream),
    with its patch file; a patch another one names (``after``) is kept and said so."""
    current = load_patchset(yaml_path)
    result = check_patchset(current, env)
    upstream = [i.report for i in result.items if i.verdict is Verdict.UPSTREAM]
    dropped = [items[r.id] for r in upstream if items[r.id].outcome == "dropped"]
    ids = {r.id for r in upstream} | {i.id for i in dropped}
    for report in reversed([r for r in result.plan.reports if r.id in ids]):
        text = yaml_path.read_text(encoding="utf-8")
        new_text = remove_patch(text, report.index, path=yaml_path)
        yaml_path.write_text(new_text, encoding="utf-8")
        try:
            smaller = load_patchset(yaml_path)
        except InputError as exc:
            yaml_path.write_text(text, encoding="utf-8")
            items[report.id].details.append(f"already upstream, but kept: {exc.reason}")
            continue
        item = items[report.id]
        item.outcome = "dropped"
        if not item.details:
            item.details.append("already upstream in the candidate: proposed for removal")
        content = getattr(report.patch, "file", None)
        still_used = {getattr(p, "file", None) for p in smaller.patches}
        if content and content not in still_used:
            (yaml_path.parent / content).unlink(missing_ok=True)


def _move_guard(yaml_path: Path, env: Environment) -> list[str]:
    """Point the work copy's base guard at the candidate: each guarded distribution pinned to
    the candidate's version (when there is an interpreter to ask), each guarded file to the
    candidate's sha256; the image reference is the user's to update."""
    current = load_patchset(yaml_path)
    text = yaml_path.read_text(encoding="utf-8")
    notes = []
    for name, spec in current.spec.base.distributions.items():
        version = env.distributions.get(name)
        if version is None:
            notes.append(f"base.distributions.{name}: kept {spec!r} (candidate version unknown)")
            continue
        text = set_scalar(text, ("base", "distributions", name), f"=={version}", path=yaml_path)
        notes.append(f"base.distributions.{name}: {spec!r} -> '=={version}'")
    tree = Tree(env.roots, env)
    for i, guard in enumerate(current.spec.base.files):
        data = tree.on_disk(guard.target, guard.path)
        if data is None:
            notes.append(f"base.files: {guard.path} is not in the candidate; kept its old hash")
            continue
        digest = sha256_bytes(data)
        if digest != guard.sha256:
            text = set_scalar(text, ("base", "files", i, "sha256"), digest, path=yaml_path)
            notes.append(f"base.files: {guard.path} -> the candidate's sha256 {digest[:12]}")
    yaml_path.write_text(text, encoding="utf-8")
    load_patchset(yaml_path)
    if notes:
        notes.append("image.reference (and components[].commit) still name the old image")
    return notes


def _write_side(source: Path, side: Path, items: list[RebaseItem]) -> None:
    """Copy the merged files with conflict markers to the side folder (replacing an older
    copy of each patch's folder)."""
    side.mkdir(parents=True, exist_ok=True)
    for item in items:
        if not item.conflict_files:
            continue
        shutil.rmtree(side / item.id, ignore_errors=True)
        shutil.copytree(source / item.id, side / item.id)
        item.conflict_files = [side / f for f in item.conflict_files]


def _publish(work: Path, patchset: Patchset, out: Path | None, write: bool, scratch: Path) -> Path:
    """Move the result where it belongs: a new folder, or over the patchset's own files (in
    one journaled step: a failure restores them)."""
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.exists():
            out.rmdir()
        shutil.copytree(work, out, symlinks=True)
        return out
    folder = patchset.folder
    old = {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()}
    new = {p.relative_to(work) for p in work.rglob("*") if p.is_file()}
    # journaled beside the patchset, where the next command that loads it finds a killed
    # write and puts the patchset back before reading it (recover_patchset_files)
    side = Path(patchset_side(folder))
    with state_lock(side, 0.0):
        finish_journal(side, [folder])
        with Transaction(side / "journal", [folder]) as txn:
            for rel in sorted(old | new):
                target = folder / rel
                data = (work / rel).read_bytes() if rel in new else None
                if data is not None and rel in old and target.read_bytes() == data:
                    continue
                txn.save(target)
            txn.sync()
            for rel in sorted(old | new):
                target = folder / rel
                data = (work / rel).read_bytes() if rel in new else None
                if data is not None and rel in old and target.read_bytes() == data:
                    continue
                if data is None:
                    target.unlink()
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    write_atomic(target, data, durable=True)
                fault_point("patchset-file-written")
            txn.commit()
    tidy_side(side)
    return folder
