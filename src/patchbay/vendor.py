"""``patchbay vendor``: pin a patchset's remote content, with network access, into the lock.

For every diff patch with an upstream ``source``: a PR (``owner/repo#N``) resolves to its head
commit, and its diff is taken as GitHub's compare of the PR's base and head commits; a commit
resolves to its own diff. Only the file patches under the source's ``paths`` are kept. The
content goes to ``vendor/<id>.patch`` in the patchset folder and its sha256 and the commits go
into ``patchbay.lock`` (like nixpkgs' ``fetchpatch``: the pin is a content hash, never a moving
URL). Artifact files declared without a hash are downloaded once and their sha256 and size are
locked too. ``apply`` only reads what vendor wrote.

The GitHub API base is configurable (GitHub Enterprise, tests); a token is read from
``GITHUB_TOKEN`` or ``GH_TOKEN`` and never printed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputError, RefusedError
from .fetch import fetch_pinned, session
from .ledger import sha256_bytes
from .lockfile import Lock, LockedArtifact, LockedSource
from .model import ArtifactPatch, DiffPatch, Patchset, RemoteSource
from .options import RunOptions
from .transaction import write_atomic

DEFAULT_API = "https://api.github.com"
_DIFF = "application/vnd.github.diff"


@dataclass
class VendorResult:
    """What vendor pinned: patch ids of sources, URLs of artifacts."""

    sources: list[str] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)


def github_token() -> str | None:
    """The token from ``GITHUB_TOKEN`` or ``GH_TOKEN``, if any."""
    return os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN") or None


class _GitHub:
    def __init__(self, api_url: str, options: RunOptions) -> None:
        self.api = api_url.rstrip("/")
        self.options = options
        self.token = github_token()
        self.http = session(options)
        if self.token:
            self.http.headers["Authorization"] = f"Bearer {self.token}"
        self.http.headers["X-GitHub-Api-Version"] = "2022-11-28"

    def get(self, path: str, *, accept: str = "application/vnd.github+json") -> Any:
        import requests

        url = f"{self.api}{path}"
        try:
            resp = self.http.get(url, headers={"Accept": accept}, timeout=self.options.http_timeout)
        except requests.RequestException as exc:
            raise RefusedError(f"GET {url} failed: {self._redact(str(exc))}") from None
        if resp.status_code != 200:
            raise RefusedError(
                f"GET {url} answered HTTP {resp.status_code}: {self._redact(resp.text[:200])}"
            )
        return resp.json() if accept.endswith("json") else resp.text

    def _redact(self, text: str) -> str:
        return text.replace(self.token, "***") if self.token else text


def filter_paths(diff: str, paths: list[str]) -> str:
    """Keep the ``diff --git`` file sections whose old or new path (without ``a/``/``b/``) is
    one of ``paths`` or lies under one of them."""
    if not paths:
        return diff
    sections = re.split(r"(?m)^(?=diff --git )", diff)
    kept = []
    for section in sections:
        m = re.match(r"diff --git a/(\S+) b/(\S+)", section)
        if m is None:
            continue
        if any(_under(p, prefix) for p in m.groups() for prefix in paths):
            kept.append(section)
    return "".join(kept)


def _under(path: str, prefix: str) -> bool:
    prefix = prefix.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


def vendor_patchset(
    patchset: Patchset, *, api_url: str = DEFAULT_API, options: RunOptions | None = None
) -> VendorResult:
    """Download and lock every remote source and unhashed artifact of ``patchset``.

    Raises:
        RefusedError: the forge or a download host failed (nothing is written then).
        InputError: a path filter keeps nothing of the upstream diff.
    """
    options = options or RunOptions()
    lock = Lock.load(patchset.folder)
    result = VendorResult()
    gh = _GitHub(api_url, options)
    pending_files: list[tuple[Path, bytes]] = []
    for patch in patchset.patches:
        if isinstance(patch, DiffPatch) and patch.source is not None:
            locked, content = _fetch_source(gh, patch, patch.source)
            pending_files.append((patchset.folder / locked.file, content))
            lock.sources[patch.id] = locked
            result.sources.append(patch.id)
        elif isinstance(patch, ArtifactPatch):
            for f in patch.files:
                if f.sha256 is None:
                    _, sha = fetch_pinned(f.url, None, options, size=f.size)
                    size = (options.cache_dir / "sha256" / sha).stat().st_size
                    lock.artifacts[f.url] = LockedArtifact(sha256=sha, size=size)
                    result.artifacts.append(f.url)
    for path, content in pending_files:  # write only once everything was fetched
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, content, mode=0o644)
    lock.save(patchset.folder)
    return result


def _fetch_source(gh: _GitHub, patch: DiffPatch, src: RemoteSource) -> tuple[LockedSource, bytes]:
    if src.pr is not None:
        pr = gh.get(f"/repos/{src.repo}/pulls/{src.pr}")
        head, base = pr["head"]["sha"], pr["base"]["sha"]
        path = f"/repos/{src.repo}/compare/{base}...{head}"
        diff = gh.get(path, accept=_DIFF)
    else:
        head, base = src.commit, None
        path = f"/repos/{src.repo}/commits/{head}"
        diff = gh.get(path, accept=_DIFF)
    kept = filter_paths(diff, src.paths)
    if not kept.strip():
        raise InputError(
            f"the upstream diff of {src.ref} has no file under {', '.join(src.paths)}",
            patch_id=patch.id,
        )
    content = kept.encode()
    locked = LockedSource(
        repo=src.repo,
        ref=src.ref,
        commit=str(head),
        base=base,
        url=f"{gh.api}{path}",
        file=patch.content_path,
        sha256=sha256_bytes(content),
        paths=list(src.paths),
    )
    return locked, content
