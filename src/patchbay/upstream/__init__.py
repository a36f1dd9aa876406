"""Upstream tracking: references, the GitHub client, states and verdicts.

- :mod:`.refs` parses a patch's ``upstream`` entries (URLs, ``owner/repo#N``,
  ``owner/repo@<commit>``);
- :mod:`.github` sends requests to GitHub (REST with the ETag cache of :mod:`.response_cache`,
  GraphQL, retries, the rate limits of :mod:`.rate_limits`);
- :mod:`.queries` asks it for pull requests, issues, commits and comparisons
  (:class:`~.queries.GitHubClient`, GraphQL batches) and holds the records of its answers;
- :mod:`.status` turns answers into a state per reference (:mod:`.refstates`, a fix in the
  pinned image by :mod:`.fixes`) and a verdict per patch (``remove``, ``bump``, ``refresh``,
  ``keep``, ``attention``: the values in :mod:`.verdicts`), bent by an image's content
  (:mod:`.evidence`), and the findings of ``patchbay audit --upstream``
  (:func:`~.status.upstream_findings`);
- :mod:`.report` and its renderers (:mod:`.report_formats`, :mod:`.report_markdown`,
  :mod:`.report_html`) and :mod:`.tracking_issue` are ``patchbay report``.

It imports the document, diffs, the environment and the apply core (content evidence from a
pinned or candidate image), rebase (which patches a bump would refresh) and the waivers, never
the CLI.
"""

from __future__ import annotations

from .github import GitHubError, RateLimitError, github_token
from .queries import GitHubClient
from .refs import UpstreamRef, parse_ref
from .status import assess, upstream_findings
from .verdicts import Assessment, RefState, RefStatus, Verdict

__all__ = [
    "Assessment",
    "GitHubClient",
    "GitHubError",
    "RateLimitError",
    "RefState",
    "RefStatus",
    "UpstreamRef",
    "Verdict",
    "assess",
    "github_token",
    "parse_ref",
    "upstream_findings",
]
