"""The GitHub client's plumbing: HTTP requests with a disk cache, retries and rate limits.

:class:`GitHubAPI` sends REST and GraphQL requests to one GitHub (REST API version
``2022-11-28``); the typed look-ups built on it (pull requests, issues, commits, comparisons)
are :class:`~patchbay.upstream.queries.GitHubClient`. Publishing (``report --publish``) uses
its ``get`` and ``write``.

Rules taken from GitHub's REST documentation ("Best practices", "Rate limits for the REST API"):

- every GET answer with an ``ETag`` (or ``Last-Modified``) is kept on disk; the next GET of the
  same URL sends ``If-None-Match`` (``If-Modified-Since``) and a ``304 Not Modified`` is served
  from the cache (a 304 to an authorised request does not count against the rate limit);
- ``403``/``429`` with ``retry-after``: wait that many seconds; with ``x-ratelimit-remaining:
  0``: wait until ``x-ratelimit-reset`` (UTC epoch seconds, measured against the answer's
  ``Date``); a secondary limit without either: wait a minute. Waits add up against a bound
  (``max_wait``); past it the run stops with a :class:`RateLimitError` naming the reset time;
- ``5xx`` answers, connection errors and timeouts are retried with exponential backoff (GETs and
  PATCH; a POST that creates something is never retried, so it cannot create twice);
- every request has a timeout.

The token (``GITHUB_TOKEN`` or ``GH_TOKEN``) goes into the ``Authorization`` header only. It is
never part of a message, a cache key or a cache file; messages pass through :meth:`redact`
(:func:`patchbay.redaction.redact`, which also hides credentials in URLs).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode, urlsplit

from .. import __version__, progress
from ..errors import InputError, RefusedError
from ..redaction import redact
from .rate_limits import limit_message, rate_limit_wait
from .response_cache import ResponseCache

if TYPE_CHECKING:
    import requests

DEFAULT_API = "https://api.github.com"
API_VERSION = "2022-11-28"

T = TypeVar("T")
API = TypeVar("API", bound="GitHubAPI")


def github_token(environ: Mapping[str, str] | None = None) -> str | None:
    """The token from ``GITHUB_TOKEN`` or else ``GH_TOKEN`` (the GitHub CLI's variable).

    Args:
        environ: the environment to read (default ``os.environ``).
    """
    env = os.environ if environ is None else environ
    return env.get("GITHUB_TOKEN") or env.get("GH_TOKEN") or None


class GitHubError(RefusedError):
    """The forge gave no usable answer to one request (not found, forbidden, server error after
    retries, timeout). Callers mark the reference ``unknown``; escaping, it exits 1.

    Attributes:
        status: the HTTP status, or None for a timeout or connection error.
        url: the request's URL (no credentials are ever part of it).
    """

    def __init__(self, reason: str, *, status: int | None = None, url: str | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.url = url


def malformed(exc: Exception) -> GitHubError:
    """The error for an answer that parses but is not shaped as GitHub's API documents."""
    return GitHubError(f"the answer is not what GitHub sends ({type(exc).__name__}: {exc})")


class RateLimitError(GitHubError):
    """The rate limit was reached and waiting for it would pass the run's bound: the run stops."""


@dataclass
class RequestStats:
    """What a client sent, for reports and benchmarks (thread-safe counters).

    Attributes:
        requests: HTTP requests sent, retries included.
        not_modified: answers ``304 Not Modified`` served from the cache.
        graphql: GraphQL requests (included in ``requests``).
        statuses: count per HTTP status (``timeout`` and ``error`` for requests with no answer).
        waited: seconds slept for rate limits and backoff.
    """

    requests: int = 0
    not_modified: int = 0
    graphql: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    waited: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, status: str, *, graphql: bool = False) -> None:
        with self._lock:
            self.requests += 1
            self.statuses[status] += 1
            if status == "304":
                self.not_modified += 1
            if graphql:
                self.graphql += 1

    def slept(self, seconds: float) -> None:
        with self._lock:
            self.waited += seconds

    @property
    def answered_fresh(self) -> int:
        """Requests that were not answered by a 304 (what costs rate limit)."""
        return self.requests - self.not_modified

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "not_modified": self.not_modified,
            "graphql": self.graphql,
            "statuses": dict(sorted(self.statuses.items())),
        }


