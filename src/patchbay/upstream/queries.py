"""What patchbay asks GitHub, and the records of its answers: pull requests, issues, commits,
comparisons. :class:`GitHubClient` adds these typed look-ups to the plumbing of
:class:`~patchbay.upstream.github.GitHubAPI` (cache, retries, rate limits).

What it asks (GitHub REST API, version ``2022-11-28``, and the GraphQL API):

- ``GET /repos/{owner}/{repo}/pulls/{n}``, ``/issues/{n}``, ``/issues/{n}/events``,
  ``/commits/{sha}``, ``/compare/{base}...{head}`` (paged with ``per_page``/``page``; commits
  come "in chronological order", as ``git log base..head`` would list them) and
  ``GET /repos/{owner}/{repo}`` (the default branch), ``GET
  /repos/{owner}/{repo}/contents/{path}?ref={sha}`` (a file at a commit);
- with a token, one GraphQL query per 100 numbered references (``issueOrPullRequest`` under
  aliased ``repository`` fields), instead of one REST request each;
- for ``report --publish``: ``GET /repos/{o}/{r}/issues`` (open issues), ``POST`` and
  ``PATCH`` of one issue.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from .github import GitHubAPI, GitHubError, RateLimitError

COMPARE_PAGE = 100  # per_page of compare requests (GitHub's maximum for paged lists)
GRAPHQL_BATCH = 100  # numbered references per GraphQL query


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


# -- the look-ups -------------------------------------------------------------------------------


class GitHubClient(GitHubAPI):
    """A GitHub client: the requests of :class:`~patchbay.upstream.github.GitHubAPI` (same
    arguments, see there) and the typed look-ups of pull requests, issues, commits and
    comparisons."""

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

    def file_at(self, repository: str, path: str, ref: str) -> bytes | None:
        """The bytes of the file ``path`` of ``repository`` at ``ref`` (a commit id), from
        ``GET /repos/{repository}/contents/{path}?ref={ref}`` (base64 ``content``, through the
        ETag cache); None when the file does not exist there (404).

        Raises:
            GitHubError: another failure, an answer that is not a file, or a file the contents
                API does not inline (over 1 MB: its ``encoding`` is ``none``).
        """
        url = f"/repos/{repository}/contents/{quote(path, safe='/')}"
        try:
            data = self.get(url, {"ref": ref}).data
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        if not isinstance(data, dict) or data.get("type") != "file":
            raise GitHubError(f"{self.api}{url}?ref={ref} is not a file", url=url)
        if data.get("encoding") != "base64" or not isinstance(data.get("content"), str):
            raise GitHubError(
                f"{self.api}{url}?ref={ref}: the contents API did not inline the file "
                f"(encoding {data.get('encoding')!r})",
                url=url,
            )
        try:
            return base64.b64decode(data["content"])
        except ValueError:
            raise GitHubError(
                f"{self.api}{url}?ref={ref}: content is not base64", url=url
            ) from None

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
