"""One state folder per engine environment, also inside a ``--state-dir`` that several share.

The default state folder lies inside the environment (``<sys.prefix>/share/patchbay``, or
``<root>/.patchbay``), so it is that environment's alone. A folder given with ``--state-dir``
may be given to several environments (one CI cache folder for every venv of a job): its ledger
and pin records would then mix, and a ``revert`` in one environment would act on another's
records. So the first environment that writes such a folder claims it (``environment.json``,
naming its site folder), and any other environment keeps its records in a folder of its own
below it, ``environments/<sha256 of its identity, 16 hex>``, claimed the same way. The identity
is the real path of the site-packages folder: of the interpreter (two venvs of one base
interpreter differ there), or the ``--root`` tree that stands in for it.

This module imports only the standard library: the verified no-op of ``apply`` resolves the
state folder with it before anything else is imported (see apply/noop.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

CLAIM = "environment.json"
SUBFOLDER = "environments"


def identity(site: str | os.PathLike[str]) -> dict:
    """The environment's identity: ``{"site": real path}`` of the folder its packages are
    installed in (an interpreter's site-packages, or the ``--root`` tree that stands in for
    it), so that one venv reached with ``--python`` and its site-packages given as ``--root``
    are one environment, and two venvs of one base interpreter are two."""
    return {"site": os.path.realpath(site)}


def site_of(prefix: str | os.PathLike[str], sys_path: list[str]) -> str:
    """The site-packages (or dist-packages) folder of an interpreter: the first such folder
    on its ``sys.path`` below its ``sys.prefix``; the prefix itself when there is none."""
    real = os.path.realpath(prefix)
    for entry in sys_path:
        name = os.path.basename(entry.rstrip(os.sep))
        found = os.path.realpath(entry)
        if name in ("site-packages", "dist-packages") and found.startswith(real + os.sep):
            return found
    return real


def matches(ident: dict | None, *, prefix: str | None = None, root: str | None = None) -> bool:
    """Whether a recorded identity is the environment of ``prefix`` (an interpreter's
    ``sys.prefix``: its site folder lies below it) or of the ``--root`` tree ``root``."""
    if not isinstance(ident, dict) or not isinstance(ident.get("site"), str):
        return False
    site = ident["site"]
    if root is not None:
        return site == os.path.realpath(root)
    if prefix is not None:
        return site.startswith(os.path.realpath(prefix) + os.sep)
    return False


def _claimed(folder: str) -> dict | None:
    """The identity ``folder`` was claimed for, or None (no claim, or none readable)."""
    try:
        with open(os.path.join(folder, CLAIM), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _recorded_elsewhere(folder: str, ident: dict) -> bool:
    """Whether an unclaimed folder's ledger (one an older patchbay wrote) holds a patchset
    applied in another environment (its applied identity names another prefix or root)."""
    try:
        with open(os.path.join(folder, "ledger.json"), encoding="utf-8") as fh:
            ledger = json.load(fh)
        buckets = list(ledger["patchsets"].values())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    for bucket in buckets:
        recorded = bucket.get("applied_identity") if isinstance(bucket, dict) else None
        env = recorded.get("environment") if isinstance(recorded, dict) else None
        if not isinstance(env, dict):
            continue
        root, prefix = env.get("root"), env.get("prefix")
        if isinstance(root, str):
            if not matches(ident, root=root):
                return True
        elif isinstance(prefix, str) and not matches(ident, prefix=prefix):
            return True
    return False


def find_own(given: str, *, prefix: str | None = None, root: str | None = None) -> str | None:
    """The state folder :func:`state_folder_of` chose for the environment of ``prefix`` or
    ``root`` in ``given``, found from the claims alone (for the verified no-op, which knows
    no site folder); None when the claims do not tell."""
    claimed = _claimed(given)
    if claimed is None or matches(claimed, prefix=prefix, root=root):
        return given
    try:
        names = sorted(os.listdir(os.path.join(given, SUBFOLDER)))
    except OSError:
        return None
    for name in names:
        own = os.path.join(given, SUBFOLDER, name)
        if matches(_claimed(own), prefix=prefix, root=root):
            return own
    return None


def state_folder_of(given: str | os.PathLike[str], ident: dict, *, claim: bool = False) -> Path:
    """The state folder of the environment ``ident`` (:func:`identity`) in the folder given as
    ``--state-dir``: the folder itself when it is claimed for this environment, or claimed for
    none and holding no other environment's records; else its own folder below it.

    Args:
        given: the ``--state-dir`` folder, absolute and resolved.
        ident: the environment's identity.
        claim: the command writes the state folder (apply, revert, capture): an unclaimed
            folder is claimed for this environment, and a folder below made and claimed.

    A claim that cannot be written (a read-only folder) is left out.
    """
    base = os.fspath(given)
    claimed = _claimed(base)
    if claimed == ident:
        return Path(base)
    if claimed is None and not _recorded_elsewhere(base, ident):
        if claim:
            _write_claim(base, ident)
        return Path(base)
    key = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]
    own = os.path.join(base, SUBFOLDER, key)
    if claim and _claimed(own) != ident:
        _write_claim(own, ident)
    return Path(own)


def _write_claim(folder: str, ident: dict) -> None:
    """Claim ``folder`` for ``ident`` (made when missing); a folder that cannot be written is
    left unclaimed (the command that must write it refuses, naming it)."""
    tmp = os.path.join(folder, f".{CLAIM}.{os.getpid()}")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(ident, fh, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, os.path.join(folder, CLAIM))
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
