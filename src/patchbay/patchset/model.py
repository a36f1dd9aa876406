"""The patchset format (schema version 1): the msgspec structs of ``patchset.yaml``.

A patchset is a folder holding ``patchset.yaml`` and the patch files it names: its top level
(:class:`PatchsetSpec`: image, components, targets, base guard), each patch kind's spec, and the
checks of their ``__post_init__``. :mod:`patchbay.patchset.loading` validates a file into them
with ``file:line`` errors; :mod:`patchbay.patchset.schema` writes their JSON Schema.

Upstream status words follow Yocto's ``Upstream-Status`` tag (Pending, Submitted, Backport,
Inappropriate, Denied); a patch with no upstream reference must carry one, with a reason.
"""

# No ``from __future__ import annotations`` here: msgspec resolves string annotations through
# typing's evaluation on the first ``convert`` of each struct, ~10 ms of every cold run;
# annotations evaluated at class creation cost it nothing.
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

import msgspec
from msgspec import Meta

from ..environment.paths import check_relative
from ..patterns import pattern
from .coverage import UpstreamEntry, ref_text
from .sources import COMMIT_ID, REPO, BuildSource, RemoteSource
from .sources import Strict as _Strict
from .validation import FieldError, check_field
from .yamlfile import YamlDocument

SCHEMA_VERSION = 1

# `\Z`, not `$` (which Python lets match before a final newline); schema.json_schema() writes `$`
_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z"
_SHA256 = r"^[0-9a-f]{64}\Z"
_REPO, _COMMIT_ID = REPO, COMMIT_ID
_COMMIT = pattern(r"^[0-9a-f]{40}$")
UPSTREAM_REF = pattern(r"^(?:https?://\S+|[A-Za-z0-9][\w.-]*/[\w.-]+(?:#\d+|@[0-9a-f]{7,40}))$")


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
        list[Union[str, UpstreamEntry]],  # noqa: UP007
        Meta(
            description="PR, issue or commit URLs, or owner/repo#N, or owner/repo@<commit>; "
            "{ref, covers} for one that covers only some hunks or files of a diff"
        ),
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
        for n, entry in enumerate(self.upstream):
            ref = ref_text(entry)
            if not UPSTREAM_REF.match(ref):
                raise FieldError(
                    ("upstream", n) if isinstance(entry, str) else ("upstream", n, "ref"),
                    f"{ref!r} is not an upstream reference (a URL, owner/repo#N or "
                    "owner/repo@<commit>)",
                )
            if not isinstance(entry, str) and self.kind != "diff":
                raise FieldError(
                    ("upstream", n, "covers"), "`covers` names hunks or files of a diff patch"
                )
        if self.coverage and self.upstream_status is None:
            raise FieldError(
                "upstream",
                "a reference with `covers` leaves the rest of the patch local: give "
                "`upstream_status` with the reason it is carried",
            )
        if not self.upstream and self.upstream_status is None:
            raise ValueError(
                "a patch needs `upstream` references, or `upstream_status` "
                "(Pending, Submitted, Backport, Inappropriate, Denied) with a reason"
            )

    @property
    def upstream_refs(self) -> list[str]:
        """The references of ``upstream``, as written (without their ``covers``)."""
        return [ref_text(entry) for entry in self.upstream]

    @property
    def coverage(self) -> dict[str, list[int | str]]:
        """Reference -> what it covers, for the entries that cover only part of the patch."""
        return {e.ref: list(e.covers) for e in self.upstream if isinstance(e, UpstreamEntry)}


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
    """One exact-text edit: ``old`` must occur exactly ``count`` times in ``file``.

    With the patch's ``source`` (a here-document of a script at a commit that holds the Python
    program making the edit), ``old_from`` and ``new_from`` name that program's string constants
    (``OLD1 = "..."``, ``NEW1 = OLD1 + "..."``) instead of retyping their text; ``vendor`` reads
    their values and locks them.
    """

    file: str
    old: Annotated[str, Meta(min_length=1)] | None = None
    new: str | None = None
    old_from: Annotated[str, Meta(pattern=r"^[A-Za-z_]\w*\Z")] | None = None
    new_from: Annotated[str, Meta(pattern=r"^[A-Za-z_]\w*\Z")] | None = None
    count: Annotated[int, Meta(ge=1)] = 1

    def __post_init__(self) -> None:
        self.file = check_field("file", relative_posix_path, self.file)
        literal = (self.old is not None, self.new is not None)
        named = (self.old_from is not None, self.new_from is not None)
        if literal == (True, True) and named == (False, False):
            if self.old == self.new:
                raise ValueError("old and new text are identical")
        elif not (literal == (False, False) and named == (True, True)):
            raise ValueError(
                "give `old` and `new` (the texts), or `old_from` and `new_from` (the names of "
                "the source program's string constants)"
            )

    @property
    def named(self) -> bool:
        """The texts are constants of the patch's source program (``old_from``/``new_from``)."""
        return self.old_from is not None


