"""A GitHub client for upstream tracking: REST look-ups with a disk cache, GraphQL batches.

What it asks (GitHub REST API, version ``2022-11-28``, and the GraphQL API):

- ``GET /repos/{owner}/{repo}/pulls/{n}``, ``/issues/{n}``, ``/issues/{n}/events``,
  ``/commits/{sha}``, ``/compare/{base}...{head}`` (paged with ``per_page``/``page``; commits
  come "in chronological order", as ``git log base..head`` would list them) and
  ``GET /repos/{owner}/{repo}`` (the default branch);
- with a token, one GraphQL query per 100 numbered references (``issueOrPullRequest`` under
  aliased ``repository`` fields), instead of one REST request each;
- for ``report --publish``: ``GET /repos/{o}/{r}/issues`` (open issues), ``POST`` and
  ``PATCH`` of one issue.

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
import email.utils
import hashlib
import json
import os
import re
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, urlencode, urlsplit

from .. import __version__, progress
from ..errors import InputError, RefusedError
from ..redaction import redact

if TYPE_CHECKING:
    import requests

DEFAULT_API = "https://api.github.com"
API_VERSION = "2022-11-28"
COMPARE_PAGE = 100  # per_page of compare requests (GitHub's maximum for paged lists)
GRAPHQL_BATCH = 100  # numbered references per GraphQL query

T = TypeVar("T")


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


# -- answers ------------------------------------------------------------------------------------


def parse_time(value: str | None) -> datetime | None:
    """An ISO 8601 time as GitHub writes it (``2026-08-12T09:44:00Z``), or None."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True)
class PullRequest:
    """A pull request as both APIs describe it.

    Attributes:
        state: ``open`` or ``closed`` (a merged PR is ``closed`` with ``merged``).
        merge_commit: for a merged PR, the commit its base branch got: the merge commit, the
            squash commit, or the last rebased commit (GitHub's ``merge_commit_sha``).
        base_ref: the branch it was merged (or is to be merged) into.
    """

    repository: str
    number: int
    title: str
    url: str | None
    state: str
    draft: bool
    merged: bool
    merged_at: datetime | None
    merge_commit: str | None
    base_ref: str | None
    closed_at: datetime | None = None

    @classmethod
    def from_rest(cls, repository: str, data: Mapping[str, Any]) -> PullRequest:
        """From ``GET /repos/{o}/{r}/pulls/{n}``."""
        base = data.get("base") or {}
        merged = bool(data.get("merged")) or data.get("merged_at") is not None
        return cls(
            repository=repository,
            number=int(data["number"]),
            title=str(data.get("title") or ""),
            url=data.get("html_url"),
            state=str(data.get("state") or "open"),
            draft=bool(data.get("draft")),
            merged=merged,
            merged_at=parse_time(data.get("merged_at")),
            merge_commit=data.get("merge_commit_sha") if merged else None,
            base_ref=base.get("ref"),
            closed_at=parse_time(data.get("closed_at")),
        )

    @classmethod
    def from_graphql(cls, repository: str, node: Mapping[str, Any]) -> PullRequest:
        """From a GraphQL ``PullRequest`` (state ``OPEN``, ``CLOSED`` or ``MERGED``)."""
        merged = bool(node.get("merged")) or node.get("state") == "MERGED"
        commit = node.get("mergeCommit") or {}
        return cls(
            repository=repository,
            number=int(node["number"]),
            title=str(node.get("title") or ""),
            url=node.get("url"),
            state="open" if node.get("state") == "OPEN" else "closed",
            draft=bool(node.get("isDraft")),
            merged=merged,
            merged_at=parse_time(node.get("mergedAt")),
            merge_commit=commit.get("oid") if merged else None,
            base_ref=node.get("baseRefName"),
            closed_at=parse_time(node.get("closedAt")),
        )


@dataclass(frozen=True)
class Issue:
    """An issue, and what closed it when the forge says.

    Attributes:
        state: ``open`` or ``closed``.
        state_reason: ``completed``, ``not_planned``, ``reopened`` or None.
        closed_by_pull: the pull request that closed it (GraphQL ``ClosedEvent.closer``).
        closed_by_commit: the commit that closed it (REST ``closed`` event's ``commit_id``, or
            the closing PR's merge commit).
    """

    repository: str
    number: int
    title: str
    url: str | None
    state: str
    state_reason: str | None
    closed_at: datetime | None
    closed_by_pull: PullRequest | None = None
    closed_by_commit: str | None = None


