"""A bundle's ``manifest.json``: the sha256 of every file ``patchbay bundle`` wrote, checked
before anything of the bundle is used. Kept apart from :mod:`patchbay.carry.bundle` (which
downloads with pip and carries patchbay) so that ``apply --bundle`` imports only this."""

from __future__ import annotations

import json
from pathlib import Path

from ..digests import sha256_hex
from ..errors import InputError

MANIFEST = "manifest.json"


def check_bundle(bundle: Path) -> None:
    """Verify every file of a bundle against its manifest.

    Raises:
        InputError: no manifest, or a file missing or changed.
    """
    manifest_path = bundle / MANIFEST
    try:
        files = json.loads(manifest_path.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(
            "not a patchbay bundle (manifest.json missing or unreadable)", file=manifest_path
        ) from None
    for rel, sha in files.items():
        path = bundle / rel
        if not path.is_file():
            raise InputError(f"bundle file {rel} is missing", file=bundle)
        if sha256_hex(path.read_bytes()) != sha:
            raise InputError(f"bundle file {rel} does not match the manifest", file=path)
