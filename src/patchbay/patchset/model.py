"""The patchset format (schema version 1): one place for its shape, its checks and its JSON Schema.

A patchset is a folder holding ``patchset.yaml`` and the patch files it names. The YAML is
validated into the msgspec structs below (their types and constraints, then the checks of
their ``__post_init__``); :func:`load_patchset` turns every schema or consistency problem into
an :class:`~patchbay.errors.InputError` naming ``file:line``. ``patchbay schema`` prints
:func:`json_schema` so editors can validate patchsets as they are written.

Upstream status words follow Yocto's ``Upstream-Status`` tag (Pending, Submitted, Backport,
Inappropriate, Denied); a patch with no upstream reference must carry one, with a reason.
"""

# No ``from __future__ import annotations`` here: msgspec resolves string annotations through
# typing's evaluation on the first ``convert`` of each struct, ~10 ms of every cold run;
# annotations evaluated at class creation cost it nothing.
import re
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

import msgspec
from msgspec import Meta, Struct

from ..environment.paths import check_relative
from ..errors import InputError
from .inputfiles import PATCHSET_FILENAMES
from .validation import FieldError, check_field, convert, problem_of
from .yamlfile import YamlDocument, lines_only, load_yaml

SCHEMA_VERSION = 1

# `\Z`, not `$` (which Python lets match before a final newline); json_schema() writes `$`
_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z"
_SHA256 = r"^[0-9a-f]{64}\Z"
_REPO = r"^[\w.-]+/[\w.-]+\Z"
_COMMIT_ID = r"^[0-9a-f]{40}\Z"
_UPSTREAM_REF = re.compile(r"^(?:https?://\S+|[A-Za-z0-9][\w.-]*/[\w.-]+(?:#\d+|@[0-9a-f]{7,40}))$")


class _Strict(Struct, forbid_unknown_fields=True, kw_only=True):
    # strict conversion (validation.convert): `strip: true` or `count: "2"` are mistakes
    pass


def relative_posix_path(value: str) -> str:
    """Check that ``value`` is a relative POSIX path that stays below its root, through the
    one path gate (:func:`patchbay.environment.paths.check_relative`; ``./`` and ``//`` are
    normalised).

    Raises:
        ValueError: empty, absolute, with a ``..`` or ``.git`` component, a backslash, a NUL
            or another control character.
    """
    return check_relative(value, folder=True)


def _path_field(key: str, value: str | None) -> str | None:
    """:func:`relative_posix_path` of an optional field, its error reported at ``key``."""
    return None if value is None else check_field(key, relative_posix_path, value)


class Image(_Strict, kw_only=True):
    """The pinned container image the patchset was written for."""

    reference: Annotated[
        str, Meta(description="Image reference, e.g. vllm/vllm-openai-rocm:nightly-<sha>")
    ]
    digest: Annotated[str, Meta(pattern=r"^sha256:[0-9a-f]{64}\Z")] | None = None


class Component(_Strict, kw_only=True):
    """An engine distribution the image carries, and where its upstream lives."""

    distribution: Annotated[
        str, Meta(description="Distribution name as installed (PEP 503 normalised)")
    ]
    repository: (
        Annotated[str, Meta(pattern=_REPO, description="Upstream repository, owner/name")] | None
    ) = None
    commit: (
        Annotated[
            str, Meta(pattern=_COMMIT_ID, description="Upstream commit the image was built from")
        ]
        | None
    ) = None


