"""The result of the analysis: the modifications a script makes to the installed engine.

A :class:`Modification` is a plain value: what mechanism changes the engine, where (a
:class:`Target`, and how the walk found that path), with what content, on which lines, whether a
failure is swallowed, and through which scripts and functions it was reached. The audit turns
the ones no patchset declares into PB4xx findings; ``patchbay import`` turns them into patches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

SITE = "/@site"
"""Stands for the engine's site-packages folder in a computed path (``/@site/vllm/envs.py``)."""

TMP = "/@tmp"
"""Stands for a folder made by ``mktemp -d`` (``/@tmp1/x.diff``)."""

ENGINE_DIR = "/@engine"
"""Stands for a folder an engine's own helper returns
(``/@engine/aiter.jit.core.get_user_jit_dir()``: its JIT cache, known only when it runs)."""


class Mechanism(str, Enum):
    """How a statement changes the engine (the issue's list, one value each)."""

    DIFF = "diff"  # git apply / patch of a diff
    EDIT = "edit"  # in-place edit: sed -i, perl -i, awk -i inplace, a Python rewrite
    WRITE = "write"  # a whole file written: heredoc, redirection, tee, open(..., "w")
    COPY = "copy"  # cp, mv, install, ln, rsync, tar -x, unzip, COPY/ADD into the engine
    DOWNLOAD = "download"  # curl -o / wget -O into the engine
    PIP = "pip"  # a package installed over (or instead of) the image's
    VCS = "vcs"  # a VCS fetch (git clone, init + fetch) then built or installed
    REMOVE = "remove"  # rm, find -delete, find -exec rm of engine files
    INJECT = "inject"  # PYTHONPATH, LD_PRELOAD, .pth, sitecustomize/usercustomize
    REBUILD = "rebuild"  # a build step (JIT rebuild, setup.py build) of engine code


@dataclass(frozen=True)
class Target:
    """Where a modification writes.

    Attributes:
        path: the path as the walk resolved it: :data:`SITE` stands for site-packages,
            :data:`TMP` for a temporary folder; unresolved parts stay as written (``$1``).
        written: the path as the script writes it (``$SITE/vllm/envs.py``).
        root: ``site-packages`` (an installed package), ``engine-tree`` (an engine source
            checkout outside site-packages), or ``unknown`` (the walk could not tell).
        engine: the engine package or distribution the path belongs to, when known.
        how: how the path was resolved, for a reader (``$SITE, set at line 3``).
        origin: how the install root under it was computed (``computed with purelib``).
    """

    path: str
    written: str
    root: str
    engine: str | None = None
    how: str = ""
    origin: str = ""

    @property
    def site_relative(self) -> str | None:
        """The path below site-packages (``vllm/envs.py``), or None."""
        if self.path == SITE:
            return ""
        if self.path.startswith(SITE + "/"):
            return self.path[len(SITE) + 1 :]
        for marker in ("/site-packages/", "/dist-packages/"):
            if marker in self.path:
                return self.path.split(marker, 1)[1]
        if self.path.endswith(("/site-packages", "/dist-packages")):
            return ""
        return None


@dataclass
class Modification:
    """One statement (or construct) that changes the installed engine.

    Attributes:
        mechanism: how (:class:`Mechanism`).
        tool: the command as a reader names it (``sed -i``, ``git apply``, ``curl -o``).
        line: 1-based first line in the file the statement is in (``chain[-1]``, or the
            analysed file).
        end_line: last line (a here-document's delimiter).
        target: where it writes; None for a package install or an environment change.
        content: what it writes: a here-document's text, a patch file's path, a URL, the
            requirement, the ``sed`` program; ``edits`` holds literal ``(old, new)`` pairs.
        edits: literal replacements (Python ``.replace``, ``sed s/old/new/`` without regex).
        url: the URL of a download, a VCS fetch or a remote diff.
        ref: the VCS ref or commit (``fast-decode``, a 40-hex commit), when there is one.
        pinned: a VCS fetch at a fixed commit (or an index install with ``==``).
        swallowed: the command swallowing its failure (``|| true``, ``|| echo ...``); None
            otherwise. Whether the script stops on a failure at all (``set -e`` in force when
            the statement ran) is ``details["set_e"]``.
        chain: repository-relative scripts the modification was reached through, outermost
            first (``source`` / ``bash other.sh``); empty for the analysed file itself.
        function: the shell function it sits in, when it does.
        called: False for a modification in a function the script never calls.
        condition: the condition it runs under (``if ! grep -q MARKER ...``), when any.
        alternatives: variants tried when this one fails or another branch is taken
            (``git apply X || patch -p1 < X``): one change, never two.
        resolved: False when the walk could not resolve the target or the content.
        why: why it is unresolved (or a note on how it was resolved).
        text: the statement's source text (first line).
        details: mechanism-specific facts (``editable``, ``fork``, ``built_at``, ``requirement``,
            ``python``: the Python code run, ``argv``...).
    """

    mechanism: Mechanism
    tool: str
    line: int
    end_line: int
    target: Target | None = None
    content: str | None = None
    edits: list[tuple[str, str]] = field(default_factory=list)
    url: str | None = None
    ref: str | None = None
    pinned: bool = False
    swallowed: str | None = None
    chain: tuple[str, ...] = ()
    function: str | None = None
    called: bool = True
    condition: str | None = None
    alternatives: list[Modification] = field(default_factory=list)
    resolved: bool = True
    why: str = ""
    text: str = ""
    details: dict[str, object] = field(default_factory=dict)

    @property
    def lines(self) -> tuple[int, int]:
        return (self.line, self.end_line)

    def describe(self) -> str:
        """One line for people: ``sed -i of vllm/envs.py ($SITE, set at line 3)``."""
        where = ""
        if self.target is not None:
            where = f" of {self.target.written}"
            if self.target.how:
                where += f" ({self.target.how})"
        return f"{self.tool}{where}"


