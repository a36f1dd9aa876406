"""Resolve where patches apply, by asking the engine's own interpreter.

patchbay runs in its own environment and never imports engine packages: importing some of them
probes the GPU and aborts on a machine without one. Instead it runs a short probe script in the
engine interpreter that locates packages with import-system finders (``find_spec`` on the top
level, ``PathFinder`` below it), which find a package without executing it, and reads
distribution versions from their metadata.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ..apply.statelock import unwritable
from ..errors import EnvironmentProbeError, InputError, RefusedError
from .paths import inside
from .statefolder import identity, site_of, state_folder_of

if TYPE_CHECKING:  # imported lazily: `apply`'s verified no-op needs neither
    import subprocess  # (and only the probe spawns a process: a run with --root does not)

    from ..patchset.model import Patchset, PatchSpec, Target

PROBE_TIMEOUT_S = 120.0  # the whole probe: a huge sys.path takes a while to list
PROBE_SILENCE_S = 10.0  # the probe's first line: an interpreter silent this long hangs
PROBE_TIMEOUT_ENV = "PATCHBAY_PROBE_TIMEOUT"

_PROBE = r"""
import sys
sys.stdout.write("patchbay-probe: started\n")
sys.stdout.flush()
import json, os
cwd = os.getcwd()
sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != cwd]
import importlib.util
from importlib.machinery import PathFinder

args = json.loads(sys.argv[1])

def locate(name):
    parts = name.split(".")
    spec = importlib.util.find_spec(parts[0])
    for part in parts[1:]:
        if spec is None or not spec.submodule_search_locations:
            return None
        spec = PathFinder.find_spec(part, list(spec.submodule_search_locations))
    if spec is None:
        return None
    if spec.submodule_search_locations:
        locations = list(spec.submodule_search_locations)
        if len(locations) != 1:
            return {"error": "namespace package spread over %d folders: %s"
                    % (len(locations), ", ".join(locations))}
        pkg_dir = locations[0]
    elif spec.origin and os.path.isfile(spec.origin):
        pkg_dir = spec.origin
    else:
        return {"error": "not a package on disk (origin %r)" % (spec.origin,)}
    depth = len(parts)
    root = pkg_dir
    for _ in range(depth):
        root = os.path.dirname(root)
    return {"dir": os.path.abspath(pkg_dir), "root": os.path.abspath(root)}

def norm(name):
    name = name.lower().replace("_", "-").replace(".", "-")
    while "--" in name:
        name = name.replace("--", "-")
    return name

