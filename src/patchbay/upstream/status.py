"""Assessing patchsets: ask the forge about every upstream reference, and judge every patch.

:func:`assess` gathers the forge's answers in concurrent rounds, reads each reference's state
from them (:mod:`.refstates`, fixes judged by :mod:`.fixes`), combines the references into one
verdict per patch (:mod:`.verdicts` says what each verdict means), lets an image's content
bend it (:mod:`.evidence`; without an image, a diff patch's files read from the forge at the
pinned or merge commit, :mod:`.content`) and applies the review dates of waivers
(:func:`waiver_reviews`);
:func:`upstream_findings` is the same judgement for ``patchbay audit --upstream``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..patchset.coverage import coverage_lines, hunk_ranges, local_hunks
from ..patchset.model import DiffPatch, Patchset
from .content import Unread, by_reference_only, forge_evidence
from .evidence import weigh
from .fixes import Fix, judge_fix
from .github import GitHubError, malformed, unique
from .queries import CommitInfo, GitHubClient, Issue, PullRequest
from .refs import GITHUB_WEB_HOSTS, UpstreamRef, parse_ref, web_host_of
from .refstates import ForgeAnswers, fixes_of, ref_status
from .verdicts import Assessment, ContentEvidence, RefStatus, Verdict, WaiverReview


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
        [parse_ref(text, web_hosts=hosts) for text in patch.upstream_refs]
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
    ctx = ForgeAnswers(by_item, commits, branches)

    # every fix commit to judge, per patchset (pins differ between patchsets)
    fixes: dict[tuple[str, str, str | None], Fix] = {}
    plans: list[tuple[Patchset, int, Any, list[UpstreamRef]]] = []
    flat = iter(parsed)
    for ps in patchsets:
        pins = _pins(ps)
        for i, patch in enumerate(ps.patches):
            refs = next(flat)
            plans.append((ps, i, patch, refs))
            for ref in refs:
                for fix in fixes_of(ref, ctx, pins):
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
    judged = {key: judge_fix(fix, comparisons) for key, fix in fixes.items()}

    out = []
    diffs = {ps.name: _parsed_diffs(ps) for ps in patchsets}
    for ps, i, patch, refs in plans:
        pins = _pins(ps)
        statuses = [ref_status(ref, ctx, pins, judged) for ref in refs]
        waiver = (waivers or {}).get((ps.name, patch.id))
        seen = (evidence or {}).get((ps.name, patch.id), [])
        parsed = diffs[ps.name].get(patch.id)
        unread = None
        if not seen and isinstance(patch, DiffPatch) and any(r.kind != "other" for r in refs):
            # no image at hand: read the patch's files from the forge and judge them
            got = forge_evidence(ps, patch, parsed, statuses, pins, client)
            seen, unread = (got, None) if isinstance(got, list) else ([], got)
        mine = None if parsed is None else [(fp.path, len(fp.hunks)) for fp in parsed.files]
        a = _assess_patch(ps, i, patch, statuses, waiver, seen, today, mine, unread)
        a.coverage = coverage_lines(patch, mine)
        out.append(a)
    return out


def _parsed_diffs(ps: Patchset) -> dict[str, Any]:
    """The parsed diff (:class:`~patchbay.diff.parse.ParsedDiff`) of every diff patch whose
    content is readable here (a file, or vendored and locked), by patch id: what ``covers``
    counts over and what the forge's files are judged against."""
    if not any(isinstance(p, DiffPatch) for p in ps.patches):
        return {}
    from ..apply.plan import load_patches
    from ..errors import PatchbayError

    try:
        loaded = load_patches(ps)
    except PatchbayError:
        return {}
    return {
        p.id: lp.data
        for p, lp in zip(ps.patches, loaded, strict=True)
        if isinstance(p, DiffPatch) and lp.data is not None
    }


def _partly_covered(
    patch: Any, fixes: list[RefStatus], files: list[tuple[str, int]] | None
) -> set[int] | None:
    """The hunks the deciding references leave uncovered (an empty set: they cover it all),
    or None when a plain reference among them covers the whole patch. Unknown hunks (the diff
    is not readable) count as uncovered: a partial reference never removes a patch alone."""
    coverage = getattr(patch, "coverage", {})
    if not coverage or any(s.ref.text not in coverage for s in fixes):
        return None
    rest = local_hunks({s.ref.text: coverage[s.ref.text] for s in fixes}, files)
    return {0} if rest is None else rest


def _pins(ps: Patchset) -> dict[str, str | None]:
    """Repository (lower case) -> pinned commit (None when the component names none)."""
    return {c.repository.lower(): c.commit for c in ps.spec.components if c.repository}


def _by_design(patch: Any) -> bool:
    """An ``Inappropriate`` upstream status with a reason: not meant for upstream."""
    status = patch.upstream_status
    return bool(status and status.status == "Inappropriate" and (status.reason or "").strip())


def _assess_patch(
    ps: Patchset,
    index: int,
    patch: Any,
    statuses: list[RefStatus],
    waiver: WaiverReview | None,
    evidence: list[ContentEvidence],
    today: date,
    files: list[tuple[str, int]] | None = None,
    unread: Unread | None = None,
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
        if a.verdict in (Verdict.REMOVE, Verdict.BUMP):
            rest = _partly_covered(patch, fixes, files)
            if rest:
                shown = "the rest" if rest == {0} else hunk_ranges(rest)
                a.verdict = Verdict.REFRESH
                a.reason = (
                    f"{a.reason}; but only part of the patch: {shown} not covered by it "
                    "(local), so trim the patch rather than remove it"
                )
    if evidence:
        weigh(a, evidence)
    elif unread is not None:
        by_reference_only(a, unread)
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
