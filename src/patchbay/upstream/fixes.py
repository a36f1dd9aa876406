"""Whether a fix commit is in the pinned image, and whether upstream reverted it.

Whether the image has the fix is decided from history, never from the ``merged`` flag alone:
the commit a merge put on the base branch (merge commit, squash commit or last rebased commit:
GitHub's ``merge_commit_sha``, so all three merge methods count) must be an ancestor of the
commit the image was built from (the patchset's ``components[].commit``), by the compare API,
and no commit between the two may revert it. A revert is a commit whose message says
``This reverts commit <sha>`` (what ``git revert`` writes) or whose subject is
``Revert "<title>"`` (GitHub's revert button, and ``git revert`` of a squash commit); a revert
of the revert (``Reapply "<title>"``) brings the fix back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .github import GitHubError
from .queries import CommitInfo, Comparison

# -- reverts ----------------------------------------------------------------------------------

_REVERTS_COMMIT = re.compile(r"This reverts commit ([0-9a-f]{7,40})")
_REVERT_TITLE = re.compile(r'^Revert "(?P<inner>.+)"(?:\s*\(#\d+\))?\s*$')
_REAPPLY_TITLE = re.compile(r'^(?:Reapply|Re-apply|Reland) "(?P<inner>.+)"(?:\s*\(#\d+\))?\s*$')
_PR_SUFFIX = re.compile(r"\s*\(#\d+\)\s*$")


def _normal_title(title: str) -> str:
    title = title.strip()
    while _PR_SUFFIX.search(title):
        title = _PR_SUFFIX.sub("", title)
    return title


def _names(shas: Iterable[str], target: str) -> bool:
    return any(s.startswith(target) or target.startswith(s) for s in shas)


@dataclass
class RevertScan:
    """Walks commits in order and follows whether a fix is present.

    ``present`` starts True (the fix commit itself was seen); a commit reverting a fix commit
    (by id, or by ``Revert "<title>"`` when its message names no commit) clears it; a commit
    reverting that revert (or ``Reapply "<title>"``) sets it again.
    """

    fix_sha: str
    title: str
    present: bool = True
    fixes: set[str] = field(default_factory=set)
    reverts: set[str] = field(default_factory=set)
    last_revert: CommitInfo | None = None

    def __post_init__(self) -> None:
        self.fixes.add(self.fix_sha)
        self.title = _normal_title(self.title)

    def feed(self, commits: Iterable[CommitInfo]) -> None:
        """Look at ``commits`` (oldest first)."""
        for c in commits:
            if c.sha in self.fixes or c.sha in self.reverts:
                continue
            named = _REVERTS_COMMIT.findall(c.message)
            subject = c.subject
            if self.present:
                if named:
                    hit = any(_names(self.fixes, n) for n in named)
                else:
                    m = _REVERT_TITLE.match(subject)
                    hit = bool(self.title and m and _normal_title(m["inner"]) == self.title)
                if hit:
                    self.present = False
                    self.reverts.add(c.sha)
                    self.last_revert = c
            else:
                if named:
                    hit = any(_names(self.reverts, n) for n in named)
                else:
                    m = _REAPPLY_TITLE.match(subject)
                    hit = bool(self.title and m and _normal_title(m["inner"]) == self.title)
                if hit:
                    self.present = True
                    self.fixes.add(c.sha)


# -- judging one fix commit against a pinned commit ----------------------------------------


@dataclass
class Fix:
    """A commit that carries a fix upstream, and where to look for it."""

    repository: str
    sha: str
    title: str
    branch: str | None
    pin: str | None


@dataclass
class FixResult:
    """What history says of one :class:`Fix`: in the pinned image (None: undecided), on the
    branch, reverted (still at the branch head, or before the pin), and why it is undecided."""

    in_image: bool | None = None
    on_branch: bool | None = None
    reverted_by: CommitInfo | None = None  # still reverted at the branch head
    reverted_before_pin: CommitInfo | None = None
    problem: str | None = None
    notes: list[str] = field(default_factory=list)


def _scan_after_pin(
    after_pin: Any, fix: Fix, scan: RevertScan, out: FixResult, *, find_fix: bool
) -> None:
    """Feed the commits between the pin and the branch head to the revert scan. With
    ``find_fix`` (the fix is not in the pin), only the commits after the fix itself, and whether
    the fix is on the branch at all."""
    if isinstance(after_pin, GitHubError):
        out.notes.append(f"commits after the pin could not be checked: {after_pin}")
        return
    if not isinstance(after_pin, Comparison):
        return
    commits = after_pin.commits
    if find_fix:
        index = next((i for i, c in enumerate(commits) if c.sha == fix.sha), None)
        if index is not None:
            out.on_branch = True
            commits = commits[index + 1 :]
        elif after_pin.complete:
            out.on_branch = False
    scan.feed(commits)
    if not after_pin.complete:
        out.notes.append(
            f"the revert check covered {len(after_pin.commits)} of the "
            f"{after_pin.total_commits} commits after the pin"
        )


def judge_fix(fix: Fix, comparisons: Mapping[tuple[str, str, str], Any]) -> FixResult:
    """Judge ``fix`` from the forge's comparisons (see the module docstring).

    Args:
        fix: the fix commit, its branch and the pinned commit of its repository.
        comparisons: ``(repository, base, head)`` -> a :class:`~.queries.Comparison` or a
            :class:`~.github.GitHubError` (fix against pin, pin against branch, or fix against
            branch when nothing is pinned).
    """
    out = FixResult()
    scan = RevertScan(fix.sha, fix.title)
    repo = fix.repository
    if fix.pin is not None:
        to_pin = comparisons.get((repo, fix.sha, fix.pin))
        after_pin = comparisons.get((repo, fix.pin, fix.branch)) if fix.branch else None
        if isinstance(to_pin, GitHubError) or to_pin is None:
            out.problem = f"could not compare the fix with the pinned commit: {to_pin}"
            return out
        if to_pin.base_is_ancestor:
            out.on_branch = True
            scan.feed(to_pin.commits)
            if not to_pin.complete:
                out.problem = (
                    f"{short_sha(fix.sha)} is an ancestor of the pinned commit, but only "
                    f"{len(to_pin.commits)} of the {to_pin.total_commits} commits between "
                    "them were checked for a revert"
                )
            elif scan.present:
                out.in_image = True
            else:
                out.in_image = False
                out.reverted_before_pin = scan.last_revert
            _scan_after_pin(after_pin, fix, scan, out, find_fix=False)
        else:
            out.in_image = False
            _scan_after_pin(after_pin, fix, scan, out, find_fix=True)
    else:
        to_branch = comparisons.get((repo, fix.sha, fix.branch)) if fix.branch else None
        if isinstance(to_branch, Comparison):
            out.on_branch = to_branch.base_is_ancestor
            scan.feed(to_branch.commits)
        elif isinstance(to_branch, GitHubError):
            out.notes.append(f"the branch could not be checked: {to_branch}")
    if not scan.present:
        out.reverted_by = scan.last_revert
    return out


def short_sha(sha: str | None) -> str:
    """A commit id as messages show it (12 digits; ``?`` for none)."""
    return (sha or "?")[:12]


def revert_text(c: CommitInfo) -> str:
    """A reverting commit as messages show it: ``<short id> (<subject>)``."""
    return f"{short_sha(c.sha)} ({c.subject})"
