"""GitHub's rate limits: how long an answer says to wait, and the message when the run stops.

The rules of GitHub's "Rate limits for the REST API" (``retry-after``, ``x-ratelimit-*``,
secondary limits); :class:`~patchbay.upstream.github.GitHubAPI` adds the waits up against
its bound (``max_wait``).
"""

from __future__ import annotations

import contextlib
import email.utils
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import requests


def rate_limit_wait(resp: requests.Response, *, assume_limited: bool = False) -> float | None:
    """Seconds to wait before retrying a 403/429 answer, or None when it is no rate limit.

    The rules of GitHub's "Rate limits for the REST API" (``retry-after``, else
    ``x-ratelimit-remaining: 0`` with ``x-ratelimit-reset``, else a minute for a secondary
    limit). The reset time is measured against the answer's ``Date`` header, so the local clock's
    skew does not matter; one second is added for the header's whole-second resolution.
    """
    h = resp.headers
    retry_after = h.get("retry-after", "").strip()
    if retry_after.isdigit():
        return float(retry_after)
    reset = h.get("x-ratelimit-reset", "").strip()
    if h.get("x-ratelimit-remaining") == "0" and reset.isdigit():
        now = time.time()
        with contextlib.suppress(TypeError, ValueError):
            date = email.utils.parsedate_to_datetime(h.get("Date", ""))
            now = date.timestamp()
        return max(0.0, int(reset) - now) + 1.0
    text = ""
    with contextlib.suppress(Exception):
        text = resp.text[:500].lower()
    if assume_limited or resp.status_code == 429 or "rate limit" in text:
        return 60.0
    return None


def limit_message(
    wait: float, resp: requests.Response, shown: str, *, max_wait: float, authenticated: bool
) -> str:
    """Why the run stops at a rate limit: which limit, when it resets, and what to do.

    Args:
        wait: seconds the answer asks to wait (:func:`rate_limit_wait`).
        resp: the answer that asked for it.
        shown: the request as messages show it (``GET https://...``), already redacted.
        max_wait: seconds the run may wait in total (``--max-wait``).
        authenticated: the request carried a token (else the hint is to set one).

    The caller redacts the message (it may quote the request's URL).
    """
    h = resp.headers
    reset = h.get("x-ratelimit-reset", "")
    when = ""
    if reset.isdigit():
        at = datetime.fromtimestamp(int(reset), tz=timezone.utc)
        when = f"; it resets at {at:%Y-%m-%d %H:%M:%S} UTC"
    kind = "rate limit reached" if h.get("x-ratelimit-remaining") == "0" else "rate limited"
    limit = h.get("x-ratelimit-limit")
    per = f" ({limit} requests an hour)" if limit else ""
    hint = "run later" if authenticated else "set GITHUB_TOKEN for a higher limit, or run later"
    return (
        f"GitHub {kind}{per} at {shown} (HTTP {resp.status_code}){when}: waiting "
        f"{wait:.0f} s more would pass the {max_wait:g} s this run may wait "
        f"(--max-wait); {hint}"
    )