@dataclass(frozen=True)
class FunctionInfo:
    """A shell function of the script.

    Attributes:
        name: its name.
        line: the line of its definition.
        end_line: the last line of its body.
        calls: lines where it is called (empty: defined but never called).
    """

    name: str
    line: int
    end_line: int
    calls: tuple[int, ...] = ()


@dataclass(frozen=True)
class Incomplete:
    """Why the walk of a file stopped before its end (the audit's PB412).

    Attributes:
        path: the file the walk was in when it stopped (the analysed file, or one it
            followed), repository-relative.
        line: the line of the statement it reached (None: before the first one).
        reason: why, for a reader (``the walk visited 60001 statements, its bound``, or the
            analyser's own error: ``AttributeError: ...``).
        kind: ``budget`` (a bound of :mod:`.budget` ran out) or ``error`` (a fault of the
            analyser: a bug to report).
    """

    path: str
    line: int | None
    reason: str
    kind: str


@dataclass(frozen=True)
class Unresolved:
    """A statement that runs code the walk cannot see (the audit's PB414): ``eval`` of a
    string known only at run time, a command whose name is computed (``"$@"`` of a helper
    called with unknown words, ``$CMD``), or a script of the repository that is not there.

    Attributes:
        path: the file of the statement, repository-relative.
        line: its line.
        what: what it runs, as written (``eval "$PATCH_CMD"``).
        why: why it cannot be judged, for a reader (``$PATCH_CMD is not set by the script``).
    """

    path: str
    line: int
    what: str
    why: str


@dataclass
class ScriptAnalysis:
    """What the analyser found in one file.

    Attributes:
        path: the file (repository-relative when the caller gave a root).
        kind: ``shell``, ``dockerfile`` or ``python``.
        modifications: every modification, in line order (unresolved ones too).
        functions: the shell functions, with where they are called.
        set_e: the script stops on a failure (``set -e``, ``set -euo pipefail``...).
        annotations: line -> (codes, reason, line of the annotation) of ``patchbay-reviewed``
            comments, keyed by the line they review.
        sourced: scripts followed (``source``, ``.``, ``bash path``), with the line of the call.
        followed_annotations: the ``annotations`` of each script followed, by its path.
        notes: things a reader should know (a file that could not be followed, ...).
        installs: ``pip install`` of packages that are not engine packages (harness tools),
            or that name no package the walk can read: never modifications of the engine.
        loops: line of a ``for`` loop of the script -> ``items`` (how many it was unrolled
            into), ``computed`` (the words whose values are known only at run time),
            ``globbed`` (a glob over checked-in files, listed now).
        packages: top-level packages the script's Python names (``find_spec``, imports,
            ``__file__``), first met first.
        inputs: the repository files the analysis looked at besides the script, with what it
            saw (:data:`~.inputs.Probe`): what a cached result depends on.
        incomplete: set when the walk stopped before the end (a bound, or a fault of the
            analyser): what it found up to there is kept, nothing after is judged.
        steps: the statements the walk visited (functions expanded, loops unrolled and
            scripts followed included; see :mod:`.budget`).
        unresolved: statements that run code the walk cannot see (:class:`Unresolved`),
            recorded only in a script that names an engine.
    """

    path: str
    kind: str
    modifications: list[Modification] = field(default_factory=list)
    functions: list[FunctionInfo] = field(default_factory=list)
    set_e: bool = False
    annotations: dict[int, tuple[frozenset[str], str, int]] = field(default_factory=dict)
    sourced: list[tuple[int, str]] = field(default_factory=list)
    followed_annotations: dict[str, dict[int, tuple[frozenset[str], str, int]]] = field(
        default_factory=dict
    )
    notes: list[tuple[int, str]] = field(default_factory=list)
    installs: list[Modification] = field(default_factory=list)
    loops: dict[int, dict[str, object]] = field(default_factory=dict)
    packages: list[str] = field(default_factory=list)
    inputs: list[tuple[str, str, object]] = field(default_factory=list)
    incomplete: Incomplete | None = None
    steps: int = 0
    unresolved: list[Unresolved] = field(default_factory=list)

    @property
    def uncalled(self) -> list[FunctionInfo]:
        """Functions defined but never called."""
        return [f for f in self.functions if not f.calls]
