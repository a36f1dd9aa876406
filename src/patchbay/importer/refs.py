"""Upstream references in a script's comments: PR, issue and commit URLs, ``owner/repo#N``,
``owner/repo@<commit>``, and the ``project #N`` shorthand people write (``vllm #51011``), which
needs a map from project names to repositories."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..environment.projects import DEFAULT_PROJECTS
from ..errors import InputError

_URL = re.compile(
    r"https?://(?:www\.)?github\.com/[\w.-]+/[\w.-]+/(?:pull|issues|commit)/[0-9a-fA-F]+"
    r"|https?://[\w.-]+/[\w./-]+/-/(?:merge_requests|issues|commit)/[0-9a-fA-F]+"
)
_OWNER_REPO = re.compile(
    r"(?<![\w./-])([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)( ?#\d+|@[0-9a-f]{7,40})\b"
)
_PROJECT = re.compile(
    r"(?<![\w./#-])([A-Za-z][\w.-]*?)"
    r"(?:\s*#\s?|\s+(?:PR|pr|pull|issue|MR)\s*#?\s?)(\d+)\b"
)
_NOT_PROJECTS = frozenset(
    {
        "step",
        "steps",
        "item",
        "no",
        "number",
        "line",
        "lines",
        "issue",
        "pr",
        "see",
        "fix",
        "fixes",
        "part",
        "patch",
        "bug",
        "case",
        "test",
        "task",
        "todo",
        "note",
        "and",
        "or",
        "in",
        "of",
        "from",
        "upstream",
        "for",
        "phase",
        "stage",
    }
)


@dataclass
class Refs:
    """References found in some text, and ``name #N`` forms with no known project."""

    refs: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def parse_projects(options: list[str]) -> dict[str, str]:
    """The project map: the defaults plus ``NAME=OWNER/REPO`` options (later ones win).

    Raises:
        InputError: an option that is not ``NAME=OWNER/REPO``.
    """
    projects = dict(DEFAULT_PROJECTS)
    for option in options:
        name, sep, repo = option.partition("=")
        if not sep or not name.strip() or not re.fullmatch(r"[\w.-]+/[\w.-]+", repo.strip()):
            raise InputError(
                f"--project {option!r}: expected NAME=OWNER/REPO (e.g. vllm=vllm-project/vllm)"
            )
        projects[name.strip().lower()] = repo.strip()
    return projects


def find_refs(text: str, projects: dict[str, str]) -> Refs:
    """Upstream references in ``text``, in order of appearance, without duplicates.

    URLs of GitHub pull requests, issues and commits (and GitLab merge requests) are kept as
    written (without a trailing ``.diff``/``.patch``); ``owner/repo#N`` and
    ``owner/repo@<commit>`` as written (``owner/repo #N``, as header lists write it, as
    ``owner/repo#N``); ``name #N``, ``name#N`` and ``name PR #N`` become
    ``owner/repo#N`` when ``name`` (case-insensitive) is in ``projects``, and are listed in
    ``unknown`` otherwise.
    """
    found: list[tuple[int, str]] = []
    unknown: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for m in _URL.finditer(text):
        found.append((m.start(), m.group(0)))
        taken.append(m.span())
    for m in _OWNER_REPO.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        found.append((m.start(), m.group(1) + m.group(2).lstrip()))
        taken.append(m.span())
    for m in _PROJECT.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        name = m.group(1).lower()
        repo = projects.get(name)
        if repo is not None:
            found.append((m.start(), f"{repo}#{m.group(2)}"))
        elif name not in _NOT_PROJECTS and not name.isdigit():
            unknown.append((m.start(), m.group(0).strip()))
    out = Refs()
    for _, ref in sorted(found):
        if ref not in out.refs:
            out.refs.append(ref)
    for _, form in sorted(unknown):
        if form not in out.unknown:
            out.unknown.append(form)
    return out


def github_source(url: str) -> tuple[str, int | None, str | None] | None:
    """``(owner/repo, pr, commit)`` for a GitHub PR or commit diff URL
    (``https://github.com/o/r/pull/N.diff``, ``.../commit/<40 hex>.patch``), else None."""
    m = re.fullmatch(
        r"https://github\.com/([\w.-]+/[\w.-]+)/(pull/(\d+)|commit/([0-9a-f]{40}))(?:\.diff|\.patch)",
        url,
    )
    if m is None:
        return None
    return m.group(1), int(m.group(3)) if m.group(3) else None, m.group(4)