@dataclass
class Answer:
    """A JSON answer; ``cached`` when it was a 304 served from the disk cache."""

    data: Any
    cached: bool = False


# -- the client ---------------------------------------------------------------------------------


class GitHubAPI:
    """REST and GraphQL requests to one GitHub (github.com or a GitHub Enterprise server).

    Args:
        api_url: REST API base, e.g. ``https://api.github.com`` or
            ``https://ghe.example.com/api/v3`` (a test server's URL works too).
        token: a token for the ``Authorization`` header, or None (unauthenticated: 60 requests
            an hour on github.com, and no GraphQL). See :meth:`from_env`.
        cache_dir: folder for the ETag cache (None: no cache).
        timeout: seconds to wait for each answer (read timeout; also the connect timeout).
        retries: further attempts after a 5xx answer, a timeout or a connection error.
        backoff: seconds before the first retry; doubled for each further one.
        max_wait: seconds this client may sleep for rate limits in total before it stops.
        workers: concurrent REST requests.
        use_graphql: batch numbered look-ups with GraphQL (default: when there is a token).
        graphql_url: the GraphQL endpoint (default: derived from ``api_url``).
        sleep: how to wait (``time.sleep``); for the waits of rate limits and backoff.

    Raises:
        InputError: ``api_url`` is not an http(s) URL.
    """

    def __init__(
        self,
        api_url: str = DEFAULT_API,
        *,
        token: str | None = None,
        cache_dir: Path | None = None,
        timeout: float = 20.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_wait: float = 60.0,
        workers: int = 8,
        use_graphql: bool | None = None,
        graphql_url: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(api_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(redact(f"GitHub API URL {api_url!r} is not an http(s) URL"))
        self.api = api_url.rstrip("/")
        host = parts.hostname
        loopback = host in ("localhost", "::1") or host.startswith("127.")
        # a token never travels in clear text (a loopback stand-in is the one exception)
        self._token = token if token and (parts.scheme == "https" or loopback) else None
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = backoff
        self.max_wait = max_wait
        self.workers = max(1, workers)
        self.use_graphql = bool(self._token) if use_graphql is None else use_graphql
        self.graphql_url = graphql_url or _graphql_url(self.api)
        self.stats = RequestStats()
        self._sleep = sleep
        self._local = threading.local()
        self._lock = threading.Lock()
        self._rate_waited = 0.0
        self._stopped: str | None = None
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def from_env(
        cls: type[API],
        api_url: str | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> API:
        """A client with the token of :func:`github_token` and the API base of ``api_url``
        (default ``$PATCHBAY_GITHUB_API``, else ``https://api.github.com``)."""
        env = os.environ if environ is None else environ
        api = api_url or env.get("PATCHBAY_GITHUB_API") or DEFAULT_API
        return cls(api, token=github_token(env), **kwargs)

    def __repr__(self) -> str:  # never shows the token
        return redact(
            f"{type(self).__name__}({self.api!r}, token={'set' if self._token else 'none'})"
        )

    @property
    def authenticated(self) -> bool:
        """True when requests carry a token."""
        return self._token is not None

    def redact(self, text: str) -> str:
        """``text`` through :func:`patchbay.redaction.redact`, this client's token included."""
        return redact(text, extra=[self._token])

    # -- transport ------------------------------------------------------------------------------

    def _session(self) -> requests.Session:
        # one session per thread: requests does not promise a shared Session is thread-safe
        s = getattr(self._local, "session", None)
        if s is None:
            import requests
            from requests.adapters import HTTPAdapter

            s = requests.Session()
            adapter = HTTPAdapter(pool_connections=4, pool_maxsize=4, max_retries=0)
            s.mount("https://", adapter)
            s.mount("http://", adapter)
            s.headers["User-Agent"] = f"patchbay/{__version__}"
            s.headers["Accept"] = "application/vnd.github+json"
            s.headers["X-GitHub-Api-Version"] = API_VERSION
            if self._token:
                s.headers["Authorization"] = f"Bearer {self._token}"
            s.trust_env = True
            self._local.session = s
        return s

    def close(self) -> None:
        """Stop the worker threads and close this thread's session."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        s = getattr(self._local, "session", None)
        if s is not None:
            s.close()
            self._local.session = None

    def __enter__(self: API) -> API:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _url(self, path: str) -> str:
        return path if path.startswith(("http://", "https://")) else f"{self.api}{path}"

    def _send(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        retry: bool = True,
        graphql: bool = False,
    ) -> requests.Response:
        """One request with the rules of the module docstring; returns the final answer (any
        status but a rate limit); raises :class:`GitHubError` when no answer came."""
        import requests

        shown = self._shown(method, url, params)
        attempt = 0
        while True:
            self._check_stopped()
            try:
                resp = self._session().request(
                    method,
                    url,
                    params=params,
                    json=body,
                    headers=dict(headers or {}),
                    timeout=(self.timeout, self.timeout),
                )
            except requests.Timeout:
                self.stats.count("timeout", graphql=graphql)
                if retry and attempt < self.retries:
                    attempt += 1
                    self._backoff(attempt, shown, f"no answer within {self.timeout:g} s")
                    continue
                raise GitHubError(
                    f"{shown}: no answer within {self.timeout:g} s ({attempt + 1} attempts)",
                    url=url,
                ) from None
            except requests.RequestException as exc:
                self.stats.count("error", graphql=graphql)
                if retry and attempt < self.retries:
                    attempt += 1
                    self._backoff(attempt, shown, "connection failed")
                    continue
                raise GitHubError(
                    f"{shown}: {self.redact(_connection_problem(exc))} ({attempt + 1} attempts)",
                    url=url,
                ) from None
            self.stats.count(str(resp.status_code), graphql=graphql)
            if resp.status_code in (403, 429):
                wait = rate_limit_wait(resp)
                if wait is not None:
                    self._wait_for_limit(wait, resp, shown)
                    continue
            if resp.status_code >= 500 and retry and attempt < self.retries:
                attempt += 1
                self._backoff(attempt, shown, f"HTTP {resp.status_code}")
                continue
            return resp

    def _shown(self, method: str, url: str, params: Mapping[str, Any] | None) -> str:
        query = f"?{urlencode(dict(params))}" if params else ""
        return self.redact(f"{method} {url}{query}")

    def _backoff(self, attempt: int, shown: str = "", why: str = "") -> None:
        delay = self.backoff * (2 ** (attempt - 1))
        progress.note(f"{shown}: {why}; retry {attempt} of {self.retries} in {delay:g} s")
        self.stats.slept(delay)
        self._sleep(delay)

    def _check_stopped(self) -> None:
        if self._stopped is not None:
            raise RateLimitError(self._stopped)

    def _wait_for_limit(self, wait: float, resp: requests.Response, shown: str) -> None:
        with self._lock:
            if self._stopped is None and self._rate_waited + wait > self.max_wait:
                self._stopped = self.redact(
                    limit_message(
                        wait, resp, shown, max_wait=self.max_wait, authenticated=self.authenticated
                    )
                )
            if self._stopped is not None:
                raise RateLimitError(self._stopped, status=resp.status_code, url=resp.url)
            self._rate_waited += wait
        progress.note(f"{shown}: rate limit (HTTP {resp.status_code}); waiting {wait:.0f} s")
        self.stats.slept(wait)
        self._sleep(wait)

    def _error(self, resp: requests.Response, shown: str) -> GitHubError:
        message = ""
        with contextlib.suppress(ValueError, AttributeError):
            message = str(resp.json().get("message") or "")
        code = resp.status_code
        what = {
            401: "bad credentials (check GITHUB_TOKEN)",
            403: "forbidden",
            404: "not found: no such repository or object, or the token cannot see it",
            422: "not processable",
        }.get(code, "server error" if code >= 500 else "unexpected answer")
        tail = f" ({message[:160]})" if message and code != 404 else ""
        tries = f" after {self.retries + 1} attempts" if code >= 500 and self.retries else ""
        return GitHubError(
            self.redact(f"{shown}: HTTP {code}, {what}{tail}{tries}"), status=code, url=resp.url
        )

    # -- requests -------------------------------------------------------------------------------

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Answer:
        """GET a JSON resource through the ETag cache.

        Args:
            path: ``/repos/...`` below the API base (or a full URL on it).
            params: query parameters.

        Raises:
            GitHubError: any answer but 200 or 304 (after retries), a timeout, bad JSON.
            RateLimitError: the rate limit outlasts the wait bound.
        """
        url = self._url(path)
        key = self._key(url, params)
        entry = self.cache.load(key) if self.cache else None
        headers = {}
        if entry is not None:
            if entry.get("etag"):
                headers["If-None-Match"] = entry["etag"]
            elif entry.get("last_modified"):
                headers["If-Modified-Since"] = entry["last_modified"]
        resp = self._send("GET", url, params=params, headers=headers)
        shown = self._shown("GET", url, params)
        if resp.status_code == 304 and entry is not None:
            return Answer(entry["data"], cached=True)
        if resp.status_code != 200:
            raise self._error(resp, shown)
        try:
            data = resp.json()
        except ValueError:
            raise GitHubError(f"{shown}: the answer is not JSON", url=url) from None
        etag, modified = resp.headers.get("ETag"), resp.headers.get("Last-Modified")
        if self.cache is not None and (etag or modified):
            self.cache.store(key, etag, modified, data)
        return Answer(data)

    def get_diff(self, path: str) -> str:
        """GET ``path`` as a diff (media type ``application/vnd.github.diff``), uncached: the
        caller pins what it gets by hash.

        Raises:
            GitHubError: any answer but 200 (after retries), a timeout.
        """
        url = self._url(path)
        resp = self._send("GET", url, headers={"Accept": "application/vnd.github.diff"})
        if resp.status_code != 200:
            raise self._error(resp, self._shown("GET", url, None))
        return resp.text

    def _key(self, url: str, params: Mapping[str, Any] | None) -> str:
        return f"GET {url}?{urlencode(sorted((params or {}).items()))} auth={self.authenticated}"

    def get_many(
        self, requests_: Sequence[tuple[str, Mapping[str, Any] | None]]
    ) -> list[Answer | GitHubError]:
        """GET many resources concurrently (``workers`` at a time), in order.

        Returns:
            One :class:`Answer` or :class:`GitHubError` per request.

        Raises:
            RateLimitError: the run stopped for a rate limit (raised once all requests ended).
        """
        return self.map(lambda item: self.get(item[0], item[1]), requests_)

    def map(self, fn: Callable[[Any], T], items: Sequence[Any]) -> list[T | GitHubError]:
        """``fn`` over ``items`` on the worker threads; a :class:`GitHubError` becomes the
        item's result, a :class:`RateLimitError` is raised after all items ended."""

        def one(item: Any) -> T | GitHubError:
            try:
                return fn(item)
            except RateLimitError:
                raise
            except GitHubError as exc:
                return exc
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                # valid JSON of the wrong shape: the reference is unknown, never a crash
                return malformed(exc)

        if len(items) < 2:  # one request is no step worth a progress line
            return self._map(one, items)
        with progress.count(f"{len(items)} forge request(s)", total=len(items)) as bar:

            def counted(item: Any) -> T | GitHubError:
                try:
                    return one(item)
                finally:
                    bar.advance()

            return self._map(counted, items)

    def _map(self, one: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        if len(items) <= 1 or self.workers == 1:
            results = []
            for item in items:
                results.append(one(item))
            return results
        # one pool for the client's life: its threads keep their sessions (and connections)
        # from one round of requests to the next; ``fn`` must not call ``map`` again
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="patchbay-gh")
            pool = self._pool
        futures = [pool.submit(one, item) for item in items]
        wait(futures)
        out: list[Any] = []
        stop: RateLimitError | None = None
        for future in futures:
            exc = future.exception()
            if isinstance(exc, RateLimitError):
                stop = stop or exc
                continue
            if exc is not None:
                raise exc
            out.append(future.result())
        if stop is not None:
            raise stop
        return out

    def write(self, method: str, path: str, body: Mapping[str, Any]) -> Any:
        """``POST`` or ``PATCH`` JSON (publishing an issue); never cached. A POST is sent once.

        Raises:
            GitHubError: any answer but 200 or 201.
        """
        url = self._url(path)
        resp = self._send(method, url, body=dict(body), retry=method != "POST")
        if resp.status_code not in (200, 201):
            raise self._error(resp, self._shown(method, url, None))
        try:
            return resp.json()
        except ValueError:
            return None

    def graphql(self, query: str, variables: Mapping[str, Any]) -> tuple[dict[str, Any], list]:
        """One GraphQL query (needs a token).

        Returns:
            (``data``, ``errors``): GitHub answers 200 with partial ``data`` and an ``errors``
            list (e.g. ``NOT_FOUND`` with the ``path`` of the null field).

        Raises:
            GitHubError: no token, an HTTP error, or no ``data`` at all.
            RateLimitError: ``RATE_LIMITED`` and the reset is beyond the wait bound.
        """
        if not self._token:
            raise GitHubError("the GraphQL API needs a token (GITHUB_TOKEN or GH_TOKEN)")
        shown = self._shown("POST", self.graphql_url, None)
        while True:
            resp = self._send(
                "POST",
                self.graphql_url,
                body={"query": query, "variables": dict(variables)},
                graphql=True,
            )
            if resp.status_code != 200:
                raise self._error(resp, shown)
            try:
                doc = resp.json()
            except ValueError:
                raise GitHubError(f"{shown}: the answer is not JSON") from None
            errors = list(doc.get("errors") or [])
            if any(e.get("type") == "RATE_LIMITED" for e in errors):
                # GraphQL reports its own limit in a 200 answer; the headers say when it resets
                wait = rate_limit_wait(resp, assume_limited=True)
                self._wait_for_limit(60.0 if wait is None else wait, resp, shown)
                continue
            data = doc.get("data")
            if not isinstance(data, dict):
                first = errors[0].get("message") if errors else "no data"
                raise GitHubError(self.redact(f"{shown}: {first}"))
            return data, errors


def _graphql_url(api: str) -> str:
    """GitHub's GraphQL endpoint for a REST base: ``https://api.github.com/graphql``, and for
    GitHub Enterprise Server ``https://HOST/api/graphql`` beside ``https://HOST/api/v3``."""
    if api.endswith("/api/v3"):
        return api[: -len("/v3")] + "/graphql"
    return f"{api}/graphql"


def _connection_problem(exc: Exception) -> str:
    """The root cause of a requests error in a few words (``[Errno 111] Connection refused``),
    not urllib3's nested retry wrappers."""
    text = str(exc)
    m = re.search(r"\[Errno -?\d+\] [^'\")\]]+", text)
    if m:
        return "connection failed: " + m.group(0).strip()
    if "NameResolutionError" in text or "Name or service not known" in text:
        return "connection failed: the host name does not resolve"
    return _short(exc)


def _short(exc: Exception) -> str:
    text = re.sub(r"\s+", " ", str(exc))
    return text if len(text) < 200 else text[:200] + "..."


def unique(items: Iterable[T]) -> list[T]:
    """``items`` without repeats, in first-seen order."""
    return list(dict.fromkeys(items))
