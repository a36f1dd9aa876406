"""The ``pip`` kind: package pins over the image, installed with the engine's own pip.

- Idempotent: a pin whose requirement the installed version already satisfies (or, for a
  ``git+`` direct reference, whose installed ``direct_url.json`` records the pinned commit, per
  PEP 610 ``vcs_info.commit_id``) is applied, and pip is not run at all.
- Before installing, ``pip install --dry-run --report`` lists every distribution the pin would
  add, upgrade or downgrade; a change to a protected distribution (the patchset's ``protect``,
  by default its components) is refused unless the patch ``allow``s it by name.
- The ledger keeps the version that was there before; ``revert`` (and a rollback of the run)
  reinstalls it, or says exactly what it could not restore.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..errors import ApplyFailed, RefusedError
from ..hunks import HunkResult, HunkState
from ..ledger import sha256_bytes
from ..model import PipPatch
from .base import ContentState, Inspection, LoadedPatch, PendingPatch

if TYPE_CHECKING:
    from ..ledger import LedgerEntry
    from ..model import Patchset
    from ..transaction import Transaction
    from ..tree import Tree

PIP_TIMEOUT_S = 3600
_LIST = "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"  # noqa: E501


def vcs_commit(req: Requirement) -> str | None:
    """The pinned commit of a ``git+...@<sha>`` direct reference, else None."""
    if not req.url:
        return None
    return req.url.rsplit("@", 1)[-1].split("#", 1)[0]


def installed_commit(dist_info: Path | None) -> str | None:
    """``vcs_info.commit_id`` from an installed distribution's ``direct_url.json`` (PEP 610)."""
    if dist_info is None:
        return None
    try:
        data = json.loads((dist_info / "direct_url.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    vcs = data.get("vcs_info") if isinstance(data, dict) else None
    return vcs.get("commit_id") if isinstance(vcs, dict) else None


def index_args(patch: PipPatch, tree: Tree) -> list[str]:
    """pip's index options for ``patch``; from a bundle, only the bundle's wheels. A relative
    ``find_links`` folder is relative to the patchset folder (made absolute here)."""
    options = tree.options
    if options.bundle is not None:
        return ["--no-index", "--find-links", str(options.bundle.resolve() / "wheels")]
    if options.offline:
        raise RefusedError(f"offline without a bundle: cannot install {patch.requirement}")
    args: list[str] = []
    if patch.index_url:
        args += ["--index-url", patch.index_url]
    for url in patch.extra_index_urls:
        args += ["--extra-index-url", url]
    for link in patch.find_links:
        if "://" not in link and tree.folder is not None:
            link = str((tree.folder / link).resolve())
        args += ["--find-links", link]
    return args


def pip_environment(tree: Tree, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Variables for pip: the patch's build environment; from a bundle, the machine's pip
    configuration, cache and find-links are switched off, so only the bundle is used."""
    env = dict(extra or {})
    if tree.options.bundle is not None or tree.options.offline:
        env.update(
            PIP_CONFIG_FILE=os.devnull,
            PIP_NO_CACHE_DIR="1",
            PIP_FIND_LINKS="",
            PIP_EXTRA_INDEX_URL="",
            PIP_INDEX_URL="",
        )
    return env


def _pip(
    python: str, args: list[str], *, env: dict[str, str] | None = None, log: Path | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [python, "-m", "pip", "--no-input", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT_S,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"$ pip {' '.join(args)}\n{proc.stdout}{proc.stderr}\n")
    return proc


def _last_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    return (errors or lines or [f"exit {proc.returncode}"])[-1]


class PipKind:
    """Implements :class:`~patchbay.kinds.base.PatchKind` for ``kind: pip``."""

    name = "pip"

    def load(self, patch: PipPatch, patchset: Patchset, index: int) -> LoadedPatch:
        spec = patch.model_dump(
            exclude={"id", "description", "upstream", "upstream_status", "waiver", "target"}
        )
        canonical = json.dumps(spec, sort_keys=True)
        return LoadedPatch(
            sha256=sha256_bytes(canonical.encode()),
            source=None,
            data=Requirement(patch.requirement),
        )

    def describe(self, patch: PipPatch, loaded: LoadedPatch) -> str:
        return f"pin {patch.requirement}"

    def inspect(self, patch: PipPatch, loaded: LoadedPatch, tree: Tree) -> Inspection:
        req: Requirement = loaded.data
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
        installed = _lookup(env.distributions, req.name)
        commit = vcs_commit(req)
        if commit is not None:
            current = installed_commit(env.dist_info.get(req.name))
            satisfied = current == commit
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
        req: Requirement = item.loaded.data
        before = _installed_versions(env.python)
        with tempfile.TemporaryDirectory(prefix="patchbay-pip-") as scratch:
            report_path = Path(scratch) / "report.json"
            args = ["install", "--dry-run", "--quiet", "--report", str(report_path)]
            args += [*self._install_options(patch, tree), patch.requirement]
            proc = _pip(env.python, args, env=pip_environment(tree, patch.build_env))
            if proc.returncode != 0:
                raise RefusedError(
                    f"pip cannot resolve {patch.requirement}: {_last_error(proc)}",
                    patch_id=patch.id,
                )
            report = json.loads(report_path.read_text(encoding="utf-8"))
        changes = []
        for entry in report.get("install", []):
            meta = entry.get("metadata", {})
            name, version = meta.get("name", "?"), meta.get("version", "?")
            old = _lookup(before, name)
            if old == version and canonicalize_name(name) != canonicalize_name(req.name):
                continue
            changes.append((name, old, version))
        allowed = {canonicalize_name(n) for n in patch.allow}
        protected = {canonicalize_name(n) for n in tree.protected} - allowed
        touched = [c for c in changes if canonicalize_name(c[0]) in protected and c[1] != c[2]]
        if touched:
            what = "; ".join(f"{n} {_movement(o, v)}" for n, o, v in touched)
            raise RefusedError(
                f"pinning {patch.requirement} would change protected distribution(s): {what}; "
                "nothing was changed (allow them by name in the patch's `allow` if intended)",
                patch_id=patch.id,
            )
        item.inspection.data = {
            "before": _lookup(before, req.name),
            "changes": [{"name": n, "from": o, "to": v} for n, o, v in changes],
        }

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
            req: Requirement = item.loaded.data
            before = (item.inspection.data or {}).get("before")
            log = env.state_dir / "logs" / f"{patch.id}.log"
            options = self._install_options(patch, tree)
            txn.on_rollback(
                f"the install of {patch.requirement} (restore {req.name} {before or 'absent'})",
                lambda python=python, name=req.name, before=before, options=options, log=log: (
                    _restore(python, name, before, options, log, pip_environment(tree))
                ),
            )
            proc = _pip(
                python, ["install", *options, patch.requirement], env=patch.build_env, log=log
            )
            if proc.returncode != 0:
                raise ApplyFailed(
                    f"pip install {patch.requirement} failed: {_last_error(proc)} (log: {log})",
                    patch_id=patch.id,
                )
            after = _lookup(_installed_versions(python), req.name)
            item.inspection.record = {
                "distribution": req.name,
                "requirement": patch.requirement,
                "before": before,
                "after": after,
                "install_options": [o for o in options if o != "--no-build-isolation"],
                "changes": (item.inspection.data or {}).get("changes", []),
                "log": str(log),
            }

    def revert(self, entry: LedgerEntry, tree: Tree, txn: Transaction) -> bool:
        env = tree.env
        if env is None or env.python is None:
            raise RefusedError(
                "reverting a package pin needs the engine interpreter (--python)",
                patch_id=entry.patch_id,
            )
        extra = entry.extra
        log = env.state_dir / "logs" / f"{entry.patch_id}.revert.log"
        options = list(extra.get("install_options", []))
        if tree.options.bundle is not None:
            options = ["--no-index", "--find-links", str(tree.options.bundle / "wheels")]
        try:
            _restore(
                env.python,
                extra["distribution"],
                extra.get("before"),
                options,
                log,
                pip_environment(tree),
            )
        except RuntimeError as exc:
            raise RefusedError(str(exc), patch_id=entry.patch_id) from None
        return True


def _restore(
    python: str,
    name: str,
    before: str | None,
    options: list[str],
    log: Path,
    pip_env: dict[str, str] | None = None,
) -> None:
    """Put ``name`` back to ``before`` (uninstall when it was absent).

    Raises:
        RuntimeError: pip could not; the message says what stays installed.
    """
    if before is None:
        proc = _pip(python, ["uninstall", "--yes", name], env=pip_env, log=log)
    else:
        args = ["install", "--no-deps", *options, f"{name}=={before}"]
        proc = _pip(python, args, env=pip_env, log=log)
    if proc.returncode != 0:
        now = _lookup(_installed_versions(python), name)
        target = f"{name}=={before}" if before else f"the removal of {name}"
        raise RuntimeError(
            f"could not restore {target}: {_last_error(proc)}; {name} {now or 'absent'} stays "
            f"installed (log: {log})"
        )


def _installed_versions(python: str) -> dict[str, str]:
    proc = subprocess.run([python, "-c", _LIST], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RefusedError(f"cannot list installed distributions: {proc.stderr.strip()[-200:]}")
    return json.loads(proc.stdout)


def _lookup(versions: dict[str, Any], name: str) -> str | None:
    wanted = canonicalize_name(name)
    for key, value in versions.items():
        if canonicalize_name(key) == wanted:
            return value
    return None


def _satisfies(spec: SpecifierSet, version: str) -> bool:
    try:
        return spec.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def _movement(old: str | None, new: str) -> str:
    if old is None:
        return f"would be added at {new}"
    try:
        direction = "upgraded" if Version(new) > Version(old) else "downgraded"
    except InvalidVersion:
        direction = "changed"
    return f"{direction} {old} -> {new}"