# Read dist-info METADATA directly, first match on sys.path wins (as importlib.metadata does);
# importing importlib.metadata would cost more than the rest of the probe.
wanted = {norm(n): n for n in args["distributions"]}
dists = dict.fromkeys(args["distributions"])
dist_info = {}
seen = set()
for entry in sys.path:
    try:
        names = sorted(os.listdir(entry))
    except OSError:
        continue
    for fn in names:
        if fn.endswith(".dist-info"):
            meta = "METADATA"
        elif fn.endswith(".egg-info"):
            meta = "PKG-INFO"
        else:
            continue
        key = norm(fn.rsplit(".", 1)[0].split("-")[0])
        if key not in wanted or key in seen:
            continue
        seen.add(key)
        dist_info[wanted[key]] = os.path.abspath(os.path.join(entry, fn))
        try:
            with open(os.path.join(entry, fn, meta), encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("Version:"):
                        dists[wanted[key]] = line.split(":", 1)[1].strip()
                        break
                    if not line.strip():
                        break
        except OSError:
            pass

# the per-user site-packages CPython puts on sys.path as soon as that folder exists
import site
user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None

import platform
impl = sys.implementation
markers = {
    "implementation_name": impl.name,
    "implementation_version": "%d.%d.%d" % impl.version[:3],
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_release": platform.release(),
    "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_full_version": platform.python_version(),
    "platform_python_implementation": platform.python_implementation(),
    "python_version": "%d.%d" % sys.version_info[:2],
    "sys_platform": sys.platform,
}

print(json.dumps({
    "executable": sys.executable,
    "markers": markers,
    "prefix": sys.prefix,
    "version": "%d.%d.%d" % sys.version_info[:3],
    "packages": {name: locate(name) for name in args["packages"]},
    "distributions": dists,
    "dist_info": dist_info,
    "sys_path": [os.path.abspath(p) for p in sys.path],
    "user_site": user_site,
}))
"""


class Environment(msgspec.Struct):
    """The engine environment a command acts on.

    Attributes:
        python: the engine interpreter, or None when roots were given directly (``--root``).
        prefix: the interpreter's ``sys.prefix`` (None with ``--root``).
        python_version: ``X.Y.Z`` of the engine interpreter.
        roots: target name -> absolute root directory.
        distributions: distribution name -> installed version (None: not installed); only the
            ones the patchset asks about.
        dist_info: distribution name -> its ``.dist-info`` (or ``.egg-info``) folder.
        markers: the interpreter's PEP 508 environment-marker values.
        state_dir: where the ledger, its blobs, the journal and the lock live.
        sys_path: the interpreter's ``sys.path`` as the probe saw it (absolute folders).
        tree_root: the ``--root`` tree (None when the interpreter was probed).
        user_site: the per-user site-packages folder the interpreter would put on
            ``sys.path`` once it exists (``site.getusersitepackages()``), None when user site
            packages are disabled (a virtual environment, ``-s``).
    """

    python: str | None
    prefix: Path | None
    python_version: str | None
    roots: dict[str, Path]
    distributions: dict[str, str | None] = msgspec.field(default_factory=dict)
    state_dir: Path = Path()
    dist_info: dict[str, Path] = msgspec.field(default_factory=dict)
    markers: dict[str, str] = msgspec.field(default_factory=dict)
    sys_path: list[Path] = msgspec.field(default_factory=list)
    tree_root: Path | None = None
    user_site: Path | None = None

    def describe(self) -> dict[str, object]:
        """JSON-ready summary for provenance records."""
        return {
            "python": self.python,
            "prefix": str(self.prefix) if self.prefix else None,
            "python_version": self.python_version,
            "roots": {name: str(root) for name, root in self.roots.items()},
            "distributions": self.distributions,
            "state_dir": str(self.state_dir),
        }


def default_python() -> str:
    """``python3`` on PATH (the engine interpreter when ``--python`` is not given).

    Raises:
        InputError: no ``python3`` on PATH.
    """
    found = shutil.which("python3")
    if not found:
        raise InputError("no python3 on PATH; pass --python PATH of the engine interpreter")
    return found


def _interpreter_path(python: str) -> str:
    """An absolute path for ``--python``: a path as given (made absolute), or a name on PATH."""
    if os.sep in python:
        return os.path.abspath(python)
    return shutil.which(python) or python


def probe_timeout(value: float | None = None) -> float:
    """The probe's time limit in seconds: ``value``, else ``$PATCHBAY_PROBE_TIMEOUT``, else
    :data:`PROBE_TIMEOUT_S`.

    Raises:
        InputError: the variable is not a positive number.
    """
    if value is not None:
        if value <= 0:
            raise InputError(f"--probe-timeout must be positive, not {value:g}")
        return value
    text = os.environ.get(PROBE_TIMEOUT_ENV)
    if not text:
        return PROBE_TIMEOUT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise InputError(f"{PROBE_TIMEOUT_ENV}={text!r}: expected a positive number of seconds")
    return seconds


def probe(
    python: str, packages: list[str], distributions: list[str], *, timeout: float | None = None
) -> dict[str, object]:
    """Run the probe script in ``python`` and return its JSON answer.

    The probe prints a first line as soon as the interpreter runs it. By default an
    interpreter that prints nothing for :data:`PROBE_SILENCE_S` seconds hangs (a blocking
    ``sitecustomize``, a wrapper waiting for input) and is stopped then, with its whole process
    group, and the whole probe may take :data:`PROBE_TIMEOUT_S`; a limit the user sets
    (``timeout``, ``$PATCHBAY_PROBE_TIMEOUT``) bounds both.

    Args:
        timeout: seconds for the whole probe (default :func:`probe_timeout`).

    Raises:
        EnvironmentProbeError: the interpreter is missing, fails, hangs, times out, or prints
            no JSON.
    """
    limit = probe_timeout(timeout)
    # a limit the user set is theirs for both stages (a slow start is theirs to allow)
    chosen = timeout is not None or bool(os.environ.get(PROBE_TIMEOUT_ENV))
    silence = limit if chosen else min(PROBE_SILENCE_S, limit)
    payload = json.dumps({"packages": packages, "distributions": distributions})
    import subprocess

    try:
        proc = subprocess.Popen(
            [python, "-c", _PROBE, payload],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=os.path.abspath(os.sep),
            start_new_session=True,  # a hung wrapper's children are stopped with it
        )
    except FileNotFoundError:
        raise EnvironmentProbeError("engine interpreter not found", file=python) from None
    except PermissionError:
        if os.path.isdir(python):  # exec of a folder is EACCES: say what it is
            raise EnvironmentProbeError(
                "engine interpreter is a folder, not an interpreter (give its bin/python)",
                file=python,
            ) from None
        raise EnvironmentProbeError("engine interpreter is not executable", file=python) from None
    except OSError as exc:
        raise EnvironmentProbeError(
            f"engine interpreter cannot be run: {exc.strerror or exc}", file=python
        ) from None
    hint = f"(--probe-timeout or {PROBE_TIMEOUT_ENV} waits longer)"
    with proc:
        try:
            started = time.monotonic()
            head = _first_output(proc, silence)
            if head is None:
                raise EnvironmentProbeError(
                    f"engine interpreter printed nothing within {silence:g} s: it hangs {hint}",
                    file=python,
                )
            left = max(0.0, limit - (time.monotonic() - started))
            try:
                out, err = proc.communicate(timeout=left)
            except subprocess.TimeoutExpired:
                raise EnvironmentProbeError(
                    f"engine interpreter did not finish the probe within {limit:g} s {hint}",
                    file=python,
                ) from None
        except BaseException:  # a hang, a timeout, Ctrl-C: nothing of the probe stays
            _stop(proc)
            raise
    stdout = (head[0] + out).decode("utf-8", "replace")
    stderr = (head[1] + err).decode("utf-8", "replace")
    if proc.returncode != 0:
        last = (stderr.strip().splitlines() or ["(no output)"])[-1]
        raise EnvironmentProbeError(
            f"engine interpreter failed (exit {proc.returncode}): {last}", file=python
        )
    try:
        answer = json.loads(stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        answer = None
    expected = ("executable", "prefix", "version", "packages", "distributions")
    if not isinstance(answer, dict) or any(k not in answer for k in expected):
        raise EnvironmentProbeError(
            "engine interpreter printed no probe answer (is it a Python 3 interpreter?)",
            file=python,
        )
    return answer


def _first_output(proc: subprocess.Popen[bytes], seconds: float) -> tuple[bytes, bytes] | None:
    """What the process printed (stdout, stderr) until its first output, or its exit, within
    ``seconds``; None when it printed nothing and is still running."""
    assert proc.stdout is not None and proc.stderr is not None
    got = {proc.stdout.fileno(): b"", proc.stderr.fileno(): b""}
    deadline = time.monotonic() + seconds
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout.fileno(), selectors.EVENT_READ)
        sel.register(proc.stderr.fileno(), selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            events = sel.select(left)
            for key, _ in events:
                chunk = os.read(key.fd, 65536)
                got[key.fd] += chunk
                if not chunk:
                    sel.unregister(key.fd)
            if any(got.values()) or not sel.get_map():
                return got[proc.stdout.fileno()], got[proc.stderr.fileno()]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the probe and everything it started (its own process group), and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def resolve_environment(
    patchset: Patchset,
    *,
    python: str | None = None,
    root: Path | None = None,
    state_dir: Path | None = None,
    extra_distributions: list[str] | None = None,
    writable: bool = False,
    probe_timeout: float | None = None,
) -> Environment:
    """Resolve every target of ``patchset`` to a directory.

    Args:
        patchset: the loaded patchset.
        python: engine interpreter (default: ``python3`` on PATH). Ignored with ``root``.
        root: an unpacked tree that stands in for site-packages: every target resolves to
            ``root/<target.path>`` (a ``home`` target to ``root/<target.home>``: nothing
            outside the tree is touched); each target package must be right under it, and
            distribution versions are read from its ``*.dist-info/METADATA``.
        state_dir: override for the ledger folder (default ``<sys.prefix>/share/patchbay``,
            or ``<root>/.patchbay`` with ``root``).
        extra_distributions: more distributions to look up, besides the base guard's and the
            components'.
        writable: the command writes the state folder (``apply``, ``revert``): a folder given
            as ``state_dir`` must be writable (see :func:`check_state_dir`); the default one is
            only checked to be a folder (an image whose patches are all applied may be
            read-only, and ``apply`` then writes nothing).
        probe_timeout: seconds the probe may take (default :func:`probe_timeout`).

    Raises:
        InputError: both ``python`` and ``root``; ``root`` is no folder, or a target package is
            not under it (the folder searched is named); the state folder is a
            file, under a file, or (``writable``) cannot be written; a ``home`` target's folder
            is unusable (see :func:`home_root`).
        RefusedError: a target package is not installed in the engine environment (the image
            is not the one the patchset was written for).
        EnvironmentProbeError: the interpreter could not be probed.
    """
    if python is not None and root is not None:
        raise InputError("give --python or --root, not both")
    if state_dir is not None:  # up front: before the probe, with the option's name
        check_state_dir(state_dir, writable=writable, option="--state-dir")
    spec = patchset.spec
    names = sorted({t.package for t in spec.targets.values() if t.package is not None})
    pins = _pinned_names(spec.patches)
    dists = sorted(
        {
            *spec.base.distributions,
            *(c.distribution for c in spec.components),
            *pins,
            *(extra_distributions or []),
        }
    )
    if root is not None:
        try:
            root = root.resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise InputError(f"--root cannot be resolved: {exc}", file=root) from None
        if not root.is_dir():
            raise InputError("--root is not a directory", file=root)
        roots = {
            name: root / (t.path or t.home or "") if t.path or t.home else root
            for name, t in spec.targets.items()
        }
        for package in names:
            _check_package_under(root, package)
        folder = _absolute(state_dir or root / ".patchbay")
        if state_dir is None:
            check_state_dir(folder, writable=False)
        check_state_placement(folder, patchset, roots)
        if state_dir is not None:
            folder = _own_folder(folder, identity(root))
        versions, dist_info = tree_distributions(root, dists)
        return Environment(
            python=None,
            prefix=None,
            python_version=None,
            roots=roots,
            distributions=versions,
            state_dir=folder,
            dist_info=dist_info,
            tree_root=root,
        )
    python = _interpreter_path(python) if python else default_python()
    answer = probe(python, names, dists, timeout=probe_timeout)
    located: dict[str, dict[str, str] | None] = answer["packages"]  # type: ignore[assignment]
    roots = {}
    for tname, target in spec.targets.items():
        if target.package is None:
            roots[tname] = home_root(tname, target)
            continue
        found = located.get(target.package)
        if found is None:
            raise RefusedError(
                f"target {tname!r}: package {target.package!r} is not installed in this "
                "engine environment (wrong image?)",
                file=python,
            )
        if "error" in found:
            raise RefusedError(f"target {tname!r}: {found['error']}", file=python)
        base = Path(found["root"])
        roots[tname] = base / target.path if target.path else base
    prefix = Path(str(answer["prefix"]))
    folder = _absolute(state_dir or prefix / "share" / "patchbay")
    if state_dir is None:
        check_state_dir(folder, writable=False)
    check_state_placement(folder, patchset, roots)
    if state_dir is not None:
        site = site_of(prefix, [str(p) for p in answer.get("sys_path", [])])  # type: ignore[union-attr]
        folder = _own_folder(folder, identity(site))
    return Environment(
        python=python,
        prefix=prefix,
        python_version=str(answer["version"]),
        roots=roots,
        distributions=answer["distributions"],  # type: ignore[arg-type]
        state_dir=folder,
        dist_info={k: Path(v) for k, v in answer.get("dist_info", {}).items()},  # type: ignore[union-attr]
        markers=dict(answer.get("markers", {})),  # type: ignore[call-overload]
        sys_path=[Path(p) for p in answer.get("sys_path", [])],  # type: ignore[union-attr]
        user_site=Path(str(answer["user_site"])) if answer.get("user_site") else None,
    )


def read_again(env: Environment, *, probe_timeout: float | None = None) -> Environment:
    """``env`` with its distributions read again, from the interpreter (or the ``--root``
    tree): for a run that changed them before it plans (the reverts of ``apply --upgrade``);
    its roots stay as resolved.

    Raises:
        EnvironmentProbeError: the interpreter could not be probed.
    """
    names = list(env.distributions)
    if env.python is None:
        if env.tree_root is None:  # roots given directly: no versions to read
            return env
        versions, dist_info = tree_distributions(env.tree_root, names)
        return msgspec.structs.replace(env, distributions=versions, dist_info=dist_info)
    answer = probe(env.python, [], names, timeout=probe_timeout)
    dist_info = {k: Path(v) for k, v in answer.get("dist_info", {}).items()}  # type: ignore[union-attr]
    return msgspec.structs.replace(
        env,
        distributions=answer["distributions"],  # type: ignore[arg-type]
        dist_info=dist_info,
    )


def _check_package_under(root: Path, package: str) -> None:
    """A target package must be a folder (or a module) right under ``--root``, as it is under
    site-packages (a dotted package: each part below the one before).

    Raises:
        InputError: it is not, naming what was looked for; when the package is found one
            level up or one level down (a root too deep or too shallow), the folder to give.
    """
    parts = package.split(".")
    folder = root.joinpath(*parts)
    if folder.is_dir() or folder.with_name(f"{parts[-1]}.py").is_file():
        return
    looked = f"looked for {folder}{os.sep} and {folder}.py"
    near = [root.parent] if root.parent.joinpath(*parts).is_dir() else []
    near += sorted(p.parent for p in root.glob("/".join(["*", *parts])) if p.is_dir())
    if near:
        looked += f"; it is under {near[0]}: give that folder as --root"
    raise InputError(f"package {package} is not under {root} ({looked})", file=root)


def _pinned_names(patches: list[PatchSpec]) -> list[str]:
    """The distribution names of the ``pip`` patches (packaging is loaded only for them)."""
    requirements = [p.requirement for p in patches if p.kind == "pip"]
    if not requirements:
        return []
    from packaging.requirements import Requirement

    return [Requirement(r).name for r in requirements]


def tree_distributions(
    root: Path, names: list[str]
) -> tuple[dict[str, str | None], dict[str, Path]]:
    """Versions of ``names`` read from ``root/*.dist-info/METADATA`` (or a legacy
    ``*.egg-info/PKG-INFO``): their ``Name`` and ``Version`` fields (core metadata spec), as
    the probe reads them from site-packages. This is what ``--root`` gives the base guard in
    place of the interpreter.

    Returns:
        name -> version (None: no such folder, or no version in it), and name -> the folder.
    """
    versions: dict[str, str | None] = dict.fromkeys(names)
    folders: dict[str, Path] = {}
    if not names:
        return versions, folders
    from email.parser import BytesHeaderParser

    from packaging.utils import canonicalize_name

    wanted = {canonicalize_name(n): n for n in names}
    found = [*root.glob("*.dist-info/METADATA"), *root.glob("*.egg-info/PKG-INFO")]
    for meta in sorted(found, key=lambda p: p.parent.name):
        try:
            with meta.open("rb") as fh:
                headers = BytesHeaderParser().parse(fh)
        except OSError:
            continue
        name, version = headers.get("Name"), headers.get("Version")
        key = canonicalize_name(str(name)) if name else None
        if key in wanted and version and wanted[key] not in folders:
            versions[wanted[key]] = str(version).strip()
            folders[wanted[key]] = meta.parent
    return versions, folders


def home_root(name: str, target: Target, environ: Mapping[str, str] | None = None) -> Path:
    """The root of a ``home`` target: ``$<env>`` when set, else ``<home directory>/<home>``.

    The variable is read from patchbay's own environment, the one ``command`` patches run with
    (so an engine tool started by a command sees the same folder). Only the root is decided
    here; every path below it goes through :meth:`patchbay.environment.tree.Tree.resolve`.

    Args:
        name: the target's name, for messages.
        target: a target with ``home`` set.
        environ: the environment to read (default ``os.environ``).

    Raises:
        InputError: the variable is set but empty, relative or holds ``..``; the home directory
            cannot be found; the home folder resolves (through a link) outside the home.
    """
    assert target.home is not None
    env = os.environ if environ is None else environ
    if target.env is not None and target.env in env:
        value = env[target.env]
        parts = value.split("/")
        if not value.startswith("/") or ".." in parts or "\0" in value:
            raise InputError(
                f"target {name!r}: ${target.env}={value!r} must be an absolute path without '..'"
            )
        return Path(os.path.normpath(value))
    try:
        home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    except (KeyError, RuntimeError):
        raise InputError(f"target {name!r}: the home directory cannot be found") from None
    if not home.is_absolute():
        raise InputError(f"target {name!r}: the home directory {str(home)!r} is not absolute")
    root = home / target.home
    real_home, real_root = os.path.realpath(home), os.path.realpath(root)
    if not real_root.startswith(real_home.rstrip("/") + "/"):
        raise InputError(
            f"target {name!r}: ~/{target.home} resolves to {real_root}, outside the home "
            f"directory {real_home}"
        )
    return root


def _own_folder(given: Path, ident: dict) -> Path:
    """The environment's own state folder in the ``--state-dir`` folder ``given``
    (:func:`patchbay.environment.statefolder.state_folder_of`), claimed for it when the folder
    can be written (a read-only one is read as it is: the command that must write it says
    that it cannot)."""
    return state_folder_of(given, ident, claim=True)


def _absolute(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise InputError(f"the state folder cannot be resolved: {exc}", file=path) from None


def check_state_placement(folder: Path, patchset: Patchset, roots: Mapping[str, Path]) -> None:
    """Refuse a state folder inside a target's package: reinstalling the package (the usual
    way back to a pristine image) would delete the ledger and the saved originals with it.

    Args:
        folder: the state folder, absolute and resolved.
        patchset: whose targets decide the package folders.
        roots: target name -> root, as resolved for this environment.

    The package folders are, for a ``package`` target, ``<root>/<package>`` (the root without
    its ``path``), and the root of a target with a ``path`` (a data folder of the package).

    Raises:
        InputError: ``folder`` is, or lies under, one of them, or holds a target root; the
            message names both.
    """
    real = os.path.realpath(folder)
    for name, target in patchset.spec.targets.items():
        root = roots.get(name)
        if root is not None and inside(os.path.realpath(root), real):
            raise InputError(
                f"the state folder {folder} holds the root {root} of target {name!r}: every "
                "file the patches change would lie in patchbay's own state; choose a state "
                "folder outside the target roots' packages",
                file=folder,
            )
        if root is None or target.package is None:
            continue
        base = root.parents[len(Path(target.path).parts) - 1] if target.path else root
        packages = [base.joinpath(*target.package.split("."))]
        if target.path:
            packages.append(root)
        for package in packages:
            if inside(real, os.path.realpath(package)):
                raise InputError(
                    f"the state folder {folder} lies inside {package}, a package folder of "
                    f"target {name!r}: reinstalling it would delete the ledger and the "
                    "saved originals; choose a state folder outside the package",
                    file=folder,
                )


def check_state_dir(path: Path, *, writable: bool, option: str | None = None) -> None:
    """Check the state folder (ledger, journal, lock, logs) before anything runs.

    Args:
        path: the folder; it need not exist yet (``apply`` creates it).
        writable: the command writes there: the folder, or the nearest existing folder above
            it, must be writable (``os.access``, which also sees a read-only mount and an
            immutable folder, for root too).
        option: the option that named it (``--state-dir``), for the message.

    Raises:
        InputError: it is a file (or anything but a folder), it lies under a file, or it
            cannot be written; one line naming it (exit 2).
    """
    name = f"the state folder ({option})" if option else "the state folder"
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):  # to be created (or under a file: below)
        st = None
    except (OSError, ValueError) as exc:  # a symlink loop, a NUL
        raise InputError(f"{name} cannot be used: {exc.args[-1]}", file=path) from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise InputError(f"{name} is a file, not a folder", file=path)
    existing = path
    while st is None:
        existing = existing.parent
        try:
            st = os.stat(existing)
        except (FileNotFoundError, NotADirectoryError):
            st = None
            if existing == existing.parent:
                break
        else:
            if not stat.S_ISDIR(st.st_mode):
                raise InputError(f"{name} lies under {existing}, which is a file", file=path)
    why = unwritable(existing) if writable else None
    if why is not None:
        where = "" if existing == path else f"{existing} above it: "
        raise InputError(f"{name} cannot be written: {where}{why}", file=path)
