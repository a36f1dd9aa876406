"""Planning a run: every patch's content loaded (diff files parsed, paths checked, no two
patches writing one whole file), the base guard checked against the image, and every patch
judged in order on one tree, nothing written (:func:`make_plan`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..environment.owners import Owners, replaced_since
from ..environment.targets import Environment
from ..environment.tree import Tree
from ..errors import InputError
from ..kinds import KINDS, ContentState, Inspection, LoadedPatch
from ..options import RunOptions
from ..patchset.model import Patchset
from .judge import check_reaches_applied, inspect_patch, judge, status_of
from .layers import on_top
from .ledger import Ledger, sha256_or_none
from .results import GuardResult, PatchReport, PatchStatus, Plan, touched_paths

if TYPE_CHECKING:
    from .compiled import CompiledPlan


def load_patches(patchset: Patchset, compiled: CompiledPlan | None = None) -> list[LoadedPatch]:
    """Read every patch's content (diff files parsed, paths checked); a diff whose bytes
    ``compiled`` (a bundle's compiled plan) judged is parsed only if something asks for more
    than the plan knows (:meth:`CompiledPlan.loaded`).

    Raises:
        InputError: the first missing or corrupt patch, with every other problem as details.
    """
    loaded: list[LoadedPatch] = []
    problems: list[InputError] = []
    for i, patch in enumerate(patchset.patches):
        try:
            known = None if compiled is None else compiled.loaded(patch, patchset, i)
            loaded.append(known or KINDS[patch.kind].load(patch, patchset, i))
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
        written, edited = touched_paths(patch, lp)
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
    patchset: Patchset,
    env: Environment,
    ledger: Ledger,
    tree: Tree | None = None,
    superseded: frozenset[str] = frozenset(),
) -> GuardResult:
    """Check the base guard: distribution versions and pristine file hashes.

    A guarded file that patchbay itself patched passes when the ledger shows it started from
    the pristine hash and the file still has the hash patchbay last wrote. ``tree``: the run's
    tree, to read the guarded files through (and record them as seen); a fresh one by default.
    ``superseded``: ids whose records a newer build made stale (not counted as history).
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
    history = _file_history(ledger, patchset.name, tree, superseded)
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
    ledger: Ledger, patchset: str, tree: Tree, superseded: frozenset[str] = frozenset()
) -> dict[object, tuple[str | None, str | None]]:
    """Each file's first recorded ``before`` and last ``after`` hash, keyed by its location
    (:meth:`Tree.location`: one file reached through two targets has one history); records in
    ``superseded`` (stale: a newer build was installed over them) are left out."""
    history: dict[object, tuple[str | None, str | None]] = {}
    for entry in ledger.entries(patchset):
        if entry.patch_id in superseded:
            continue
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
    candidate image): nothing counts as applied by patchbay. A record that a newer build of
    its distribution was installed over (:mod:`patchbay.environment.owners`) no longer
    describes the tree: its patch is judged as if unrecorded, and the plan names it in
    ``replaced``. With a bundle among ``options`` whose compiled plan
    (:mod:`patchbay.apply.compiled`) holds for a patch, its recorded judgement is used instead
    of a hunk search (the plan's ``compiled`` counts them).

    Raises:
        InputError: a patch's content is missing or corrupt; the ledger is unreadable.
        RefusedError: a patch path is unsafe (escapes its root, goes through a link).
    """
    compiled = None
    if options is not None and options.bundle is not None and use_ledger:
        from .compiled import compiled_for

        compiled = compiled_for(options.bundle, patchset.name)
    loaded = loaded if loaded is not None else load_patches(patchset, compiled)
    ledger = Ledger(env.state_dir) if use_ledger else Ledger.empty(env.state_dir)
    tree = Tree(env.roots, env, options)
    tree.protected = set(patchset.spec.protected)
    tree.folder = patchset.folder
    recorded = ledger.entries(patchset.name)
    replaced = (
        replaced_since(recorded, Owners(env.roots, patchset.spec.targets)) if recorded else []
    )
    superseded = frozenset(pid for r in replaced for pid in r.patch_ids)
    guard = check_guard(patchset, env, ledger, tree, superseded)
    history = _file_history(ledger, patchset.name, tree, superseded)
    # files another patchset patched on top of this one's: judged on what this one left
    layered = on_top(ledger, patchset.name, tree, history)
    for top in layered.values():
        tree.stage(top.target, top.path, top.ours)
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
            inspection = inspect_patch(patch, lp, unwound, compiled)
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
        entry = None if patch.id in superseded else ledger.find(patchset.name, patch.id)
        if lp.unlocked:
            inspection = Inspection(state=ContentState.CONFLICT, notes=[lp.unlocked])
            reports.append(
                PatchReport(i, patch, lp, inspection, PatchStatus.UNLOCKED, entry, [lp.unlocked])
            )
            continue
        inspection = judge(patch, lp, tree, backward.pop(patch.id, None), entry, staged, compiled)
        if (
            inspection.state is ContentState.PENDING
            and getattr(KINDS[patch.kind], "recheck", False)
            and any(c.before != c.after for c in inspection.changes)
        ):
            check_reaches_applied(patch, lp, inspection, tree)
        status, notes = status_of(inspection, entry, lp, tree, history, layered)
        blocked = [
            top.blocks()
            for c in inspection.changes
            if (top := layered.get(tree.location_of(c.target, c.path))) is not None
        ]
        if status is PatchStatus.PENDING and blocked:
            status, notes = PatchStatus.CONFLICT, [*notes, *blocked]
            inspection.state = ContentState.CONFLICT
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
        e
        for e in ledger.entries(patchset.name)
        if (e.patch_id not in ids or e.patch_id in outdated) and e.patch_id not in superseded
    ]
    return Plan(
        patchset,
        env,
        ledger,
        guard,
        reports,
        stale,
        tree.seen,
        replaced,
        compiled=None if compiled is None else len(compiled.hits),
    )
