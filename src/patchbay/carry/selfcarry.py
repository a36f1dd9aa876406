"""Carrying patchbay into an air-gapped container: its own wheels in a bundle, and an installer.

patchbay is never installed into the engine's environment (its dependencies would mix with the
engine's own). Inside the container it lives in a private virtual environment made from the
container's Python, with no network. ``patchbay bundle`` (see :mod:`patchbay.carry.bundle`) writes::

    OUT/patchbay/wheels/     patchbay's wheel and every dependency, downloaded by the engine
                             interpreter's pip, so they fit the container's Python and platform
    OUT/install-patchbay.sh  the one-line installer: ``sh OUT/install-patchbay.sh``, made from
                             the POSIX sh template ``installer.sh`` of this package

The installer checks every wheel against the bundle's ``manifest.json`` before it makes
anything, installs only those wheels (pip isolated from its configuration and ``PIP_*``
variables), never touches a folder it did not make, removes what it made when the install fails,
and ends with :func:`check_environment` run in the new environment.

The wheel of patchbay itself is made from the running installation (a regular install or an
editable one from a checkout): the package files and the installed ``.dist-info`` metadata are
packed as the binary distribution format (PEP 427) describes, with fixed timestamps, so two
bundles of the same patchbay carry the same bytes.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import shlex
import subprocess
import zipfile
from importlib import import_module, metadata, resources
from pathlib import Path

from ..errors import InputError, RefusedError

#: patchbay's distribution name. The public index's ``patchbay`` is an unrelated project, so
#: the distribution has a name of its own; the command and the import package stay ``patchbay``.
DIST = "engine-patchbay"
INSTALLER = "install-patchbay.sh"
WHEELS = Path("patchbay") / "wheels"
#: what an interpreter without pip says to ``python -m pip``
NO_PIP = "No module named pip"

# dist-info files that describe one installation, not the distribution (PEP 376, PEP 610)
_INSTALL_ONLY = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json"}
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry


def wheel_from_installed(name: str, dest: Path, *, packages: list[Path] | None = None) -> Path:
    """Pack an installed distribution back into a wheel in ``dest``.

    Args:
        name: the distribution name (any spelling PEP 503 normalises to it).
        dest: an existing folder for the wheel.
        packages: for an editable install, the package folders to pack (the installed files
            are only a path hook then); by default the files listed in the ``RECORD``.

    Returns:
        The wheel's path: ``{name}-{version}-{tags}.whl`` with the tags of the installed
        ``WHEEL`` file (``py3-none-any`` when it has none).

    Raises:
        InputError: the distribution is not installed, or an editable install without
            ``packages``.
    """
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise InputError(f"distribution {name} is not installed") from None
    info = Path(str(dist._path))  # type: ignore[attr-defined]  # the .dist-info folder
    stem = f"{_escape(dist.metadata['Name'])}-{dist.version.replace('-', '_')}"
    info_name = f"{stem}.dist-info"
    files: dict[str, bytes] = {}
    for path in sorted(info.iterdir()):
        if path.is_file() and path.name not in _INSTALL_ONLY:
            files[f"{info_name}/{path.name}"] = path.read_bytes()
    wheel_meta = files.get(f"{info_name}/WHEEL", b"").decode()
    if not wheel_meta:
        wheel_meta = "Wheel-Version: 1.0\nGenerator: patchbay\nRoot-Is-Purelib: true\n"
        wheel_meta += "Tag: py3-none-any\n"
        files[f"{info_name}/WHEEL"] = wheel_meta.encode()
    if packages is not None:
        for package in packages:
            for path in sorted(package.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    files[path.relative_to(package.parent).as_posix()] = path.read_bytes()
    elif _editable(info):
        raise InputError(f"{name} is an editable install: name its package folders to pack")
    else:
        site = info.parent
        for entry in dist.files or []:
            rel = entry.as_posix()
            # scripts (../../bin) are made again from entry_points.txt; bytecode is compiled
            # at install time
            if rel.startswith("..") or rel.endswith(".pyc") or rel.startswith(info.name):
                continue
            path = site / rel
            if path.is_file():
                files[rel] = path.read_bytes()
    wheel = dest / f"{stem}-{_tags(wheel_meta)}.whl"
    write_wheel(wheel, files, info_name)
    return wheel


def own_wheel(dest: Path) -> Path:
    """patchbay's own wheel, made from the running code (see :func:`wheel_from_installed`)."""
    import patchbay

    package = Path(patchbay.__file__).parent
    try:
        info = Path(str(metadata.distribution(DIST)._path))  # type: ignore[attr-defined]
    except metadata.PackageNotFoundError:
        raise InputError(
            f"patchbay runs from {package} without its distribution metadata ({DIST}); install "
            "it (e.g. `pipx install .` in a checkout) to bundle it"
        ) from None
    return wheel_from_installed(DIST, dest, packages=[package] if _editable(info) else None)


