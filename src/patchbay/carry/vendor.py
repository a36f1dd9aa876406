"""``patchbay vendor``: pin a patchset's remote content, with network access, into the lock.

For every diff patch with an upstream ``source``: a PR (``owner/repo#N``) resolves to its head
commit, and its diff is taken as GitHub's compare of the PR's base and head commits; a commit
resolves to its own diff; a PR with a ``commit`` is taken as it was at that head commit (the
three-dot compare of the PR's base with it). Only the file patches under the source's ``paths``
are kept, and the ones left out are listed, so a reviewer sees what a filter dropped. A
here-document source is the body of one here-document of a script at a commit
(:mod:`.script_source`; the script from the forge's contents API or a ``--from`` copy). The
content goes to ``vendor/<id>.patch`` in the patchset folder and its sha256 and the commits go
into ``patchbay.lock`` (like nixpkgs' ``fetchpatch``: the pin is a content hash, never a moving
URL). Artifact files declared without a hash are downloaded once and their sha256 and size are
locked too. A ``pip`` patch built from a ``source`` at a tag or branch (or the default branch)
gets the commit that ref points at now (``GET /repos/{owner}/{repo}/commits/{ref}``; the
default branch's name from ``GET /repos/{owner}/{repo}``), recorded under ``revisions``.
``apply`` only reads what vendor wrote.

Requests go through :class:`~patchbay.upstream.queries.GitHubClient` (configurable API base,
retries, rate limits; the token from ``GITHUB_TOKEN`` or ``GH_TOKEN`` is never printed and is
sent only over https or to a loopback stand-in). A pin that is already in the lock never moves
silently: if upstream serves another diff, vendor refuses unless ``--update``; the same diff
in another form (another ``index`` abbreviation, hunk-header text, mail headers: the same
identity, :mod:`patchbay.diff.identity`) is re-locked with a note.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from ..apply.journal import write_atomic
from ..apply.ledger import sha256_bytes
from ..diff.identity import diff_identity
from ..diff.parse import git_header_names, parse_diff
from ..environment.paths import PathRejected
from ..errors import InputError, RefusedError
from ..options import RunOptions
from ..patchset.lockfile import Lock, LockedArtifact, LockedRevision, LockedSource
from ..patchset.model import (
    ArtifactPatch,
    BuildSource,
    DiffPatch,
    Patchset,
    PipPatch,
    RemoteSource,
    ReplacePatch,
)
from ..upstream.github import DEFAULT_API
from ..upstream.queries import GitHubClient
from .fetch import fetch_pinned
from .script_source import replace_constants, script_diff


@dataclass
class VendorResult:
    """What vendor pinned.

    Attributes:
        sources: patch ids of diff sources locked.
        artifacts: URLs of artifacts locked.
        revisions: patch id -> ``owner/repo@ref -> <commit>`` for source builds locked.
        left_out: patch id -> paths of the upstream diff its ``paths`` filter did not keep.
        relocked: patch id -> a note, for a source whose bytes changed upstream while its
            identity did not (re-locked, not refused).
        origins: patch id -> where a here-document source's script was read (a local copy's
            path, or the forge URL).
        skipped: patch id -> why ``--offline`` left it as it was (it needs the network).
    """

    sources: list[str] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)
    revisions: dict[str, str] = field(default_factory=dict)
    left_out: dict[str, list[str]] = field(default_factory=dict)
    relocked: dict[str, str] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


def filter_paths(diff: str, paths: list[str]) -> str:
    """Keep the ``diff --git`` file sections whose old or new path (without ``a/``/``b/``) is
    one of ``paths`` or lies under one of them."""
    return split_paths(diff, paths)[0]


def split_paths(diff: str, paths: list[str]) -> tuple[str, list[str]]:
    """:func:`filter_paths`, and the paths of the file sections it left out (in diff order)."""
    if not paths:
        return diff, []
    sections = re.split(r"(?m)^(?=diff --git )", diff)
    kept, left = [], []
    for section in sections:
        names = _section_names(section)
        if names is None:
            continue
        if any(_under(p, prefix) for p in names for prefix in paths):
            kept.append(section)
        else:
            left.append(names[-1])
    return "".join(kept), left


def _section_names(section: str) -> list[str] | None:
    """The old and new path of one ``diff --git`` section without ``a/``/``b/`` (git's rule
    for unquoted names with spaces, :func:`patchbay.diff.parse.git_header_names`; when the
    header alone cannot tell, the ``---``/``+++`` lines), or None for text that is no section."""
    first = section.split("\n", 1)[0]
    if not first.startswith("diff --git "):
        return None
    try:
        halves = git_header_names(first[len("diff --git ") :].rstrip("\r"), 1)
    except (ValueError, PathRejected):
        return None
    if halves is None:
        found = re.findall(r"(?m)^(?:---|\+\+\+) [ab]/([^\t\n]+)", section)
        return found or None
    return [half.split("/", 1)[-1] for half in halves]


def _under(path: str, prefix: str) -> bool:
    prefix = prefix.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


def vendor_patchset(
    patchset: Patchset,
    *,
    api_url: str = DEFAULT_API,
    options: RunOptions | None = None,
    update: bool = False,
    local_copies: Sequence[Path] = (),
) -> VendorResult:
    """Download and lock every remote source and unhashed artifact of ``patchset``.

    A source or artifact that is locked already keeps its pin: if upstream now serves other
    bytes for it, vendor refuses (a pin that moves silently would defeat it) unless ``update``.
    A here-document source (``file`` + ``heredoc``) reads its script from one of
    ``local_copies`` of that file name when there is one (checked against the lock's hash of
    the script, :mod:`patchbay.carry.script_source`), so it needs no network. With
    ``options.offline``, what would need the network is left as it is, listed in ``skipped``.

    Raises:
        RefusedError: the forge or a download host failed, or locked content changed upstream,
            or a locked tag or branch points at another commit now (nothing is written then).
        InputError: a path filter keeps nothing of the upstream diff, or the diff is corrupt.
    """
    options = options or RunOptions()
    lock = Lock.load(patchset.folder)
    result = VendorResult()
    gh = GitHubClient.from_env(api_url, timeout=options.http_timeout, retries=options.retries)
    pending_files: list[tuple[Path, bytes]] = []
    for patch in patchset.patches:
        if options.offline:
            why = _needs_network(patch, local_copies)
            if why is not None:
                result.skipped[patch.id] = why
                continue
        if isinstance(patch, PipPatch) and patch.source is not None:
            revision = _resolve_revision(gh, patch, patch.source)
            if revision is None:  # a full commit id pins itself
                lock.revisions.pop(patch.id, None)
                continue
            old_rev = lock.revisions.get(patch.id)
            if (
                old_rev is not None
                and old_rev.matches(revision.repo, revision.ref)
                and old_rev.commit != revision.commit
                and not update
            ):
                raise RefusedError(
                    f"{patch.source.label} now points at {revision.commit}, not the locked "
                    f"{old_rev.commit}; nothing was changed. Review the change, then run "
                    "`patchbay vendor --update` to move the pin",
                    patch_id=patch.id,
                )
            lock.revisions[patch.id] = revision
            result.revisions[patch.id] = f"{patch.source.label} -> {revision.commit}"
        elif isinstance(patch, DiffPatch) and patch.source is not None:
            if patch.source.heredoc is not None:
                cut = script_diff(gh, patch, patch.source, lock.sources.get(patch.id), local_copies)
                locked, content, left = cut.locked, cut.content, []
                result.origins[patch.id] = cut.origin
            else:
                locked, content, left = _fetch_source(gh, patch, patch.source)
            if left:
                result.left_out[patch.id] = left
            parsed = parse_diff(content, source=patchset.folder / locked.file, strip=patch.strip)
            locked.identity = diff_identity(parsed)
            old = lock.sources.get(patch.id)
            if old is not None and old.ref == locked.ref and old.sha256 != locked.sha256:
                if _old_identity(patchset, patch, old) == locked.identity:
                    result.relocked[patch.id] = (
                        f"upstream serves the same diff in another form (sha256 "
                        f"{locked.sha256[:12]}, was {old.sha256[:12]}; same identity "
                        f"{locked.identity[:12]}): re-locked"
                    )
                else:
                    _refuse_moved(patch.id, locked.url, old.sha256, locked.sha256, update)
            pending_files.append((patchset.folder / locked.file, content))
            lock.sources[patch.id] = locked
            result.sources.append(patch.id)
        elif isinstance(patch, ReplacePatch) and patch.source is not None:
            cut = script_diff(gh, patch, patch.source, lock.sources.get(patch.id), local_copies)
            content = replace_constants(patch, cut.content, cut.origin)
            cut.locked.sha256 = sha256_bytes(content)
            result.origins[patch.id] = cut.origin
            old = lock.sources.get(patch.id)
            if old is not None and old.ref == cut.locked.ref and old.sha256 != cut.locked.sha256:
                _refuse_moved(patch.id, cut.locked.url, old.sha256, cut.locked.sha256, update)
            pending_files.append((patchset.folder / cut.locked.file, content))
            lock.sources[patch.id] = cut.locked
            result.sources.append(patch.id)
        elif isinstance(patch, ArtifactPatch):
            for f in patch.files:
                if f.sha256 is None:
                    _, sha = fetch_pinned(f.url, None, options, size=f.size)
                    size = (options.cache_dir / "sha256" / sha).stat().st_size
                    old_art = lock.artifacts.get(f.url)
                    if old_art is not None and old_art.sha256 != sha:
                        _refuse_moved(patch.id, f.url, old_art.sha256, sha, update)
                    lock.artifacts[f.url] = LockedArtifact(sha256=sha, size=size)
                    result.artifacts.append(f.url)
    for path, content in pending_files:  # write only once everything was fetched
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, content, mode=0o644)
    lock.save(patchset.folder)
    return result


def _needs_network(patch: object, local_copies: Sequence[Path]) -> str | None:
    """Why vendoring ``patch`` would need the network (None: it does not, or has nothing to
    vendor): what ``vendor --offline`` leaves unlocked, and says so."""
    if isinstance(patch, PipPatch) and patch.source is not None and patch.source.commit is None:
        return f"the commit of {patch.source.label} is asked of the forge"
    if isinstance(patch, (DiffPatch, ReplacePatch)) and patch.source is not None:
        src = patch.source
        if src.file is None:
            return f"the diff of {src.ref} is asked of the forge"
        name = PurePosixPath(src.file).name
        if not any(p.name == name for p in local_copies):
            return f"no --from copy named {name}, and the forge is not asked offline"
    if isinstance(patch, ArtifactPatch) and any(f.sha256 is None for f in patch.files):
        return "an artifact without a sha256 is downloaded to hash it"
    return None


def _old_identity(patchset: Patchset, patch: DiffPatch, old: LockedSource) -> str | None:
    """The identity of what the lock pinned: recorded, or (a lock written before identities)
    computed from the vendored file when it still has the locked bytes."""
    if old.identity:
        return old.identity
    path = patchset.folder / old.file
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if sha256_bytes(data) != old.sha256:
        return None
    try:
        return diff_identity(parse_diff(data, source=path, strip=patch.strip))
    except InputError:
        return None


def _refuse_moved(patch_id: str, url: str, old: str, new: str, update: bool) -> None:
    if not update:
        raise RefusedError(
            f"{url} now serves other content (sha256 {new}) than the locked {old}; nothing was "
            "changed. Review the change, then run `patchbay vendor --update` to move the pin",
            patch_id=patch_id,
        )


def _resolve_revision(gh: GitHubClient, patch: PipPatch, src: BuildSource) -> LockedRevision | None:
    """The commit ``src``'s ref points at now (None when the ref is a commit id already).

    Raises:
        RefusedError: the forge failed, or answered without a commit id.
    """
    if src.commit is not None:
        return None
    branch = None
    ref = src.ref
    if ref is None:
        info = gh.get(f"/repos/{src.repo}").data
        branch = info.get("default_branch") if isinstance(info, dict) else None
        if not isinstance(branch, str) or not branch:
            raise RefusedError(
                f"{gh.api}/repos/{src.repo} answered without a default branch",
                patch_id=patch.id,
            )
        ref = branch
    path = f"/repos/{src.repo}/commits/{quote(ref, safe='/')}"
    data = gh.get(path).data
    sha = data.get("sha") if isinstance(data, dict) else None
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise RefusedError(f"{gh.api}{path} answered without a commit id", patch_id=patch.id)
    return LockedRevision(
        repo=src.repo, ref=src.ref, commit=sha, url=f"{gh.api}{path}", branch=branch
    )


def _fetch_source(
    gh: GitHubClient, patch: DiffPatch, src: RemoteSource
) -> tuple[LockedSource, bytes, list[str]]:
    if src.pr is not None:
        pr = gh.get(f"/repos/{src.repo}/pulls/{src.pr}").data
        try:
            head, base = pr["head"]["sha"], pr["base"]["sha"]
        except (KeyError, TypeError):
            raise RefusedError(
                f"{gh.api}/repos/{src.repo}/pulls/{src.pr} answered without head and base commits",
                patch_id=patch.id,
            ) from None
        if src.commit is not None:  # the PR as it was at this head (three dots: merge base)
            head = src.commit
        path = f"/repos/{src.repo}/compare/{base}...{head}"
        diff = gh.get_diff(path)
    else:
        head, base = src.commit, None
        path = f"/repos/{src.repo}/commits/{head}"
        diff = gh.get_diff(path)
    kept, left = split_paths(diff, src.paths)
    if not kept.strip():
        raise InputError(
            f"the upstream diff of {src.ref} has no file under {', '.join(src.paths)}",
            patch_id=patch.id,
        )
    content = kept.encode()
    locked = LockedSource(
        repo=src.repo,
        ref=src.ref,
        commit=str(head),
        base=base,
        url=f"{gh.api}{path}",
        file=patch.content_path,
        sha256=sha256_bytes(content),
        paths=list(src.paths),
    )
    return locked, content, left