class ReplacePatch(PatchBase, kw_only=True, tag="replace"):
    """Exact-text edits of installed files (what ``str.replace`` heredocs did); with
    ``source`` (a here-document at a commit, see :class:`RemoteSource`), texts named by the
    program's constants, vendored into ``vendor/<id>.json``."""

    kind: ClassVar[str] = "replace"
    target: Annotated[str, Meta(description="Name of an entry in `targets`")]
    edits: Annotated[list[ReplaceEdit], Meta(min_length=1)]
    source: RemoteSource | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.source is not None and self.source.heredoc is None:
            raise FieldError(
                "source", "a replace patch's source is a here-document (`file`, `heredoc`)"
            )
        for n, edit in enumerate(self.edits):
            if edit.named != (self.source is not None):
                raise FieldError(
                    ("edits", n),
                    "`old_from`/`new_from` name constants of the patch's `source`: give both "
                    "or neither",
                )

    @property
    def content_path(self) -> str:
        """Where the vendored constants live in the patchset folder (with a ``source``)."""
        return f"vendor/{self.id}.json"


class PipPatch(PatchBase, kw_only=True, tag="pip"):
    """A package pin over the image, installed with the engine interpreter's own pip.

    ``requirement`` is PEP 508: ``name==version`` (any specifier set), or a direct reference
    ``name @ git+https://host/owner/repo@<40-hex commit>`` (a branch or tag moves, so it is
    refused). With ``source`` (a pinned source build), it names the distribution only and the
    package is built from the source's locked commit; ``build_requirements`` is a requirements
    file inside the source, installed first (checked by the same dry run). ``allow`` names
    protected distributions this pin may change.

    Where the package comes from is one choice, never a race between indexes: pip takes the best
    match across the primary index and every ``--extra-index-url``/``--find-links`` source,
    with no priority (pip's documentation of ``--extra-index-url``; the "dependency confusion"
    of a name published on the public index too). So ``extra_index_urls`` is refused, and
    ``find_links`` needs ``index_url`` (the index the pin trusts besides those links) or
    ``no_index`` (the links only): :func:`package_source_problem`.
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
    no_index: Annotated[
        bool, Meta(description="Install from `find_links` only (pip --no-index)")
    ] = False
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
        problem = package_source_problem(self)
        if problem is not None:
            raise FieldError(problem[0], problem[1])

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


def package_source_problem(patch: PipPatch) -> tuple[str, str] | None:
    """``(key, reason)`` when pip could take ``patch``'s package from another source than the
    one it means (the dependency-confusion shape), else None.

    pip merges every index and link source and takes the best match, with no priority
    (pip's documentation of ``--extra-index-url``), so a name the primary index (PyPI) also
    has can come from either: an ``extra_index_urls`` entry always competes with the primary
    index, and ``find_links`` does unless ``index_url`` names the index meant besides them or
    ``no_index`` leaves the links alone.
    """
    name = patch.requirement.split(";", 1)[0].strip()
    if patch.extra_index_urls:
        return (
            "extra_index_urls",
            f"{name} from an extra index ({patch.extra_index_urls[0]}): pip takes the best "
            "match across that index and the primary one (PyPI, where the same name may be "
            "another build) with no priority, the dependency-confusion shape; give the "
            "intended index as `index_url`, or its wheels as `find_links` with `no_index: true`",
        )
    if patch.no_index and not patch.find_links:
        return ("no_index", "`no_index: true` without `find_links` leaves pip nothing to install")
    if patch.no_index and patch.index_url:
        return ("no_index", "`no_index: true` drops `index_url`: give one of them")
    if patch.find_links and not patch.index_url and not patch.no_index:
        return (
            "find_links",
            f"{name} from links ({patch.find_links[0]}) and the primary index (PyPI, where the "
            "same name may be another build): pip takes the best match of both, the "
            "dependency-confusion shape; add `no_index: true` to install from the links only, "
            "or name the index meant as `index_url`",
        )
    return None


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


_ENV_NAME = pattern(r"[A-Za-z_][A-Za-z0-9_]*")


class CommandPatch(PatchBase, kw_only=True, tag="command"):
    """A rebuild or post step, run when a patch it depends on changed in this run or when its
    declared output is missing; one with neither ``after`` nor ``output`` (a clean-up) runs
    while one of its ``remove`` paths exists. ``{python}`` in ``argv`` is the engine
    interpreter."""

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
        if not self.after and self.output is None and not self.remove:
            raise ValueError(
                "a command needs `after` (patch ids), an `output` or a `remove`, or it never runs"
            )

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
    # no target when no patch needs one (a patchset of package pins only)
    targets: dict[str, Target] = msgspec.field(default_factory=dict)
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
            :func:`~patchbay.patchset.loading.load_patchset` read, its lines only:
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
