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
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec

from .. import progress
from ..apply.ledger import sha256_bytes
from ..diff.hunks import HunkResult, HunkState
from ..errors import ApplyFailed, RefusedError, SourceUnreachable
from ..patchset.lockfile import Lock
from ..patchset.model import BuildSource, PipPatch
from ..redaction import write_log
from .base import ContentState, Inspection, LoadedPatch, PendingPatch, Trial

if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    from ..apply.ledger import LedgerEntry
    from ..apply.transaction import Transaction
    from ..environment.tree import Tree
    from ..patchset.model import Patchset

PIP_TIMEOUT_S = 3600
_LIST = "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"  # noqa: E501


def vcs_commit(req: Requirement) -> str | None:
    """The pinned commit of a ``git+...@<sha>`` direct reference, else None."""
    if not req.url:
        return None
    return req.url.rsplit("@", 1)[-1].split("#", 1)[0]


@dataclass
class PipPin:
    """What a ``pip`` patch installs, as loaded.

    Attributes:
        requirement: the patch's ``requirement``, parsed (PEP 508).
        install: what pip is given: the requirement, or for a source build
            ``name @ git+<url>@<commit>``.
        commit: the commit the installed ``direct_url.json`` must record (a ``git+`` pin or a
            source build), else None.
        source: the source build's declaration, if any.
    """

    requirement: Requirement
    install: str
    commit: str | None
    source: BuildSource | None = None


def source_requirement(req: Requirement, url: str, commit: str) -> str:
    """``name[extras] @ git+<url>@<commit> ; marker``: a PEP 508 direct reference pip clones
    and builds at exactly ``commit`` (PEP 610 then records it as ``vcs_info.commit_id``)."""
    if url.startswith("file:///"):  # PEP 508 parsers (older pip) want a host in a file URL
        url = "file://localhost/" + url.removeprefix("file:///")
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    marker = f" ; {req.marker}" if req.marker is not None else ""
    return f"{req.name}{extras} @ git+{url}@{commit}{marker}"


@contextmanager
def checkout(url: str, commit: str, *, patch_id: str) -> Iterator[Path]:
    """A scratch working tree of ``url`` at ``commit`` (``git fetch --depth 1`` of that commit
    into a new temporary folder, removed afterwards, whatever happens).

    Raises:
        RefusedError: git cannot fetch the commit (unreachable, unknown commit).
    """
    with tempfile.TemporaryDirectory(prefix="patchbay-src-") as scratch:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
        steps = (
            ["init", "--quiet"],
            ["fetch", "--quiet", "--depth", "1", url, commit],
            ["-c", "advice.detachedHead=false", "checkout", "--quiet", "FETCH_HEAD"],
        )
        for step in steps:
            try:
                proc = subprocess.run(
                    ["git", "-C", scratch, *step],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    errors="replace",
                    env=env,
                    timeout=PIP_TIMEOUT_S,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise RefusedError(
                    f"cannot fetch {commit} from {url}: {exc}", patch_id=patch_id
                ) from None
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or [f"git exited {proc.returncode}"])[-1]
                message = f"cannot fetch {commit} from {url}: {last}"
                if any(m in proc.stderr for m in _GIT_UNREACHABLE):
                    place = f"git remote unreachable: {url} ({last})"
                    raise SourceUnreachable(message, place=place, patch_id=patch_id)
                raise RefusedError(message, patch_id=patch_id)
        yield Path(scratch)


# what git (and curl under it) says when the remote is not there at all, as opposed to a
# remote that answers "no such commit"
_GIT_UNREACHABLE = (
    "Could not resolve host",
    "Failed to connect",
    "Connection refused",
    "Connection timed out",
    "Operation timed out",
)

# urllib3's warning for every failed connection pip retries, e.g. ``Retrying (Retry(...))
# after connection broken by 'NewConnectionError("HTTPConnection(host='h', port=9): Failed
# to establish a new connection: [Errno 111] Connection refused")': /simple/x/``; pip says
# nothing of a connection it does not retry (``--retries 0``)
_BROKEN = re.compile(r"after connection broken by '(?P<error>\w+)\((?P<body>.*)\)': (?P<path>\S*)")
_HOST = re.compile(r"host='(?P<host>[^']+)', port=(?P<port>\d+)")

