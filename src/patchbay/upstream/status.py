"""Upstream state of every reference, and a verdict for every patch: can it go?

A reference's state comes from the forge (:mod:`.github`): a pull request is ``open``,
``draft``, ``merged``, ``closed`` (without merge), ``reverted`` (merged, then undone on its base
branch) or ``unknown`` (the forge did not answer: never guessed); an issue is ``open`` or
``closed`` (with the PR or commit that closed it, when the forge says); a commit is
``on-branch`` (on the default branch), ``not-on-branch``, ``reverted`` or ``unknown``.

Whether the image has the fix is decided from history, never from the ``merged`` flag alone:
the commit a merge put on the base branch (merge commit, squash commit or last rebased commit:
GitHub's ``merge_commit_sha``, so all three merge methods count) must be an ancestor of the
commit the image was built from (the patchset's ``components[].commit``), by the compare API,
and no commit between the two may revert it. A revert is a commit whose message says
``This reverts commit <sha>`` (what ``git revert`` writes) or whose subject is
``Revert "<title>"`` (GitHub's revert button, and ``git revert`` of a squash commit); a revert
of the revert (``Reapply "<title>"``) brings the fix back.

Verdicts, per patch:

========= ===================================================================================
remove    the fix is in the pinned image (or ``status`` found the patch's content there)
bump      merged after the pinned commit: an image built from the named commit removes it
refresh   merged, but an image's content shows part of the patch still needed (or a conflict):
          trim or rebase it (content evidence, :mod:`.evidence`)
keep      upstream is open or draft, or the patch is carried by design (Upstream-Status
          ``Inappropriate`` with a reason, and no reference)
attention closed without merge, reverted, no upstream reference, unknown, or the waiver's
          review date has passed (also for a patch carried by design)
========= ===================================================================================
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..patchset.model import Patchset
from .evidence import weigh
from .github import (
    CommitInfo,
    Comparison,
    GitHubClient,
    GitHubError,
    Issue,
    PullRequest,
    malformed,
    unique,
)
from .refs import GITHUB_WEB_HOSTS, UpstreamRef, parse_ref, web_host_of
from .verdicts import Assessment, ContentEvidence, RefState, RefStatus, Verdict, WaiverReview

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
class _Fix:
    """A commit that carries a fix upstream, and where to look for it."""

    repository: str
    sha: str
    title: str
    branch: str | None
    pin: str | None


@dataclass
class _FixResult:
    in_image: bool | None = None
    on_branch: bool | None = None
    reverted_by: CommitInfo | None = None  # still reverted at the branch head
    reverted_before_pin: CommitInfo | None = None
    problem: str | None = None
    notes: list[str] = field(default_factory=list)


def _scan_after_pin(
    after_pin: Any, fix: _Fix, scan: RevertScan, out: _FixResult, *, find_fix: bool
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


def _judge_fix(fix: _Fix, comparisons: Mapping[tuple[str, str, str], Any]) -> _FixResult:
    out = _FixResult()
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
                    f"{_short(fix.sha)} is an ancestor of the pinned commit, but only "
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


def _short(sha: str | None) -> str:
    return (sha or "?")[:12]


def _revert_text(c: CommitInfo) -> str:
    return f"{_short(c.sha)} ({c.subject})"


# -- assessing patchsets ----------------------------------------------------------------------


@dataclass
class _Context:
    numbered: dict[tuple[str, int], Issue | PullRequest | GitHubError]
    commits: dict[tuple[str, str], CommitInfo | GitHubError]
    branches: dict[str, str | GitHubError]


def assess(
    patchsets: Sequence[Patchset],
    client: GitHubClient,
    *,
    today: date | None = None,
    waivers: Mapping[tuple[str, str], WaiverReview] | None = None,
    evidence: Mapping[tuple[str, str], list[ContentEvidence]] | None = None,
    max_pages: int = 30,
) -> list[Assessment]:
    """Ask the forge about every upstream reference of ``patchsets`` and judge every patch.

    Requests, in three concurrent rounds: the references (GraphQL batches when the client
    uses GraphQL, else one REST request each), then the default branches and commits where
    needed, then the comparisons (fix commit against the pinned commit, pinned commit against
    the base branch: one per distinct pair), with their further pages.

    Args:
        patchsets: loaded patchsets; their ``components`` give repository and pinned commit.
        client: the forge client.
        today: the date waiver review dates are judged against (default: today, UTC).
        waivers: ``(patchset name, patch id)`` -> the covering waiver's review date.
        evidence: ``(patchset name, patch id)`` -> what images' content says of the patch
            (pinned image first, then a candidate); it bends the verdict where it disagrees
            with the forge (:func:`.evidence.weigh`).
        max_pages: bound on the pages (of 100 commits) read per comparison.

    Returns:
        One :class:`Assessment` per patch, in patchset order.

    Raises:
        RateLimitError: the forge's rate limit outlasts the client's wait bound.
    """
    today = today or datetime.now(timezone.utc).date()
    # URLs of github.com, or of the Enterprise server the client talks to (short forms such
    # as owner/repo#N always mean the configured forge)
    enterprise = web_host_of(client.api)
    hosts = frozenset({enterprise}) if enterprise else GITHUB_WEB_HOSTS
    parsed: list[list[UpstreamRef]] = [
        [parse_ref(text, web_hosts=hosts) for text in patch.upstream]
        for ps in patchsets
        for patch in ps.patches
    ]
    all_refs = [r for refs in parsed for r in refs]

    numbered = unique(
        (r.repository, r.number, r.kind) for r in all_refs if r.number is not None and r.repository
    )
    by_item: dict[tuple[str, int], Issue | PullRequest | GitHubError] = {}
    if numbered:
        if client.use_graphql:
            keys = [(repo, n) for repo, n, _ in numbered]
            try:
                by_item.update(client.numbered_graphql(keys))
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                by_item.update(dict.fromkeys(keys, malformed(exc)))
        else:
            results = client.map(lambda it: client.numbered(it[0], it[1], it[2]), numbered)
            by_item.update(
                {(repo, n): res for (repo, n, _), res in zip(numbered, results, strict=True)}
            )
    closing = [
        (v.repository, v.closed_by_commit)
        for v in by_item.values()
        if isinstance(v, Issue) and v.closed_by_commit and v.closed_by_pull is None
    ]
    commit_items = unique(
        [*((r.repository, r.commit) for r in all_refs if r.commit and r.repository), *closing]
    )
    need_branch = unique(repo for repo, _ in [*commit_items, *closing])
    lookups: list[tuple[str, Any]] = [("commit", item) for item in commit_items]
    lookups += [("branch", repo) for repo in need_branch]
    answers = client.map(
        lambda job: client.commit(*job[1]) if job[0] == "commit" else client.default_branch(job[1]),
        lookups,
    )
    commits: dict[tuple[str, str], CommitInfo | GitHubError] = {}
    branches: dict[str, str | GitHubError] = {}
    for (what, item), answer in zip(lookups, answers, strict=True):
        if what == "commit":
            commits[item] = answer
        else:
            branches[item] = answer
    ctx = _Context(by_item, commits, branches)

    # every fix commit to judge, per patchset (pins differ between patchsets)
    fixes: dict[tuple[str, str, str | None], _Fix] = {}
    plans: list[tuple[Patchset, int, Any, list[UpstreamRef]]] = []
    flat = iter(parsed)
    for ps in patchsets:
        pins = _pins(ps)
        for i, patch in enumerate(ps.patches):
            refs = next(flat)
            plans.append((ps, i, patch, refs))
            for ref in refs:
                for fix in _fixes_of(ref, ctx, pins):
                    fixes[(fix.repository, fix.sha, fix.pin)] = fix
    specs: list[tuple[str, str, str]] = []
    for fix in fixes.values():
        if fix.pin is not None:
            specs.append((fix.repository, fix.sha, fix.pin))
            if fix.branch:
                specs.append((fix.repository, fix.pin, fix.branch))
        elif fix.branch:
            specs.append((fix.repository, fix.sha, fix.branch))
    specs = unique(specs)
    compared = client.compare_many(specs, max_pages=max_pages)
    comparisons = dict(zip(specs, compared, strict=True))
    judged = {key: _judge_fix(fix, comparisons) for key, fix in fixes.items()}

    out = []
    for ps, i, patch, refs in plans:
        pins = _pins(ps)
        statuses = [_ref_status(ref, ctx, pins, judged) for ref in refs]
        waiver = (waivers or {}).get((ps.name, patch.id))
        seen = (evidence or {}).get((ps.name, patch.id), [])
        out.append(_assess_patch(ps, i, patch, statuses, waiver, seen, today))
    return out


def _pins(ps: Patchset) -> dict[str, str | None]:
    """Repository (lower case) -> pinned commit (None when the component names none)."""
    return {c.repository.lower(): c.commit for c in ps.spec.components if c.repository}


def _fix_of(
    repo: str, sha: str, title: str, branch: str | None, pins: Mapping[str, str | None]
) -> _Fix:
    return _Fix(repo, sha, title, branch, pins.get(repo.lower()))


def _fixes_of(ref: UpstreamRef, ctx: _Context, pins: Mapping[str, str | None]) -> list[_Fix]:
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


def _ref_status(
    ref: UpstreamRef,
    ctx: _Context,
    pins: Mapping[str, str | None],
    judged: Mapping[tuple[str, str, str | None], _FixResult],
) -> RefStatus:
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
    judged: Mapping[tuple[str, str, str | None], _FixResult],
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
    what = f"merged {_day(pull.merged_at)} as {_short(pull.merge_commit)}"
    return _fix_status(ref, pull.merge_commit, what, pins, judged, base)


def _issue_status(
    ref: UpstreamRef,
    issue: Issue,
    ctx: _Context,
    pins: Mapping[str, str | None],
    judged: Mapping[tuple[str, str, str | None], _FixResult],
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
        inner.closed_by = _short(issue.closed_by_commit)
        inner.title, inner.url = issue.title, issue.url
        inner.reason = f"issue closed by commit {_short(issue.closed_by_commit)}: {inner.reason}"
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
    judged: Mapping[tuple[str, str, str | None], _FixResult],
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
    return _fix_status(ref, info.sha, f"commit {_short(info.sha)}", pins, judged, base)


def _fix_status(
    ref: UpstreamRef,
    sha: str,
    what: str,
    pins: Mapping[str, str | None],
    judged: Mapping[tuple[str, str, str | None], _FixResult],
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
        status.reason = f"{what}, an ancestor of the pinned commit {_short(pin)}: in the image"
        if result.reverted_by is not None:
            status.warnings.append(
                f"upstream reverted it after the pinned commit in "
                f"{_revert_text(result.reverted_by)}: an image built past "
                f"{_short(result.reverted_by.sha)} needs the patch again"
            )
        return status
    if result.reverted_before_pin is not None:
        status.reason = (
            f"{what}, then reverted in {_revert_text(result.reverted_before_pin)} before the "
            f"pinned commit {_short(pin)}: the image lacks the fix; the patch is still needed"
        )
        return status
    if result.reverted_by is not None:
        status.reason = (
            f"{what} after the pinned commit {_short(pin)}, then reverted in "
            f"{_revert_text(result.reverted_by)}: keep the patch; no newer image carries the fix"
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
        f"{what}, after the pinned commit {_short(pin)}: an image built from "
        f"{_short(sha)}{on} or later removes the patch"
    )
    return status


def _by_design(patch: Any) -> bool:
    """An ``Inappropriate`` upstream status with a reason: not meant for upstream."""
    status = patch.upstream_status
    return bool(status and status.status == "Inappropriate" and (status.reason or "").strip())


def _day(when: datetime | None) -> str:
    return when.date().isoformat() if when else "(date unknown)"


def _assess_patch(
    ps: Patchset,
    index: int,
    patch: Any,
    statuses: list[RefStatus],
    waiver: WaiverReview | None,
    evidence: list[ContentEvidence],
    today: date,
) -> Assessment:
    line = ps.patch_line(index, "upstream") or ps.patch_line(index, "id") or ps.patch_line(index)
    declared = None
    if patch.upstream_status is not None:
        declared = f"{patch.upstream_status.status}: {patch.upstream_status.reason}"
    a = Assessment(
        patchset=ps.name,
        patchset_path=ps.path,
        patch_id=patch.id,
        index=index,
        line=line,
        verdict=Verdict.ATTENTION,
        reason="",
        refs=statuses,
        upstream_status=declared,
        waiver=waiver,
    )
    for s in statuses:
        a.warnings.extend(f"{s.ref.short}: {w}" for w in s.warnings)
    tracked = [s for s in statuses if s.ref.kind != "other"]
    fixes = [s for s in tracked if s.fix] or tracked
    merged = [s.merged_at for s in fixes if s.merged_at is not None]
    a.merged_at = max(merged) if merged else None
    if not statuses and _by_design(patch):
        # Yocto's "Inappropriate [reason]": the patch is not meant to go upstream; carrying it
        # is the plan, and its waiver's review date (below) is what brings it back to a person
        a.verdict = Verdict.KEEP
        a.reason = f"carried by design (Upstream-Status {declared})"
    elif not statuses:
        a.reason = "no upstream reference" + (f" (Upstream-Status {declared})" if declared else "")
    elif not tracked:
        a.reason = "no upstream reference a GitHub client can answer for: " + ", ".join(
            s.ref.text for s in statuses
        )
    else:
        verdicts = [s.verdict for s in fixes]
        if Verdict.ATTENTION in verdicts:
            first = next(s for s in fixes if s.verdict is Verdict.ATTENTION)
            a.verdict, a.reason = Verdict.ATTENTION, f"{first.ref.short}: {first.reason}"
        elif all(v is Verdict.REMOVE for v in verdicts):
            a.verdict = Verdict.REMOVE
            a.reason = "; ".join(f"{s.ref.short}: {s.reason}" for s in fixes)
        elif Verdict.KEEP in verdicts:
            first = next(s for s in fixes if s.verdict is Verdict.KEEP)
            a.verdict, a.reason = Verdict.KEEP, f"{first.ref.short}: {first.reason}"
        else:
            bumps = [s for s in fixes if s.verdict is Verdict.BUMP]
            a.verdict = Verdict.BUMP
            a.needed_commits = unique(s.needed_commit for s in bumps if s.needed_commit)
            a.reason = "; ".join(f"{s.ref.short}: {s.reason}" for s in bumps)
    if evidence:
        weigh(a, evidence)
    if waiver is not None and a.verdict is not Verdict.REMOVE:
        if waiver.problem:
            a.verdict = Verdict.ATTENTION
            a.reason = f"waiver {waiver.waiver}: {waiver.problem}; " + a.reason
        elif waiver.review is not None and waiver.review < today:
            a.verdict = Verdict.ATTENTION
            a.reason = (
                f"the review date {waiver.review.isoformat()} of waiver {waiver.waiver} has "
                f"passed; " + a.reason
            )
    return a


# -- waivers ----------------------------------------------------------------------------------


def waiver_reviews(
    folder: Path, patchsets: Sequence[Patchset]
) -> dict[tuple[str, str], WaiverReview]:
    """Review dates of the waivers in ``folder``, per ``(patchset name, patch id)`` covered.

    A patch is covered by the waiver its ``waiver:`` key names, and by every waiver whose front
    matter lists it in ``patches`` (as ``id`` or ``patchset/id``). The review date is the
    earlier of ``review_by`` and ``expires``. A waiver that does not parse is reported on the
    patches that name it, not raised: the report still runs.

    Args:
        folder: the waiver folder (``waivers/``); a missing folder holds none.
        patchsets: the patchsets whose patches are looked up.
    """
    from ..waivers import parse_waiver, waiver_files

    by_id: dict[str, WaiverReview] = {}
    listed: dict[str, list[WaiverReview]] = {}
    if folder.is_dir():
        for path in waiver_files(folder).waivers:  # not README.md, _*.md, translated copies
            try:
                w = parse_waiver(path)
            except InputError as exc:
                by_id[path.stem] = WaiverReview(path.stem, None, path, f"unreadable ({exc})")
                continue
            fm = w.front_matter
            dates = [d for d in (fm.review_by, fm.expires) if d] if fm else []
            review = WaiverReview(w.id, min(dates) if dates else None, path)
            by_id[w.id] = review
            for name in w.patches:
                listed.setdefault(str(name), []).append(review)
    out: dict[tuple[str, str], WaiverReview] = {}
    for ps in patchsets:
        for patch in ps.patches:
            candidates = [*listed.get(patch.id, []), *listed.get(f"{ps.name}/{patch.id}", [])]
            if patch.waiver and patch.waiver in by_id:
                candidates.insert(0, by_id[patch.waiver])
            if candidates:
                problems = [c for c in candidates if c.problem]
                dated = [c for c in candidates if c.review is not None]
                if problems:
                    out[(ps.name, patch.id)] = problems[0]
                elif dated:
                    out[(ps.name, patch.id)] = min(dated, key=lambda c: c.review or date.max)
                else:
                    out[(ps.name, patch.id)] = candidates[0]
    return out


# -- the audit --------------------------------------------------------------------------------


def upstream_findings(
    patchsets: Sequence[Patchset],
    *,
    client: GitHubClient | None = None,
    api_url: str | None = None,
    cache_dir: Path | None = None,
    today: date | None = None,
    evidence: Mapping[tuple[str, str], list[ContentEvidence]] | None = None,
) -> list[tuple[Path, int | None, str, str]]:
    """Findings for ``patchbay audit --upstream``: every patch whose verdict is ``remove``,
    judged by :func:`assess` exactly as the report judges it (with the same content evidence,
    when the pinned image is given), so PB501 and the report agree on every patch.

    Args:
        patchsets: the audited patchsets.
        client: a forge client; default :meth:`GitHubClient.from_env` with ``api_url`` and
            ``cache_dir``.
        api_url: GitHub API base (default ``$PATCHBAY_GITHUB_API`` or api.github.com).
        cache_dir: the cache folder (default ``~/.cache/patchbay``); the ETag cache is its
            ``github/`` subfolder, shared with ``patchbay report``.
        today: the date waiver review dates are judged against (waivers do not change a
            ``remove``; the argument is passed through for consistency).
        evidence: content evidence of the pinned image, as for :func:`assess`.

    Returns:
        ``(patchset file, line, patch id, message)`` per removable patch, in patchset order;
        the line is that of the patch's ``upstream`` key (or its ``id``).

    Raises:
        RateLimitError: the forge's rate limit outlasts the wait bound (exit 1).
        InputError: ``api_url`` is not an http(s) URL.
    """
    own = client is None
    if client is None:
        from ..options import default_cache_dir

        client = GitHubClient.from_env(
            api_url, cache_dir=(cache_dir or default_cache_dir()) / "github"
        )
    try:
        assessed = assess(patchsets, client, today=today, evidence=evidence)
    finally:
        if own:
            client.close()
    out = []
    for a in assessed:
        if a.verdict is Verdict.REMOVE:
            message = f"the fix is in the pinned image; remove the patch ({a.reason})"
            out.append((a.patchset_path, a.line, a.patch_id, message))
    return out