@dataclass(frozen=True)
class CommitInfo:
    """A commit: id, full message, committer date, parents."""

    sha: str
    message: str
    date: datetime | None
    parents: tuple[str, ...] = ()

    @property
    def subject(self) -> str:
        """The message's first line."""
        return self.message.split("\n", 1)[0].strip()

    @classmethod
    def from_rest(cls, data: Mapping[str, Any]) -> CommitInfo:
        """From a REST commit object (``/commits/{sha}``, or an item of ``compare``)."""
        inner = data.get("commit") or {}
        who = inner.get("committer") or inner.get("author") or {}
        return cls(
            sha=str(data["sha"]),
            message=str(inner.get("message") or ""),
            date=parse_time(who.get("date")),
            parents=tuple(str(p["sha"]) for p in data.get("parents") or [] if "sha" in p),
        )


@dataclass
class Comparison:
    """``GET /repos/{o}/{r}/compare/{base}...{head}``: how ``head`` relates to ``base``.

    Attributes:
        status: ``ahead`` (base is an ancestor of head), ``behind`` (head is an ancestor of
            base), ``identical`` or ``diverged``.
        commits: the commits reachable from head and not from base (``git log base..head``),
            oldest first, as far as they were fetched.
        complete: every page of ``commits`` was fetched (False past the page bound).
    """

    repository: str
    base: str
    head: str
    status: str
    ahead_by: int
    behind_by: int
    total_commits: int
    commits: list[CommitInfo] = field(default_factory=list)
    complete: bool = True

    @property
    def base_is_ancestor(self) -> bool:
        """True when ``base`` is in the history of ``head`` (or is ``head``)."""
        return self.status in ("ahead", "identical")


@dataclass
class Answer:
    """A JSON answer; ``cached`` when it was a 304 served from the disk cache."""

    data: Any
    cached: bool = False


# -- the disk cache -----------------------------------------------------------------------------


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


# -- the client ---------------------------------------------------------------------------------


