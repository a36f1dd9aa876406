"""The ``pip`` kind: package pins over the image, installed with the engine's own pip.

- Idempotent: a pin whose requirement the installed version already satisfies (or, for a
  ``git+`` direct reference or a source build, whose installed ``direct_url.json`` records the
  pinned commit, per PEP 610 ``vcs_info.commit_id``) is applied, and pip is not run at all.
- Before installing, ``pip install --dry-run --report`` lists every distribution the pin would
  add, upgrade or downgrade; a change to a protected distribution (the patchset's ``protect``,
  by default its components) is refused unless the patch ``allow``s it by name. ``status``
  runs the same dry run (:meth:`PipKind.trial`, no log), so it tells a pin apply would refuse;
  a dry run that failed on an index it could not reach raises ``SourceUnreachable``.
- A source build (``source: {repo, ref}``) installs ``name @ git+<url>@<commit>`` at the commit
  ``patchbay vendor`` locked (a tag or branch is never built as such; unlocked, the patch is
  refused). Its ``build_requirements`` file is read from a scratch checkout of that commit (a
  fresh temporary folder each time, so a retried run never meets a clone left behind) and goes
  through the same dry run before anything is installed. Without build isolation the package's
  own metadata can only be prepared once those are installed, so its dry run comes after
  their install, inside the run's transaction: a refusal then undoes that install too.
- The ledger keeps every distribution the install changed (``changes``: name, version before,
  version after, found by listing the environment before and after the install); ``revert``,
  and a rollback of a failed run, put all of them back in one ``pip install --no-deps`` (and
  one ``pip uninstall`` for what the install added), then list the environment again and name
  whatever is still not as it was: that is an error, never reported as restored.
- pip's output goes to ``<state>/logs/<id>.log`` (0600, redacted); a failure quotes pip's own
  error block (its ``ERROR:`` and ``error:`` lines, the tail of a failed build's output).

This module is the kind itself; the pin model is :mod:`patchbay.kinds.pins`, running pip
:mod:`patchbay.kinds.pipcall`, and putting versions back (a revert, a rollback, recovery's
journaled undo) :mod:`patchbay.kinds.piprestore`.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ..apply.ledger import sha256_bytes
from ..diff.hunks import HunkResult, HunkState
from ..errors import ApplyFailed, RefusedError, SourceUnreachable
from ..patchset.lockfile import Lock
from ..patchset.model import PipPatch
from .base import ContentState, Inspection, LoadedPatch, PendingPatch, Trial
from .pins import (
    PipPin,
    installed_commit,
    listed_version,
    source_requirement,
    vcs_commit,
    version_changes,
)
from .pipcall import (
    DryRun,
    build_requirements_file,
    checkout,
    index_args,
    installed_versions,
    pip_environment,
    pip_failure,
    pip_log,
    run_pip,
    unreachable,
)
from .piprestore import (
    RestoreError,
    journaled_undo,
    recorded_changes,
    restore_snapshot,
    restore_versions,
    undo_journaled,
)

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

    from ..apply.ledger import LedgerEntry
    from ..apply.transaction import Transaction
    from ..environment.tree import Tree
    from ..patchset.model import Patchset

#: pip options of the dry run ``status`` makes: one retry (pip says nothing of a connection it
#: does not retry) and pip's default timeout, so an unreachable index costs seconds
TRIAL_PIP_OPTIONS = ["--retries", "1", "--timeout", "15"]


class PipKind:
    """Implements :class:`~patchbay.kinds.base.PatchKind` for ``kind: pip``."""

    name = "pip"

    def load(self, patch: PipPatch, patchset: Patchset, index: int) -> LoadedPatch:
        from packaging.requirements import Requirement

        meta = {"id", "description", "upstream", "upstream_status", "waiver", "target", "after"}
        spec = {k: v for k, v in msgspec.to_builtins(patch).items() if k not in meta}
        for key in ("source", "build_requirements"):  # the identity of plain pins stays as it was
            if spec[key] is None:
                del spec[key]
        req = Requirement(patch.requirement)
        if patch.source is None:
            pin = PipPin(req, patch.requirement, vcs_commit(req))
        else:
            commit = Lock.load(patchset.folder).source_commit(patch)
            if commit is None:
                return LoadedPatch(
                    sha256="",
                    source=None,
                    data=None,
                    unlocked=f"source build {patch.source.label} is not locked to a commit yet: "
                    f"run `patchbay vendor {patchset.folder}` with network access",
                )
            spec["commit"] = commit  # moving the pin makes an applied build outdated
            install = source_requirement(req, patch.source.git_url, commit)
            pin = PipPin(req, install, commit, patch.source)
        canonical = json.dumps(spec, sort_keys=True)
        return LoadedPatch(sha256=sha256_bytes(canonical.encode()), source=None, data=pin)

    def describe(self, patch: PipPatch, loaded: LoadedPatch) -> str:
        pin: PipPin = loaded.data
        if pin.source is None:
            return f"pin {patch.requirement}"
        first = f", {patch.build_requirements} first" if patch.build_requirements else ""
        return f"build {pin.requirement.name} from {pin.source.label} at {pin.commit}{first}"

    def inspect(self, patch: PipPatch, loaded: LoadedPatch, tree: Tree) -> Inspection:
        pin: PipPin = loaded.data
        req = pin.requirement
        unit = HunkResult(file=req.name, index=1, declared_line=0, state=HunkState.PENDING)
        env = tree.env
        if env is None or env.python is None:
            unit.state = HunkState.CONFLICT
            unit.detail = "a package pin needs the engine interpreter (--python)"
            return Inspection(state=ContentState.CONFLICT, hunks=[unit])
        if req.marker is not None and env.markers and not req.marker.evaluate(env.markers):
            unit.state = HunkState.APPLIED
            unit.detail = f"marker {req.marker} is false for this interpreter: nothing to install"
            return Inspection(state=ContentState.APPLIED, hunks=[unit])
        installed = listed_version(env.distributions, req.name)
        if pin.commit is not None:
            current = installed_commit(env.dist_info.get(req.name))
            satisfied = current == pin.commit
            unit.detail = f"installed: {installed or 'none'} at commit {current or 'unknown'}"
        else:
            satisfied = installed is not None and _satisfies(req.specifier, installed)
            unit.detail = f"installed: {installed or 'none'}"
        unit.state = HunkState.APPLIED if satisfied else HunkState.PENDING
        state = ContentState.APPLIED if satisfied else ContentState.PENDING
        return Inspection(state=state, hunks=[unit], data={"before": installed})

    def preflight(self, item: PendingPatch, tree: Tree) -> None:
        patch: PipPatch = item.patch
        env = tree.env
        assert env is not None and env.python is not None
        pin: PipPin = item.loaded.data
        before = installed_versions(env.python)
        run = self._first_dry_run(item, tree, before, pip_log(env.state_dir, patch.id))
        item.inspection.data = {
            "before": listed_version(before, pin.requirement.name),
            "changes": [{"name": n, "from": o, "to": v} for n, o, v in run.changes],
            # the write stage's tree knows no patchset: the later dry run checks the same set
            "protected": sorted(tree.protected),
        }

    def trial(self, item: PendingPatch, tree: Tree) -> Trial:
        """The dry run :meth:`preflight` makes, with no log and nothing written (``status``),
        retried once (:data:`TRIAL_PIP_OPTIONS`): whether apply would refuse the pin."""
        patch: PipPatch = item.patch
        env = tree.env
        assert env is not None and env.python is not None
        pin: PipPin = item.loaded.data
        try:
            before = installed_versions(env.python)
            run = self._first_dry_run(item, tree, before, None, TRIAL_PIP_OPTIONS)
        except SourceUnreachable as exc:
            return Trial(unchecked=exc.place)
        except RefusedError as exc:
            reason = exc.reason.removesuffix("; nothing was changed")
            lost = getattr(exc, "unreachable", None)
            details = list(exc.details)
            if lost:  # resolved without it: the answer may differ once it answers
                details.append(f"(pip could not reach {lost}: resolved without it)")
            return Trial(refusal=reason, details=details, unreachable=lost)
        if run.unreachable:  # resolved without it: apply, reaching it, may choose otherwise
            return Trial(unchecked=f"index unreachable: {run.unreachable}")
        moved = "; ".join(f"{n} {_movement(o, v)}" for n, o, v in run.changes) or "nothing"
        if pin.source is not None and patch.build_requirements is not None:
            return Trial(
                summary=f"pip's dry run of the build requirements {patch.build_requirements}: "
                f"{moved} (the package's own needs them installed: apply makes it)"
            )
        return Trial(summary=f"pip's dry run: {moved}")

    def trial_key(self, item: PendingPatch, tree: Tree) -> str | None:
        """What the outcome of :meth:`trial` depends on, hashed (sha256 hex): the engine
        interpreter, the pin as written and its locked commit, the protected and allowed
        distributions, pip's variables (the machine's ``PIP_*`` and the patch's build
        environment), the run's bundle and mirrors, what each local find-links folder holds
        (names, sizes, mtimes), and every installed distribution's version (read once per
        tree). The same key is the same dry run, so ``status`` may answer from
        a cached outcome (:mod:`patchbay.apply.trial`). None when there is no interpreter
        (``--root``: nothing to key the dry run on).

        Raises:
            RefusedError: the environment cannot be listed.
        """
        import hashlib
        import os

        patch: PipPatch = item.patch
        env = tree.env
        if env is None or env.python is None:
            return None
        before = getattr(tree, "_installed_versions", None)
        if before is None:
            before = installed_versions(env.python)
            tree._installed_versions = before  # type: ignore[attr-defined]
        pin: PipPin = item.loaded.data
        machine = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
        # what a local find-links folder holds (a wheel added or rebuilt is a new dry run);
        # an index's content cannot be keyed: `status --trial` asks it again
        folders: dict[str, object] = {}
        for place in [*patch.find_links, *machine.get("PIP_FIND_LINKS", "").split()]:
            folder = place.removeprefix("file://")
            try:
                entries = [
                    (e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(folder)
                ]
            except OSError as exc:  # a URL, or a folder that cannot be read: keyed by what it is
                folders[place] = type(exc).__name__
            else:
                folders[place] = sorted(entries)
        key = {
            "python": env.python,
            "patch": msgspec.to_builtins(patch),
            "commit": pin.commit,
            "protected": sorted(tree.protected),
            "pip": {**machine, **pip_environment(tree, patch.build_env)},
            "bundle": str(tree.options.bundle) if tree.options.bundle is not None else None,
            "mirrors": tree.options.mirrors,
            "installed": before,
            "find_links": folders,
        }
        blob = json.dumps(key, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()

    def _first_dry_run(
        self,
        item: PendingPatch,
        tree: Tree,
        before: dict[str, str],
        log: Path | None,
        pip_options: list[str] | None = None,
    ) -> DryRun:
        """The dry run apply makes before it writes: of a source build's build requirements
        (read at the locked commit) when it has them, else of the pin itself.

        Raises:
            SourceUnreachable: the source or an index could not be reached.
            RefusedError: as :meth:`_dry_run`.
        """
        patch: PipPatch = item.patch
        pin: PipPin = item.loaded.data
        if pin.source is not None and patch.build_requirements is not None:
            assert pin.commit is not None
            with checkout(pin.source.git_url, pin.commit, patch_id=patch.id) as src:
                return self._dry_run(
                    patch,
                    tree,
                    ["-r", str(build_requirements_file(patch, src, pin))],
                    what=f"the build requirements {patch.build_requirements} of {pin.source.label}",
                    options=[*(pip_options or []), *index_args(patch, tree)],
                    before=before,
                    log=log,
                    fresh=True,
                )
            # the package's own dry run needs these installed (no build isolation): in apply
        return self._dry_run(
            patch,
            tree,
            [pin.install],
            what=pin.install,
            options=[*(pip_options or []), *self._install_options(patch, tree)],
            before=before,
            log=log,
            fresh=True,
            pinned=pin.requirement.name,
        )

    def _dry_run(
        self,
        patch: PipPatch,
        tree: Tree,
        targets: list[str],
        *,
        what: str,
        options: list[str],
        before: dict[str, str],
        log: Path | None,
        fresh: bool = False,
        pinned: str | None = None,
        protected: set[str] | None = None,
    ) -> DryRun:
        """``pip install --dry-run --report`` of ``targets``: every distribution it would add
        or change (the ``pinned`` one is listed even when pip would reinstall the same
        version). ``protected`` defaults to the tree's; ``log`` None keeps no log.

        Raises:
            SourceUnreachable: pip failed, and could not reach an index or find-links URL.
            RefusedError: pip cannot resolve it, or it would change a protected distribution
                that the patch does not ``allow``.
        """
        from packaging.utils import canonicalize_name

        env = tree.env
        assert env is not None and env.python is not None
        with tempfile.TemporaryDirectory(prefix="patchbay-pip-") as scratch:
            report_path = Path(scratch) / "report.json"
            # not --quiet: a failed build's own output is what says why it failed
            args = ["install", "--dry-run", "--report", str(report_path), *options, *targets]
            env_vars = pip_environment(tree, patch.build_env)
            proc = run_pip(env.python, args, env=env_vars, log=log, fresh=fresh)
            lost = unreachable(proc.stdout)
            logged = f" (log: {log})" if log is not None else ""
            if proc.returncode != 0:
                failure = pip_failure(proc.stdout, proc.returncode)
                if lost:
                    raise SourceUnreachable(
                        f"pip cannot resolve {what}: {failure.headline}; {lost} could not be "
                        f"reached{logged}",
                        place=f"index unreachable: {lost}",
                        patch_id=patch.id,
                        details=failure.lines,
                    )
                raise RefusedError(
                    f"pip cannot resolve {what}: {failure.headline}{logged}",
                    patch_id=patch.id,
                    details=failure.lines,
                )
            try:
                report = json.loads(report_path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise RefusedError(
                    f"pip's dry run of {what} left no readable report ({exc}){logged}",
                    patch_id=patch.id,
                ) from None
        changes = []
        for entry in report.get("install", []):
            meta = entry.get("metadata", {})
            name, version = meta.get("name", "?"), meta.get("version", "?")
            old = listed_version(before, name)
            same_pin = pinned is not None and canonicalize_name(name) == canonicalize_name(pinned)
            if old == version and not same_pin:
                continue
            changes.append((name, old, version))
        allowed = {canonicalize_name(n) for n in patch.allow}
        names = tree.protected if protected is None else protected
        guarded = {canonicalize_name(n) for n in names} - allowed
        touched = [c for c in changes if canonicalize_name(c[0]) in guarded and c[1] != c[2]]
        if touched:
            moved = "; ".join(f"{n} {_movement(o, v)}" for n, o, v in touched)
            refusal = RefusedError(
                f"installing {what} would change protected distribution(s): {moved} (allow "
                "them by name in the patch's `allow` if intended); nothing was changed",
                patch_id=patch.id,
            )
            refusal.unreachable = lost  # type: ignore[attr-defined]  # for the trial
            raise refusal
        return DryRun(changes, lost)

    def _install_options(self, patch: PipPatch, tree: Tree) -> list[str]:
        args = index_args(patch, tree)
        if patch.no_deps:
            args.append("--no-deps")
        if patch.no_build_isolation:
            args.append("--no-build-isolation")
        return args

    def apply(self, batch: list[PendingPatch], tree: Tree, txn: Transaction) -> None:
        env = tree.env
        assert env is not None and env.python is not None
        python = env.python
        for item in batch:
            patch: PipPatch = item.patch
            pin: PipPin = item.loaded.data
            log = pip_log(env.state_dir, patch.id)
            options = self._install_options(patch, tree)
            # the whole environment as it is now: a rollback puts back whatever differs
            snapshot = installed_versions(python)
            pip_env = pip_environment(tree)
            txn.on_rollback(
                f"the install of {pin.install}",
                lambda snapshot=snapshot, options=options, log=log, pip_env=pip_env: (
                    restore_snapshot(python, snapshot, options, log, pip_env)
                ),
                journal=journaled_undo(python, snapshot, options, pip_env),
            )
            if pin.source is not None and patch.build_requirements is not None:
                self._install_build_requirements(patch, pin, tree, log)
                self._dry_run(
                    patch,
                    tree,
                    [pin.install],
                    what=pin.install,
                    options=options,
                    before=installed_versions(python),
                    log=log,
                    pinned=pin.requirement.name,
                    protected=set(item.inspection.data["protected"]),
                )
            proc = run_pip(python, ["install", *options, pin.install], env=patch.build_env, log=log)
            if proc.returncode != 0:
                failure = pip_failure(proc.stdout, proc.returncode)
                raise ApplyFailed(
                    f"pip install {pin.install} failed: {failure.headline} (log: {log})",
                    patch_id=patch.id,
                    details=failure.lines,
                )
            now = installed_versions(python)
            changes = version_changes(snapshot, now)
            item.inspection.record = {
                "distribution": pin.requirement.name,
                "requirement": pin.install,
                "before": listed_version(snapshot, pin.requirement.name),
                "after": listed_version(now, pin.requirement.name),
                "install_options": [o for o in options if o != "--no-build-isolation"],
                "changes": [{"name": n, "from": o, "to": v} for n, o, v in changes],
                "log": str(log),
            }
            if pin.source is not None:
                item.inspection.record["source"] = {
                    "repo": pin.source.repo,
                    "ref": pin.source.ref,
                    "commit": pin.commit,
                    "url": pin.source.git_url,
                }

    def _install_build_requirements(
        self, patch: PipPatch, pin: PipPin, tree: Tree, log: Path
    ) -> None:
        """Install the source's build requirements file (read at the locked commit).

        Raises:
            ApplyFailed: pip failed (the run is rolled back).
        """
        env = tree.env
        assert env is not None and env.python is not None and pin.source is not None
        assert pin.commit is not None
        with checkout(pin.source.git_url, pin.commit, patch_id=patch.id) as src:
            path = build_requirements_file(patch, src, pin)
            args = ["install", *index_args(patch, tree), "-r", str(path)]
            proc = run_pip(env.python, args, env=patch.build_env, log=log)
        if proc.returncode != 0:
            failure = pip_failure(proc.stdout, proc.returncode)
            raise ApplyFailed(
                f"pip install -r {patch.build_requirements} failed: {failure.headline} "
                f"(log: {log})",
                patch_id=patch.id,
                details=failure.lines,
            )

    def undo_journaled(self, data: dict[str, Any], python: str | None, log: Path) -> None:
        """Recovery's undo of an install a killed run journaled:
        :func:`patchbay.kinds.piprestore.undo_journaled`."""
        undo_journaled(data, python, log)

    def revert(self, entry: LedgerEntry, tree: Tree, txn: Transaction) -> bool:
        env = tree.env
        if env is None or env.python is None:
            raise RefusedError(
                "reverting a package pin needs the engine interpreter (--python)",
                patch_id=entry.patch_id,
            )
        python = env.python
        extra = entry.extra
        log = env.state_dir / "logs" / f"{entry.patch_id}.revert.log"
        options = list(extra.get("install_options", []))
        if tree.options.bundle is not None:
            options = ["--no-index", "--find-links", str(tree.options.bundle / "wheels")]
        wanted = recorded_changes(extra)
        # if a later step of this revert fails, the versions the pin installed come back
        snapshot = installed_versions(python)
        pip_env = pip_environment(tree)
        txn.on_rollback(
            f"the revert of {entry.patch_id}",
            lambda: restore_snapshot(python, snapshot, options, log, pip_env),
            journal=journaled_undo(python, snapshot, options, pip_env),
        )
        try:
            restore_versions(python, wanted, options, log, pip_environment(tree))
        except RestoreError as exc:
            raise RefusedError(str(exc), patch_id=entry.patch_id, details=exc.details) from None
        return True


def _satisfies(spec: SpecifierSet, version: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return spec.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def _movement(old: str | None, new: str) -> str:
    from packaging.version import InvalidVersion, Version

    if old is None:
        return f"would be added at {new}"
    try:
        direction = "upgraded" if Version(new) > Version(old) else "downgraded"
    except InvalidVersion:
        direction = "changed"
    return f"{direction} {old} -> {new}"
