"""The pin model of the ``pip`` kind: what a pin installs (:class:`PipPin`), the commit a
``git+`` pin or a source build stands for (PEP 508 direct references, PEP 610
``direct_url.json``), and the versions a listing of an environment gives, compared by
PEP 503-normalised name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from packaging.requirements import Requirement

    from ..patchset.model import BuildSource


def vcs_commit(req: Requirement) -> str | None:
    """The pinned commit of a ``git+...@<sha>`` direct reference, else None."""
    if not req.url:
        return None
    return req.url.rsplit("@", 1)[-1].split("#", 1)[0]


@dataclass
class PipPin:
    """What a ``pip`` patch installs, as loaded.

    Attributes:
        requirement: the patch's ``requirement``, parsed (PEP 508).
        install: what pip is given: the requirement, or for a source build
            ``name @ git+<url>@<commit>``.
        commit: the commit the installed ``direct_url.json`` must record (a ``git+`` pin or a
            source build), else None.
        source: the source build's declaration, if any.
    """

    requirement: Requirement
    install: str
    commit: str | None
    source: BuildSource | None = None


def source_requirement(req: Requirement, url: str, commit: str) -> str:
    """``name[extras] @ git+<url>@<commit> ; marker``: a PEP 508 direct reference pip clones
    and builds at exactly ``commit`` (PEP 610 then records it as ``vcs_info.commit_id``)."""
    if url.startswith("file:///"):  # PEP 508 parsers (older pip) want a host in a file URL
        url = "file://localhost/" + url.removeprefix("file:///")
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    marker = f" ; {req.marker}" if req.marker is not None else ""
    return f"{req.name}{extras} @ git+{url}@{commit}{marker}"


def installed_commit(dist_info: Path | None) -> str | None:
    """``vcs_info.commit_id`` from an installed distribution's ``direct_url.json`` (PEP 610)."""
    if dist_info is None:
        return None
    try:
        data = json.loads((dist_info / "direct_url.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    vcs = data.get("vcs_info") if isinstance(data, dict) else None
    return vcs.get("commit_id") if isinstance(vcs, dict) else None


def version_changes(
    before: dict[str, str], after: dict[str, str]
) -> list[tuple[str, str | None, str | None]]:
    """Every distribution whose version differs between two listings, as (name, before,
    after); None for absent. Names are compared PEP 503-normalised."""
    from packaging.utils import canonicalize_name

    old = {canonicalize_name(k): (k, v) for k, v in before.items()}
    new = {canonicalize_name(k): (k, v) for k, v in after.items()}
    out = []
    for key in sorted({*old, *new}):
        name = (new.get(key) or old[key])[0]
        was, now = old.get(key, (None, None))[1], new.get(key, (None, None))[1]
        if was != now:
            out.append((name, was, now))
    return out


def listed_version(versions: dict[str, Any], name: str) -> str | None:
    """The version of ``name`` in a listing (distribution name -> version), else None;
    names are compared PEP 503-normalised."""
    from packaging.utils import canonicalize_name

    wanted = canonicalize_name(name)
    for key, value in versions.items():
        if canonicalize_name(key) == wanted:
            return value
    return None
