"""The identity of a patchset as an apply leaves it: its inputs, its environment and every
file it touches, each with its hash or state, recorded in the ledger (``applied_identity``)
inside the apply's transaction; :func:`patchbay.apply.noop.check` compares a re-run against it
before anything else is loaded."""

from __future__ import annotations

import os
from typing import Any

from .. import __version__
from ..kinds import LoadedPatch
from .noop import (
    IDENTITY_VERSION,
    NOT_A_FILE,
    VARIABLES,
    file_state,
    listing,
    sha256_of_file,
    startup_files,
)
from .results import PatchStatus, Plan, apply_notes, touched_paths


def identity(plan: Plan, loaded: list[LoadedPatch]) -> dict[str, Any] | None:
    """The identity of ``plan``'s patchset as an apply that wrote every pending patch of
    ``plan`` leaves it (call after the writes, before the ledger is saved), or None when a
    no-op of it could not be verified from content alone (then every re-run takes the full
    engine: a run that writes patches with notes to print, a path through a linked folder, a
    non-file)."""
    patchset, env = plan.patchset, plan.env
    notes = apply_notes(plan)
    if plan.with_status(PatchStatus.PENDING) and (
        notes
        or any(
            r.notes or r.inspection.notes
            for r in plan.reports
            if r.status is not PatchStatus.REDUNDANT
        )
    ):
        # the notes of a run that writes ("applies at line 3") are not those a re-run prints
        # ("applied at line 3"): the first re-run, through the engine, records its own
        return None
    inputs = [str(patchset.path), str(patchset.folder / "patchbay.lock")]
    inputs += [lp.source for lp in loaded if lp.source]
    # a patch file's sha256 is that of the bytes the run read and applied (kinds/diff.py):
    # were it changed since, the next check finds it differs and takes the engine
    known = {lp.source: lp.sha256 for lp in loaded if lp.source}
    paths: set[tuple[str, str]] = set()
    exists: set[tuple[str, str]] = set()
    for report in plan.reports:
        patch = report.patch
        if patch.target is None:
            continue
        written, edited = touched_paths(patch, report.loaded)
        paths.update((patch.target, rel) for rel in [*written, *edited])
        if patch.kind == "command" and patch.output:
            exists.add((patch.target, patch.output))
    for entries in [plan.ledger.entries(patchset.name)]:
        for entry in entries:
            paths.update((rec.target, rec.path) for rec in entry.files if rec.target in env.roots)
    paths.update((fg.target, fg.path) for fg in patchset.spec.base.files)
    files = []
    real_roots = {t: os.path.realpath(r) for t, r in env.roots.items()}
    for target, rel in sorted(paths):
        root = real_roots[target]
        path = os.path.join(env.roots[target], rel)
        state = file_state(path)
        if state[0] != os.path.join(root, rel) or state[1] == NOT_A_FILE:
            return None  # through a linked folder, or a folder: the full engine judges it
        files.append([path, *state])
    outputs = [os.path.join(env.roots[t], rel) for t, rel in sorted(exists)]
    environment: dict[str, Any] = {
        "state_dir": str(env.state_dir),
        "root": None if env.tree_root is None else str(env.tree_root),
        "roots": {k: str(v) for k, v in env.roots.items()},
    }
    # the versions the base guard and the pins read: the metadata of every distribution the
    # patchset names, and the folders they are found in (a rename or a new one is seen there)
    metadata = []
    for info in env.dist_info.values():
        metadata += [str(info / name) for name in ("METADATA", "PKG-INFO", "direct_url.json")]
    environment["metadata"] = [[p, sha256_of_file(p)] for p in sorted(set(metadata))]
    if env.python is None:
        folders = [] if env.tree_root is None else [str(env.tree_root)]
        environment["sys_path"] = [[p, listing(p)] for p in folders]
    else:
        sys_path = [str(p) for p in env.sys_path]
        startup = [os.path.join(str(env.prefix), "pyvenv.cfg"), *startup_files(sys_path)]
        executable = os.path.realpath(env.python)
        # a `home` target's variable moves its root (targets.home_root)
        names = [*VARIABLES, *(t.env for t in patchset.spec.targets.values() if t.env)]
        user_site = None if env.user_site is None else str(env.user_site)
        environment.update(
            python=env.python,
            executable=executable,
            executable_sha256=sha256_of_file(executable),
            prefix=str(env.prefix),
            variables={k: os.environ.get(k) for k in names},
            sys_path=[[p, listing(p)] for p in sys_path],
            # absent when recorded, it joins sys.path (ahead of site-packages) once created
            user_site=None if user_site is None else [user_site, listing(user_site)],
            startup=[[p, sha256_of_file(p)] for p in sorted(set(startup))],
        )
    return {
        "version": IDENTITY_VERSION,
        "tool_version": __version__,
        # each input as the engine reads it (through the patchset's folder as given, links
        # and all), with the file that reached and its hash: a re-pointed link is a change
        "inputs": [
            [os.path.abspath(p), real, known.get(p) or sha256_of_file(real)]
            for p in inputs
            for real in [os.path.realpath(p)]
        ],
        "environment": environment,
        "files": files,
        "outputs": outputs,
        "redundant": [r.id for r in plan.with_status(PatchStatus.REDUNDANT)],
        "present": len(plan.reports),
        "notes": notes,
    }
