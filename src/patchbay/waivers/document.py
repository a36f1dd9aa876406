"""A waiver document: :class:`Waiver`, :func:`parse_waiver`, :func:`read_waiver_text`,
:func:`read_waivers`, and :func:`read_front_matter`, which validates the parsed front matter
(:mod:`.frontmatter`) into a :class:`Waiver`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from ..errors import InputError
from ..patchset.placeholders import placeholder_in
from ..patchset.validation import convert, problem_of
from ..patchset.yamlfile import YamlDocument, parse_yaml
from .body import BodyParser, field_result, upstream_elsewhere
from .fields import FIELDS, FieldResult, Placeholder
from .files import waiver_files
from .frontmatter import FrontMatter, plain_yaml, split_front_matter
from .paths import NamedPath, named_paths
from .references import Reference, find_references


@dataclass
class Waiver:
    """A parsed waiver document.

    Attributes:
        path: the Markdown file.
        id: the front matter's ``id`` (or, for a waiver without front matter, the file name
            without ``.md``).
        front_matter: the machine fields, or None for a legacy waiver without front matter.
        key_lines: line of each front-matter key (and of ``("patches", i)`` items).
        fields: the four body fields.
        references: distinct upstream references, in order of first appearance.
        placeholders: blanks left in front-matter values (``owner: "<TODO: ...>"``).
        meta: labelled values of a legacy layout (``status``, ``image``, ``owner``...) with
            their lines.
        paths: file paths the text names (a patch script, the benchmark script that runs it),
            as written, with their lines; the audit resolves them in the repository.
        generated: ``(first line, last line, patchset)`` of each block ``patchbay waiver
            new``/``sync`` wrote from a patchset (:mod:`patchbay.waivers.template`).
    """

    path: Path
    id: str
    front_matter: FrontMatter | None
    key_lines: dict[Any, int] = field(default_factory=dict)
    fields: dict[str, FieldResult] = field(default_factory=dict)
    references: list[Reference] = field(default_factory=list)
    placeholders: list[Placeholder] = field(default_factory=list)
    meta: dict[str, tuple[str, int]] = field(default_factory=dict)
    paths: list[NamedPath] = field(default_factory=list)
    generated: list[tuple[int, int, str]] = field(default_factory=list)

    def lists(self, patchset: str, patch_id: str) -> bool:
        """Whether the front matter lists patch ``patch_id`` of the patchset named
        ``patchset``, as ``id`` or ``patchset/id`` (the audit's PB106 judges a bare id several
        patchsets have)."""
        refs = self.patches
        return patch_id in refs or f"{patchset}/{patch_id}" in refs

    def generated_from(self, line: int) -> str | None:
        """The patchset a generated block (``<!-- patchbay:NAME begin (patchset PATH; ...``)
        holding ``line`` was written from, or None for a line of the author's."""
        return next((src for a, b, src in self.generated if a <= line <= b), None)

    @property
    def legacy(self) -> bool:
        """True for a waiver without front matter."""
        return self.front_matter is None

    @property
    def patches(self) -> list[str]:
        """Patch ids the front matter lists (``id`` or ``patchset/id``)."""
        return list(self.front_matter.patches or []) if self.front_matter else []

    @property
    def status(self) -> str | None:
        """``requested`` or ``approved`` (read from a ``Status:`` label in a legacy layout)."""
        if self.front_matter is not None:
            return self.front_matter.status
        value = self.meta.get("status", ("", 0))[0].lower()
        for word in ("approved", "requested"):
            if value.startswith(word):
                return word
        return None

    def line_of(self, key: Any, default: int = 1) -> int:
        """Line of a front-matter key (or ``("patches", i)``), else ``default``."""
        return self.key_lines.get(key, default)


def parse_waiver(
    path: Path,
    *,
    names: Mapping[str, str] | None = None,
    projects: Iterable[str] = (),
    text: str | None = None,
    plain: bool = True,
) -> Waiver:
    """Parse a waiver document, with or without front matter.

    Args:
        path: the Markdown file (read unless ``text`` is given).
        names: project name -> ``owner/repo``, to resolve ``project #N`` references (keys are
            compared case-insensitively).
        projects: further project names (e.g. engine packages) recognised in ``name #N`` form
            anywhere in the text; inside the upstream field any name is.
        text: the file's content, when already read.
        plain: read plain front matter and Markdown (what ``patchbay waiver new`` writes)
            without PyYAML and markdown-it, which gives the same result faster; False always
            uses them (the benchmark checks that both agree).

    Returns:
        The :class:`Waiver`.

    Raises:
        InputError: unreadable file, front matter that is not closed, not valid YAML, not a
            mapping, with an unknown key or a value of the wrong type; the error names
            ``file:line``.
    """
    if text is None:
        text = read_waiver_text(path)
    try:
        yaml_text, body, offset = split_front_matter(text)
    except ValueError as exc:
        raise InputError(str(exc), file=path, line=1) from None
    waiver = Waiver(path=path, id=path.stem, front_matter=None)
    if yaml_text is not None:
        doc = plain_yaml(yaml_text, path, 2) if plain else None
        read_front_matter(waiver, doc or parse_yaml(yaml_text, path, first_line=2))
    parser = BodyParser(offset)
    parser.parse(body, plain=plain)
    waiver.meta = parser.meta
    lower = {k.lower(): v for k, v in (names or {}).items()}
    known = {p.lower() for p in projects} | set(lower)
    waiver.references = find_references(parser.segments, lower, known)
    upstream = upstream_elsewhere(parser, waiver.references)
    taken = frozenset((b.line, b.text) for b in upstream.placeholders) if upstream else frozenset()
    waiver.fields = {name: field_result(name, parser, taken=taken) for name in FIELDS}
    if upstream is not None:
        waiver.fields["upstream"] = upstream
    waiver.paths = named_paths(parser.segments)
    waiver.generated = generated_blocks(text)
    return waiver


_BLOCK = re.compile(r"<!-- patchbay:(\w+) begin \(patchset ([^;]+);")


def generated_blocks(text: str) -> list[tuple[int, int, str]]:
    """``(first line, last line, patchset)`` (1-based, markers included) of every generated
    block of ``text`` whose end marker follows it."""
    blocks = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = _BLOCK.search(line)
        if m is None:
            continue
        end = f"<!-- patchbay:{m[1]} end -->"
        last = next((j for j in range(i + 1, len(lines)) if end in lines[j]), None)
        if last is not None:
            blocks.append((i + 1, last + 1, m[2].strip()))
    return blocks


def read_waiver_text(path: Path) -> str:
    """The text of a waiver file (UTF-8), read as every input file is
    (:func:`patchbay.patchset.inputfiles.read_input`).

    Raises:
        InputError: the file is missing, not a regular file (a FIFO, a device, a symlink loop),
            too large, unreadable or not UTF-8.
    """
    from ..patchset.inputfiles import MAX_YAML_BYTES, read_input_text

    # a FIFO, a device or a symlink loop is refused, never opened blocking (one rule for
    # every input file of patchbay)
    return read_input_text(path, what="waiver", limit=4 * MAX_YAML_BYTES)


def read_waivers(
    folder: Path,
    *,
    names: Mapping[str, str] | None = None,
    projects: Iterable[str] = (),
) -> list[Waiver]:
    """Parse every waiver in ``folder`` (``*.md``, recursively, sorted; ``README.md``, files
    starting with ``_`` and translated copies are not waivers: see :func:`.files.waiver_files`).
    A missing folder holds no waiver.

    Raises:
        InputError: the first malformed waiver (see :func:`parse_waiver`).
    """
    projects = list(projects)
    return [
        parse_waiver(path, names=names, projects=projects) for path in waiver_files(folder).waivers
    ]


def read_front_matter(waiver: Waiver, doc: YamlDocument) -> None:
    """Validate the parsed front matter into ``waiver`` (its id, key lines, placeholders).

    Raises:
        InputError: not a mapping, an unknown key or a value of the wrong type (``file:line``).
    """
    path = waiver.path
    data = doc.data
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError("waiver front matter must be a YAML mapping", file=path, line=2)
    waiver.key_lines = {k[0] if len(k) == 1 else k: v for k, v in doc.lines.items() if k}
    clean: dict[str, Any] = {}
    for key, value in data.items():
        line = doc.line_of((key,)) or 2
        if isinstance(value, str) and (blank := placeholder_in(value)):
            waiver.placeholders.append(Placeholder(line, blank, str(key)))
            continue
        if key == "patches" and isinstance(value, list):
            kept = []
            for n, item in enumerate(value):
                if isinstance(item, str) and (blank := placeholder_in(item)):
                    item_line = doc.line_of((key, n)) or line
                    waiver.placeholders.append(Placeholder(item_line, blank, "patches"))
                else:
                    kept.append(item)
            value = kept
        clean[key] = value
    try:
        waiver.front_matter = convert(clean, FrontMatter)
    except msgspec.ValidationError as exc:
        loc, msg = problem_of(exc, FrontMatter, clean)
        where = ".".join(str(p) for p in loc) or "front matter"
        raise InputError(
            f"waiver front matter: {where}: {msg}", file=path, line=doc.line_of(loc) or 2
        ) from None
    if waiver.front_matter.id:
        waiver.id = waiver.front_matter.id
