"""HTTP downloads with pinned hashes: retries, a content-addressed cache, mirrors, bundles.

Certificate checks are always on (requests' default; nothing here can turn them off). Plain
``http://`` URLs reach this module only when the patchset marked them ``insecure_http``.
Retries with exponential backoff cover 5xx answers, connection errors and read timeouts
(urllib3's ``Retry``); every request has a timeout.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from .. import progress
from ..errors import ApplyFailed, RefusedError

if TYPE_CHECKING:
    import requests

    from ..options import RunOptions


def session(options: RunOptions) -> requests.Session:
    """A requests session that retries 5xx, connection errors and timeouts with backoff."""
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    retry = Retry(
        total=options.retries,
        connect=options.retries,
        read=options.retries,
        status=options.retries,
        backoff_factor=0.2,
        status_forcelist=(500, 502, 503, 504),
        allowed_methods=frozenset({"GET", "HEAD"}),
        raise_on_status=False,
    )
    s = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    s.mount("https://", adapter)
    s.mount("http://", adapter)
    s.headers["User-Agent"] = "patchbay"
    return s


def cached(options: RunOptions, sha256: str) -> Path | None:
    """The cached (or bundled) file with this sha256, if there is one and it is intact."""
    candidates = [options.cache_dir / "sha256" / sha256]
    if options.bundle is not None:
        candidates.insert(0, options.bundle / "artifacts" / sha256)
    for path in candidates:
        if path.is_file() and _sha256_file(path) == sha256:
            return path
    return None


def fetch_pinned(
    url: str, sha256: str | None, options: RunOptions, *, size: int | None = None
) -> tuple[Path, str]:
    """Get the bytes at ``url`` into the cache, verified against ``sha256``.

    Args:
        url: where the file lives (mirror rewrites apply).
        sha256: the pinned hash; None only for ``vendor``, which records what it got.
        options: cache, bundle, offline mode, timeouts, mirrors.
        size: the expected size in bytes, if pinned.

    Returns:
        The cached file and its sha256.

    Raises:
        RefusedError: offline and not in the bundle or cache, or ``url`` names a
            ``${NAME}`` that is not set (:mod:`patchbay.envrefs`).
        ApplyFailed: the server failed after retries, or the bytes do not match the pin (the
            download is deleted: nothing is left behind).
    """
    if sha256 is not None:
        hit = cached(options, sha256)
        if hit is not None:
            return hit, sha256
    if options.offline:
        where = f"the bundle {options.bundle}" if options.bundle else "the cache"
        raise RefusedError(f"offline, and {url} (sha256 {sha256}) is not in {where}")
    from ..envrefs import expand

    real_url = options.rewrite(expand(url, url))  # a ${NAME} reference: the secret, here only
    store = options.cache_dir / "sha256"
    store.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=store, prefix=".download-")
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    received = 0
    import requests

    try:
        with os.fdopen(fd, "wb") as out, session(options) as s:
            try:
                resp = s.get(real_url, stream=True, timeout=options.http_timeout)
            except requests.RequestException as exc:
                raise ApplyFailed(f"download of {real_url} failed: {_short(exc)}") from None
            with resp:
                if resp.status_code != 200:
                    raise ApplyFailed(f"download of {real_url} failed: HTTP {resp.status_code}")
                length = resp.headers.get("Content-Length", "")
                total = size or (int(length) if length.isdigit() else None)
                try:
                    with progress.download(f"download {real_url}", total=total) as bar:
                        for chunk in resp.iter_content(1 << 16):
                            out.write(chunk)
                            digest.update(chunk)
                            received += len(chunk)
                            bar.advance(len(chunk))
                except requests.RequestException as exc:
                    raise ApplyFailed(f"download of {real_url} broke off: {_short(exc)}") from None
        got = digest.hexdigest()
        if sha256 is not None and got != sha256:
            raise ApplyFailed(
                f"download of {real_url}: sha256 {got} does not match the pinned {sha256}; "
                "the file was discarded"
            )
        if size is not None and received != size:
            raise ApplyFailed(
                f"download of {real_url}: {received} bytes, the patchset pins {size}; "
                "the file was discarded"
            )
        final = store / got
        os.replace(tmp, final)
        return final, got
    finally:
        tmp.unlink(missing_ok=True)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) < 200 else text[:200] + "..."
