"""Upstream references in a waiver: Markdown links, bare URLs, commit URLs, ``owner/repo#N``,
``owner/repo@<commit>`` and ``project #N`` (resolved through a name-to-repository map)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .segments import Segment


@dataclass(frozen=True)
class Reference:
    """An upstream reference found in a waiver.

    Attributes:
        text: as written (a URL, ``owner/repo#N``, ``vllm #123``, ...).
        line: 1-based line in the waiver file.
        form: ``url``, ``link`` (a Markdown link), ``owner/repo#N``, ``owner/repo@commit`` or
            ``project #N``.
        repository: ``owner/name`` when known; None for ``project #N`` without a mapping.
        number: PR or issue number, when the reference has one.
        commit: commit id, when the reference is a commit.
        kind: ``pull``, ``issue``, ``commit`` or None (``#N`` does not say which).
        project: the project name of a ``project #N`` reference.
    """

    text: str
    line: int
    form: str
    repository: str | None = None
    number: int | None = None
    commit: str | None = None
    kind: str | None = None
    project: str | None = None

    @property
    def resolved(self) -> bool:
        """True when the reference names a repository (it can be looked up)."""
        return self.repository is not None

    @property
    def canonical(self) -> str:
        """``owner/repo#N``, ``owner/repo@commit``, ``project #N`` or the URL."""
        if self.repository and self.number is not None:
            return f"{self.repository}#{self.number}"
        if self.repository and self.commit:
            return f"{self.repository}@{self.commit}"
        if self.project and self.number is not None:
            return f"{self.project} #{self.number}"
        return self.text


_URL = re.compile(r"https?://[^\s<>()\[\]`\"']+")
_FORGE_URL = re.compile(
    r"https?://(?:www\.)?(?P<host>github\.com|gitlab\.com|[\w.-]*gitlab[\w.-]*)/"
    r"(?P<repo>[\w.-]+/[\w.-]+(?:/[\w.-]+)*?)/(?:-/)?"
    r"(?P<kind>pull|pulls|issues|merge_requests|commit|commits)/(?P<ref>[0-9a-f]{7,40}|\d+)\b"
)
_OWNER_REPO_NUM = re.compile(r"(?<![\w/.#@-])([A-Za-z0-9][\w.-]*/[\w.-]+)#(\d+)\b")
_OWNER_REPO_SHA = re.compile(r"(?<![\w/.#@-])([A-Za-z0-9][\w.-]*/[\w.-]+)@([0-9a-f]{7,40})\b")
# the name ends with a letter or digit: in "was reverted. #1234 has the details" the sentence
# ends before the number, which is no project's
_PROJECT_NUM = re.compile(
    r"(?<![\w/#.@-])([A-Za-z](?:[\w.-]*[A-Za-z0-9])?)\s+(?:(?:PR|pull request|pull|issue|MR)\s+)?"
    r"#(\d+)\b"
)
# "PR #12", "issue #4", "step #2": a number, not a project's PR
_NOT_PROJECTS = frozenset(
    [
        "pr",
        "prs",
        "pull",
        "pulls",
        "request",
        "requests",
        "issue",
        "issues",
        "mr",
        "ticket",
        "bug",
        "bugs",
        "number",
        "no",
        "item",
        "items",
        "step",
        "row",
        "rows",
        "case",
        "cases",
        "see",
        "fix",
        "fixes",
        "fixed",
        "close",
        "closes",
        "closed",
        "and",
        "or",
        "in",
        "of",
        "the",
        "a",
        "an",
        "waiver",
        "waivers",
        "commit",
        "version",
        "patch",
        "patches",
        "review",
        "comment",
        "line",
        "page",
        "option",
        "section",
        "table",
        "part",
        "phase",
        "attempt",
        "run",
        "build",
        "job",
    ]
)


def forge_reference(url: str, line: int, form: str) -> Reference | None:
    """The reference of a GitHub/GitLab pull request, merge request, issue or commit URL, or
    None for any other URL."""
    m = _FORGE_URL.match(url)
    if m is None:
        return None
    ref = m.group("ref")
    kind = {"pulls": "pull", "merge_requests": "pull", "commits": "commit", "issues": "issue"}.get(
        m.group("kind"), m.group("kind")
    )
    repo = m.group("repo")
    if kind == "commit":
        return Reference(url, line, form, repository=repo, commit=ref, kind="commit")
    if not ref.isdigit():
        return None
    return Reference(url, line, form, repository=repo, number=int(ref), kind=kind)


def _strip_url(url: str) -> str:
    return url.rstrip(".,;:!?)")


def find_references(
    segments: list[Segment], names: Mapping[str, str], known: set[str]
) -> list[Reference]:
    """Distinct upstream references in the body's segments, in order of first appearance.

    Args:
        segments: the body's text segments (code blocks are skipped).
        names: project name in lower case -> ``owner/repo``, for ``project #N``.
        known: project names (lower case) recognised as ``name #N`` outside the upstream field.
    """
    found: list[Reference] = []
    seen: set[str] = set()

    def add(ref: Reference | None) -> None:
        if ref is not None and ref.canonical not in seen:
            seen.add(ref.canonical)
            found.append(ref)

    for seg in segments:
        if seg.code:
            continue
        in_upstream = "upstream" in seg.fields
        for href in seg.hrefs:
            ref = forge_reference(href, seg.line, "link")
            if ref is None and in_upstream and href.startswith(("http://", "https://")):
                ref = Reference(href, seg.line, "link")
            add(ref)
        text = seg.outside_links
        # each pattern needs a character the text may not hold: skip the ones that cannot match
        if "http" in text:
            for m in _URL.finditer(text):
                url = _strip_url(m.group(0))
                ref = forge_reference(url, seg.line, "url")
                if ref is None and in_upstream:
                    ref = Reference(url, seg.line, "url")
                add(ref)
            text = _URL.sub(" ", text)
        if "#" not in text and "@" not in text:
            continue
        for m in _OWNER_REPO_NUM.finditer(text):
            add(Reference(m.group(0), seg.line, "owner/repo#N", m.group(1), number=int(m.group(2))))
        for m in _OWNER_REPO_SHA.finditer(text):
            add(Reference(m.group(0), seg.line, "owner/repo@commit", m.group(1), commit=m.group(2)))
        text = _OWNER_REPO_NUM.sub(" ", _OWNER_REPO_SHA.sub(" ", text))
        for m in _PROJECT_NUM.finditer(text):
            project = m.group(1)
            key = project.lower()
            if key in _NOT_PROJECTS or not (in_upstream or key in known):
                continue
            repo = names.get(key)
            add(
                Reference(
                    m.group(0),
                    seg.line,
                    "project #N",
                    repository=repo,
                    number=int(m.group(2)),
                    project=project,
                )
            )
    return found