class Target(_Strict, kw_only=True):
    """A named root where patches apply: an installed package's folder, or a per-user folder.

    With ``package``, the root is the directory that contains the installed package (usually
    site-packages), found in the engine's interpreter without importing the package, optionally
    followed by a relative ``path`` (a sibling data folder such as ``aiter_meta``).

    With ``home``, the root is a folder of the user patchbay runs as, outside the image (a JIT
    cache such as aiter's ``~/.aiter/jit``): ``$<env>`` when that variable is set in patchbay's
    environment (which is the one ``command`` patches get), else ``<home directory>/<home>``.
    The variable's value must be an absolute path without ``..``; a home folder that resolves
    (through a link) outside the home directory is refused. Paths below either kind of root go
    through the same gate (no ``..``, no link out of the root).
    """

    package: Annotated[str, Meta(pattern=r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*\Z")] | None = None
    path: str | None = None
    home: (
        Annotated[str, Meta(description="A folder relative to the user's home directory")] | None
    ) = None
    env: (
        Annotated[
            str,
            Meta(
                pattern=r"^[A-Za-z_][A-Za-z0-9_]*\Z",
                description="An environment variable that, when set, names the folder instead of "
                "`home`",
            ),
        ]
        | None
    ) = None

    def __post_init__(self) -> None:
        self.path = _path_field("path", self.path)
        self.home = _path_field("home", self.home)
        if (self.package is None) == (self.home is None):
            raise ValueError(
                "give `package` (the folder of an installed package) or `home` (a folder under "
                "the user's home directory, which `env` may override), not both"
            )
        if self.package is None and self.path is not None:
            raise ValueError("`path` goes with `package`; a `home` folder is a path already")
        if self.package is not None and self.env is not None:
            raise ValueError("`env` goes with `home`: a package's folder is found in the engine")


class TargetPath(_Strict, kw_only=True):
    """A path under a named target (for a ``command`` that cleans up beyond its own target)."""

    target: Annotated[str, Meta(description="Name of an entry in `targets`")]
    path: str

    def __post_init__(self) -> None:
        self.path = check_field("path", relative_posix_path, self.path)


class FileGuard(_Strict, kw_only=True):
    """A pristine file the image must carry (sha256 of its bytes before any patch)."""

    target: str
    path: str
    sha256: Annotated[str, Meta(pattern=_SHA256)]

    def __post_init__(self) -> None:
        self.path = check_field("path", relative_posix_path, self.path)


class BaseGuard(_Strict, kw_only=True):
    """What the image must be for ``apply`` to proceed (it fails closed otherwise)."""

    distributions: Annotated[
        dict[str, str],
        Meta(description="Distribution name -> PEP 440 specifier set, e.g. '==0.4.1+g1a2b3c4'"),
    ] = msgspec.field(default_factory=dict)
    files: list[FileGuard] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.distributions:
            return
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        for name, spec in self.distributions.items():
            try:
                SpecifierSet(spec)
            except InvalidSpecifier:
                raise FieldError(
                    ("distributions", name), f"{name}: {spec!r} is not a PEP 440 specifier set"
                ) from None


UpstreamStatusWord = Literal["Pending", "Submitted", "Backport", "Inappropriate", "Denied"]


class UpstreamStatus(_Strict, kw_only=True):
    """Yocto-style ``Upstream-Status`` with its reason (required: a bare word explains nothing)."""

    status: UpstreamStatusWord
    reason: Annotated[str, Meta(min_length=3)]


class PatchBase(_Strict, kw_only=True, tag_field="kind"):
    """Fields every patch has, whatever its kind (``kind``, the tag, is each kind's)."""

    kind: ClassVar[str]
    id: Annotated[
        str, Meta(pattern=_ID, description="Stable id; the ledger and waivers refer to it")
    ]
    target: Annotated[str, Meta(description="Name of an entry in `targets`")] | None = None
    description: Annotated[str, Meta(min_length=1)]
    upstream: Annotated[
        list[str],
        Meta(description="PR, issue or commit URLs, or owner/repo#N, or owner/repo@<commit>"),
    ] = msgspec.field(default_factory=list)
    upstream_status: UpstreamStatus | None = None
    waiver: Annotated[str, Meta(description="Id of the waiver that covers the patch")] | None = None
    after: Annotated[
        list[str],
        Meta(
            description="Ids of earlier patches this one is made on top of (the patchset is "
            "refused unless each comes before it in `patches`); a command runs when one of "
            "them changes"
        ),
    ] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        for n, ref in enumerate(self.upstream):
            if not _UPSTREAM_REF.match(ref):
                raise FieldError(
                    ("upstream", n),
                    f"{ref!r} is not an upstream reference (a URL, owner/repo#N or "
                    "owner/repo@<commit>)",
                )
        if not self.upstream and self.upstream_status is None:
            raise ValueError(
                "a patch needs `upstream` references, or `upstream_status` "
                "(Pending, Submitted, Backport, Inappropriate, Denied) with a reason"
            )


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

    def __post_init__(self) -> None:
        if self.pr is None and self.commit is None:
            raise ValueError("give `pr`, `commit` (a full 40-hex commit id), or both")

    @property
    def ref(self) -> str:
        """``owner/repo#N``, ``owner/repo@<commit>`` or ``owner/repo#N@<commit>``."""
        pr = f"#{self.pr}" if self.pr is not None else ""
        commit = f"@{self.commit}" if self.commit is not None else ""
        return f"{self.repo}{pr}{commit}"


class DiffPatch(PatchBase, kw_only=True, tag="diff"):
    """A unified or git-style diff, applied with ``git apply`` and zero fuzz: a file in the
    patchset folder, or upstream content (``source``) vendored into ``vendor/<id>.patch``."""

    kind: ClassVar[str] = "diff"
    target: Annotated[str, Meta(description="Name of an entry in `targets`")]
    file: Annotated[str, Meta(description="Patch file, relative to the patchset folder")] | None = (
        None
    )
    source: RemoteSource | None = None
    strip: Annotated[int, Meta(ge=0, le=16, description="Strip level, as -p of git apply")] = 1

    def __post_init__(self) -> None:
        self.file = _path_field("file", self.file)
        super().__post_init__()
        if (self.file is None) == (self.source is None):
            raise ValueError("give exactly one of `file` or `source`")

    @property
    def content_path(self) -> str:
        """Where the diff lives in the patchset folder (vendored content for a source)."""
        return self.file or f"vendor/{self.id}.patch"


class ReplaceEdit(_Strict, kw_only=True):
    """One exact-text edit: ``old`` must occur exactly ``count`` times in ``file``."""

    file: str
    old: Annotated[str, Meta(min_length=1)]
    new: str
    count: Annotated[int, Meta(ge=1)] = 1

    def __post_init__(self) -> None:
        self.file = check_field("file", relative_posix_path, self.file)
        if self.old == self.new:
            raise ValueError("old and new text are identical")


class ReplacePatch(PatchBase, kw_only=True, tag="replace"):
    """Exact-text edits of installed files (what ``str.replace`` heredocs did)."""

    kind: ClassVar[str] = "replace"
    target: Annotated[str, Meta(description="Name of an entry in `targets`")]
    edits: Annotated[list[ReplaceEdit], Meta(min_length=1)]


_GIT_REF = re.compile(r"^(?!.*\.\.)(?!.*/$)(?!.*\.lock$)[A-Za-z0-9_][A-Za-z0-9._/-]*$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


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


class PipPatch(PatchBase, kw_only=True, tag="pip"):
    """A package pin over the image, installed with the engine interpreter's own pip.

    ``requirement`` is PEP 508: ``name==version`` (any specifier set), or a direct reference
    ``name @ git+https://host/owner/repo@<40-hex commit>`` (a branch or tag moves, so it is
    refused). With ``source`` (a pinned source build), it names the distribution only and the
    package is built from the source's locked commit; ``build_requirements`` is a requirements
    file inside the source, installed first (checked by the same dry run). ``allow`` names
    protected distributions this pin may change.
    """

    kind: ClassVar[str] = "pip"
    source: BuildSource | None = None
    requirement: str
    build_requirements: (
        Annotated[
            str,
            Meta(description="A requirements file inside `source`, installed before the package"),
        ]
        | None
    ) = None
    index_url: str | None = None
    extra_index_urls: list[str] = msgspec.field(default_factory=list)
    find_links: list[str] = msgspec.field(default_factory=list)
    no_deps: bool = False
    no_build_isolation: bool = False
    build_env: dict[str, str] = msgspec.field(default_factory=dict)
    allow: list[str] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_field("requirement", self._pinned, self.requirement)
        self.build_requirements = _path_field("build_requirements", self.build_requirements)
        if self.build_requirements is not None and self.source is None:
            raise ValueError("`build_requirements` is a file inside a `source`: give `source`")

    def _pinned(self, value: str) -> str:
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            req = Requirement(value)
        except InvalidRequirement as exc:
            raise ValueError(f"not a PEP 508 requirement: {exc}") from None
        if self.source is not None:
            if req.url or req.specifier:
                raise ValueError(
                    f"{value!r}: with `source`, name the distribution only (e.g. "
                    f"{req.name!r}); the source's locked commit pins what is built"
                )
        elif req.url:
            ref = req.url.rsplit("@", 1)[-1] if "@" in req.url.split("://", 1)[-1] else ""
            ref = ref.split("#", 1)[0]
            if not req.url.startswith("git+") or not _COMMIT.fullmatch(ref):
                raise ValueError(
                    f"{value!r}: a direct reference must be git+<url>@<full 40-hex commit>; "
                    "a branch or tag moves, so two runs would build different code (or declare "
                    "`source: {repo, ref}` and let `patchbay vendor` lock the ref)"
                )
        elif not req.specifier:
            raise ValueError(f"{value!r} pins nothing: give a version specifier")
        return value


class ArtifactFile(_Strict, kw_only=True):
    """One binary file fetched by URL into the target.

    ``sha256`` is mandatory for ``apply``; ``null`` marks a file not locked yet (``patchbay
    vendor`` records its hash in the lock file, with network access). Plain ``http://`` is
    refused unless ``insecure_http: true``.
    """

    url: Annotated[str, Meta(pattern=r"^https?://\S+\Z")]
    dest: str
    sha256: Annotated[str, Meta(pattern=_SHA256)] | None
    size: Annotated[int, Meta(ge=0)] | None = None
    insecure_http: bool = False

    def __post_init__(self) -> None:
        self.dest = check_field("dest", relative_posix_path, self.dest)
        if self.url.startswith("http://") and not self.insecure_http:
            raise ValueError(f"{self.url}: plain http; use https, or mark `insecure_http: true`")


class ArtifactPatch(PatchBase, kw_only=True, tag="artifact"):
    """Binary files (e.g. GPU kernels) placed under a target, each pinned by sha256."""

    kind: ClassVar[str] = "artifact"
    target: Annotated[str, Meta(description="Name of an entry in `targets`")]
    files: Annotated[list[ArtifactFile], Meta(min_length=1)]


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class CommandPatch(PatchBase, kw_only=True, tag="command"):
    """A rebuild or post step, run when a patch it depends on changed in this run or when its
    declared output is missing. ``{python}`` in ``argv`` is the engine interpreter."""

    kind: ClassVar[str] = "command"
    target: Annotated[str, Meta(description="Name of an entry in `targets`; cwd is relative to it")]
    argv: Annotated[list[str], Meta(min_length=1)]
    shell: Annotated[bool, Meta(description="Run argv[0] as a /bin/sh script")] = False
    cwd: str = "."
    env: Annotated[
        dict[str, str | None],
        Meta(
            description="Variables to set; a name with no value passes it through from "
            "patchbay's environment (credentials are removed from a command's environment "
            "otherwise)"
        ),
    ] = msgspec.field(default_factory=dict)
    remove: Annotated[
        list[str | TargetPath],
        Meta(
            description="Paths removed first (stale builds): under the command's target, or "
            "{target, path} under another target"
        ),
    ] = msgspec.field(default_factory=list)
    output: Annotated[str, Meta(description="A file the command produces")] | None = None
    timeout: Annotated[float, Meta(gt=0, description="Seconds")] = 3600

    def __post_init__(self) -> None:
        super().__post_init__()
        for n, arg in enumerate(self.argv):
            if "\0" in arg:
                raise FieldError(("argv", n), "an argument holds a NUL character")
        for name, text in self.env.items():
            if not _ENV_NAME.fullmatch(name):
                raise FieldError("env", f"{name!r} is not an environment variable name")
            if text is not None and "\0" in text:
                raise FieldError(("env", name), f"the value of {name} holds a NUL character")
        self.remove = [
            check_field(("remove", n), relative_posix_path, item) if isinstance(item, str) else item
            for n, item in enumerate(self.remove)
        ]
        if self.cwd != ".":
            self.cwd = check_field("cwd", relative_posix_path, self.cwd)
        self.output = _path_field("output", self.output)
        if self.shell and len(self.argv) != 1:
            raise ValueError("with `shell: true`, argv holds exactly one script string")
        if not self.after and self.output is None:
            raise ValueError("a command needs `after` (patch ids) or an `output`, or it never runs")

    def removals(self) -> list[tuple[str, str]]:
        """``remove`` as ``(target, path)`` pairs (a plain path is under the command's own)."""
        return [
            (v.target, v.path) if isinstance(v, TargetPath) else (self.target, v)
            for v in self.remove
        ]


PatchSpec = Union[DiffPatch, ReplacePatch, PipPatch, ArtifactPatch, CommandPatch]  # noqa: UP007
"""One patch, chosen by its ``kind`` (msgspec's tagged union)."""

PATCH_KINDS: tuple[type[PatchBase], ...] = (
    DiffPatch,
    ReplacePatch,
    PipPatch,
    ArtifactPatch,
    CommandPatch,
)


class PatchsetSpec(_Strict, kw_only=True, rename={"schema_version": "schema"}):
    """The top level of ``patchset.yaml``."""

    schema_version: Annotated[Literal[1], Meta(description="Patchset format version")]
    name: Annotated[str, Meta(pattern=_ID)]
    description: str = ""
    image: Image
    components: list[Component] = msgspec.field(default_factory=list)
    targets: Annotated[dict[str, Target], Meta(min_length=1)]
    base: BaseGuard = msgspec.field(default_factory=BaseGuard)
    protect: (
        Annotated[
            list[str],
            Meta(description="Distributions a pip pin must not change (default: the components)"),
        ]
        | None
    ) = None
    patches: list[PatchSpec] = msgspec.field(default_factory=list)

    @property
    def protected(self) -> list[str]:
        """Distributions no pin may add, upgrade or downgrade unless it allows them by name."""
        if self.protect is not None:
            return list(self.protect)
        return [c.distribution for c in self.components]


class Patchset(msgspec.Struct):
    """A loaded patchset: the validated spec plus where it came from.

    Attributes:
        spec: the validated YAML content.
        path: the YAML file.
        folder: the patchset folder (patch files are relative to it).
        document: the YAML document, for line numbers in later errors (of a patchset
            :func:`load_patchset` read, its lines only:
            :func:`~patchbay.patchset.yamlfile.lines_only`).
    """

    spec: PatchsetSpec
    path: Path
    folder: Path
    document: YamlDocument
    _loaded: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def patches(self) -> list[DiffPatch | ReplacePatch | PipPatch | ArtifactPatch | CommandPatch]:
        return list(self.spec.patches)

    def patch_line(self, index: int, *keys: str | int) -> int | None:
        """Line of ``patches[index].<keys>`` in the YAML file."""
        return self.document.line_of(("patches", index, *keys))


def find_patchset_file(path: Path) -> Path:
    """Resolve a PATCHSET argument: a YAML file, or a folder holding ``patchset.yaml``.

    Raises:
        InputError: nothing usable at ``path``.
    """
    if path.is_dir():
        for name in PATCHSET_FILENAMES:
            candidate = path / name
            if candidate.exists() or candidate.is_symlink():  # reading says what is wrong
                return candidate
        raise InputError(f"no {PATCHSET_FILENAMES[0]} in this folder", file=path)
    if path.exists() or path.is_symlink():
        return path
    raise InputError("no such patchset file or folder", file=path)


def load_patchset(path: Path) -> Patchset:
    """Load and validate a patchset (schema and consistency, not patch contents).

    Args:
        path: a patchset folder or its YAML file.

    Returns:
        The :class:`Patchset`.

    Raises:
        InputError: malformed YAML, schema violations (the first of the top level and the
            first of each patch, one detail line each, with ``file:line``), duplicate patch
            ids, a patch naming an unknown target.
    """
    yaml_path = find_patchset_file(path)
    patchset = patchset_from_document(load_yaml(yaml_path))
    # the document's data is the spec now: keep only its lines, for later messages
    patchset.document = lines_only(patchset.document)
    return patchset


def patchset_from_document(doc: YamlDocument) -> Patchset:
    """Validate a patchset already read from its YAML file (``doc.path``), as
    :func:`load_patchset` does: the audit reads the document through its cache of parsed
    documents (:mod:`patchbay.audit.documents`) and validates it here every time.

    Raises:
        InputError: as :func:`load_patchset`, past reading the file.
    """
    yaml_path = doc.path
    if not isinstance(doc.data, dict):
        raise InputError("a patchset must be a YAML mapping", file=yaml_path, line=1)
    spec = _validated(doc)
    problems: list[tuple[int | None, str]] = []
    seen: dict[str, int] = {}
    for i, patch in enumerate(spec.patches):
        if patch.id in seen:
            problems.append((doc.line_of(("patches", i, "id")), f"duplicate patch id {patch.id!r}"))
        seen.setdefault(patch.id, i)
        if patch.target is not None and patch.target not in spec.targets:
            problems.append(
                (
                    doc.line_of(("patches", i, "target")),
                    f"patch {patch.id}: unknown target {patch.target!r} "
                    f"(targets: {', '.join(spec.targets)})",
                )
            )
    for i, guard in enumerate(spec.base.files):
        if guard.target not in spec.targets:
            problems.append(
                (doc.line_of(("base", "files", i, "target")), f"unknown target {guard.target!r}")
            )
    problems += _order_problems(spec, seen, doc)
    for i, patch in enumerate(spec.patches):
        if isinstance(patch, CommandPatch):
            for n, item in enumerate(patch.remove):
                if isinstance(item, TargetPath) and item.target not in spec.targets:
                    problems.append(
                        (
                            doc.line_of(("patches", i, "remove", n, "target")),
                            f"patch {patch.id}: `remove` names unknown target {item.target!r} "
                            f"(targets: {', '.join(spec.targets)})",
                        )
                    )
    if problems:
        raise _problems_error(yaml_path, problems)
    return Patchset(spec=spec, path=yaml_path, folder=yaml_path.parent, document=doc)


def _order_problems(
    spec: PatchsetSpec, first: dict[str, int], doc: YamlDocument
) -> list[tuple[int | None, str]]:
    """The ordering key: every id a patch names in ``after`` must be a patch listed before it.

    Patches apply in list order, each judged on the tree the earlier ones leave (as quilt's
    series file); ``after`` says that order matters (the patch was made on top of those) so a
    reordering, or a patch inserted before what it depends on, is refused here, for every kind
    and every command, instead of turning into a conflict on some machine later.
    """
    problems: list[tuple[int | None, str]] = []
    for i, patch in enumerate(spec.patches):
        for n, dep in enumerate(patch.after):
            where = doc.line_of(("patches", i, "after", n)) or doc.line_of(("patches", i, "after"))
            if dep == patch.id:
                problems.append((where, f"patch {patch.id}: `after` names the patch itself"))
            elif dep not in first:
                problems.append(
                    (where, f"patch {patch.id}: `after` names {dep!r}, which is not a patch here")
                )
            elif first[dep] >= i:
                problems.append(
                    (
                        where,
                        f"patch {patch.id}: `after` names {dep!r}, which is listed after it "
                        f"(at patches[{first[dep]}]); move {patch.id} below {dep}, the order "
                        "the patches apply in",
                    )
                )
    return problems


def _problems_error(path: Path, problems: list[tuple[int | None, str]]) -> InputError:
    first_line, first = problems[0]
    details = [f"{path}:{line}: {msg}" if line else f"{path}: {msg}" for line, msg in problems[1:]]
    return InputError(first, file=path, line=first_line, details=details)


def _validated(doc: YamlDocument) -> PatchsetSpec:
    """The document as a :class:`PatchsetSpec`; the top level and each patch are validated
    apart, so that one run names the first problem of each (msgspec stops at a value's first).

    Raises:
        InputError: the problems, one line each, with ``file:line``.
    """
    problems: list[tuple[int | None, str]] = []

    def problem(
        exc: msgspec.ValidationError, type_: Any, data: Any, prefix: tuple[Any, ...]
    ) -> None:
        loc, msg = problem_of(exc, type_, data)
        loc = (*prefix, *loc)
        where = ".".join(str(p) for p in loc) or "(top level)"
        problems.append((doc.line_of(loc), f"{where}: {msg}"))

    top = dict(doc.data)
    items = top.pop("patches", [])
    spec = None
    try:
        spec = convert(top, PatchsetSpec)
    except msgspec.ValidationError as exc:
        problem(exc, PatchsetSpec, top, ())
    patches: list[Any] = []
    if not isinstance(items, list):
        try:
            convert(items, list[Any])
        except msgspec.ValidationError as exc:
            problem(exc, list[Any], items, ("patches",))
        items = []
    for i, item in enumerate(items):
        try:
            patches.append(convert(item, PatchSpec))
        except msgspec.ValidationError as exc:
            problem(exc, PatchSpec, item, ("patches", i))
    if problems or spec is None:
        raise _problems_error(doc.path, problems)
    spec.patches = patches
    return spec


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``patchset.yaml``, for editors and CI.

    msgspec writes each struct's fields (:func:`msgspec.json.schema`); :func:`_cross_field_rules`
    adds what the structs' ``__post_init__`` checks across fields, where JSON Schema can say it.
    Only keywords draft 7 has too (``if``/``then``, ``const``, ``allOf``/``anyOf``/``oneOf``,
    ``$ref`` to a JSON pointer) are used, because the YAML language server validates with
    draft 7 semantics.
    """
    generated = msgspec.json.schema(PatchsetSpec)
    defs = generated["$defs"]
    schema = {**defs.pop(PatchsetSpec.__name__), "$defs": defs}
    _ecma_patterns(schema)
    _cross_field_rules(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://patchbay.invalid/schema/patchset-v1.json"
    schema["title"] = "patchbay patchset (schema 1)"
    return schema


def _ecma_patterns(node: Any) -> None:
    """The structs' patterns end with Python's ``\\Z`` (end of text); ECMA-262's ``$`` is that."""
    if isinstance(node, dict):
        pattern = node.get("pattern")
        if isinstance(pattern, str) and pattern.endswith("\\Z"):
            node["pattern"] = pattern[:-2] + "$"
        for value in node.values():
            _ecma_patterns(value)
    elif isinstance(node, list):
        for value in node:
            _ecma_patterns(value)


# JSON Schema patterns are ECMA-262 regexes matched anywhere in the string (not anchored)
_RELATIVE_PATH = r"^(?!/)(?![\s\S]*\\)(?!(?:[\s\S]*/)?\.\.(?:/|$))[\s\S]"
""":func:`relative_posix_path` as a pattern: not empty, not absolute, no backslash, no ``..``
component."""


def _present(key: str, value: dict[str, Any]) -> dict[str, Any]:
    """The subschema "``key`` is given and its value matches ``value``" (``key: null`` is no
    value: the models read it as absent)."""
    return {"required": [key], "properties": {key: value}}


def _strings(prop: dict[str, Any]) -> dict[str, Any]:
    """The string schema of a property (the string branch of an optional one, or of a list's
    items, which may be a string or an object)."""
    if prop.get("type") == "array":
        prop = prop["items"]
    for branch in prop.get("anyOf", []):
        if branch.get("type") == "string":
            return branch
    return prop


def _cross_field_rules(schema: dict[str, Any]) -> None:
    """Add the models' validator rules that JSON Schema can express to ``schema`` (in place).

    - a patch is one of the kinds, chosen by ``kind`` (``if``/``then``, so an editor reports
      the errors of that kind only, not of all five);
    - every patch: ``upstream`` references (their form as a pattern), or ``upstream_status``
      (:meth:`PatchBase.__post_init__`);
    - diff: exactly one of ``file`` or ``source``; a source: ``pr``, ``commit`` or both;
    - target: ``package`` or ``home``; ``path`` only with ``package``, ``env`` only with
      ``home``;
    - pip: ``build_requirements`` only with ``source``;
    - command: ``after`` or ``output``; with ``shell: true``, one ``argv`` string;
    - artifact file: a plain ``http://`` URL needs ``insecure_http: true``;
    - every path below a root: relative, ``/``-separated, no ``..`` (:func:`relative_posix_path`).

    Left to the loader (``patchbay validate``): a patch's ``target`` naming an entry of
    ``targets``, unique ids, ``after`` naming earlier patches, PEP 440/508 syntax, ``old`` !=
    ``new``.
    """
    defs = schema["$defs"]
    # kind -> model name, from the union itself (a new kind needs no edit here)
    kinds = {model.kind: model.__name__ for model in PATCH_KINDS}
    schema["properties"]["patches"]["items"] = {
        "type": "object",
        "required": ["kind"],
        "properties": {"kind": {"enum": list(kinds)}},
        "allOf": [
            {
                "if": {"required": ["kind"], "properties": {"kind": {"const": kind}}},
                "then": {"$ref": f"#/$defs/{name}"},
            }
            for kind, name in kinds.items()
        ],
    }
    for name in kinds.values():
        patch = defs[name]
        _strings(patch["properties"]["upstream"])["pattern"] = _UPSTREAM_REF.pattern
        patch["allOf"] = [
            {
                "anyOf": [
                    _present("upstream", {"minItems": 1}),
                    _present("upstream_status", {"type": "object"}),
                ]
            }
        ]
    defs[DiffPatch.__name__]["allOf"].append(
        {"oneOf": [_present("file", {"type": "string"}), _present("source", {"type": "object"})]}
    )
    defs[RemoteSource.__name__]["allOf"] = [
        {"anyOf": [_present("pr", {"type": "integer"}), _present("commit", {"type": "string"})]}
    ]
    defs[Target.__name__]["allOf"] = [
        {"oneOf": [_present("package", {"type": "string"}), _present("home", {"type": "string"})]},
        {
            "if": _present("path", {"type": "string"}),
            "then": _present("package", {"type": "string"}),
        },
        {"if": _present("env", {"type": "string"}), "then": _present("home", {"type": "string"})},
    ]
    defs[PipPatch.__name__]["allOf"].append(
        {
            "if": _present("build_requirements", {"type": "string"}),
            "then": _present("source", {"type": "object"}),
        }
    )
    defs[CommandPatch.__name__]["allOf"] += [
        {"anyOf": [_present("after", {"minItems": 1}), _present("output", {"type": "string"})]},
        {
            "if": _present("shell", {"const": True}),
            "then": {"properties": {"argv": {"maxItems": 1}}},
        },
    ]
    defs[ArtifactFile.__name__]["allOf"] = [
        {
            "if": _present("url", {"pattern": "^http://"}),
            "then": _present("insecure_http", {"const": True}),
        }
    ]
    paths = {
        Target: ("path", "home"),
        TargetPath: ("path",),
        PipPatch: ("build_requirements",),
        FileGuard: ("path",),
        DiffPatch: ("file",),
        ReplaceEdit: ("file",),
        ArtifactFile: ("dest",),
        CommandPatch: ("cwd", "output", "remove"),
    }
    for model, keys in paths.items():
        for key in keys:
            _strings(defs[model.__name__]["properties"][key])["pattern"] = _RELATIVE_PATH
