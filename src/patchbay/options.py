"""Run options that reach the patch kinds: network, cache, bundle, mirrors."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/patchbay`` (default ``~/.cache/patchbay``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "patchbay"


class RunOptions(msgspec.Struct):
    """How a run may reach the outside world.

    Attributes:
        offline: use only ``bundle`` (and the cache); any fetch is an error.
        bundle: a folder made by ``patchbay bundle`` (wheels, artifacts, manifest).
        cache_dir: content-addressed download cache (artifacts by sha256).
        mirrors: ``(prefix, replacement)`` URL rewrites, tried in order (like git's insteadOf).
        http_timeout: seconds per HTTP request.
        retries: retries on 5xx answers, connection errors and timeouts (with backoff).
    """

    offline: bool = False
    bundle: Path | None = None
    cache_dir: Path = msgspec.field(default_factory=default_cache_dir)
    mirrors: list[tuple[str, str]] = msgspec.field(default_factory=list)
    http_timeout: float = 30.0
    retries: int = 4

    def rewrite(self, url: str) -> str:
        """Apply the first matching mirror rewrite to ``url``."""
        for prefix, replacement in self.mirrors:
            if url.startswith(prefix):
                return replacement + url[len(prefix) :]
        return url