class GitHubClient:
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
        cls, api_url: str | None = None, *, environ: Mapping[str, str] | None = None, **kwargs: Any
    ) -> GitHubClient:
        """A client with the token of :func:`github_token` and the API base of ``api_url``
        (default ``$PATCHBAY_GITHUB_API``, else ``https://api.github.com``)."""
        env = os.environ if environ is None else environ
        api = api_url or env.get("PATCHBAY_GITHUB_API") or DEFAULT_API
        return cls(api, token=github_token(env), **kwargs)

    def __repr__(self) -> str:  # never shows the token
        return redact(f"GitHubClient({self.api!r}, token={'set' if self._token else 'none'})")

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

    def __enter__(self) -> GitHubClient:
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
                self._stopped = self._limit_message(wait, resp, shown)
            if self._stopped is not None:
                raise RateLimitError(self._stopped, status=resp.status_code, url=resp.url)
            self._rate_waited += wait
        progress.note(f"{shown}: rate limit (HTTP {resp.status_code}); waiting {wait:.0f} s")
        self.stats.slept(wait)
        self._sleep(wait)

    def _limit_message(self, wait: float, resp: requests.Response, shown: str) -> str:
        h = resp.headers
        reset = h.get("x-ratelimit-reset", "")
        when = ""
        if reset.isdigit():
            at = datetime.fromtimestamp(int(reset), tz=timezone.utc)
            when = f"; it resets at {at:%Y-%m-%d %H:%M:%S} UTC"
        kind = "rate limit reached" if h.get("x-ratelimit-remaining") == "0" else "rate limited"
        limit = h.get("x-ratelimit-limit")
        per = f" ({limit} requests an hour)" if limit else ""
        hint = "run later" if self._token else "set GITHUB_TOKEN for a higher limit, or run later"
        return self.redact(
            f"GitHub {kind}{per} at {shown} (HTTP {resp.status_code}){when}: waiting "
            f"{wait:.0f} s more would pass the {self.max_wait:g} s this run may wait "
            f"(--max-wait); {hint}"
        )

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

    # -- typed look-ups -------------------------------------------------------------------------

    def pull(self, repository: str, number: int) -> PullRequest:
        """``GET /repos/{repository}/pulls/{number}``."""
        return PullRequest.from_rest(
            repository, self.get(f"/repos/{repository}/pulls/{number}").data
        )

    def issue(self, repository: str, number: int) -> Issue | PullRequest:
        """``GET /repos/{repository}/issues/{number}``; a pull request (the answer has a
        ``pull_request`` key) is looked up as one. For a closed issue, the last ``closed`` event
        (``/issues/{n}/events``) names the closing commit when there is one."""
        data = self.get(f"/repos/{repository}/issues/{number}").data
        if data.get("pull_request"):
            return self.pull(repository, number)
        closing = None
        if data.get("state") == "closed":
            closing = self._closing_commit(repository, number)
        return Issue(
            repository=repository,
            number=int(data["number"]),
            title=str(data.get("title") or ""),
            url=data.get("html_url"),
            state=str(data.get("state") or "open"),
            state_reason=data.get("state_reason"),
            closed_at=parse_time(data.get("closed_at")),
            closed_by_commit=closing,
        )

    def _closing_commit(self, repository: str, number: int) -> str | None:
        commit = None
        for page in range(1, 11):
            events = self.get(
                f"/repos/{repository}/issues/{number}/events", {"per_page": 100, "page": page}
            ).data
            for event in events:
                if event.get("event") == "closed":
                    commit = event.get("commit_id")
                elif event.get("event") == "reopened":
                    commit = None
            if len(events) < 100:
                break
        return commit

    def numbered(self, repository: str, number: int, kind: str) -> Issue | PullRequest:
        """A numbered reference: ``pull`` and ``number`` try ``/pulls/{n}`` first (carried
        patches mostly cite pull requests) and fall back to ``/issues/{n}`` on 404."""
        if kind == "issue" or self._known_issue(repository, number):
            return self.issue(repository, number)
        try:
            return self.pull(repository, number)
        except GitHubError as exc:
            if exc.status != 404 or kind == "pull":
                raise
            return self.issue(repository, number)

    def _known_issue(self, repository: str, number: int) -> bool:
        # a number the cache knows as an issue: skip the /pulls/ request that would 404 again
        if self.cache is None:
            return False
        entry = self.cache.load(self._key(self._url(f"/repos/{repository}/issues/{number}"), None))
        data = entry.get("data") if entry else None
        return isinstance(data, dict) and not data.get("pull_request")

    def commit(self, repository: str, sha: str) -> CommitInfo:
        """``GET /repos/{repository}/commits/{sha}``."""
        return CommitInfo.from_rest(self.get(f"/repos/{repository}/commits/{sha}").data)

    def default_branch(self, repository: str) -> str:
        """``default_branch`` of ``GET /repos/{repository}``."""
        return str(self.get(f"/repos/{repository}").data["default_branch"])

    def compare_many(
        self, specs: Sequence[tuple[str, str, str]], *, max_pages: int = 30
    ) -> list[Comparison | GitHubError]:
        """Compare ``base...head`` in each ``(repository, base, head)``; the first pages
        concurrently, then every further page (up to ``max_pages`` each) concurrently.

        Returns:
            One :class:`Comparison` (``complete`` False past ``max_pages``) or error per spec.
        """

        def path(spec: tuple[str, str, str]) -> str:
            repo, base, head = spec
            return f"/repos/{repo}/compare/{quote(base, safe='/')}...{quote(head, safe='/')}"

        firsts = self.get_many([(path(s), {"per_page": COMPARE_PAGE, "page": 1}) for s in specs])
        out: list[Comparison | GitHubError] = []
        more: list[tuple[int, int]] = []
        for i, (spec, first) in enumerate(zip(specs, firsts, strict=True)):
            if isinstance(first, GitHubError):
                out.append(first)
                continue
            data = first.data
            total = int(data.get("total_commits") or 0)
            pages = max(1, -(-total // COMPARE_PAGE))
            out.append(
                Comparison(
                    repository=spec[0],
                    base=spec[1],
                    head=spec[2],
                    status=str(data.get("status")),
                    ahead_by=int(data.get("ahead_by") or 0),
                    behind_by=int(data.get("behind_by") or 0),
                    total_commits=total,
                    commits=[CommitInfo.from_rest(c) for c in data.get("commits") or []],
                    complete=pages <= max_pages,
                )
            )
            more.extend((i, page) for page in range(2, min(pages, max_pages) + 1))
        rest = self.get_many(
            [(path(specs[i]), {"per_page": COMPARE_PAGE, "page": page}) for i, page in more]
        )
        for (i, _page), answer in zip(more, rest, strict=True):
            cmp = out[i]
            if not isinstance(cmp, Comparison):
                continue
            if isinstance(answer, GitHubError):
                out[i] = answer
            else:
                cmp.commits.extend(CommitInfo.from_rest(c) for c in answer.data.get("commits", []))
        return out

    def numbered_graphql(
        self, items: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], Issue | PullRequest | GitHubError]:
        """Look up numbered references with GraphQL, :data:`GRAPHQL_BATCH` per query.

        Args:
            items: ``(owner/name, number)`` pairs.

        Returns:
            ``(owner/name, number)`` -> :class:`PullRequest`, :class:`Issue` (with the PR that
            closed it, from its last ``ClosedEvent``) or :class:`GitHubError` (e.g. not found).
        """
        out: dict[tuple[str, int], Issue | PullRequest | GitHubError] = {}
        unique = list(dict.fromkeys(items))
        for start in range(0, len(unique), GRAPHQL_BATCH):
            batch = unique[start : start + GRAPHQL_BATCH]
            query, variables, aliases = _graphql_query(batch)
            try:
                data, errors = self.graphql(query, variables)
            except RateLimitError:
                raise
            except GitHubError as exc:
                for item in batch:
                    out[item] = exc
                continue
            problems = {tuple(e.get("path") or ()): str(e.get("message", "")) for e in errors}
            for (repo_alias, item_alias), item in aliases.items():
                repo_node = data.get(repo_alias)
                node = repo_node.get(item_alias) if isinstance(repo_node, dict) else None
                if node is None:
                    why = problems.get((repo_alias, item_alias)) or problems.get((repo_alias,))
                    out[item] = GitHubError(
                        f"GraphQL: {item[0]}#{item[1]}: not found"
                        + (f" ({why[:160]})" if why else ""),
                        status=404,
                    )
                    continue
                out[item] = _from_graphql(item[0], node)
        return out


_PR_FIELDS = (
    "number title url state isDraft merged mergedAt closedAt mergeCommit { oid } baseRefName"
)
_ISSUE_FIELDS = (
    "number title url state stateReason closedAt "
    "timelineItems(itemTypes: [CLOSED_EVENT], last: 1) { nodes { ... on ClosedEvent { "
    "closer { __typename ... on PullRequest { " + _PR_FIELDS + " } ... on Commit { oid } } } } }"
)


def _graphql_query(
    batch: Sequence[tuple[str, int]],
) -> tuple[str, dict[str, str], dict[tuple[str, str], tuple[str, int]]]:
    """The query text (owner and name as variables, numbers as integer literals), its
    variables, and alias -> item."""
    repos: dict[str, list[tuple[str, int]]] = {}
    for item in batch:
        repos.setdefault(item[0], []).append(item)
    parts, decls = [], []
    variables: dict[str, str] = {}
    aliases: dict[tuple[str, str], tuple[str, int]] = {}
    for r, (repo, items) in enumerate(repos.items()):
        owner, name = repo.split("/", 1)
        variables[f"o{r}"], variables[f"n{r}"] = owner, name
        decls.append(f"$o{r}: String!, $n{r}: String!")
        fields = []
        for k, item in enumerate(items):
            alias = f"i{r}_{k}"
            aliases[(f"r{r}", alias)] = item
            fields.append(
                f"{alias}: issueOrPullRequest(number: {int(item[1])}) {{ __typename "
                f"... on PullRequest {{ {_PR_FIELDS} }} ... on Issue {{ {_ISSUE_FIELDS} }} }}"
            )
        parts.append(f"r{r}: repository(owner: $o{r}, name: $n{r}) {{ {' '.join(fields)} }}")
    query = f"query({', '.join(decls)}) {{ {' '.join(parts)} rateLimit {{ cost remaining }} }}"
    return query, variables, aliases


def _from_graphql(repository: str, node: Mapping[str, Any]) -> Issue | PullRequest:
    if node.get("__typename") == "PullRequest":
        return PullRequest.from_graphql(repository, node)
    closer = None
    timeline = (node.get("timelineItems") or {}).get("nodes") or []
    if timeline and isinstance(timeline[-1], dict):
        closer = timeline[-1].get("closer")
    pull = commit = None
    if isinstance(closer, dict) and closer.get("__typename") == "PullRequest":
        pull = PullRequest.from_graphql(repository, closer)
        commit = pull.merge_commit
    elif isinstance(closer, dict) and closer.get("__typename") == "Commit":
        commit = closer.get("oid")
    closed = node.get("state") == "CLOSED"
    reason = node.get("stateReason")
    return Issue(
        repository=repository,
        number=int(node["number"]),
        title=str(node.get("title") or ""),
        url=node.get("url"),
        state="closed" if closed else "open",
        state_reason=reason.lower() if isinstance(reason, str) else None,
        closed_at=parse_time(node.get("closedAt")),
        closed_by_pull=pull if closed else None,
        closed_by_commit=commit if closed else None,
    )


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
