"""The Markdown body of a waiver: where the four fields are (headings, labelled items, table
columns: the layouts teams already use), and the text segments each field holds."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..patchset.placeholders import placeholder_in
from .fields import FIELDS, META_LABELS, FieldResult, Placeholder, field_matches, normalise_label
from .plain import plain_tokens
from .references import Reference
from .segments import Segment


@dataclass
class Location:
    """Where a label names a field: the match rank, the kind of label, the line."""

    rank: int
    kind_order: int  # heading before label before table column
    line: int
    where: str


@lru_cache(maxsize=1)
def markdown_parser() -> Any:
    """One CommonMark parser with GFM tables (building it costs more than parsing a waiver)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


_LABEL = re.compile(r"^\s*([A-Za-z][\w /&+,'-]{0,48}?)\s*:\s*(.*)$", re.DOTALL)


class BodyParser:
    """Walks markdown-it tokens once, collecting field locations and text segments."""

    def __init__(self, offset: int) -> None:
        self.offset = offset  # line number of the body's first line, minus one
        self.locations: dict[str, list[Location]] = {name: [] for name in FIELDS}
        self.segments: list[Segment] = []
        self.meta: dict[str, tuple[str, int]] = {}
        self.sections: list[tuple[int, tuple[str, ...]]] = []  # (level, fields) stack

    def current_fields(self) -> tuple[str, ...]:
        for _level, fields in reversed(self.sections):
            if fields:
                return fields
        return ()

    def add_location(self, label: str, line: int, kind_order: int, where: str) -> tuple[str, ...]:
        matches = field_matches(label)
        for name, rank in matches.items():
            self.locations[name].append(Location(rank, kind_order, line, where))
        return tuple(name for name in FIELDS if name in matches)

    def parse(self, body: str, *, plain: bool = True) -> None:
        tokens: list[Any] | None = plain_tokens(body) if plain else None
        if tokens is None:
            tokens = markdown_parser().parse(body)
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.type == "heading_open":
                level = int(tok.tag[1:])
                inline = tokens[i + 1]
                line = self.offset + tok.map[0] + 1
                while self.sections and self.sections[-1][0] >= level:
                    self.sections.pop()
                fields = self.add_location(inline.content, line, 0, f"heading {inline.content!r}")
                self.sections.append((level, fields))
                i += 3
                continue
            if tok.type == "table_open":
                i = self.table(tokens, i)
                continue
            if tok.type in ("fence", "code_block"):
                line = self.offset + tok.map[0] + 1
                self.segments.append(
                    Segment(line, self.current_fields(), tok.content, "", code=True)
                )
            elif tok.type == "inline":
                self.inline(tok)
            i += 1

    def table(self, tokens: list[Any], start: int) -> int:
        section = self.current_fields()
        columns: list[tuple[str, ...]] = []
        header: list[str] = []
        i = start
        row_cells: list[Any] = []
        row_line = 0
        in_head = False
        while i < len(tokens) and tokens[i].type != "table_close":
            tok = tokens[i]
            if tok.type == "thead_open":
                in_head = True
            elif tok.type == "thead_close":
                in_head = False
            elif tok.type == "tr_open":
                row_cells = []
                row_line = self.offset + tok.map[0] + 1
            elif tok.type == "inline":
                row_cells.append(tok)
            elif tok.type == "tr_close":
                if in_head:
                    header = [c.content for c in row_cells]
                    for text in header:
                        columns.append(
                            self.add_location(text, row_line, 2, f"table column {text!r}")
                        )
                else:
                    self.row(row_cells, row_line, columns, section)
            i += 1
        return i + 1

    def row(
        self,
        cells: list[Any],
        line: int,
        columns: list[tuple[str, ...]],
        section: tuple[str, ...],
    ) -> None:
        label = cells[0].content.strip() if cells else None
        for n, cell in enumerate(cells):
            own = columns[n] if n < len(columns) else ()
            fields = own or section
            for segment in self.segments_of(cell, line, fields):
                segment.row = label
                segment.shared_upstream = len(own) > 1 and "upstream" in own
                self.segments.append(segment)

    def inline(self, tok: Any) -> None:
        line = self.offset + tok.map[0] + 1
        children = tok.children or []
        fields = self.current_fields()
        label, rest_index, value = self.label_of(children)
        if label is not None:
            named = self.add_location(label, line, 1, f"label {label!r}")
            meta = META_LABELS.get(normalise_label(label))
            if meta and not named:
                whole = re.sub(r"^\s*\**[^:]*:\s*", "", tok.content, count=1).split("\n", 1)[0]
                self.meta.setdefault(meta, (re.sub(r"[*`]", "", whole).strip(), line))
            if named:
                segments = self.segments_of(tok, line, named, skip=rest_index, prefix=value)
                self.segments.extend(segments)
                return
        self.segments.extend(self.segments_of(tok, line, fields))

    @staticmethod
    def label_of(children: list[Any]) -> tuple[str | None, int, str]:
        """``**Label:** value``, ``**Label**: value`` or ``Label: value`` at the start."""
        if not children:
            return None, 0, ""
        if children[0].type == "text" and not children[0].content and len(children) > 1:
            children = children[1:]
            shift = 1
        else:
            shift = 0
        if children[0].type == "strong_open":
            inner: list[str] = []
            n = 1
            while n < len(children) and children[n].type != "strong_close":
                inner.append(children[n].content)
                n += 1
            strong = "".join(inner)
            after = children[n + 1].content if n + 1 < len(children) else ""
            m = _LABEL.match(strong)
            if m:
                return m.group(1), n + shift, m.group(2)
            if after.startswith(":"):
                return strong.strip(), n + 1 + shift, after[1:]
            return None, 0, ""
        if children[0].type == "text":
            m = _LABEL.match(children[0].content)
            if m and len(m.group(1).split()) <= 4:
                return m.group(1), 0 + shift, m.group(2)
        return None, 0, ""

    def segments_of(
        self,
        tok: Any,
        line: int,
        fields: tuple[str, ...],
        *,
        skip: int = -1,
        prefix: str | None = None,
    ) -> list[Segment]:
        """One segment per source line of an inline token (softbreaks start a new line)."""
        out = [Segment(line, fields, "", "")]
        in_link = 0
        children = tok.children or []
        for n, child in enumerate(children):
            seg = out[-1]
            if n <= skip:
                if n == skip and prefix is not None:
                    seg.text += prefix
                    seg.outside_links += prefix
                continue
            if child.type in ("softbreak", "hardbreak"):
                out.append(Segment(seg.line + 1, fields, "", ""))
            elif child.type == "text":
                seg.text += child.content
                if not in_link:
                    seg.outside_links += child.content
            elif child.type == "code_inline":
                seg.text += " "
                seg.outside_links += " "
                seg.code_spans.append(child.content)
            elif child.type == "link_open":
                in_link += 1
                href = child.attrs.get("href")
                if isinstance(href, str):
                    seg.hrefs.append(href)
            elif child.type == "link_close":
                in_link = max(0, in_link - 1)
            elif child.type == "html_inline":
                seg.html.append(child.content)
        return out


