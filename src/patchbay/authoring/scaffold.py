"""``init``: a new patchset read from an engine environment, so nobody types a 40-hex commit.

For each package named (``vllm``, ``aiter``), the environment's interpreter (or a ``--root``
tree) says where it is installed; the distribution whose ``RECORD`` lists its files is its
component, pinned in the base guard to the installed version (``==``), and the commit it was
built from is read, in this order, from:

1. ``direct_url.json`` (PEP 610): ``vcs_info.commit_id`` of a ``pip install git+URL@REF``, or,
   for an install from a local folder (editable or not) that is a git checkout, that
   checkout's ``HEAD`` (``git rev-parse``);
2. the version's local part, as setuptools-scm and vLLM write it (``0.6.3+g1a2b3c4``,
   ``0.9.1.dev5+gabcdef1.rocm642``): a full id as it is; an abbreviated one is expanded in
   ``--from-git DIR`` (``git rev-parse --verify <id>^{commit}``) when given, else left out
   with a note (an abbreviated id is no pin).

The repository (``owner/name``) comes from the VCS URL, the checkout's ``origin``, or the
first GitHub URL among METADATA's ``Project-URL`` and ``Home-page``. Everything the
environment cannot tell is left as a ``<TODO: ...>`` blank that ``validate`` lists.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import yaml

from ..apply.journal import write_atomic
from ..diff.gitapply import run_git
from ..environment.ownership import record_owners
from ..environment.targets import Environment, resolve_environment
from ..errors import InputError, PatchbayError, RefusedError
from ..patchset.loading import load_patchset
from ..patchset.model import Patchset

_GITHUB = re.compile(r"github\.com[/:]([\w.-]+)/([\w.-]+?)(?:\.git)?/?(?:[#?].*)?$")
_LOCAL_COMMIT = re.compile(r"(?:^|[.+])g([0-9a-f]{7,40})(?=$|[.+])")
_FULL = re.compile(r"^[0-9a-f]{40}$")
_PACKAGE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
TODO_DESCRIPTION = "<TODO: what these patches make the image do, for which model>"
TODO_IMAGE = "<TODO: the image reference, e.g. registry/name:tag@sha256:...>"


@dataclass
class FoundComponent:
    """What ``init`` read about one package's distribution.

    Attributes:
        package: the import name asked for.
        distribution: the distribution whose RECORD lists it (None: none does).
        version: its installed version.
        repository: ``owner/name`` on GitHub, when one was found.
        commit: the full commit id, when one was found.
        notes: where each value came from, and what could not be read.
    """

    package: str
    distribution: str | None = None
    version: str | None = None
    repository: str | None = None
    commit: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class InitResult:
    """The patchset written and what was found for each package."""

    path: Path
    components: list[FoundComponent]


def init_patchset(
    folder: Path,
    packages: list[str],
    *,
    python: str | None = None,
    root: Path | None = None,
    name: str | None = None,
    image: str | None = None,
    from_git: Path | None = None,
) -> InitResult:
    """Write ``folder/patchset.yaml`` for ``packages`` as the environment has them.

    Args:
        folder: the new patchset's folder (made when missing; it must hold no patchset.yaml).
        packages: import names of the engine packages to patch (``vllm``, ``aiter``).
        python, root: the engine environment (its interpreter, or an unpacked tree).
        name: the patchset's name (default: the folder's name).
        image: the image reference (default: a ``<TODO: ...>`` blank).
        from_git: a clone of the component's repository, to expand an abbreviated commit id.

    Returns:
        The :class:`InitResult`.

    Raises:
        InputError: no package, a malformed package name, a patchset.yaml already there.
        RefusedError: a package is not installed in the environment.
        EnvironmentProbeError: the interpreter could not be probed.
    """
    if not packages:
        raise InputError("name at least one engine package to patch (--package vllm)")
    for package in packages:
        if not _PACKAGE.match(package):
            raise InputError(f"{package!r} is not an import name (e.g. vllm, aiter)")
    path = folder / "patchset.yaml"
    if path.exists():
        raise InputError("a patchset is here already; edit it, or choose a new folder", file=path)
    name = name or folder.resolve().name
    targets = {_target_name(p): p for p in dict.fromkeys(packages)}
    env = _environment(name, targets, python, root)
    found = []
    for target, package in targets.items():
        found.append(_component(package, Path(env.roots[target]), from_git))
    text = _document(name, image, targets, found)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text.encode("utf-8"))
    try:
        load_patchset(path)
    except PatchbayError:  # a bug: never leave a patchset that does not load
        path.unlink()
        raise
    return InitResult(path, found)


def _target_name(package: str) -> str:
    return package.replace(".", "-").replace("_", "-")


def _environment(
    name: str, targets: dict[str, str], python: str | None, root: Path | None
) -> Environment:
    """The environment with one target per package (a throw-away patchset names them)."""
    doc = {
        "schema": 1,
        "name": name,
        "image": {"reference": "init.invalid/probe"},
        "targets": {t: {"package": p} for t, p in targets.items()},
        "patches": [],
    }
    with tempfile.TemporaryDirectory(prefix="patchbay-init-") as scratch:
        probe_path = Path(scratch) / "patchset.yaml"
        probe_path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        probe: Patchset = load_patchset(probe_path)
        return resolve_environment(
            probe, python=python, root=root, state_dir=Path(scratch) / "state"
        )


def _component(package: str, root: Path, from_git: Path | None) -> FoundComponent:
    found = FoundComponent(package)
    top = root / package.replace(".", "/")
    files = [top / "__init__.py"] if (top / "__init__.py").is_file() else []
    if not files and top.is_dir():
        files = sorted(p for p in top.rglob("*") if p.is_file())[:1]
    if not files and top.with_suffix(".py").is_file():
        files = [top.with_suffix(".py")]
    owners = record_owners([os.path.normpath(str(f)) for f in files], set())
    if not owners:
        found.notes.append(f"no distribution's RECORD lists {package}: no component for it")
        return found
    distribution, (info, version, _, _) = next(iter(owners.items()))
    found.distribution, found.version = distribution, version
    _from_direct_url(found, info)
    if found.repository is None:
        for url in _metadata_urls(info):
            m = _GITHUB.search(url)
            if m:
                found.repository = f"{m.group(1)}/{m.group(2)}"
                found.notes.append(f"repository from METADATA ({url})")
                break
    if found.commit is None and version:
        _from_version(found, version, from_git)
    if found.repository is None:
        found.notes.append("repository: not found (METADATA names no GitHub URL)")
    if found.commit is None and not any(n.startswith("commit") for n in found.notes):
        found.notes.append(
            "commit: not found (no direct_url.json VCS record, no g<hash> in the version)"
        )
    return found


def _metadata_urls(info: Path) -> list[str]:
    """The URLs of METADATA's ``Project-URL`` (``label, url``) and ``Home-page`` fields."""
    try:
        text = (info / "METADATA").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    headers = HeaderParser().parsestr(text.split("\n\n", 1)[0] + "\n")
    urls = [v.rpartition(",")[2].strip() for v in headers.get_all("Project-URL") or []]
    return urls + [v.strip() for v in headers.get_all("Home-page") or []]


