"""The tracking issue: one per repository, kept up to date with the upstream report.

:func:`publish` finds the issue by a hidden marker in its body, compares a fingerprint of the
report's content (verdicts, states, reasons; not the day counts, which change daily), and edits
only when that changed. The body (:mod:`.report_markdown`) stays within GitHub's limit on an
issue body (65,536 characters).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..redaction import redact
from .github import GitHubError
from .queries import GitHubClient
from .report import Report
from .report_markdown import MARKER, render_markdown

ISSUE_BODY_LIMIT = 65536  # characters GitHub accepts in an issue body
DEFAULT_TITLE = "patchbay: carried patches and their upstream state"
_FINGERPRINT = re.compile(r"<!-- patchbay:fingerprint=([0-9a-f]{64}) -->")


@dataclass
class PublishResult:
    """What :func:`publish` did: ``created``, ``updated`` or ``unchanged`` issue ``number``."""

    action: str
    repository: str
    number: int
    url: str | None = None


_REPOSITORY = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def check_publish_target(repository: str, client: GitHubClient) -> None:
    """Check, before any work, that :func:`publish` can run.

    Raises:
        InputError: ``repository`` is not ``owner/name``, or the client has no token.
    """
    if not _REPOSITORY.match(repository):
        raise InputError(f"--publish {repository!r}: expected owner/name")
    if not client.authenticated:
        raise InputError("--publish needs a token in GITHUB_TOKEN or GH_TOKEN")


def publish(
    report: Report,
    client: GitHubClient,
    repository: str,
    *,
    title: str = DEFAULT_TITLE,
    limit: int = ISSUE_BODY_LIMIT,
    max_pages: int = 10,
    number: int | None = None,
) -> PublishResult:
    """Create or update the one tracking issue of ``repository``.

    The issue is ``number`` (the one the last run published to, from the history) when it is
    still open and still holds :data:`~.report_markdown.MARKER`; else the first open issue
    whose body holds the marker (``GET /repos/{o}/{r}/issues?state=open``, up to ``max_pages``
    pages of 100). When its fingerprint equals the report's, nothing is sent; else its body is
    replaced (``PATCH``). Without such an issue, one is created (``POST``).

    Raises:
        InputError: ``repository`` is not ``owner/name``, or there is no token.
        GitHubError: the forge refused (e.g. the token may not write issues).
    """
    check_publish_target(repository, client)
    body = redact(render_markdown(report, issue=True, limit=limit))
    existing = _known_issue(client, repository, number) if number is not None else None
    if existing is None:
        existing = _find_issue(client, repository, max_pages)
    if existing is not None:
        number = int(existing["number"])
        m = _FINGERPRINT.search(existing.get("body") or "")
        if m and m.group(1) == report.fingerprint():
            return PublishResult("unchanged", repository, number, existing.get("html_url"))
        data = client.write("PATCH", f"/repos/{repository}/issues/{number}", {"body": body})
        url = (data or {}).get("html_url") or existing.get("html_url")
        return PublishResult("updated", repository, number, url)
    data = client.write("POST", f"/repos/{repository}/issues", {"title": title, "body": body})
    return PublishResult("created", repository, int(data["number"]), data.get("html_url"))


def _known_issue(client: GitHubClient, repository: str, number: int) -> dict[str, Any] | None:
    try:
        issue = client.get(f"/repos/{repository}/issues/{number}").data
    except GitHubError as exc:
        if exc.status in (404, 410):  # deleted or transferred: look for the marker instead
            return None
        raise
    if (
        isinstance(issue, dict)
        and issue.get("state") == "open"
        and "pull_request" not in issue
        and MARKER in (issue.get("body") or "")
    ):
        return dict(issue)
    return None


def last_published(history: Sequence[Mapping[str, Any]], repository: str) -> int | None:
    """The issue number the latest run published to in ``repository``, from the history."""
    for entry in reversed(history):
        done = entry.get("published")
        if isinstance(done, dict) and str(done.get("repository", "")).lower() == repository.lower():
            number = done.get("number")
            return number if isinstance(number, int) else None
    return None


def _find_issue(client: GitHubClient, repository: str, max_pages: int) -> dict[str, Any] | None:
    for page in range(1, max_pages + 1):
        issues = client.get(
            f"/repos/{repository}/issues", {"state": "open", "per_page": 100, "page": page}
        ).data
        for issue in issues:
            if "pull_request" not in issue and MARKER in (issue.get("body") or ""):
                return dict(issue)
        if len(issues) < 100:
            return None
    return None
