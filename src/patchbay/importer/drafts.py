"""What the importer found in a script: draft patches and the outcome of every command.

Drafts keep paths relative to the engine's site-packages folder; the writer places them under
targets, names them and writes the patchset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

OutcomeKind = Literal["converted", "consumed", "unconverted", "review"]


@dataclass
class Draft:
    """A patch to be: where in the script it came from and what the comments say about it.

    Attributes:
        spans: ``(first, last)`` script lines it was made from (content and application).
        comments: comment texts that precede the blocks it came from, outermost first.
        refs: upstream references found in those comments (and in a diff's preamble).
        unknown_refs: ``name #N`` forms whose project is not in the project map.
        notes: things a person should check about this patch (for IMPORT-NOTES.md).
        names: candidate names for its id, best first.
        id: the id the writer gave it.
    """

    spans: list[tuple[int, int]]
    comments: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    unknown_refs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    id: str = ""

    kind = ""

    @property
    def first_line(self) -> int:
        return min(a for a, _ in self.spans)


@dataclass
class DiffDraft(Draft):
    """A diff: its bytes, the folder it applies in (site-relative) and its strip level; or an
    upstream ``source`` (``repo``, ``pr`` or ``commit``) for a diff fetched at run time."""

    content: bytes = b""
    root: str = ""
    strip: int = 1
    paths: list[str] = field(default_factory=list)
    copied_from: Path | None = None
    source: tuple[str, int | None, str | None] | None = None
    kind = "diff"


@dataclass
class ReplaceDraft(Draft):
    """Exact-text edits: ``(site-relative file, old, new, count)``."""

    edits: list[tuple[str, str, str, int | None]] = field(default_factory=list)
    kind = "replace"


@dataclass
class PipDraft(Draft):
    """A package pin with pip's index options; ``harness`` when it is not an engine package."""

    requirement: str = ""
    name: str = ""
    index_url: str | None = None
    extra_index_urls: list[str] = field(default_factory=list)
    find_links: list[str] = field(default_factory=list)
    no_index: bool = False
    no_deps: bool = False
    no_build_isolation: bool = False
    build_env: dict[str, str] = field(default_factory=dict)
    harness: bool = False
    kind = "pip"


@dataclass
class ArtifactDraft(Draft):
    """Downloaded files: ``(url, site-relative destination)``; ``group`` merges the files of one
    unrolled loop into one patch; ``hashes`` are SHA-256 values seen (an observed import)."""

    files: list[tuple[str, str]] = field(default_factory=list)
    group: str | None = None
    hashes: dict[str, str] = field(default_factory=dict)  # destination -> sha256 observed
    kind = "artifact"


@dataclass
class CommandDraft(Draft):
    """A rebuild step: argv (``{python}`` for the engine interpreter), paths removed first and
    the output (site-relative), environment and working folder (site-relative, or ``None`` for
    the target root)."""

    argv: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    output: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    kind = "command"


@dataclass
class Outcome:
    """What became of one command of the script (or of a block of them).

    Attributes:
        start, end: its lines in the script.
        kind: ``converted`` (into ``draft``), ``consumed`` (nothing to import: a message, a
            check, a variable, a helper), ``unconverted`` (not imported: the patchset does not
            do it) or ``review`` (imported, but a person should check the point made).
        text: what it is and why, one sentence.
        draft: the patch it became, for ``converted`` and ``review``.
        via: the line of the function call that ran it, when it is in a function body.
        hint: what to do about an unconverted part.
    """

    start: int
    end: int
    kind: OutcomeKind
    text: str
    draft: Draft | None = None
    via: int | None = None
    hint: str | None = None


@dataclass
class Row:
    """A top-level command of the script and what became of everything it ran."""

    start: int
    end: int
    outcomes: list[Outcome] = field(default_factory=list)


@dataclass
class WalkResult:
    """Everything the walk found.

    Attributes:
        drafts: the patches, in script order.
        outcomes: every outcome, in the order they were reached.
        rows: the top-level commands with their outcomes.
        packages: engine packages the script locates, imports or patches, first found first.
        header: the script's leading comment (a description for the patchset).
        remarks: general points for the notes (each once).
    """

    drafts: list[Draft]
    outcomes: list[Outcome]
    rows: list[Row]
    packages: list[str]
    header: str
    remarks: list[str]
