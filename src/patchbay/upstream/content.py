"""Content evidence without an image: a diff patch's files read from the forge at a commit and
judged hunk by hunk, as ``check`` judges an image.

The forge's answer about a reference (merged, in the pinned commit) says nothing of which
hunks landed: a PR may carry only part of a patch, or another version of it. So for every diff
patch with a tracked reference, the report reads the files the patch changes from the forge
(``GET /repos/{o}/{r}/contents/{path}?ref=SHA``, through the client's ETag cache) at the
component's pinned commit (the image as pinned: ``status``'s words), or, when the component
pins none, at the merge commit of the reference (an image built from it: ``check``'s words),
writes them into a scratch folder laid out as the target's (the repository's files are taken to
sit where the package's do: ``vllm/...``, ``aiter/...``), and runs the classification engine
of ``check`` on them (:func:`patchbay.apply.check.check_patchset`). The result is a
:class:`~patchbay.upstream.verdicts.ContentEvidence` that :func:`.evidence.weigh` uses exactly as
an image's: ``remove`` only when every hunk is there by content.

When nothing can be read (the diff is not vendored here, no commit is known, the forge does not
answer, none of the files exists at the commit), the verdict is by reference only, and is never
``remove`` (:func:`by_reference_only`).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ..environment.paths import check_relative
from ..errors import PatchbayError
from ..patchset.model import BaseGuard, DiffPatch, Patchset
from .github import GitHubError
from .queries import GitHubClient
from .verdicts import Assessment, ContentEvidence, RefState, RefStatus, Verdict


@dataclass
class Unread:
    """Why a patch's content could not be read from the forge (one phrase)."""

    why: str


def _commits_to_read(
    statuses: list[RefStatus], pins: dict[str, str | None]
) -> list[tuple[str, str, str, str]]:
    """``(repository, commit, image, where)`` to read: the pinned commit of a fix reference's
    repository (the image as pinned), and the newest merge commit of a merged fix that is not
    in the pinned image (an image built from it), in that order."""
    out = []
    fixes = [s for s in statuses if s.fix and s.ref.repository]
    for s in fixes:
        repo = str(s.ref.repository)
        pin = pins.get(repo.lower())
        if pin:
            out.append(
                (repo, pin, "pinned", f"{repo} at {pin[:12]} (the pinned commit, from the forge)")
            )
            break
    merged = [
        s for s in fixes if s.fix_commit and s.state is RefState.MERGED and s.in_image is not True
    ]
    merged.sort(key=lambda s: s.merged_at.timestamp() if s.merged_at else 0.0)
    if merged:
        last = merged[-1]
        repo, sha = str(last.ref.repository), str(last.fix_commit)
        where = f"{repo} at {sha[:12]} (the merge commit of {last.ref.short}, from the forge)"
        out.append((repo, sha, "candidate", where))
    return out


def forge_evidence(
    ps: Patchset,
    patch: DiffPatch,
    parsed: Any,
    statuses: list[RefStatus],
    pins: dict[str, str | None],
    client: GitHubClient,
) -> list[ContentEvidence] | Unread:
    """The content evidence of ``patch`` read from the forge (see the module docstring): at
    the pinned commit, then at the merge commit of a fix the pin does not hold.

    Args:
        ps: the patch's patchset.
        patch: a diff patch; ``parsed`` its :class:`~patchbay.diff.parse.ParsedDiff` (None
            when its diff is not readable here).
        statuses: its references' states (the fix commits come from them).
        pins: repository (lower case) -> the component's pinned commit.
        client: the forge client.

    Returns:
        The evidence (pinned first), or :class:`Unread` saying why there is none. Never
        raises for the forge's or the tree's failures: the report goes on by reference.
    """
    if parsed is None:
        return Unread("its diff is not vendored here")
    commits = _commits_to_read(statuses, pins)
    if not commits:
        return Unread("no pinned or merge commit to read it at")
    out: list[ContentEvidence] = []
    for repo, sha, image, label in commits:
        got = _read_and_judge(ps, patch, parsed, client, repo, sha, image, label)
        if isinstance(got, Unread):
            return got
        out.append(got)
    return out


def _read_and_judge(
    ps: Patchset,
    patch: DiffPatch,
    parsed: Any,
    client: GitHubClient,
    repo: str,
    sha: str,
    image: str,
    label: str,
) -> ContentEvidence | Unread:
    """Read ``patch``'s files from ``repo`` at ``sha`` into a scratch tree and judge them."""
    scratch = Path(tempfile.mkdtemp(prefix="patchbay-forge-"))
    try:
        target = ps.spec.targets[patch.target]
        if target.package is None:
            return Unread(f"its target {patch.target} is no package folder")
        (scratch / target.package.split(".")[0]).mkdir(exist_ok=True)
        base = scratch / (target.path or "")
        found = 0
        for fp in parsed.files:
            path = fp.old_path or fp.path
            try:
                data = client.file_at(repo, path, sha)
            except GitHubError as exc:
                return Unread(f"{repo}/{path} at {sha[:12]} could not be read ({exc.reason})")
            if data is None:
                continue
            found += 1
            dest = base / check_relative(path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        if not found:
            return Unread(f"none of its files is in {repo} at {sha[:12]}")
        return _judged(ps, patch, scratch, image, label)
    except PatchbayError as exc:
        return Unread(f"the files read from {repo} could not be judged ({exc.reason})")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _judged(ps: Patchset, patch: DiffPatch, root: Path, image: str, where: str) -> ContentEvidence:
    """``check``'s judgement of ``patch`` alone on the tree at ``root``."""
    from ..apply.check import check_patchset
    from ..environment.targets import resolve_environment
    from .evidence import evidence_of

    spec = msgspec.structs.replace(
        ps.spec,
        targets={patch.target: ps.spec.targets[patch.target]},
        patches=[patch],
        base=BaseGuard(),
        components=[],
    )
    one = Patchset(spec=spec, path=ps.path, folder=ps.folder, document=ps.document)
    env = resolve_environment(one, root=root, state_dir=root / ".patchbay")
    (item,) = check_patchset(one, env).items
    state = item.report.status.value if image == "pinned" else item.verdict.value
    return evidence_of(item.report, image, where, state)


def by_reference_only(a: Assessment, unread: Unread) -> None:
    """Mark ``a`` as judged by reference only: a ``remove`` that no content confirms becomes
    ``attention`` (never tell a team to delete a live patch on a reference's word)."""
    note = f"by reference only: the content could not be read ({unread.why})"
    if a.verdict is Verdict.REMOVE:
        a.verdict = Verdict.ATTENTION
        a.reason = (
            f"{note}; the references say the fix is in the pinned image ({a.reason}); confirm "
            "with `patchbay check --root` on the image before removing the patch"
        )
    else:
        a.warnings.append(note)