def _from_direct_url(found: FoundComponent, info: Path) -> None:
    try:
        data = json.loads((info / "direct_url.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        return
    url: str = data["url"]
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") == "git":
        commit = vcs.get("commit_id")
        if isinstance(commit, str) and _FULL.match(commit):
            found.commit = commit
            found.notes.append(f"commit from direct_url.json (pip install git+{url})")
        m = _GITHUB.search(url)
        if m:
            found.repository = f"{m.group(1)}/{m.group(2)}"
        return
    if url.startswith("file://") and isinstance(data.get("dir_info"), dict):
        checkout = Path(unquote(urlparse(url).path))
        try:
            _, head = run_git(["rev-parse", "--verify", "HEAD^{commit}"], checkout)
        except PatchbayError:
            found.notes.append(f"commit: {checkout} (installed from) is no git checkout")
            return
        commit = head.decode().strip()
        if _FULL.match(commit):
            editable = data["dir_info"].get("editable") is True
            found.commit = commit
            found.notes.append(
                f"commit: HEAD of {checkout}, the {'editable ' if editable else ''}checkout it "
                "was installed from (as it is now)"
            )
        try:
            _, origin = run_git(["remote", "get-url", "origin"], checkout)
        except PatchbayError:
            return
        m = _GITHUB.search(origin.decode().strip())
        if m:
            found.repository = f"{m.group(1)}/{m.group(2)}"


def _from_version(found: FoundComponent, version: str, from_git: Path | None) -> None:
    local = version.partition("+")[2]
    m = _LOCAL_COMMIT.search(local) if local else None
    if m is None:
        return
    short = m.group(1)
    if _FULL.match(short):
        found.commit = short
        found.notes.append(f"commit from the version {version}")
        return
    if from_git is None:
        found.notes.append(
            f"commit: the version {version} names {short}, abbreviated; give a clone with "
            "--from-git DIR to expand it"
        )
        return
    try:
        _, out = run_git(["rev-parse", "--verify", "--quiet", f"{short}^{{commit}}"], from_git)
    except PatchbayError:
        raise RefusedError(
            f"{short} (from the version {version}) is no commit of this repository",
            file=from_git,
        ) from None
    found.commit = out.decode().strip()
    found.notes.append(f"commit: {short} from the version {version}, expanded in {from_git}")


def _document(
    name: str, image: str | None, targets: dict[str, str], found: list[FoundComponent]
) -> str:
    def q(value: str) -> str:
        return json.dumps(value)  # a JSON string is a YAML scalar, whatever it holds

    lines = [
        "schema: 1",
        f"name: {q(name)}",
        f"description: {q(TODO_DESCRIPTION)}",
        "image:",
        f"  reference: {q(image or TODO_IMAGE)}",
    ]
    components = [c for c in found if c.distribution]
    if components:
        lines.append("components:")
        for c in components:
            lines.append(f"  - distribution: {q(c.distribution or '')}")
            if c.repository:
                lines.append(f"    repository: {q(c.repository)}")
            if c.commit:
                lines.append(f"    commit: {q(c.commit)}")
    lines.append("targets:")
    for target, package in targets.items():
        lines += [f"  {target}:", f"    package: {q(package)}"]
    pinned = [c for c in components if c.version]
    if pinned:
        lines += ["base:", "  distributions:"]
        lines += [f"    {q(c.distribution or '')}: {q('==' + (c.version or ''))}" for c in pinned]
    lines.append("patches: []")
    return "\n".join(lines) + "\n"
