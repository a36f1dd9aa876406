"""Compiling a plan for a bundle: the patchset judged on the pinned image's files as a cold
apply would, and each diff patch's judgement written for :mod:`patchbay.apply.compiled` to
read back in the container."""

from __future__ import annotations

from pathlib import Path

import msgspec

from .. import __version__
from ..apply.compiled import (
    BLOBS,
    PLAN_FILE,
    PLAN_FORMAT,
    CompiledFile,
    CompiledPatch,
    PlanDocument,
)
from ..apply.plan import make_plan
from ..apply.results import PatchStatus
from ..diff.hunks import HunkState
from ..digests import sha256_hex
from ..environment.targets import Environment
from ..kinds.base import Inspection, LoadedPatch
from ..kinds.diff import hunk_files
from ..options import RunOptions
from ..patchset.model import Patchset


def compile_plan(
    patchset: Patchset,
    env: Environment,
    out: Path,
    loaded: list[LoadedPatch] | None = None,
    options: RunOptions | None = None,
) -> tuple[int, int]:
    """Judge ``patchset`` on ``env``'s files as a cold apply would (the ledger left out) and
    write the compiled plan of its diff patches into bundle folder ``out`` (see
    :mod:`patchbay.apply.compiled`); nothing of ``env`` is written.

    Returns:
        (diff patches compiled, diff patches in the patchset): a patch that is not pending on
        these files (applied, a conflict), or that creates, deletes or renames a file or
        changes a mode or a binary, is left out and judged in full where it is applied.

    Raises:
        InputError, RefusedError: as :func:`~patchbay.apply.plan.make_plan`.
    """
    plan = make_plan(patchset, env, loaded, use_ledger=False, options=options)
    patches: dict[str, CompiledPatch] = {}
    blobs = out / BLOBS
    diffs = 0
    for report in plan.reports:
        if report.patch.kind != "diff":
            continue
        diffs += 1
        inspection = report.inspection
        # pending after the engine's recheck: its result reads as applied
        if report.status is not PatchStatus.PENDING or not _edits_in_place(inspection):
            continue
        files = []
        for change, write in zip(inspection.changes, inspection.data, strict=True):
            assert change.before is not None and change.after is not None
            after = sha256_hex(change.after)
            blobs.mkdir(parents=True, exist_ok=True)
            (blobs / after).write_bytes(change.after)
            before = sha256_hex(change.before)
            files.append(CompiledFile(change.path, before, after, write.mode))
        patches[report.id] = CompiledPatch(
            id=report.id,
            target=report.patch.target,
            sha256=report.loaded.sha256,
            identity=report.loaded.identity,
            strip=report.patch.strip,
            hunk_files=hunk_files(report.loaded.data),
            load_notes=list(report.loaded.notes),
            files=files,
            hunks=inspection.hunks,
            notes=[n for n in inspection.notes if n not in report.loaded.notes],
        )
    doc = PlanDocument(PLAN_FORMAT, __version__, patchset.name, patches)
    (out / PLAN_FILE).parent.mkdir(parents=True, exist_ok=True)
    (out / PLAN_FILE).write_bytes(msgspec.json.encode(doc, order="deterministic"))
    return len(patches), diffs


def _edits_in_place(inspection: Inspection) -> bool:
    """Whether every change of a pending inspection edits an existing file in place (no file
    made, deleted or renamed, no mode change), each with its write."""
    writes = inspection.data if isinstance(inspection.data, list) else None
    if not inspection.changes or writes is None or len(writes) != len(inspection.changes):
        return False
    if any(h.state is not HunkState.PENDING for h in inspection.hunks):
        return False
    return all(
        c.before is not None
        and c.after is not None
        and c.executable is None
        and getattr(w, "old", None) == c.path
        and getattr(w, "new", None) == c.path
        for c, w in zip(inspection.changes, writes, strict=True)
    )