def carry(out: Path, python: str) -> list[Path]:
    """Write patchbay's wheels for ``python``'s platform and the installer into bundle ``out``.

    Args:
        out: the bundle folder being filled.
        python: the engine interpreter; its pip downloads the dependencies (through the index
            settings of that pip: its configuration, ``PIP_INDEX_URL`` and the like), only as
            wheels, so that the installer never builds anything offline.

    Returns:
        The wheels written.

    Raises:
        RefusedError: ``python`` has no pip (the message says how else to get the wheels); pip
            could not download a dependency (its error lines are quoted), e.g. the container's
            Python is older than patchbay supports.
    """
    wheels = out / WHEELS
    wheels.mkdir(parents=True)
    own = own_wheel(wheels)
    args = [python, "-m", "pip", "--no-input", "--disable-pip-version-check", "download"]
    args += ["--quiet", "--only-binary=:all:", "--dest", str(wheels), str(own)]
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    if proc.returncode != 0 and NO_PIP in proc.stderr:
        raise RefusedError(
            f"the engine interpreter {python} has no pip ({NO_PIP}): patchbay's own wheels are "
            "downloaded with it, for the container's Python and platform; give as --python an "
            "interpreter of the same version and platform that has pip, or bundle "
            "--without-patchbay and carry patchbay's wheels another way (pip download "
            "--only-binary=:all: --python-version X.Y --platform TAG engine-patchbay)"
        )
    if proc.returncode != 0:
        errors = [ln.strip() for ln in proc.stderr.splitlines() if "error" in ln.lower()]
        raise RefusedError(
            "pip download of patchbay's own dependencies for the container failed: "
            + ("; ".join(errors[:3]) or proc.stderr.strip()[-300:] or f"exit {proc.returncode}")
        )
    installer = out / INSTALLER
    # the installer runs in the container, where patchbay is not installed yet: plain POSIX sh
    template = resources.files(__package__).joinpath("installer.sh").read_text(encoding="utf-8")
    installer.write_text(template.replace("@PYTHON@", shlex.quote(python)))
    installer.chmod(0o755)
    return sorted(wheels.glob("*.whl"))


def check_environment() -> int:
    """The installer's last step, run by the new environment's interpreter: patchbay and every
    distribution it requires at run time (markers evaluated for that interpreter) are installed
    in versions that satisfy the requirements, and their top-level modules import.

    Returns:
        0, or 1 after one line on stderr naming the distribution and what is wrong.
    """
    import os

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    # GitPython looks for a git executable when imported; patchbay runs git only where needed
    os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
    seen: set[str] = set()
    todo: list[tuple[str, Requirement | None]] = [(DIST, None)]
    while todo:
        name, required = todo.pop()
        key = canonicalize_name(name)
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return _unfit(f"{name} is not installed (required as {required})")
        if required is not None and not required.specifier.contains(dist.version, prereleases=True):
            return _unfit(f"{name} {dist.version} is installed and {required} is required")
        for module in _top_level(dist):
            try:
                import_module(module)
            except Exception as exc:  # any failure of the import is the finding
                first = (str(exc).strip().splitlines() or [""])[0]
                return _unfit(
                    f"module {module} of {name} does not import: {exc.__class__.__name__}: {first}"
                )
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append((req.name, req))
    return 0


def _unfit(reason: str) -> int:
    import sys

    print(
        f"install-patchbay.sh: the new environment {sys.prefix} is unusable: {reason}",
        file=sys.stderr,
    )
    return 1


def _top_level(dist: metadata.Distribution) -> list[str]:
    """The importable top-level names a distribution installs: ``top_level.txt`` when it has
    one, else the first components of its ``RECORD`` (packages, modules, extension modules)."""
    text = dist.read_text("top_level.txt")
    if text:
        names = {line.strip() for line in text.splitlines()}
    else:
        names = set()
        for entry in dist.files or []:
            first = entry.parts[0]
            if len(entry.parts) > 1:
                if not first.endswith((".dist-info", ".data")) and first not in (
                    "..",
                    "__pycache__",
                ):
                    names.add(first)
            elif first.endswith(".py") or ".so" in first or first.endswith(".pyd"):
                names.add(first.split(".")[0])
    return sorted(n for n in names if n.isidentifier() and not n.startswith("_"))


def _editable(info: Path) -> bool:
    try:
        direct = json.loads((info / "direct_url.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(isinstance(direct, dict) and direct.get("dir_info", {}).get("editable"))


def _escape(component: str) -> str:
    """A distribution name as a wheel file name has it (PEP 427 and the binary distribution
    format spec: runs of ``-_.`` become one ``_``)."""
    out, last = [], ""
    for ch in component:
        if ch in "-_.":
            if last != "_":
                out.append("_")
            last = "_"
        else:
            out.append(ch)
            last = ch
    return "".join(out)


def _tags(wheel_meta: str) -> str:
    """The compressed tag set (PEP 425) of a ``WHEEL`` file's ``Tag:`` lines."""
    parts: list[list[str]] = [[], [], []]
    for line in wheel_meta.splitlines():
        if line.startswith("Tag:"):
            for i, part in enumerate(line.split(":", 1)[1].strip().split("-")):
                if part not in parts[i]:
                    parts[i].append(part)
    if not parts[0]:
        return "py3-none-any"
    return "-".join(".".join(p) for p in parts)


def write_wheel(wheel: Path, files: dict[str, bytes], info_name: str) -> None:
    """Write a wheel (a zip, PEP 427) holding ``files`` and their ``RECORD``.

    Args:
        wheel: the wheel's path (its name is the caller's: ``{name}-{version}-{tags}.whl``).
        files: archive path -> bytes, the ``.dist-info`` files (``METADATA``, ``WHEEL``)
            included; ``RECORD`` is computed here (sha256, urlsafe base64 without padding).
        info_name: the ``{name}-{version}.dist-info`` folder name.
    """
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for rel, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([rel, f"sha256={digest}", len(data)])
    writer.writerow([f"{info_name}/RECORD", "", ""])
    entries = {**files, f"{info_name}/RECORD": record.getvalue().encode()}
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for rel, data in entries.items():
            item = zipfile.ZipInfo(rel, date_time=_EPOCH)
            item.external_attr = 0o644 << 16
            item.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(item, data)