#: pip options of the dry run ``status`` makes: one retry (pip says nothing of a connection it
#: does not retry) and pip's default timeout, so an unreachable index costs seconds
TRIAL_PIP_OPTIONS = ["--retries", "1", "--timeout", "15"]


def unreachable(output: str) -> str | None:
    """The first place pip's output says it could not reach, as ``PLACE (ERROR: REASON)``,
    else None. The failures are urllib3's retry warnings (see ``_BROKEN``); the place is the
    index or find-links URL pip listed (``Looking in indexes:``) that the failed path is
    under, else the host and port the warning names (newer urllib3), else the path."""
    listed: list[str] = []
    for line in output.splitlines():
        for head in ("Looking in indexes:", "Looking in links:"):
            if line.startswith(head):
                listed += [u.strip() for u in line[len(head) :].split(",") if "://" in u]
        found = _BROKEN.search(line)
        if found is None:
            continue
        path = found["path"]
        under = [u for u in listed if path.startswith(urlsplit(u).path or "/")]
        host = _HOST.search(found["body"])
        if under:
            where = max(under, key=lambda u: len(urlsplit(u).path))
        else:
            where = f"{host['host']}:{host['port']}" if host else path or "an index"
        reason = found["body"].rsplit(": ", 1)[-1].strip().strip("\"'")
        return f"{where} ({found['error']}: {reason})"
    return None


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
    python: str,
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    log: Path | None = None,
    fresh: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pip ARGS`` (stderr into stdout, as a terminal shows them); its whole
    output is appended to ``log`` (a new log when ``fresh``), redacted, mode 0600."""
    # a dry run installs nothing (and is all a read-only `status` runs): its progress line
    # must not announce an install
    title = f"pip's dry run of {args[-1]}" if "--dry-run" in args else f"pip {args[0]} {args[-1]}"
    try:  # a progress step: elapsed time, the log, pip's last line (patchbay.progress)
        proc = progress.run(
            [python, "-m", "pip", "--no-input", "--disable-pip-version-check", *args],
            title=title,
            log=log,
            text=True,
            timeout=PIP_TIMEOUT_S,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.output or ""
        out = out.decode("utf-8", "replace") if isinstance(out, bytes) else out
        proc = subprocess.CompletedProcess(
            exc.cmd, -1, out + f"\n(timed out after {exc.timeout} s)"
        )
    if log is not None:
        try:
            write_log(
                log,
                f"$ pip {' '.join(args)}\n{proc.stdout}\n(exit {proc.returncode})\n",
                append=not fresh,
            )
        except OSError as exc:
            raise RefusedError(f"cannot write pip's log: {exc.strerror or exc}", file=log) from None
    return proc


@dataclass
class DryRun:
    """What ``pip install --dry-run --report`` found.

    Attributes:
        changes: every distribution it would add or change, as (name, installed version or
            None, version).
        unreachable: a place pip could not reach on the way (see :func:`unreachable`): the
            answer may differ from one with the network.
    """

    changes: list[tuple[str, str | None, str]]
    unreachable: str | None = None


@dataclass
class PipFailure:
    """pip's own account of a failure (see :func:`pip_failure`).

    Attributes:
        headline: the line that says most: pip's last ``ERROR:`` line, else the last line a
            failed build printed, else pip's first error line.
        lines: the quoted block, stripped, at most a screenful.
    """

    headline: str
    lines: list[str]


_OUTPUT_START = re.compile(r"\[\d+ lines? of output\]$")


def pip_failure(
    output: str, returncode: int, *, keep_output: int = 6, limit: int = 16
) -> PipFailure:
    """Read pip's failure from its whole output: the block from its first ``ERROR:`` or
    ``error:`` line on. pip writes resolver and install errors as ``ERROR: ...``, and a failed
    build step as ``error: <code>``, summary lines and the build's own output between
    ``[N lines of output]`` and ``[end of output]``; of that output only the last
    ``keep_output`` lines are kept (a traceback's tail names the problem). pip's pointers
    elsewhere (``note:``, ``hint:``, "See above") and repeated lines are dropped.

    Args:
        output: pip's stdout and stderr, interleaved.
        returncode: pip's exit status (named when pip printed nothing).
    """
    lines = [ln.strip() for ln in output.splitlines()]
    first = next((i for i, ln in enumerate(lines) if ln.startswith(("ERROR:", "error:"))), None)
    if first is None:
        tail = [ln for ln in lines if ln][-3:]
        return PipFailure(tail[-1] if tail else f"pip exited with status {returncode}", tail)
    out: list[str] = []
    seen: set[str] = set()
    built: str | None = None  # the last line of the first failed build's output
    captured: list[str] | None = None
    for text in lines[first:]:
        if captured is not None:
            if text != "[end of output]":
                if text:
                    captured.append(text)
                continue
            if captured and built is None:
                built = captured[-1]
            out.extend((["..."] if len(captured) > keep_output else []) + captured[-keep_output:])
            captured = None
            continue
        if not text or text.startswith(("note:", "hint:")) or "See above for" in text:
            continue
        if _OUTPUT_START.search(text):
            captured = []
        elif text in seen:
            continue
        seen.add(text)
        out.append(text)
    if captured:  # cut off before its end marker
        out.extend(captured[-keep_output:])
        built = built or captured[-1]
    errors = [ln for ln in out if ln.startswith("ERROR:")]
    headline = errors[-1] if errors else built or out[0]
    return PipFailure(headline, out[:limit])


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
        installed = _lookup(env.distributions, req.name)
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
        before = _installed_versions(env.python)
        run = self._first_dry_run(item, tree, before, pip_log(env.state_dir, patch.id))
        item.inspection.data = {
            "before": _lookup(before, pin.requirement.name),
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
            before = _installed_versions(env.python)
            run = self._first_dry_run(item, tree, before, None, TRIAL_PIP_OPTIONS)
        except SourceUnreachable as exc:
            return Trial(unchecked=exc.place)
        except RefusedError as exc:
            reason = exc.reason.removesuffix("; nothing was changed")
            return Trial(refusal=reason, details=exc.details)
        if run.unreachable:  # resolved without it: apply, reaching it, may choose otherwise
            return Trial(unchecked=f"index unreachable: {run.unreachable}")
        moved = "; ".join(f"{n} {_movement(o, v)}" for n, o, v in run.changes) or "nothing"
        if pin.source is not None and patch.build_requirements is not None:
            return Trial(
                summary=f"pip's dry run of the build requirements {patch.build_requirements}: "
                f"{moved} (the package's own needs them installed: apply makes it)"
            )
        return Trial(summary=f"pip's dry run: {moved}")

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
            proc = _pip(env.python, args, env=env_vars, log=log, fresh=fresh)
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
            old = _lookup(before, name)
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
            raise RefusedError(
                f"installing {what} would change protected distribution(s): {moved} (allow "
                "them by name in the patch's `allow` if intended); nothing was changed",
                patch_id=patch.id,
            )
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
            snapshot = _installed_versions(python)
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
                    before=_installed_versions(python),
                    log=log,
                    pinned=pin.requirement.name,
                    protected=set(item.inspection.data["protected"]),
                )
            proc = _pip(python, ["install", *options, pin.install], env=patch.build_env, log=log)
            if proc.returncode != 0:
                failure = pip_failure(proc.stdout, proc.returncode)
                raise ApplyFailed(
                    f"pip install {pin.install} failed: {failure.headline} (log: {log})",
                    patch_id=patch.id,
                    details=failure.lines,
                )
            now = _installed_versions(python)
            changes = version_changes(snapshot, now)
            item.inspection.record = {
                "distribution": pin.requirement.name,
                "requirement": pin.install,
                "before": _lookup(snapshot, pin.requirement.name),
                "after": _lookup(now, pin.requirement.name),
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
            proc = _pip(env.python, args, env=patch.build_env, log=log)
        if proc.returncode != 0:
            failure = pip_failure(proc.stdout, proc.returncode)
            raise ApplyFailed(
                f"pip install -r {patch.build_requirements} failed: {failure.headline} "
                f"(log: {log})",
                patch_id=patch.id,
                details=failure.lines,
            )

    def undo_journaled(self, data: dict[str, Any], python: str | None, log: Path) -> None:
        """Recovery's undo of an install a killed run journaled: :func:`undo_journaled`."""
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
        snapshot = _installed_versions(python)
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


class RestoreError(Exception):
    """Distributions pip could not put back; the message names each, with what stays.

    Attributes:
        details: pip's own error lines.
    """

    def __init__(self, message: str, details: list[str]) -> None:
        super().__init__(message)
        self.details = details

    def __str__(self) -> str:
        return "\n".join([self.args[0], *("  " + d for d in self.details)])


def build_requirements_file(patch: PipPatch, checkout_dir: Path, pin: PipPin) -> Path:
    """``patch.build_requirements`` inside a checkout, through the same rule as every patch
    path: no ``..`` (the model refused it), no link, nothing outside the checkout.

    Raises:
        RefusedError: the file is missing at the locked commit, or is a link or leaves the
            checkout.
    """
    assert patch.build_requirements is not None and pin.source is not None
    path = checkout_dir / patch.build_requirements
    real, root = os.path.realpath(path), os.path.realpath(checkout_dir)
    if path.is_symlink() or not real.startswith(root + os.sep):
        raise RefusedError(
            f"{patch.build_requirements} in {pin.source.label} is a link; refusing to read it",
            patch_id=patch.id,
        )
    if not path.is_file():
        raise RefusedError(
            f"{pin.source.label} has no file {patch.build_requirements} at commit {pin.commit}",
            patch_id=patch.id,
        )
    return path


def pip_log(state_dir: Path, patch_id: str) -> Path:
    """Where the pip output of ``patch_id``'s dry run and install is kept."""
    return state_dir / "logs" / f"{patch_id}.log"


def version_changes(
    before: dict[str, str], after: dict[str, str]
) -> list[tuple[str, str | None, str | None]]:
    """Every distribution whose version differs between two listings, as (name, before,
    after); None for absent. Names are compared PEP 503-normalised."""
    from packaging.utils import canonicalize_name

    old = {canonicalize_name(k): (k, v) for k, v in before.items()}
    new = {canonicalize_name(k): (k, v) for k, v in after.items()}
    out = []
    for key in sorted({*old, *new}):
        name = (new.get(key) or old[key])[0]
        was, now = old.get(key, (None, None))[1], new.get(key, (None, None))[1]
        if was != now:
            out.append((name, was, now))
    return out


def recorded_changes(extra: dict[str, Any]) -> dict[str, str | None]:
    """The versions to put back for a ledger entry: ``changes`` (every distribution the
    install changed), or, for entries written before it was kept, the pinned one."""
    changes = extra.get("changes")
    if isinstance(changes, list) and changes:
        return {str(c["name"]): c.get("from") for c in changes if isinstance(c, dict)}
    return {str(extra["distribution"]): extra.get("before")}


_VALUED_OPTIONS = ("--index-url", "--extra-index-url", "--find-links")
_FLAG_OPTIONS = ("--no-index", "--no-deps", "--no-build-isolation")


def journaled_undo(
    python: str, snapshot: dict[str, str], options: list[str], pip_env: dict[str, str]
) -> tuple[str, dict[str, Any]]:
    """The ``(kind, data)`` a transaction journals for the undo of an install (see
    :meth:`patchbay.apply.transaction.Transaction.on_rollback`): a run killed outright during or
    after the install is undone by the next run's recovery through :func:`undo_journaled`.

    Args:
        python: the engine interpreter; snapshot: distribution name -> version, listed
            before the install; options: pip's index options (:meth:`PipKind._install_options`);
            pip_env: the ``PIP_*`` variables of the install (:func:`pip_environment`).
    """
    return "pip", {"python": python, "snapshot": snapshot, "options": options, "env": pip_env}


def undo_journaled(data: dict[str, Any], python: str | None, log: Path) -> None:
    """Undo an install a killed run journaled (:func:`journaled_undo`): put back every
    distribution whose version differs from its snapshot (:func:`restore_snapshot`).

    The journal is not trusted to choose what runs: the undo runs only in the interpreter
    of this run, only with pip's index options and ``PIP_*`` variables.

    Args:
        data: the journaled data; python: this run's engine interpreter (``--python``), or
            None; log: pip's output is appended here.

    Raises:
        RefusedError: the data is malformed, or names another interpreter (or this run has
            none): run again with that ``--python``.
        RestoreError: pip could not put everything back.
    """
    wanted = data.get("python")
    snapshot, options, env = data.get("snapshot"), data.get("options"), data.get("env")
    if not (
        isinstance(wanted, str)
        and isinstance(snapshot, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in snapshot.items())
        and isinstance(env, dict)
        and all(isinstance(k, str) and k.startswith("PIP_") and isinstance(v, str)
                for k, v in env.items())
        and _index_options_only(options)
    ):  # fmt: skip
        raise RefusedError("the journaled undo of a package install is malformed")
    if python is None or os.path.abspath(python) != os.path.abspath(wanted):
        raise RefusedError(
            f"the killed run installed packages with {wanted}: run again with --python "
            f"{wanted} to undo that install"
        )
    restore_snapshot(python, snapshot, options, log, env)


def _index_options_only(options: object) -> bool:
    """Whether ``options`` is a list of pip's index options (and their values) alone."""
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        return False
    i = 0
    while i < len(options):
        if options[i] in _VALUED_OPTIONS and i + 1 < len(options):
            i += 2
        elif options[i] in _FLAG_OPTIONS:
            i += 1
        else:
            return False
    return True


def restore_snapshot(
    python: str,
    snapshot: dict[str, str],
    options: list[str],
    log: Path,
    pip_env: dict[str, str] | None = None,
) -> None:
    """Put back every distribution whose version differs from ``snapshot`` (a listing taken
    before an install). Raises :class:`RestoreError` as :func:`restore_versions`."""
    moved = version_changes(snapshot, _installed_versions(python))
    if moved:
        restore_versions(python, {n: was for n, was, _ in moved}, options, log, pip_env)


def restore_versions(
    python: str,
    wanted: dict[str, str | None],
    options: list[str],
    log: Path,
    pip_env: dict[str, str] | None = None,
) -> None:
    """Install ``name==version`` for every entry of ``wanted`` in one ``pip install
    --no-deps`` (the set was consistent before, so no dependency is resolved), and remove
    the ones whose version is None in one ``pip uninstall``; then check the result.

    Args:
        wanted: distribution name -> the version to have, or None for absent.
        options: pip's index options (those of the install being undone).
        log: pip's output is appended here (0600, redacted).

    Raises:
        RestoreError: a distribution is not at its wanted version afterwards; the message
            names each one and what stays installed, and quotes pip's error lines.
    """
    current = _installed_versions(python)
    todo = {n: v for n, v in wanted.items() if _lookup(current, n) != v}
    failures: list[PipFailure] = []
    install = [f"{n}=={v}" for n, v in todo.items() if v is not None]
    remove = [n for n, v in todo.items() if v is None]
    if install:
        proc = _pip(python, ["install", "--no-deps", *options, *install], env=pip_env, log=log)
        if proc.returncode != 0:
            failures.append(pip_failure(proc.stdout, proc.returncode))
    if remove:
        proc = _pip(python, ["uninstall", "--yes", *remove], env=pip_env, log=log)
        if proc.returncode != 0:
            failures.append(pip_failure(proc.stdout, proc.returncode))
    now = _installed_versions(python)
    left = [(n, v, _lookup(now, n)) for n, v in todo.items() if _lookup(now, n) != v]
    if not left:
        return
    what = ", ".join(
        f"{n}=={v} ({n} {got or 'absent'} stays installed)"
        if v is not None
        else f"the removal of {n} ({n} {got} stays installed)"
        for n, v, got in left
    )
    why = f": {failures[0].headline}" if failures else ""
    raise RestoreError(
        f"could not restore {what}{why} (log: {log})",
        [line for f in failures for line in f.lines],
    )


def _installed_versions(python: str) -> dict[str, str]:
    proc = subprocess.run([python, "-c", _LIST], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RefusedError(f"cannot list installed distributions: {proc.stderr.strip()[-200:]}")
    return json.loads(proc.stdout)


def _lookup(versions: dict[str, Any], name: str) -> str | None:
    from packaging.utils import canonicalize_name

    wanted = canonicalize_name(name)
    for key, value in versions.items():
        if canonicalize_name(key) == wanted:
            return value
    return None


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
