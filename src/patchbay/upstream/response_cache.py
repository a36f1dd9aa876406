"""The ETag disk cache of GitHub's GET answers (see :mod:`patchbay.upstream.github`): one JSON
file per request with the answer's ``ETag`` or ``Last-Modified``, so the next GET can ask
``If-None-Match`` and be answered ``304 Not Modified``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


class ResponseCache:
    """GET answers on disk, keyed by URL and query (never by credentials), with their validators.

    One JSON file per URL under ``<folder>/<2 hex>/<sha256>.json``, written atomically, so
    concurrent writers of one key leave one whole file.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        digest = hashlib.sha256(key.encode()).hexdigest()
        return self.folder / digest[:2] / f"{digest}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        """The stored entry (``etag``, ``last_modified``, ``data``), or None."""
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return entry if isinstance(entry, dict) and "data" in entry else None

    def store(self, key: str, etag: str | None, last_modified: str | None, data: Any) -> None:
        """Keep ``data`` with its validators; a failure to write only costs a later request."""
        path = self._path(key)
        entry = {"key": key, "etag": etag, "last_modified": last_modified, "data": data}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(tmp)
