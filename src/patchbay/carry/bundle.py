"""Air-gapped containers: ``patchbay bundle`` gathers everything ``apply`` needs.

On a networked host, ``bundle PATCHSET OUT --python ENGINE`` writes::

    OUT/wheels/         pip download of every pin, for the engine's platform and Python
                        (run with the engine interpreter's own pip), and of the version each
                        pin replaces, so a rollback or revert works offline too
    OUT/artifacts/<sha256>   every artifact file, verified
    OUT/patchset/       a copy of the patchset folder (vendored diffs and the lock included)
    OUT/plan/           the compiled plan: each diff patch's judgement on the engine's files
                        and its post-images (see :mod:`patchbay.apply.compiled`), so that a
                        cold apply in a container of the same image checks hashes instead of
                        searching hunks
    OUT/patchbay/wheels/, OUT/install-patchbay.sh
                        patchbay itself, for the container's Python, and its offline
                        installer (see :mod:`patchbay.carry.selfcarry`)
    OUT/manifest.json   sha256 of every file above

Inside the container, ``apply OUT/patchset --bundle OUT --offline`` uses only that: pins
install with ``--no-index --find-links OUT/wheels``, artifacts come from ``OUT/artifacts``, and
anything missing fails with a message naming it. The manifest is checked first.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ..apply.ledger import sha256_bytes
from ..environment.targets import Environment
from ..environment.tree import Tree
from ..errors import InputError, RefusedError
from ..kinds.pins import vcs_commit
from ..kinds.pipcall import index_args
from ..options import RunOptions
from ..patchset.lockfile import Lock
from ..patchset.model import ArtifactPatch, Patchset, PipPatch
from .compiler import compile_plan
from .fetch import fetch_pinned
from .manifest import MANIFEST
from .selfcarry import NO_PIP


class Bundled(NamedTuple):
    """What :func:`make_bundle` wrote: the manifest (relative path -> sha256), and how many
    of the patchset's diff patches the compiled plan holds, of how many."""

    manifest: dict[str, str]
    compiled: int
    diffs: int


def make_bundle(
    patchset: Patchset,
    env: Environment,
    out: Path,
    options: RunOptions | None = None,
    *,
    with_patchbay: bool = True,
) -> Bundled:
    """Write the bundle of ``patchset`` for ``env``'s platform into ``out``.

    With ``with_patchbay`` (the default) the bundle also carries patchbay and its installer,
    so that a container without network can run it. The compiled plan is judged on ``env``'s
    files (the pinned image's, when ``env`` is that image): a patch not pending there is left
    out of it and judged in full where it is applied.

    Returns:
        The manifest and the compiled plan's counts (:class:`Bundled`).

    Raises:
        InputError: ``out`` exists and is not empty, or cannot be made; a remote source or
            artifact is unlocked.
        RefusedError: pip or a download failed; a VCS pin (not bundled: its commit could not
            be checked offline).
    """
    options = options or RunOptions()
    if out.exists() and any(out.iterdir()):
        raise InputError("bundle folder exists and is not empty", file=out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as exc:  # e.g. a folder of /proc, which no file can be made in
        raise InputError(
            f"bundle folder cannot be made in {out.parent}: {exc.strerror or exc}", file=out
        ) from None
    try:
        bundled = _fill(patchset, env, work, options, with_patchbay)
        if out.exists():
            out.rmdir()
        os.replace(work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # a failed bundle leaves nothing behind
    return bundled


def _fill(
    patchset: Patchset, env: Environment, out: Path, options: RunOptions, with_patchbay: bool
) -> Bundled:
    if env.python is None and (with_patchbay or any(p.kind == "pip" for p in patchset.patches)):
        why = "to carry patchbay" if with_patchbay else "for the wheels of its package pins"
        raise RefusedError(
            f"bundle needs the engine interpreter (--python) {why}, for its platform; an "
            "unpacked tree (--root) serves a bundle --without-patchbay of a patchset with no "
            "package pin"
        )
    from ..apply.plan import load_patches

    loaded = load_patches(patchset)
    unlocked = [lp.unlocked for lp in loaded if lp.unlocked]
    if unlocked:
        raise InputError(f"cannot bundle unlocked content: {unlocked[0]}", file=patchset.path)
    (out / "wheels").mkdir(parents=True)
    (out / "artifacts").mkdir()
    tree = Tree(env.roots, env, options)
    tree.folder = patchset.folder
    lock = Lock.load(patchset.folder)
    for patch in patchset.patches:
        if isinstance(patch, PipPatch):
            assert env.python is not None
            _download(patch, patch.requirement, env.python, out / "wheels", tree, patch.no_deps)
            # the version there now, so that a rollback or revert can reinstall it offline
            name = Requirement(patch.requirement).name
            installed = next(
                (
                    v
                    for k, v in env.distributions.items()
                    if canonicalize_name(k) == canonicalize_name(name) and v
                ),
                None,
            )
            if installed is not None:
                _download(patch, f"{name}=={installed}", env.python, out / "wheels", tree, True)
        elif isinstance(patch, ArtifactPatch):
            for f in patch.files:
                sha = f.sha256 or lock.artifacts[f.url].sha256
                cached, _ = fetch_pinned(f.url, sha, options, size=f.size)
                shutil.copyfile(cached, out / "artifacts" / sha)
    shutil.copytree(patchset.folder, out / "patchset")
    compiled, diffs = compile_plan(patchset, env, out, loaded, options)
    if with_patchbay:
        from .selfcarry import carry

        assert env.python is not None
        carry(out, env.python)
    manifest = {
        str(path.relative_to(out)): sha256_bytes(path.read_bytes())
        for path in sorted(out.rglob("*"))
        if path.is_file()
    }
    (out / MANIFEST).write_text(json.dumps({"format": 1, "files": manifest}, indent=2) + "\n")
    return Bundled(manifest, compiled, diffs)


def _download(
    patch: PipPatch, requirement: str, python: str, dest: Path, tree: Tree, no_deps: bool
) -> None:
    if patch.source is not None:
        raise RefusedError(
            f"{patch.source.label}: source builds are not bundled (the build needs the "
            "repository and its build requirements); build a wheel of the locked commit and pin "
            "its version instead",
            patch_id=patch.id,
        )
    if vcs_commit(Requirement(requirement)) is not None:
        raise RefusedError(
            f"{patch.requirement}: VCS pins are not bundled (offline, the installed commit could "
            "not be checked); build a wheel of that commit and pin its version instead",
            patch_id=patch.id,
        )
    args = [
        python,
        "-m",
        "pip",
        "--no-input",
        "--disable-pip-version-check",
        "download",
        "--quiet",
        "--dest",
        str(dest),
        *index_args(patch, tree),
    ]
    if no_deps:
        args.append("--no-deps")
    proc = subprocess.run([*args, requirement], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        if NO_PIP in proc.stderr:
            raise RefusedError(
                f"pip download {requirement}: the engine interpreter {python} has no pip "
                f"({NO_PIP}); the pins' wheels are downloaded with it, for the engine's Python "
                "and platform: give as --python an interpreter of the same version and "
                "platform that has pip",
                patch_id=patch.id,
            )
        last = (proc.stderr.strip().splitlines() or ["pip download failed"])[-1]
        raise RefusedError(f"pip download {requirement}: {last}", patch_id=patch.id)
