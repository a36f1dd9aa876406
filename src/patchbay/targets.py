"""Resolve where patches apply, by asking the engine's own interpreter.

patchbay runs in its own environment and never imports engine packages: importing some of them
probes the GPU and aborts on a machine without one. Instead it runs a short probe script in the
engine interpreter that locates packages with import-system finders (``find_spec`` on the top
level, ``PathFinder`` below it), which find a package without executing it, and reads
distribution versions from their metadata.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement

from .errors import EnvironmentProbeError, InputError, RefusedError
from .model import Patchset

PROBE_TIMEOUT_S = 120

_PROBE = r"""
import json, os, sys
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
}))
"""


@dataclass
class Environment:
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
    """

    python: str | None
    prefix: Path | None
    python_version: str | None
    roots: dict[str, Path]
    distributions: dict[str, str | None] = field(default_factory=dict)
    state_dir: Path = Path()
    dist_info: dict[str, Path] = field(default_factory=dict)
    markers: dict[str, str] = field(default_factory=dict)

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


def probe(python: str, packages: list[str], distributions: list[str]) -> dict[str, object]:
    """Run the probe script in ``python`` and return its JSON answer.

    Raises:
        EnvironmentProbeError: the interpreter is missing, fails, times out, or prints no JSON.
    """
    payload = json.dumps({"packages": packages, "distributions": distributions})
    try:
        proc = subprocess.run(
            [python, "-c", _PROBE, payload],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            cwd=os.path.abspath(os.sep),
            check=False,
        )
    except FileNotFoundError:
        raise EnvironmentProbeError("engine interpreter not found", file=python) from None
    except PermissionError:
        raise EnvironmentProbeError("engine interpreter is not executable", file=python) from None
    except subprocess.TimeoutExpired:
        raise EnvironmentProbeError(
            f"engine interpreter did not answer within {PROBE_TIMEOUT_S} s", file=python
        ) from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise EnvironmentProbeError(
            f"engine interpreter failed (exit {proc.returncode}): {last}", file=python
        )
    try:
        answer = json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        answer = None
    expected = ("executable", "prefix", "version", "packages", "distributions")
    if not isinstance(answer, dict) or any(k not in answer for k in expected):
        raise EnvironmentProbeError(
            "engine interpreter printed no probe answer (is it a Python 3 interpreter?)",
            file=python,
        )
    return answer


def resolve_environment(
    patchset: Patchset,
    *,
    python: str | None = None,
    root: Path | None = None,
    state_dir: Path | None = None,
    extra_distributions: list[str] | None = None,
) -> Environment:
    """Resolve every target of ``patchset`` to a directory.

    Args:
        patchset: the loaded patchset.
        python: engine interpreter (default: ``python3`` on PATH). Ignored with ``root``.
        root: an unpacked tree that stands in for site-packages: every target resolves to
            ``root/<target.path>``; distribution versions are then unknown.
        state_dir: override for the ledger folder (default ``<sys.prefix>/share/patchbay``,
            or ``<root>/.patchbay`` with ``root``).
        extra_distributions: more distributions to look up, besides the base guard's and the
            components'.

    Raises:
        RefusedError: a target package is not installed in the engine environment (the image
            is not the one the patchset was written for).
        EnvironmentProbeError: the interpreter could not be probed.
    """
    spec = patchset.spec
    names = sorted({t.package for t in spec.targets.values()})
    pins = [Requirement(p.requirement).name for p in spec.patches if p.kind == "pip"]
    dists = sorted(
        {
            *spec.base.distributions,
            *(c.distribution for c in spec.components),
            *pins,
            *(extra_distributions or []),
        }
    )
    if root is not None:
        root = root.resolve()
        if not root.is_dir():
            raise InputError("--root is not a directory", file=root)
        roots = {name: (root / t.path) if t.path else root for name, t in spec.targets.items()}
        return Environment(
            python=None,
            prefix=None,
            python_version=None,
            roots=roots,
            distributions=dict.fromkeys(dists),
            state_dir=(state_dir or root / ".patchbay").resolve(),
        )
    python = _interpreter_path(python) if python else default_python()
    answer = probe(python, names, dists)
    located: dict[str, dict[str, str] | None] = answer["packages"]  # type: ignore[assignment]
    roots = {}
    for tname, target in spec.targets.items():
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
    return Environment(
        python=python,
        prefix=prefix,
        python_version=str(answer["version"]),
        roots=roots,
        distributions=answer["distributions"],  # type: ignore[arg-type]
        state_dir=(state_dir or prefix / "share" / "patchbay").resolve(),
        dist_info={k: Path(v) for k, v in answer.get("dist_info", {}).items()},  # type: ignore[union-attr]
        markers=dict(answer.get("markers", {})),  # type: ignore[call-overload]
    )
