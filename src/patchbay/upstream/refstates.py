"""The state of one upstream reference, read from the forge's answers, and what that reference
alone says of its patch (a :class:`~.verdicts.RefStatus`): a pull request's, an issue's (by the
pull request or commit that closed it) or a commit's, with its fix judged by :mod:`.fixes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .fixes import Fix, FixResult, revert_text, short_sha
from .github import GitHubError
from .queries import CommitInfo, Issue, PullRequest
from .refs import UpstreamRef
from .verdicts import RefState, RefStatus, Verdict


@dataclass
class ForgeAnswers:
    """The forge's answers an assessment reads: issues and pull requests by ``(repository,
    number)``, commits by ``(repository, sha)``, default branches by repository."""

    numbered: dict[tuple[str, int], Issue | PullRequest | GitHubError]
    commits: dict[tuple[str, str], CommitInfo | GitHubError]
    branches: dict[str, str | GitHubError]


def _fix_of(
    repo: str, sha: str, title: str, branch: str | None, pins: Mapping[str, str | None]
) -> Fix:
    return Fix(repo, sha, title, branch, pins.get(repo.lower()))


def fixes_of(ref: UpstreamRef, ctx: ForgeAnswers, pins: Mapping[str, str | None]) -> list[Fix]:
    """The fix commits ``ref`` stands for (a merged pull request's merge commit, the pull
    request or commit that closed an issue, the commit itself), each with the pinned commit of
    its repository from ``pins`` (repository in lower case -> pinned commit)."""
    repo = ref.repository
    if repo is None:
        return []
    if ref.number is not None:
        item = ctx.numbered.get((repo, ref.number))
        if isinstance(item, PullRequest) and item.merged and item.merge_commit:
            return [_fix_of(repo, item.merge_commit, item.title, item.base_ref, pins)]
        if isinstance(item, Issue) and item.state == "closed":
            pull = item.closed_by_pull
            if pull is not None and pull.merged and pull.merge_commit:
                return [_fix_of(repo, pull.merge_commit, pull.title, pull.base_ref, pins)]
            if pull is None and item.closed_by_commit:
                branch = ctx.branches.get(repo)
                info = ctx.commits.get((repo, item.closed_by_commit))
                title = info.subject if isinstance(info, CommitInfo) else ""
                return [
                    _fix_of(
                        repo,
                        item.closed_by_commit,
                        title,
                        branch if isinstance(branch, str) else None,
                        pins,
                    )
                ]
        return []
    if ref.commit is not None:
        info = ctx.commits.get((repo, ref.commit))
        branch = ctx.branches.get(repo)
        if isinstance(info, CommitInfo):
            return [
                _fix_of(
                    repo, info.sha, info.subject, branch if isinstance(branch, str) else None, pins
                )
            ]
    return []


def ref_status(
    ref: UpstreamRef,
    ctx: ForgeAnswers,
    pins: Mapping[str, str | None],
    judged: Mapping[tuple[str, str, str | None], FixResult],
) -> RefStatus:
    """The state of ``ref`` from the forge's answers ``ctx``, with its fixes judged in
    ``judged`` (``(repository, fix sha, pinned commit)`` -> :class:`~.fixes.FixResult`)."""
    if ref.kind == "other" or ref.repository is None:
        return RefStatus(
            ref,
            RefState.UNKNOWN,
            Verdict.ATTENTION,
            "not a GitHub pull request, issue or commit; its state is not tracked",
            fix=False,
        )
    repo = ref.repository
    if ref.number is not None:
        item = ctx.numbered.get((repo, ref.number))
        if item is None or isinstance(item, GitHubError):
            return _unknown(ref, item)
        if isinstance(item, PullRequest):
            return _pull_status(ref, item, pins, judged)
        return _issue_status(ref, item, ctx, pins, judged)
    info = ctx.commits.get((repo, ref.commit or ""))
    if info is None or isinstance(info, GitHubError):
        return _unknown(ref, info)
    branch = ctx.branches.get(repo)
    return _commit_status(
        ref,
        info,
        branch if isinstance(branch, str) else None,
        branch if isinstance(branch, GitHubError) else None,
        pins,
        judged,
    )


def _unknown(ref: UpstreamRef, error: GitHubError | None) -> RefStatus:
    why = str(error) if error is not None else "no answer"
    return RefStatus(ref, RefState.UNKNOWN, Verdict.ATTENTION, f"the forge did not answer: {why}")


def _pull_status(
    ref: UpstreamRef,
    pull: PullRequest,
    pins: Mapping[str, str | None],
    judged: Mapping[tuple[str, str, str | None], FixResult],
    *,
    fix: bool = True,
) -> RefStatus:
    base = {
        "title": pull.title,
        "url": pull.url,
        "base_ref": pull.base_ref,
        "merged_at": pull.merged_at,
        "fix": fix,
    }
    if not pull.merged:
        if pull.state == "open":
            state = RefState.DRAFT if pull.draft else RefState.OPEN
            return RefStatus(ref, state, Verdict.KEEP, f"pull request is {state.value}", **base)
        return RefStatus(
            ref,
            RefState.CLOSED,
            Verdict.ATTENTION,
            "pull request was closed without merge: the fix is not coming from it",
            **base,
        )
    if not pull.merge_commit:
        return RefStatus(
            ref,
            RefState.UNKNOWN,
            Verdict.ATTENTION,
            "merged, but the forge names no merge commit: whether the image has it is unknown",
            **base,
        )
    what = f"merged {_day(pull.merged_at)} as {short_sha(pull.merge_commit)}"
    return _fix_status(ref, pull.merge_commit, what, pins, judged, base)


def _issue_status(
    ref: UpstreamRef,
    issue: Issue,
    ctx: ForgeAnswers,
    pins: Mapping[str, str | None],
    judged: Mapping[tuple[str, str, str | None], FixResult],
) -> RefStatus:
    base: dict[str, Any] = {"title": issue.title, "url": issue.url, "fix": False}
    if issue.state == "open":
        return RefStatus(ref, RefState.OPEN, Verdict.KEEP, "issue is open", **base)
    if issue.state_reason == "not_planned":
        return RefStatus(
            ref,
            RefState.CLOSED,
            Verdict.ATTENTION,
            "issue was closed as not planned: no upstream fix is coming from it",
            **base,
        )
    pull = issue.closed_by_pull
    if pull is not None:
        inner = _pull_status(ref, pull, pins, judged, fix=False)
        inner.state = RefState.CLOSED
        inner.closed_by = f"#{pull.number}" + (" (merged)" if pull.merged else "")
        inner.title, inner.url = issue.title, issue.url
        inner.reason = f"issue closed by #{pull.number}, which was {inner.reason}"
        return inner
    if issue.closed_by_commit:
        info = ctx.commits.get((issue.repository, issue.closed_by_commit))
        title = info.subject if isinstance(info, CommitInfo) else ""
        branch = ctx.branches.get(issue.repository)
        fake = CommitInfo(issue.closed_by_commit, title, None)
        inner = _commit_status(
            ref,
            fake,
            branch if isinstance(branch, str) else None,
            branch if isinstance(branch, GitHubError) else None,
            pins,
            judged,
        )
        inner.fix = False
        inner.state = RefState.CLOSED
        inner.closed_by = short_sha(issue.closed_by_commit)
        inner.title, inner.url = issue.title, issue.url
        inner.reason = f"issue closed by commit {short_sha(issue.closed_by_commit)}: {inner.reason}"
        return inner
    return RefStatus(
        ref,
        RefState.CLOSED,
        Verdict.ATTENTION,
        "issue is closed, and the forge names no pull request or commit that closed it: "
        "check by hand whether the image has the fix",
        **base,
    )


def _commit_status(
    ref: UpstreamRef,
    info: CommitInfo,
    branch: str | None,
    branch_error: GitHubError | None,
    pins: Mapping[str, str | None],
    judged: Mapping[tuple[str, str, str | None], FixResult],
) -> RefStatus:
    base: dict[str, Any] = {"title": info.subject or None, "base_ref": branch}
    if branch is None and pins.get((ref.repository or "").lower()) is None:
        why = f": {branch_error}" if branch_error else ""
        return RefStatus(
            ref,
            RefState.UNKNOWN,
            Verdict.ATTENTION,
            f"the default branch is unknown{why}",
            **base,
        )
    return _fix_status(ref, info.sha, f"commit {short_sha(info.sha)}", pins, judged, base)


def _fix_status(
    ref: UpstreamRef,
    sha: str,
    what: str,
    pins: Mapping[str, str | None],
    judged: Mapping[tuple[str, str, str | None], FixResult],
    base: dict[str, Any],
) -> RefStatus:
    repo = ref.repository or ""
    pin = pins.get(repo.lower())
    result = judged.get((repo, sha, pin))
    is_pull = ref.kind != "commit"
    merged_state = RefState.MERGED if is_pull else RefState.ON_BRANCH
    if result is None:
        return RefStatus(
            ref, RefState.UNKNOWN, Verdict.ATTENTION, f"{what}: not judged", fix_commit=sha, **base
        )
    state = merged_state
    if result.reverted_by is not None:
        state = RefState.REVERTED
    elif not is_pull and result.on_branch is False:
        state = RefState.NOT_ON_BRANCH
    status = RefStatus(ref, state, Verdict.ATTENTION, "", fix_commit=sha, **base)
    status.in_image = result.in_image
    status.warnings.extend(result.notes)
    if result.reverted_by is not None:
        status.reverted_by = result.reverted_by.sha
    if (repo.lower()) not in pins:
        status.reason = (
            f"{what}; the patchset's components do not name {repo}, so whether the image has "
            "it is unknown (add the component with its `commit`)"
        )
        return status
    if pin is None:
        status.reason = (
            f"{what}; the component {repo} has no pinned `commit`, so whether the image has it "
            "is unknown"
        )
        return status
    if result.problem is not None:
        status.reason = f"{what}; {result.problem}"
        return status
    if result.in_image:
        status.verdict = Verdict.REMOVE
        status.reason = f"{what}, an ancestor of the pinned commit {short_sha(pin)}: in the image"
        if result.reverted_by is not None:
            status.warnings.append(
                f"upstream reverted it after the pinned commit in "
                f"{revert_text(result.reverted_by)}: an image built past "
                f"{short_sha(result.reverted_by.sha)} needs the patch again"
            )
        return status
    if result.reverted_before_pin is not None:
        status.reason = (
            f"{what}, then reverted in {revert_text(result.reverted_before_pin)} before the "
            f"pinned commit {short_sha(pin)}: the image lacks the fix; the patch is still needed"
        )
        return status
    if result.reverted_by is not None:
        status.reason = (
            f"{what} after the pinned commit {short_sha(pin)}, then reverted in "
            f"{revert_text(result.reverted_by)}: keep the patch; no newer image carries the fix"
        )
        return status
    if not is_pull and result.on_branch is None:
        status.state = RefState.UNKNOWN
        status.reason = (
            f"{what} is not in the pinned commit's history, and whether it is on the default "
            "branch could not be checked" + (f": {result.notes[-1]}" if result.notes else "")
        )
        return status
    if not is_pull and result.on_branch is False:
        status.reason = (
            f"{what} is neither in the pinned commit's history nor on "
            f"{base.get('base_ref') or 'the default branch'}: no image built from upstream "
            "carries it"
        )
        return status
    status.verdict = Verdict.BUMP
    status.needed_commit = sha
    branch = base.get("base_ref")
    on = f" on {branch}" if branch else ""
    status.reason = (
        f"{what}, after the pinned commit {short_sha(pin)}: an image built from "
        f"{short_sha(sha)}{on} or later removes the patch"
    )
    return status


def _day(when: datetime | None) -> str:
    return when.date().isoformat() if when else "(date unknown)"
