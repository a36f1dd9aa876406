"""Where a patch's content comes from when it is not a file of the patchset: the upstream
source of a ``diff`` patch (a PR, a commit, or a here-document of a file at a commit), and the
repository a ``pip`` patch builds from. :mod:`patchbay.carry.vendor` pins both in the lock file.
"""

# No ``from __future__ import annotations``, as in :mod:`.model`: msgspec reads the annotations.
from typing import Annotated

import msgspec
from msgspec import Meta, Struct

from ..environment.paths import check_relative
from ..patterns import pattern
from .validation import FieldError

REPO = r"^[\w.-]+/[\w.-]+\Z"
COMMIT_ID = r"^[0-9a-f]{40}\Z"
_REPO, _COMMIT_ID = REPO, COMMIT_ID
# a here-document's delimiter as the shell reads a quoted one: a word, no quotes or blanks
_DELIMITER = r"^[A-Za-z0-9_.-]+\Z"


class Strict(Struct, forbid_unknown_fields=True, kw_only=True):
    """The base of every struct of the patchset document: strict conversion
    (:func:`~patchbay.patchset.validation.convert`), so ``strip: true`` or ``count: "2"`` and an
    unknown key are errors, never coerced or ignored."""


_Strict = Strict


class RemoteSource(_Strict, kw_only=True):
    """Diff content taken from upstream, pinned by ``patchbay vendor`` in the lock file.

    ``pr`` alone resolves to the PR's head commit when vendored; ``pr`` with ``commit`` takes the
    PR as it was at that head commit (GitHub's three-dot compare of the PR's base with it, so
    from their merge base); ``commit`` alone is that commit's own diff. ``paths`` keeps only the
    file patches under these (pre-strip) paths, for a change spanning two install roots.
    """

    repo: Annotated[str, Meta(pattern=_REPO, description="owner/name on GitHub")]
    pr: Annotated[int, Meta(ge=1)] | None = None
    commit: Annotated[str, Meta(pattern=_COMMIT_ID)] | None = None
    paths: list[str] = msgspec.field(default_factory=list)
    file: (
        Annotated[str, Meta(description="A file of `repo` at `commit` that holds the diff")] | None
    ) = None
    heredoc: (
        Annotated[
            str,
            Meta(
                pattern=_DELIMITER,
                description="The delimiter of the here-document in `file` whose body is the diff",
            ),
        ]
        | None
    ) = None

    def __post_init__(self) -> None:
        if self.pr is None and self.commit is None:
            raise ValueError("give `pr`, `commit` (a full 40-hex commit id), or both")
        if self.file is not None:
            try:
                self.file = check_relative(self.file, folder=False)
            except ValueError as exc:
                raise FieldError("file", str(exc)) from None
        if (self.file is None) != (self.heredoc is None):
            raise ValueError("`file` and `heredoc` go together: the here-document of that file")
        if self.file is not None and (self.pr is not None or self.commit is None):
            raise ValueError(
                "a here-document source is a file at a commit: give `commit` (40-hex), not `pr`"
            )
        if self.file is not None and self.paths:
            raise ValueError("`paths` filters a PR's or commit's diff, not a here-document")

    @property
    def ref(self) -> str:
        """``owner/repo#N``, ``owner/repo@<commit>``, ``owner/repo#N@<commit>``, or
        ``owner/repo@<commit>:<file><<<DELIMITER>`` for a here-document."""
        pr = f"#{self.pr}" if self.pr is not None else ""
        commit = f"@{self.commit}" if self.commit is not None else ""
        where = f":{self.file}<<{self.heredoc}" if self.file is not None else ""
        return f"{self.repo}{pr}{commit}{where}"


_GIT_REF = pattern(r"^(?!.*\.\.)(?!.*/$)(?!.*\.lock$)[A-Za-z0-9_][A-Za-z0-9._/-]*$")
_COMMIT = pattern(r"^[0-9a-f]{40}$")


class BuildSource(_Strict, kw_only=True):
    """A repository a ``pip`` patch builds from, at a ref ``patchbay vendor`` pins to a commit.

    ``ref`` is a tag, a branch or a full commit id; omitted, the repository's default branch.
    A tag or branch moves, so ``vendor`` resolves it (GitHub's ``GET
    /repos/{owner}/{repo}/commits/{ref}``) and records the commit in ``patchbay.lock``; ``apply``
    builds that commit and refuses the patch until it is locked. ``url`` is the git URL pip
    clones (default ``https://github.com/<repo>.git``; a mirror, or ``file://`` in tests).
    """

    repo: Annotated[str, Meta(pattern=_REPO, description="owner/name on GitHub")]
    ref: (
        Annotated[
            str,
            Meta(
                description="Tag, branch or 40-hex commit (omitted: the default branch); vendor "
                "locks it"
            ),
        ]
        | None
    ) = None
    url: (
        Annotated[
            str,
            Meta(
                pattern=r"^(?:https|ssh|file|git)://[^\s#]+\Z",
                description="Git URL to clone (default https://github.com/<repo>.git)",
            ),
        ]
        | None
    ) = None

    def __post_init__(self) -> None:
        if self.ref is not None and not _GIT_REF.match(self.ref):
            raise FieldError("ref", f"{self.ref!r} is not a git tag, branch or commit name")

    @property
    def commit(self) -> str | None:
        """The ref itself when it is a full commit id (pinned without ``vendor``)."""
        return self.ref if self.ref is not None and _COMMIT.match(self.ref) else None

    @property
    def git_url(self) -> str:
        """What pip and git clone."""
        return self.url or f"https://github.com/{self.repo}.git"

    @property
    def label(self) -> str:
        """``owner/repo@ref`` (``@<default branch>`` when no ref is named)."""
        return f"{self.repo}@{self.ref or '<default branch>'}"