def field_result(
    name: str, parser: BodyParser, *, taken: frozenset[tuple[int, str]] = frozenset()
) -> FieldResult:
    """What ``parser`` found for the body field ``name``: its best location (strongest match,
    heading before label before column, first line) and the blanks left in its text.

    Args:
        name: one of :data:`~.fields.FIELDS`.
        parser: the parsed body.
        taken: blanks (line, text) another field reports (see :func:`upstream_elsewhere`).
    """
    locations = sorted(parser.locations[name], key=lambda loc: (loc.rank, loc.kind_order, loc.line))
    if not locations:
        return FieldResult(name, "missing")
    best = locations[0]
    segments = [s for s in parser.segments if name in s.fields]
    has_text = any(s.text.strip() or s.hrefs for s in segments)
    if not has_text:
        return FieldResult(name, "missing", best.line, f"{best.where} (no text)")
    blanks: list[Placeholder] = []
    for seg in segments:
        if seg.code or (seg.shared_upstream and name != "upstream"):
            continue
        blank = placeholder_in(seg.text)
        for html in seg.html:
            if blank is None:
                blank = placeholder_in(html)
        if blank is not None and (seg.line, blank) not in taken:
            blanks.append(Placeholder(seg.line, blank, name, seg.row))
    return FieldResult(name, "placeholder" if blanks else "found", best.line, best.where, blanks)


# a blank that stands where a reference should be ("the upstream issue is being filed")
_ABOUT_A_REFERENCE = re.compile(
    r"\b(?:upstream|prs?|pull requests?|issues?|tickets?|bug reports?|links?|urls?|mrs?"
    r"|merge requests?|references?)\b",
    re.IGNORECASE,
)


def upstream_elsewhere(parser: BodyParser, references: list[Reference]) -> FieldResult | None:
    """The upstream field of a waiver without an upstream section, heading, label or column:
    the references written under other sections (What, Why, Scope...) and the sentences that
    say a reference does not exist yet ("an upstream issue is being filed"), which are its
    blanks rather than the blanks of the section they sit in.

    Returns:
        The field (``found`` when there are references and no such blank, ``placeholder``
        with blanks), or None when the text has neither (the field stays missing).
    """
    if parser.locations["upstream"]:
        return None
    blanks: list[Placeholder] = []
    for seg in parser.segments:
        if seg.code:
            continue
        blank = placeholder_in(seg.text)
        if blank is not None and _ABOUT_A_REFERENCE.search(blank):
            blanks.append(Placeholder(seg.line, blank, "upstream", seg.row))
    if not references and not blanks:
        return None
    first = min(
        [(r.line, r) for r in references] + [(b.line, None) for b in blanks],
        key=lambda item: item[0],
    )
    line = first[0]
    sections = [s.fields for s in parser.segments if s.line == line and s.fields]
    under = f"under '{sections[0][0]}'" if sections else "in the text"
    what = "reference" if first[1] is not None else "sentence"
    where = f"{what} {under} (no upstream section)"
    return FieldResult("upstream", "placeholder" if blanks else "found", line, where, blanks)
