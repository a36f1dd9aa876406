"""Provenance records: what an engine environment ran, for benchmark result folders.

The record names the image, the engine interpreter and distribution versions, and every patch
with its sha256 and outcome, so a result can carry "image as shipped + exactly these patches".
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from .. import __version__
from ..apply.results import Plan
from ..errors import ApplyFailed, InputError
from ..outputfiles import check_output_file, write_output_file
from ..printable import dumps

PROVENANCE_FORMAT = 1


def provenance(
    plan: Plan, *, command: str, outcome: dict[str, str] | None = None
) -> dict[str, Any]:
    """Build the provenance document of ``plan``.

    Args:
        plan: the plan after the command ran (its statuses are the final ones).
        command: ``apply`` or ``status``.
        outcome: patch id -> what the command did to it (``applied``, ``reverted``), if anything.
    """
    outcome = outcome or {}
    return {
        "schema_version": PROVENANCE_FORMAT,
        "format": PROVENANCE_FORMAT,  # its old name, kept
        "tool": {"name": "patchbay", "version": __version__},
        "command": command,
        "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "patchset": plan.patchset.name,
        "image": msgspec.to_builtins(plan.patchset.spec.image),
        "environment": plan.env.describe(),
        "guard": {"ok": plan.guard.ok, "checks": plan.guard.checks},
        "patches": [
            {
                "id": r.id,
                "kind": r.patch.kind,
                "sha256": r.loaded.sha256,
                "status": r.status.value,
                "outcome": outcome.get(r.id, "unchanged"),
            }
            for r in plan.reports
        ],
    }


def check_record_path(path: Path, option: str = "--record") -> None:
    """Make sure a record (or report) can be written at ``path`` before the command changes
    anything; ``option`` names the option the user gave, for the message.

    Raises:
        InputError: the folder cannot be created or written, or ``path`` is a folder
            (:func:`patchbay.outputfiles.check_output_file`).
    """
    check_output_file(path, option)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path.parent, prefix=".patchbay-record-")  # noqa: SIM115
        probe.close()
    except OSError as exc:
        raise InputError(f"{option} cannot be written: {exc.strerror or exc}", file=path) from None


def write_record(path: Path, document: dict[str, Any]) -> None:
    """Write a provenance document as JSON (atomically; the folder is created).

    Raises:
        ApplyFailed: the file could not be written (the command's own work stands).
    """
    try:
        write_output_file(path, dumps(document, indent=2) + "\n")
    except OSError as exc:
        raise ApplyFailed(
            f"the command succeeded, but its record could not be written: {exc.strerror or exc}",
            file=path,
        ) from None
