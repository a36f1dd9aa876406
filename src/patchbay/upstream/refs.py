"""Upstream references of a patch, parsed into what a forge can be asked about.

A patch's ``upstream`` list holds the forms ``model.py`` accepts: a URL, ``owner/repo#N`` or
``owner/repo@<commit>``. GitHub URLs name their kind in the path (``/pull/N``, ``/issues/N``,
``/commit/<sha>``); ``owner/repo#N`` does not, because pull requests and issues share one
number space in a repository (GitHub's REST docs: "every pull request is an issue"). Anything
else (another forge, a mailing-list archive) is kept as ``other``: the report lists it, and
never guesses a state for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

RefKind = Literal["pull", "issue", "number", "commit", "other"]
"""``pull``, ``issue``, ``number`` (``owner/repo#N``: a pull request or an issue), ``commit``,
or ``other`` (not something a GitHub client can look up)."""

_REPO = r"[A-Za-z0-9][\w.-]*/[\w.-]+"
_SHORT_NUMBER = re.compile(rf"^(?P<repo>{_REPO})#(?P<n>\d+)$")
_SHORT_COMMIT = re.compile(rf"^(?P<repo>{_REPO})@(?P<sha>[0-9a-f]{{7,40}})$")
_URL_PATH = re.compile(
    r"^/(?P<repo>[\w.-]+/[\w.-]+)/(?P<kind>pull|pulls|issues|commit|commits)/"
    r"(?P<ref>\d+|[0-9a-f]{7,40})(?:[/#?].*)?$"
)
GITHUB_WEB_HOSTS = frozenset({"github.com", "www.github.com"})


@dataclass(frozen=True)
class UpstreamRef:
    """One upstream reference.

    Attributes:
        text: as written in the patchset.
        kind: see :data:`RefKind`.
        repository: ``owner/name`` (None for ``other``).
        number: pull request or issue number (``pull``, ``issue``, ``number``).
        commit: the commit id as written, 7 to 40 hex digits (``commit``).
        host: the web host of a URL (``github.com``, a GitHub Enterprise host), or None for the
            short forms, which mean the configured forge.
    """

    text: str
    kind: RefKind
    repository: str | None = None
    number: int | None = None
    commit: str | None = None
    host: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies the upstream object: (repository in lower case, kind, number or
        commit). ``pull``, ``issue`` and ``number`` share a key: they are one number space."""
        repo = (self.repository or "").lower()
        if self.number is not None:
            return (repo, "number", str(self.number))
        if self.commit is not None:
            return (repo, "commit", self.commit)
        return ("", "other", self.text)

    @property
    def short(self) -> str:
        """``owner/repo#N``, ``owner/repo@<12 hex>``, or the text of an ``other`` reference."""
        if self.number is not None:
            return f"{self.repository}#{self.number}"
        if self.commit is not None:
            return f"{self.repository}@{self.commit[:12]}"
        return self.text


def parse_ref(text: str, *, web_hosts: frozenset[str] = GITHUB_WEB_HOSTS) -> UpstreamRef:
    """Parse one upstream reference.

    Args:
        text: a URL (``https://github.com/o/r/pull/12``, ``.../issues/3``,
            ``.../commit/<sha>``, with optional trailing ``/files`` or ``#fragment``),
            ``owner/repo#N`` or ``owner/repo@<7-40 hex>``.
        web_hosts: hosts whose URLs are GitHub URLs (github.com, plus a GitHub Enterprise host
            when one is configured).

    Returns:
        The :class:`UpstreamRef`; kind ``other`` when the text is none of these forms (never an
        error: the schema already checked the shape, and a foreign URL is a valid reference).
    """
    text = text.strip()
    if m := _SHORT_NUMBER.match(text):
        return UpstreamRef(text, "number", m["repo"], number=int(m["n"]))
    if m := _SHORT_COMMIT.match(text):
        return UpstreamRef(text, "commit", m["repo"], commit=m["sha"])
    parts = urlsplit(text)
    host = (parts.hostname or "").lower()
    if parts.scheme in ("http", "https") and host in web_hosts:
        m = _URL_PATH.match(parts.path)
        if m:
            kind, ref = m["kind"], m["ref"]
            if kind in ("commit", "commits"):
                if re.fullmatch(r"[0-9a-f]{7,40}", ref):
                    return UpstreamRef(text, "commit", m["repo"], commit=ref, host=host)
            elif ref.isdigit():
                ref_kind: RefKind = "issue" if kind == "issues" else "pull"
                return UpstreamRef(text, ref_kind, m["repo"], number=int(ref), host=host)
    return UpstreamRef(text, "other", host=host or None)


def web_host_of(api_url: str) -> str | None:
    """The web host whose URLs the API at ``api_url`` answers for.

    ``https://api.github.com`` -> None (github.com is always known); a GitHub Enterprise API
    ``https://ghe.example.com/api/v3`` -> ``ghe.example.com`` (GitHub Enterprise Server serves
    its REST API under ``/api/v3`` of the web host).
    """
    parts = urlsplit(api_url)
    host = (parts.hostname or "").lower()
    if not host or host == "api.github.com":
        return None
    if parts.path.rstrip("/").endswith("/api/v3"):
        return host
    return None
