"""``capture``: turn edits made to the installed engine into a ``diff`` patch of the patchset.

An engineer edits files of the running engine until it works; ``capture`` writes those edits as
a patch, relative to what each file was before them, and adds the patch to ``patchset.yaml``,
as ``patch-package`` diffs an edited package against a fresh copy of the same version.

- The edited files are the ones given, or, with none, every file whose bytes differ from its
  ``RECORD`` hash and that no declared patch explains (what ``verify --installed`` reports as
  undeclared: changed, added or deleted files; see installed.py).
- A file patchbay already patched starts from the earlier patches' result, rebuilt from the
  ledger's original and the patch that last wrote it, and checked against the hash the ledger
  recorded: the new patch goes last, so the stack stays ordered. Any other file starts from its
  pristine bytes (see pristine.py), accepted only when they match ``RECORD``.
- The diff is written by git (see gitdiff.py) with ``a/`` and ``b/`` before paths relative to
  the target root that holds every edited file (the deepest one), so it is read with strip
  level 1, the default. Context grows until every hunk's context is unique in its file.
- Before anything is written the result is loaded as a patchset and the new patch is checked:
  present on this tree, and pending on the files it started from with exactly the edited bytes
  as result. Then the patch file, ``patchset.yaml`` (the new entry inserted as text; the file
  keeps its comments and order) and the ledger (the patch recorded as applied here, so
  ``status`` says ``applied`` and ``revert`` restores the originals) are written in one
  transaction.

``description`` and the upstream state are ``<TODO: ...>`` blanks unless given: ``validate``
lists them and the audit flags them (PB301; PB202 in a waiver made from the patchset).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from ..apply.interrupted import recovered_first
from ..apply.ledger import Ledger
from ..apply.plan import load_patches, make_plan
from ..apply.results import PatchReport
from ..diff.gitdiff import FileVersions, big_binary, write_diff
from ..digests import prefetch
from ..environment.installed import verify_installed
from ..environment.ownership import changed_in_checkout, record_owners
from ..environment.pristine import (
    FetchedWheels,
    GitCopy,
    Pristine,
    PristineCopy,
    WheelCopy,
    read_shipped,
)
from ..environment.targets import Environment
from ..environment.tree import Tree
from ..errors import InputError, PatchbayError, RefusedError
from ..kinds import KINDS, ContentState, LoadedPatch
from ..patchset.loading import load_patchset
from ..patchset.model import DiffPatch, Patchset, Target
from ..patchset.text import append_patch
from .adopt import MadeFile, record_made_patch
from .bases import executable_before, state_before

TODO_DESCRIPTION = "<TODO: what this patch does and why>"
TODO_UPSTREAM = (
    "<TODO: list the upstream PR or issue under upstream, or give the real status and why>"
)
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_CONTEXTS = (3, 6, 12, 25)  # -U tried in turn until no hunk's context is ambiguous


@dataclass
class CapturedFile:
    """One file of a captured patch: its path relative to the target root, ``modified``,
    ``new`` or ``deleted``, and where the content it starts from came from."""

    path: str
    change: str
    base: str


@dataclass
class CaptureResult:
    """What ``capture`` wrote.

    Attributes:
        patch_id, target: the new patch and its target.
        patch_file: the patch file written (absolute).
        files: the captured files.
        skipped: files found edited but not captured, each with the reason.
        context: the lines of context the diff has.
    """

    patch_id: str
    target: str
    patch_file: Path
    files: list[CapturedFile] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    context: int = 3


@dataclass
class MadeDiff:
    """A diff written for a patch and checked.

    Attributes:
        data: the patch file's bytes.
        loaded: the patch as ``load`` reads them (``loaded.sha256`` is its identity).
        trial: a loaded copy of the patchset as it will be (in a scratch folder).
        context: the lines of context it needed.
    """

    data: bytes
    loaded: LoadedPatch
    trial: Patchset
    context: int


@dataclass
class PristineSources:
    """Where pristine copies come from when a file no longer matches ``RECORD``.

    Attributes:
        wheels: wheel files of the image's distributions (``--wheel``).
        from_git: the component's repository, a folder or a URL (``--from-git``), read at the
            commit ``components[].commit`` pins.
    With neither, the wheel of each installed version is fetched with the engine's own pip.
    """

    wheels: list[Path] = field(default_factory=list)
    from_git: str | None = None

    def copies(
        self,
        patchset: Patchset,
        env: Environment,
        scratch: Path,
        versions: dict[str, str] | None = None,
    ) -> list[PristineCopy]:
        """The copies to try, in order (``versions``: installed versions of distributions that
        are not components, for the wheels fetched).

        Raises:
            InputError: a wheel is unreadable; ``--from-git`` but no component pins a commit.
        """
        out: list[PristineCopy] = [WheelCopy(w) for w in self.wheels]
        if self.from_git is not None:
            pinned = [c for c in patchset.spec.components if c.commit]
            if not pinned:
                raise InputError(
                    "--from-git needs the commit the image was built from: no component has "
                    "`commit`",
                    file=patchset.path,
                )
            c = pinned[0]
            out.append(GitCopy(self.from_git, c.distribution, c.commit or "", scratch))
        if not out:
            out.append(FetchedWheels(env, scratch, versions))
        return out


def capture_patch(
    patchset: Patchset,
    env: Environment,
    patch_id: str,
    paths: Sequence[str] = (),
    *,
    target: str | None = None,
    sources: PristineSources | None = None,
    description: str | None = None,
    upstream: Sequence[str] = (),
    lock_timeout: float = 0.0,
    exclude: Sequence[str] = (),
) -> CaptureResult:
    """Capture the edits of ``paths`` (default: every undeclared edit) as patch ``patch_id``.

    Args:
        patchset: the loaded patchset the patch is added to.
        env: the engine environment holding the edits: its interpreter, or a ``--root`` tree
            with the components' dist-info folders (RECORD tells edits from installed files).
        patch_id: the new patch's id.
        paths: edited files: absolute, relative to the current folder, or relative to a target
            root (``demo_engine/worker.py``); a deleted file by a path that no longer exists.
        target: the target to write the patch for (default: the deepest root holding every
            file).
        sources: pristine copies (default: fetched with the engine's pip).
        description, upstream: the patch's metadata (default: ``<TODO: ...>`` blanks).
        lock_timeout: seconds to wait for another run's lock.
        exclude: patterns of files to leave out (:func:`excluded`), named or found; each one
            left out is listed in ``skipped``.

    Returns:
        The :class:`CaptureResult`.

    Raises:
        InputError: a bad id, a path under no target root, a patchset without components.
        RefusedError: no RECORD of a component, nothing edited, a pristine copy that does not
            match RECORD (the file named), a file a declared patch touches that patchbay has
            not applied, a diff that would not be recognised; nothing was written.
    """
    if not _ID.match(patch_id):
        raise InputError(f"patch id {patch_id!r} must match [A-Za-z0-9][A-Za-z0-9._-]*")
    patchset = recovered_first(patchset, env, lock_timeout)  # never plan on a killed run's tree
    if any(p.id == patch_id for p in patchset.patches):
        raise InputError(f"patchset already has a patch {patch_id!r}", file=patchset.path)
    writable_patchset(patchset)
    components = [c.distribution for c in patchset.spec.components]
    if not components:
        raise InputError(
            "the patchset has no components: capture compares files with their "
            "distributions' RECORD; add `components`",
            file=patchset.path,
        )
    loaded = load_patches(patchset)
    plan = make_plan(patchset, env, loaded)
    shipped = read_shipped(env, components)
    ledger = Ledger(env.state_dir)
    result_skipped: list[str] = []
    if paths:
        found = [(locate(p, env, shipped.listed), True) for p in paths]
        shipped.add_owners_of([p for p, _ in found], env)
    else:
        undeclared = verify_installed(patchset, env, components).undeclared
        # a file no RECORD lists is, in a working engine, mostly what running it made (a JIT
        # build, a cache, byte-code): only a file named on the command line becomes a new file
        found = [(f.path, False) for f in undeclared if f.kind != "added"]
        shipped.add_owners_of([], env)
        wanted = {canonicalize_name(c) for c in components}
        for checkout in shipped.checkouts:  # an editable component: what git sees edited
            if canonicalize_name(checkout.distribution) in wanted:
                found.extend((p, False) for p in changed_in_checkout(checkout))
        result_skipped.extend(
            f"{_shown(f.path, env)}: no RECORD lists it (a cache or build output?); name it "
            "as FILE to capture it as a new file"
            for f in undeclared
            if f.kind == "added"
        )
    if not found:
        raise RefusedError(
            "nothing to capture: every installed file matches RECORD or a patch"
            + (
                f" ({len(result_skipped)} file(s) no RECORD lists left out: name them as FILE)"
                if result_skipped
                else ""
            )
        )
    found = list({p: (p, explicit) for p, explicit in found}.values())  # a file once
    if exclude:
        kept = []
        for p, explicit in found:
            pattern = excluded(_shown(p, env), exclude)
            if pattern is None:
                kept.append((p, explicit))
            else:
                result_skipped.append(f"{_shown(p, env)}: excluded by --exclude {pattern}")
        if not kept:
            raise RefusedError(
                "nothing to capture: every edited file is excluded ("
                + "; ".join(result_skipped)
                + ")"
            )
        found = kept
    chosen = _target_for([p for p, _ in found], env, target, patchset.spec.targets)
    shipped_dirs = {
        a for p in shipped.listed for a in _ancestors(os.path.dirname(p), str(env.roots[chosen]))
    }
    root = env.roots[chosen]
    touching = _touching(plan, env)
    sources = sources or PristineSources()
    with tempfile.TemporaryDirectory(prefix="patchbay-capture-") as scratch:
        copies = sources.copies(patchset, env, Path(scratch), shipped.versions)
        pristine = Pristine(env, ledger, patchset.name, shipped, copies)
        versions: list[FileVersions] = []
        made: list[MadeFile] = []
        captured: list[CapturedFile] = []
        tree = Tree(env.roots, env)
        pristine.read_current = tree.on_disk_if_file  # a large file is read once
        for path, explicit in found:
            rel = Path(os.path.relpath(path, root)).as_posix()
            tree.resolve(chosen, rel)  # refuses links and paths out of the root
            blocker = _unapplied(touching.get(path, []))
            if blocker is not None:
                reason = (
                    f"{rel}: patch {blocker.id} touches it and is {blocker.status.value} here, "
                    "not applied by patchbay; apply the patchset first, then capture the edits "
                    "on top of it"
                )
                if explicit:
                    raise RefusedError(reason, file=path, patch_id=blocker.id)
                result_skipped.append(reason)
                continue
            base, origin = state_before(patchset, env, ledger, loaded, pristine, path, chosen, rel)
            current = tree.on_disk(chosen, rel)
            executable = _executable(path)
            was = executable_before(env, ledger, pristine, path, chosen, rel, base)
            unknown = was is None and current is not None and base is not None
            was = executable if was is None or current is None else was
            if base == current and was == executable:
                if unknown:
                    result_skipped.append(
                        f"{rel}: same bytes as {origin}; its mode there is unknown without a "
                        "pristine copy (give --wheel FILE or --from-git to capture a chmod)"
                    )
                else:
                    result_skipped.append(f"{rel}: not edited (same bytes and mode as {origin})")
                continue
            change = "new" if base is None else "deleted" if current is None else "modified"
            if base == current:
                change = "mode changed"
            elif was != executable and current is not None and base is not None:
                change = "modified, mode changed"
            versions.append(FileVersions(rel, base, current, was, executable))
            if base is not None and current is not None and big_binary(base, current):
                prefetch("git-blob", [base, current])  # its diff's index line needs both
            mode = _mode_before(_mode(path), was) if base is not None else None
            made.append(MadeFile(chosen, rel, base, current, mode))
            captured.append(CapturedFile(rel, change, origin))
        if not versions:
            raise RefusedError(
                "nothing to capture: "
                + ("; ".join(result_skipped) if result_skipped else "no edited file")
            )
        new_files = {
            os.path.join(root, f.path) for f in made if f.before is None and f.after is not None
        }
        for f in made:
            if f.before is None:
                f.created_dirs = _created_dirs(
                    os.path.join(root, f.path), str(root), shipped_dirs, new_files
                )
        entry = _entry(patch_id, chosen, description, upstream)
        text = patchset.path.read_text(encoding="utf-8")
        new_text = append_patch(text, entry, path=patchset.path)
        patch_file = patchset.folder / entry["file"]
        if patch_file.exists():
            raise RefusedError(
                "a file of this name exists already; choose another patch id", file=patch_file
            )
        made_diff = checked_diff(
            patchset, new_text, patch_id, versions, env, Path(scratch), tree=tree
        )
        record_made_patch(
            patchset.name,
            env.state_dir,
            patch_id=patch_id,
            sha256=made_diff.loaded.sha256,
            identity=made_diff.loaded.identity,
            files=made,
            writes={patch_file: made_diff.data, patchset.path: new_text.encode("utf-8")},
            lock_timeout=lock_timeout,
            roots=list(env.roots.values()),
            source=patchset.path,
        )
    return CaptureResult(patch_id, chosen, patch_file, captured, result_skipped, made_diff.context)


def writable_patchset(patchset: Patchset) -> None:
    """Refuse up front a patchset whose folder (or ``patches/`` folder, or ``patchset.yaml``)
    this user cannot write: the new patch could not be added.

    Raises:
        RefusedError: naming what is not writable.
    """
    for path in (patchset.folder, patchset.folder / "patches", patchset.path):
        if path.exists() and not os.access(path, os.W_OK):
            raise RefusedError(
                "cannot write here (permission denied): the patch could not be added to the "
                "patchset; nothing was written",
                file=path,
            )


def excluded(rel: str, patterns: Sequence[str]) -> str | None:
    """The first of ``patterns`` that leaves out the file ``rel`` (``/``-separated, relative to
    its target root), or None. As in ``.gitignore``: a pattern without ``/`` matches any
    component of the path (``*.so``, ``.cache``, ``__pycache__``); one with ``/`` matches the
    path from the root, or a folder above the file (``demo_engine/jit``); ``*``, ``?`` and
    ``[...]`` match within one component (``fnmatch``'s, never across ``/``), ``**`` any number
    of components."""
    parts = rel.split("/")
    for pattern in patterns:
        clean = pattern.strip("/")
        if "/" not in clean:
            if any(fnmatch.fnmatchcase(part, clean) for part in parts):
                return pattern
            continue
        segments = clean.split("/")
        if any(_leading(segments, parts[:n]) for n in range(1, len(parts) + 1)):
            return pattern
    return None


def _leading(segments: list[str], parts: list[str]) -> bool:
    """Whether the pattern's ``segments`` match exactly the path components ``parts``."""
    if not segments:
        return not parts
    if segments[0] == "**":
        return any(_leading(segments[1:], parts[i:]) for i in range(len(parts) + 1))
    return (
        bool(parts)
        and fnmatch.fnmatchcase(parts[0], segments[0])
        and _leading(segments[1:], parts[1:])
    )


def _shown(path: str, env: Environment) -> str:
    """``path`` relative to the deepest target root holding it (as FILE may name it)."""
    for root in sorted((str(r) for r in env.roots.values()), key=len, reverse=True):
        if path.startswith(root + os.sep):
            return os.path.relpath(path, root)
    return path


def _entry(
    patch_id: str, target: str, description: str | None, upstream: Sequence[str]
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": patch_id,
        "kind": "diff",
        "target": target,
        "file": f"patches/{patch_id}.patch",
        "strip": 1,
        "description": description or TODO_DESCRIPTION,
    }
    if upstream:
        entry["upstream"] = list(upstream)
    else:
        entry["upstream_status"] = {"status": "Pending", "reason": TODO_UPSTREAM}
    return entry


def locate(arg: str, env: Environment, listed: set[str]) -> str:
    """An edited file named on the command line (absolute, relative to the current folder, or
    relative to a target root, deepest root first), as an absolute normalised path.

    Raises:
        InputError: no such file anywhere searched (the folders are named).
    """
    given = Path(arg)
    if given.is_absolute():
        return os.path.normpath(given)
    if given.exists():
        return os.path.normpath(given.resolve())
    roots = sorted({str(r) for r in env.roots.values()}, key=len, reverse=True)
    for root in roots:
        candidate = os.path.normpath(os.path.join(root, arg))
        if os.path.lexists(candidate) or candidate in listed:
            return candidate
    for root in roots:  # a deleted file of a package that is not a component
        candidate = os.path.normpath(os.path.join(root, arg))
        if record_owners([candidate], set()):
            return candidate
    raise InputError(
        f"{arg}: no such file in the current folder nor under a target root "
        f"(looked in {', '.join(roots)}); a deleted file must be named as RECORD lists it"
    )


def _target_for(
    paths: list[str],
    env: Environment,
    wanted: str | None,
    targets: Mapping[str, Target] | None = None,
) -> str:
    """The target whose root holds every path: ``wanted``, or the one with the deepest root;
    of several with that root (packages side by side in site-packages), the one whose package
    folder holds the files.

    Raises:
        InputError: ``wanted`` is unknown or does not hold a path; no root holds them all;
            several targets hold them and none is their package (give ``--target``).
    """
    holding = [
        name
        for name, root in env.roots.items()
        if all(p == str(root) or p.startswith(str(root) + os.sep) for p in paths)
    ]
    if wanted is not None:
        if wanted not in env.roots:
            raise InputError(f"unknown target {wanted!r} (targets: {', '.join(env.roots)})")
        if wanted not in holding:
            outside = next(p for p in paths if not p.startswith(str(env.roots[wanted]) + os.sep))
            raise InputError(f"{outside} is not under target {wanted!r} ({env.roots[wanted]})")
        return wanted
    if not holding:
        roots = ", ".join(f"{n}: {r}" for n, r in env.roots.items())
        raise InputError(
            f"no target root holds every edited file ({', '.join(paths)}); target roots are "
            f"{roots}; capture the files of each root separately"
        )
    deepest = max(len(str(env.roots[n])) for n in holding)
    best = [n for n in holding if len(str(env.roots[n])) == deepest]
    if len(best) == 1 or targets is None:
        return best[0]

    def holds_package(name: str) -> bool:
        target = targets.get(name)
        if target is None or target.package is None or target.path:
            return False
        top = target.package.split(".")[0]
        root = str(env.roots[name])
        return all(os.path.relpath(p, root).split(os.sep)[0] in (top, f"{top}.py") for p in paths)

    owning = [n for n in best if holds_package(n)]
    if owning:
        return owning[0]
    raise InputError(
        f"targets {', '.join(best)} all hold {', '.join(paths)} and none is their package: "
        "give --target NAME"
    )


def _touching(plan: Any, env: Environment) -> dict[str, list[PatchReport]]:
    """Absolute path -> the declared patches that edit it (diff, replace, artifact)."""
    out: dict[str, list[PatchReport]] = {}
    for report in plan.reports:
        patch, lp = report.patch, report.loaded
        if patch.target is None or patch.target not in env.roots:
            continue
        rels: list[str] = []
        if patch.kind == "diff" and lp.data is not None:
            rels = [p for fp in lp.data.files for p in (fp.old_path, fp.new_path) if p]
        elif patch.kind == "replace":
            rels = [e.file for e in patch.edits]
        elif patch.kind == "artifact":
            rels = [f.dest for f in patch.files]
        for rel in rels:
            path = os.path.normpath(os.path.join(env.roots[patch.target], rel))
            out.setdefault(path, []).append(report)
    return out


def _unapplied(reports: list[PatchReport]) -> PatchReport | None:
    """The first of ``reports`` that patchbay did not apply here (the edits cannot be put on
    top of it: a fresh copy would get it first, under the new patch)."""
    return next((r for r in reports if r.entry is None), None)


def checked_diff(
    patchset: Patchset,
    yaml_text: str,
    patch_id: str,
    versions: list[FileVersions],
    env: Environment,
    scratch: Path,
    *,
    prefixes: tuple[str, str] = ("a/", "b/"),
    preamble: bytes = b"",
    tree: Tree | None = None,
) -> MadeDiff:
    """The diff of ``versions`` for patch ``patch_id``, with the least context that is
    recognised: present on the files as they are, and pending on the files it starts from with
    exactly the edited bytes as result.

    Args:
        patchset: the patchset as it is.
        yaml_text: its ``patchset.yaml`` as it will be (naming the patch and its file).
        patch_id: the patch the diff is for.
        versions: each file before and after.
        env: the environment holding the edited files.
        scratch: a scratch folder; the returned trial patchset lives under it.
        prefixes: what stands before the paths (``a/``, ``b/``: strip level 1).
        preamble: text kept before the first file header (a DEP-3 header).
        tree: the view of the edited files that ``versions`` were read from (the bytes are
            then not read and hashed again); default: a fresh view of ``env``'s roots.

    Returns:
        The :class:`MadeDiff`.

    Raises:
        RefusedError: the patchset as it will be does not load, or no context width makes the
            diff recognised (the hunk named).
    """
    problem = ""
    for context in _CONTEXTS:
        diff = preamble + write_diff(
            versions, src_prefix=prefixes[0], dst_prefix=prefixes[1], context=context
        )
        folder = scratch / f"U{context}"
        trial = _trial(patchset, yaml_text, patch_id, diff, folder)
        index = next(i for i, p in enumerate(trial.patches) if p.id == patch_id)
        patch, lp = trial.patches[index], load_patches(trial)[index]
        assert isinstance(patch, DiffPatch)
        problem = _recognised(patch, lp, versions, tree or Tree(env.roots, env))
        if not problem:
            return MadeDiff(diff, lp, trial, context)
        if "ambiguous" not in problem:
            break
    raise RefusedError(f"the diff would not be recognised: {problem}", patch_id=patch_id)


def _trial(
    patchset: Patchset, yaml_text: str, patch_id: str, diff: bytes, folder: Path
) -> Patchset:
    """A copy of the patchset as it will be, loaded and every patch read (so the result is
    validated before anything is written)."""
    shutil.copytree(patchset.folder, folder, symlinks=True)
    for where, _, _ in os.walk(folder):  # a read-only patchset's copy is written to
        os.chmod(where, stat.S_IMODE(os.stat(where).st_mode) | stat.S_IRWXU)
    yaml_path = folder / patchset.path.name
    yaml_path.write_text(yaml_text, encoding="utf-8")
    try:
        trial = load_patchset(yaml_path)
        patch = next(p for p in trial.patches if p.id == patch_id)
        assert isinstance(patch, DiffPatch) and patch.file is not None
        (folder / patch.file).parent.mkdir(parents=True, exist_ok=True)
        (folder / patch.file).write_bytes(diff)
        load_patches(trial)
    except InputError as exc:  # e.g. an --upstream reference that is no reference
        exc.reason = f"the patchset as it would be does not load: {exc.reason}"
        exc.file, exc.line, exc.details = patchset.path, None, []
        raise
    except PatchbayError as exc:
        raise RefusedError(f"the patchset as it would be does not load: {exc}") from None
    return trial


def _recognised(patch: DiffPatch, lp: LoadedPatch, versions: list[FileVersions], tree: Tree) -> str:
    """Empty when the patch is present on the disk (as ``tree`` shows it) and pending on its
    bases; else why not."""
    kind = KINDS["diff"]
    now = kind.inspect(patch, lp, tree)
    if now.state is not ContentState.APPLIED:
        return _why(now, "on the edited files")
    # the files it starts from, staged as the very bytes (a large one is then neither
    # written, read nor hashed again) and, below 1 MiB, written out too (a kind may look at
    # the disk)
    with tempfile.TemporaryDirectory(prefix="patchbay-bases-") as scratch:
        root = Path(scratch)
        bases = Tree({patch.target: root})
        for f in versions:
            if f.before is None:
                continue
            (root / f.path).parent.mkdir(parents=True, exist_ok=True)
            if len(f.before) < _WRITTEN_BASE:
                (root / f.path).write_bytes(f.before)
                if f.executable_before:
                    (root / f.path).chmod(0o755)
            bases.stage(patch.target, f.path, f.before)
            bases.stage_executable(patch.target, f.path, f.executable_before)
        before = kind.inspect(patch, lp, bases)
    if before.state is not ContentState.PENDING:
        return _why(before, "on the files it starts from")
    results = {c.path: c.after for c in before.changes}
    for f in versions:
        if f.path in results and results[f.path] != f.after:
            return f"{f.path}: applying it would not give the edited file"
    return ""


_WRITTEN_BASE = 1 << 20


def _why(inspection: Any, where: str) -> str:
    bad = [h for h in inspection.hunks if h.state.value not in ("applied", "pending")]
    detail = ", ".join(f"{h.file} hunk {h.index}: {h.state.value}" for h in bad)
    return f"{inspection.state.value} {where}" + (f" ({detail})" if detail else "")


def _created_dirs(path: str, root: str, shipped_dirs: set[str], new_files: set[str]) -> list[str]:
    """Root-relative folders above a new file that the image did not ship (no file RECORD lists
    is in or below them) and that hold nothing but the capture's new files, deepest first: a
    revert removes them again when they are empty. A folder with any other file in it (an
    engineer's checkout, a file no RECORD lists) was there before the patch."""
    out = []
    folder = os.path.dirname(path)
    while folder != root and folder.startswith(root + os.sep) and folder not in shipped_dirs:
        if not _only(folder, new_files):
            break
        out.append(Path(os.path.relpath(folder, root)).as_posix())
        folder = os.path.dirname(folder)
    return out


def _only(folder: str, files: set[str]) -> bool:
    """Whether every file below ``folder`` is one of ``files`` (byte-code aside)."""
    for here, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        if any(os.path.join(here, n) not in files for n in names):
            return False
    return True


def _ancestors(folder: str, root: str) -> list[str]:
    """``folder`` and the folders above it, up to (not including) ``root``."""
    out = []
    while folder.startswith(root + os.sep):
        out.append(folder)
        folder = os.path.dirname(folder)
    return out


def _executable(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & stat.S_IXUSR)
    except FileNotFoundError:
        return False


def _mode_before(mode: int | None, executable: bool) -> int | None:
    """The permission bits the file had before a ``chmod`` that left it with ``mode``: its
    ``x`` bits off, or on where it is readable (as ``chmod +x``), as git's one mode bit says."""
    if mode is None or bool(mode & 0o100) == executable:
        return mode
    return mode | ((mode & 0o444) >> 2) if executable else mode & ~0o111


def _mode(path: str) -> int | None:
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return None
