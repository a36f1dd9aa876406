"""Waiver documents: why a patch may be carried on top of a pinned image, and until when.

A waiver is a Markdown file (``waivers/<id>.md``). Its YAML front matter holds the machine
fields (``id``, the ``patches`` it covers, ``owner``, ``filed``, ``review_by`` or ``expires``,
``status`` and, once approved, the ``approval`` link); its body holds the four fields reviewers
require: what is patched, why the unmodified image cannot run the benchmark, the upstream PR or
issue that removes the need, and the removal plan.

Teams already have many waivers without front matter. The same parser reads those: it finds the
four fields under heading variants and synonyms ("Scope", "Upstream tracking", "Removal and
approval criteria"), in labelled list items (``- **Why:** ...``) and in table columns, and finds
upstream references in any form: Markdown links, bare URLs, ``owner/repo#N``, commit URLs,
``owner/repo@<commit>`` and ``project #N`` in text (resolved through a name-to-repository map).
Each field is reported as found (with its line), missing, or holding a placeholder (``<...>``,
``TODO``, ``TBD``, or "pending" standing where a reference should be).

The status words of the front matter (``requested``, ``approved``) are the review states of the
benchmark repositories' waiver process; the four body fields are their review checklist.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import InputError
from .yamlfile import YamlDocument, parse_yaml

FIELDS = ("what", "why", "upstream", "removal")
"""The four body fields every waiver must fill, in the order reviewers read them."""

FIELD_TITLES = {
    "what": "what is patched",
    "why": "why the unmodified image cannot run the benchmark",
    "upstream": "upstream PR/issue links",
    "removal": "removal plan",
}

FieldName = Literal["what", "why", "upstream", "removal"]
FieldStatus = Literal["found", "missing", "placeholder"]

_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"  # the id format of patches (model.py), for waivers too


# -- placeholders -----------------------------------------------------------------------------

# tags a waiver may legitimately contain; any other <...> is a blank left to fill
_HTML_TAGS = frozenset(
    [
        "a",
        "abbr",
        "b",
        "br",
        "code",
        "del",
        "details",
        "div",
        "em",
        "hr",
        "i",
        "img",
        "ins",
        "kbd",
        "li",
        "ol",
        "p",
        "pre",
        "s",
        "small",
        "span",
        "strong",
        "sub",
        "summary",
        "sup",
        "table",
        "tbody",
        "td",
        "th",
        "thead",
        "tr",
        "u",
        "ul",
    ]
)
_ANGLE = re.compile(r"<(?!https?://|mailto:)(/?)([A-Za-z][^<>\n]{0,200})>")
_MARKER = re.compile(r"(?<![\w-])(?:TODO|TBD|FIXME|XXX|tbd|todo)(?![\w-])|\?\?\?")
_PENDING = re.compile(r"\bpending\b", re.IGNORECASE)
# words that, next to "pending", still say nothing ("upstream tracking pending", "PR pending")
_VAGUE = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "be",
        "to",
        "still",
        "yet",
        "upstream",
        "tracking",
        "tracked",
        "track",
        "status",
        "upstream-status",
        "pr",
        "prs",
        "mr",
        "pull",
        "request",
        "issue",
        "issues",
        "link",
        "links",
        "reference",
        "references",
        "ref",
        "url",
        "fix",
        "patch",
        "review",
        "under",
        "will",
        "filed",
        "filing",
        "submission",
        "submitted",
        "number",
        "tbd",
        "pending",
    ]
)


def placeholder_in(text: str) -> str | None:
    """The first placeholder in ``text``, or None.

    A placeholder is a blank left to fill: ``<...>`` that is not an HTML tag or autolink,
    ``TODO``/``TBD``/``FIXME``/``XXX``/``???``, or a clause that says only that something is
    "pending" ("upstream tracking pending"); a clause that gives a reason ("Pending: no standalone
    PR; part of a larger change") is a statement, not a blank.

    Args:
        text: plain text (one line, table cell or list item).
    """
    for m in _ANGLE.finditer(text):
        name = m.group(2).split(None, 1)[0].rstrip("/").lower() if m.group(2).strip() else ""
        if name not in _HTML_TAGS:
            return m.group(0)
    m = _MARKER.search(text)
    if m:
        return m.group(0)
    if _PENDING.search(text):
        for clause in re.split(r";|\.\s|\.$|\n", text):
            if not _PENDING.search(clause) or _REFERENCE_HINT.search(clause):
                continue
            words = [w.strip("-") for w in re.split(r"[^\w-]+", clause.lower()) if w.strip("-")]
            if all(w in _VAGUE for w in words):
                return clause.strip()
    return None


# -- references -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """An upstream reference found in a waiver.

    Attributes:
        text: as written (a URL, ``owner/repo#N``, ``vllm #123``, ...).
        line: 1-based line in the waiver file.
        form: ``url``, ``link`` (a Markdown link), ``owner/repo#N``, ``owner/repo@commit`` or
            ``project #N``.
        repository: ``owner/name`` when known; None for ``project #N`` without a mapping.
        number: PR or issue number, when the reference has one.
        commit: commit id, when the reference is a commit.
        kind: ``pull``, ``issue``, ``commit`` or None (``#N`` does not say which).
        project: the project name of a ``project #N`` reference.
    """

    text: str
    line: int
    form: str
    repository: str | None = None
    number: int | None = None
    commit: str | None = None
    kind: str | None = None
    project: str | None = None

    @property
    def resolved(self) -> bool:
        """True when the reference names a repository (it can be looked up)."""
        return self.repository is not None

    @property
    def canonical(self) -> str:
        """``owner/repo#N``, ``owner/repo@commit``, ``project #N`` or the URL."""
        if self.repository and self.number is not None:
            return f"{self.repository}#{self.number}"
        if self.repository and self.commit:
            return f"{self.repository}@{self.commit}"
        if self.project and self.number is not None:
            return f"{self.project} #{self.number}"
        return self.text


_URL = re.compile(r"https?://[^\s<>()\[\]`\"']+")
_FORGE_URL = re.compile(
    r"https?://(?:www\.)?(?P<host>github\.com|gitlab\.com|[\w.-]*gitlab[\w.-]*)/"
    r"(?P<repo>[\w.-]+/[\w.-]+(?:/[\w.-]+)*?)/(?:-/)?"
    r"(?P<kind>pull|pulls|issues|merge_requests|commit|commits)/(?P<ref>[0-9a-f]{7,40}|\d+)\b"
)
_OWNER_REPO_NUM = re.compile(r"(?<![\w/.#@-])([A-Za-z0-9][\w.-]*/[\w.-]+)#(\d+)\b")
_OWNER_REPO_SHA = re.compile(r"(?<![\w/.#@-])([A-Za-z0-9][\w.-]*/[\w.-]+)@([0-9a-f]{7,40})\b")
_PROJECT_NUM = re.compile(
    r"(?<![\w/#.@-])([A-Za-z][\w.-]*)\s+(?:(?:PR|pull request|pull|issue|MR)\s+)?#(\d+)\b"
)
_REFERENCE_HINT = re.compile(r"https?://|#\d|@[0-9a-f]{7}")
# "PR #12", "issue #4", "step #2": a number, not a project's PR
_NOT_PROJECTS = frozenset(
    [
        "pr",
        "prs",
        "pull",
        "pulls",
        "request",
        "requests",
        "issue",
        "issues",
        "mr",
        "ticket",
        "bug",
        "bugs",
        "number",
        "no",
        "item",
        "items",
        "step",
        "row",
        "rows",
        "case",
        "cases",
        "see",
        "fix",
        "fixes",
        "fixed",
        "close",
        "closes",
        "closed",
        "and",
        "or",
        "in",
        "of",
        "the",
        "a",
        "an",
        "waiver",
        "waivers",
        "commit",
        "version",
        "patch",
        "patches",
        "review",
        "comment",
        "line",
        "page",
        "option",
        "section",
        "table",
        "part",
        "phase",
        "attempt",
        "run",
        "build",
        "job",
    ]
)


def _forge_reference(url: str, line: int, form: str) -> Reference | None:
    m = _FORGE_URL.match(url)
    if m is None:
        return None
    ref = m.group("ref")
    kind = {"pulls": "pull", "merge_requests": "pull", "commits": "commit", "issues": "issue"}.get(
        m.group("kind"), m.group("kind")
    )
    repo = m.group("repo")
    if kind == "commit":
        return Reference(url, line, form, repository=repo, commit=ref, kind="commit")
    if not ref.isdigit():
        return None
    return Reference(url, line, form, repository=repo, number=int(ref), kind=kind)


def _strip_url(url: str) -> str:
    return url.rstrip(".,;:!?)")


# -- the Markdown structure -------------------------------------------------------------------


@dataclass
class Placeholder:
    """A blank left in a field: where, what text, and in which table row (if any)."""

    line: int
    text: str
    field: str
    row: str | None = None


@dataclass
class FieldResult:
    """What the parser found for one of the four body fields.

    Attributes:
        name: ``what``, ``why``, ``upstream`` or ``removal``.
        status: ``found``, ``missing`` or ``placeholder`` (found, but with blanks left in it).
        line: where the field is (its heading, label or table column), or None when missing.
        where: how it was found, e.g. ``heading 'Scope'`` or ``table column 'Change'``.
        placeholders: every blank in the field, with its line and table row.
    """

    name: str
    status: FieldStatus
    line: int | None = None
    where: str | None = None
    placeholders: list[Placeholder] = field(default_factory=list)


@dataclass
class _Location:
    rank: int
    kind_order: int  # heading before label before table column
    line: int
    where: str


@dataclass
class _Segment:
    """One line of text (or one table cell) and the fields it belongs to."""

    line: int
    fields: tuple[str, ...]
    text: str  # plain text, code spans removed
    outside_links: str  # the same without link texts (for `project #N`)
    hrefs: list[str] = field(default_factory=list)
    html: list[str] = field(default_factory=list)
    row: str | None = None
    # a cell shared by the upstream field and others: its blanks are upstream's (the other
    # fields' part is the text that was written)
    shared_upstream: bool = False
    code: bool = False


_SYNONYMS: dict[str, list[tuple[int, re.Pattern[str]]]] = {
    "what": [
        (
            0,
            re.compile(
                r"what(?: is| was| gets| to be| is being)? (?:patched|changed|modified)"
                r"|what(?: it)? changes?|what|(?:exact |code |source )?changes?(?: made)?"
                r"|patch(?:es)?(?: applied| content)?|patched (?:files?|code)|modifications?"
            ),
        ),
        (1, re.compile(r"scope|summary|description")),
    ],
    "why": [
        (
            0,
            re.compile(
                r"why\b.*|reasons?(?: for .*)?|rationale|justification|necessity|motivation"
                r"|failure without .*|problem|impact"
            ),
        ),
    ],
    "upstream": [
        (
            0,
            re.compile(
                r"upstream\b.*|tracking|tracked (?:in|by)|references?|links?"
                r"|related (?:prs?|issues?|work)|(?:prs?|pull requests?|issues?)(?: links?)?"
            ),
        ),
    ],
    "removal": [
        (
            0,
            re.compile(
                r"removal\b.*|remove when\b.*|removing\b.*|exit (?:criteria|plan)|sunset\b.*"
                r"|when to remove\b.*|how to remove\b.*|drop (?:plan|criteria)"
            ),
        ),
        (1, re.compile(r"plan|expiry|expiration")),
    ],
}
_META_LABELS = {
    "status": "status",
    "owner": "owner",
    "image": "image",
    "pinned image": "image",
    "base image": "image",
    "config": "config",
    "master config entry": "config",
    "approval": "approval",
    "approved by": "approval",
}


def _normalise(text: str) -> str:
    text = re.sub(r"\([^)]*\)", " ", text)  # "Why (technical)" -> "why"
    text = re.sub(r"[*_`#]", " ", text.lower())
    text = re.sub(r"[:.!?]+\s*$", "", text.strip())
    return re.sub(r"\s+", " ", text).strip()


def field_matches(label: str) -> dict[str, int]:
    """The body fields a heading, label or column header names, with the rank of the match.

    ``"Exact changes and necessity"`` names ``what`` and ``why``; ``"Scope"`` names ``what``
    with a weaker rank than ``"What is patched"``. The label is split at ``/``, ``&``, ``,``,
    "and" and "or"; each part must match a synonym as a whole.

    Returns:
        field name -> rank (0 strongest); empty when the label names no field.
    """
    return dict(_field_matches(label))


@lru_cache(maxsize=1024)
def _field_matches(label: str) -> dict[str, int]:
    """:func:`field_matches`, once per label (waivers repeat the same headings and columns)."""
    out: dict[str, int] = {}
    for part in re.split(r"\s*(?:/|&|\+|,|\band\b|\bor\b)\s*", _normalise(label)):
        if not part:
            continue
        for name, patterns in _SYNONYMS.items():
            for rank, pattern in patterns:
                if pattern.fullmatch(part) and rank < out.get(name, 99):
                    out[name] = rank
    return out


@lru_cache(maxsize=1)
def _markdown() -> Any:
    """One CommonMark parser with GFM tables (building it costs more than parsing a waiver)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


# -- plain Markdown without markdown-it ---------------------------------------------------------
#
# Most waivers (the ones `patchbay waiver new` writes, once filled, and generated ones) are plain:
# ATX headings, paragraphs, `- ` items (continued by lines indented by two spaces), GFM tables,
# `code` spans. For such a body,
# _plain_tokens builds the tokens markdown-it would give _BodyParser (same types, lines, content
# and inline children), an order of magnitude faster; for anything else (emphasis, links, HTML,
# escapes, entities, indentation, fences, quotes, ordered lists...) it returns None and
# markdown-it parses the body. Every rule below follows markdown-it-py's commonmark preset with
# tables (rules_block/heading.py, paragraph.py, list.py, table.py; rules_inline/backticks.py).


class _Tok:
    """The attributes of a markdown-it ``Token`` that :class:`_BodyParser` reads."""

    __slots__ = ("attrs", "children", "content", "map", "tag", "type")

    def __init__(
        self,
        type: str,
        tag: str = "",
        map: list[int] | None = None,
        content: str = "",
        children: list[_Tok] | None = None,
    ) -> None:
        self.type = type
        self.tag = tag
        self.map = map
        self.content = content
        self.children = children
        self.attrs: dict[str, Any] = {}


# anywhere in the body: whitespace other than space and newline (markdown-it's trim set), NUL,
# escapes, HTML and autolinks, links and images, emphasis, entities, double backticks (and
# fences), an underscore that is not inside a word
_NOT_PLAIN = re.compile(
    "[\t\r\x00\x0b\x0c\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\\\\<\\[*&]"
)
_NOT_IN_WORD = re.compile(r"_(?:(?<![A-Za-z0-9_]_)|(?![A-Za-z0-9_]))")
# a line that starts a block this path does not build (indented code or continuation,
# blockquote, setext underline, list markers other than "- ", fences, ordered lists)
_NOT_PLAIN_LINE = re.compile(r"[ >=+~]|-(?! )|[0-9]+[.)]")
_NOT_PLAIN_ITEM = re.compile(r"[ \-#>=+~|]|[0-9]+[.)]|$")
_TABLE_DELIMITER = re.compile(r"^:?-+:?$")
_MAX_AUTOCOMPLETED_CELLS = 0x10000


def _plain_inline(content: str, line: int) -> _Tok | None:
    """The inline token of ``content`` (text, ``code`` spans, soft breaks), or None."""
    children: list[_Tok] = []
    for k, text in enumerate(content.split("\n")):
        if k:
            children.append(_Tok("softbreak", "br"))
        parts = text.split("`")
        if len(parts) % 2 == 0:
            return None  # an unmatched backtick (a code span across lines, or a literal one)
        for j, part in enumerate(parts):
            if j % 2 == 0:
                if part:
                    children.append(_Tok("text", content=part))
                continue
            if part.startswith(" ") and part.endswith(" ") and part.strip(" "):
                part = part[1:-1]
            children.append(_Tok("code_inline", "code", content=part))
    return _Tok(
        "inline", map=[line, line + content.count("\n") + 1], content=content, children=children
    )


def _split_row(text: str) -> list[str]:
    """markdown-it's table row split (no backslash escapes in a plain body)."""
    columns = text.strip(" ").split("|")
    if columns and columns[0] == "":
        columns.pop(0)
    if columns and columns[-1] == "":
        columns.pop()
    return columns


def _table_columns(lines: list[str], i: int) -> list[str] | None:
    """The header cells when a GFM table starts at line ``i`` (markdown-it's test), or None."""
    if i + 2 > len(lines) or "|" not in lines[i]:
        return None
    delimiter = lines[i + 1].lstrip(" ")
    if len(lines[i + 1]) - len(delimiter) >= 4:
        return None  # indented code
    if len(delimiter) < 2 or delimiter[0] not in "|-:" or delimiter[1] not in "|-: ":
        return None
    if delimiter[0] == "-" and delimiter[1] == " ":
        return None
    if delimiter.strip("|-: "):
        return None
    columns = delimiter.split("|")
    aligns = 0
    for n, column in enumerate(columns):
        column = column.strip(" ")
        if not column:
            if n == 0 or n == len(columns) - 1:
                continue
            return None
        if not _TABLE_DELIMITER.search(column):
            return None
        aligns += 1
    header = lines[i].strip(" ")
    if "|" not in header:
        return None
    cells = _split_row(header)
    if not cells or len(cells) != aligns:
        return None
    return cells


def _plain_tokens(body: str) -> list[_Tok] | None:
    """markdown-it's tokens for a plain body (see above), or None for any other body."""
    if _NOT_PLAIN.search(body) or "``" in body or ("_" in body and _NOT_IN_WORD.search(body)):
        return None
    lines = body.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # markdown-it has no line after a final newline
    tokens: list[_Tok] = []
    n = len(lines)
    i = 0
    after_item = False  # the previous line is a list item: only a few lines may follow it
    in_list = False  # a list item came before, with only blank lines since
    while i < n:
        line = lines[i]
        if not line.strip(" "):
            after_item = False
            i += 1
            continue
        if line.endswith(" ") or _NOT_PLAIN_LINE.match(line):
            return None
        heading = _heading(line)
        item = line.startswith("- ")
        if after_item and heading is None and not item:
            return None  # a lazy continuation of the item (or a table, a paragraph...)
        after_item = False
        if in_list and item:  # the next item of the list, never a table
            header = None
        else:
            in_list = False
            header = _table_columns(lines, i)
        if header is not None:
            i = _plain_table(lines, i, header, tokens)
            if i < 0:
                return None
            continue
        if heading is not None:
            level, text = heading
            inline = _plain_inline(text, i)
            if inline is None:
                return None
            tokens += [
                _Tok("heading_open", f"h{level}", [i, i + 1]),
                inline,
                _Tok("heading_close", f"h{level}"),
            ]
            i += 1
            continue
        if item:
            if _NOT_PLAIN_ITEM.match(line, 2):
                return None
            end = i + 1  # the item's own lines: indented by two spaces, plain text
            while end < n and lines[end].startswith("  ") and lines[end].strip(" "):
                cont = lines[end][2:]
                if cont.endswith(" ") or "|" in cont or _NOT_PLAIN_ITEM.match(cont):
                    return None
                end += 1
            if end > i + 1 and "|" in line:
                return None  # the item might hold a table
            inline = _plain_inline("\n".join(text[2:] for text in lines[i:end]), i)
            if inline is None:
                return None
            tokens.append(inline)
            after_item = in_list = True
            i = end
            continue
        end = i + 1  # a paragraph: up to a blank line or a block that interrupts it
        while end < n:
            nxt = lines[end]
            if not nxt.strip(" ") or _heading(nxt) is not None or nxt.startswith("- "):
                break
            if nxt.endswith(" ") or _NOT_PLAIN_LINE.match(nxt):
                return None
            if _table_columns(lines, end) is not None:
                break
            end += 1
        inline = _plain_inline("\n".join(lines[i:end]), i)
        if inline is None:
            return None
        tokens.append(inline)
        i = end
    return tokens


def _heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line, or None."""
    level = len(line) - len(line.lstrip("#"))
    if not 1 <= level <= 6 or (len(line) > level and line[level] != " "):
        return None
    end = len(line)
    while end > level and line[end - 1] == " ":
        end -= 1
    closing = end
    while closing > level and line[closing - 1] == "#":
        closing -= 1
    if closing > level and line[closing - 1] == " ":
        end = closing
    return level, line[level:end].strip(" ")


def _plain_table(lines: list[str], i: int, header: list[str], tokens: list[_Tok]) -> int:
    """Append a table's tokens; returns the line after it, or -1 when the table is not plain."""
    out = [
        _Tok("table_open", "table"),
        _Tok("thead_open", "thead"),
        _Tok("tr_open", "tr", [i, i + 1]),
    ]
    for cell in header:
        inline = _plain_inline(cell.strip(" "), i)
        if inline is None:
            return -1
        out.append(inline)
    out += [_Tok("tr_close", "tr"), _Tok("thead_close", "thead")]
    autocompleted = 0
    row = i + 2
    while row < len(lines) and lines[row].strip(" "):
        text = lines[row]
        if not text.startswith("|") or text.endswith(" "):
            return -1  # a row that might end the table (a list item, a heading...)
        columns = _split_row(text)
        autocompleted += len(header) - len(columns)
        if autocompleted > _MAX_AUTOCOMPLETED_CELLS:
            return -1
        out.append(_Tok("tr_open", "tr", [row, row + 1]))
        for n in range(len(header)):
            inline = _plain_inline(columns[n].strip(" ") if n < len(columns) else "", row)
            if inline is None:
                return -1
            out.append(inline)
        out.append(_Tok("tr_close", "tr"))
        row += 1
    out.append(_Tok("table_close", "table"))
    tokens += out
    return row


_LABEL = re.compile(r"^\s*([A-Za-z][\w /&+,'-]{0,48}?)\s*:\s*(.*)$", re.DOTALL)


class _BodyParser:
    """Walks markdown-it tokens once, collecting field locations and text segments."""

    def __init__(self, offset: int) -> None:
        self.offset = offset  # line number of the body's first line, minus one
        self.locations: dict[str, list[_Location]] = {name: [] for name in FIELDS}
        self.segments: list[_Segment] = []
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
            self.locations[name].append(_Location(rank, kind_order, line, where))
        return tuple(name for name in FIELDS if name in matches)

    def parse(self, body: str, *, plain: bool = True) -> None:
        tokens: list[Any] | None = _plain_tokens(body) if plain else None
        if tokens is None:
            tokens = _markdown().parse(body)
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
                    _Segment(line, self.current_fields(), tok.content, "", code=True)
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
            meta = _META_LABELS.get(_normalise(label))
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
    ) -> list[_Segment]:
        """One segment per source line of an inline token (softbreaks start a new line)."""
        out = [_Segment(line, fields, "", "")]
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
                out.append(_Segment(seg.line + 1, fields, "", ""))
            elif child.type == "text":
                seg.text += child.content
                if not in_link:
                    seg.outside_links += child.content
            elif child.type == "code_inline":
                seg.text += " "
                seg.outside_links += " "
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


# -- the front matter -------------------------------------------------------------------------


class FrontMatter(BaseModel):
    """The machine fields of a waiver (all optional here: a missing one is an audit finding,
    a malformed one is bad input)."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, pattern=_ID)
    patches: list[str] | None = None
    owner: str | None = None
    filed: date | None = None
    review_by: date | None = None
    expires: date | None = None
    status: Literal["requested", "approved"] | None = None
    approval: str | None = None


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
    """

    path: Path
    id: str
    front_matter: FrontMatter | None
    key_lines: dict[Any, int] = field(default_factory=dict)
    fields: dict[str, FieldResult] = field(default_factory=dict)
    references: list[Reference] = field(default_factory=list)
    placeholders: list[Placeholder] = field(default_factory=list)
    meta: dict[str, tuple[str, int]] = field(default_factory=dict)

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


_FRONT_MATTER_END = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)


def split_front_matter(text: str) -> tuple[str | None, str, int]:
    """Split ``---``-delimited YAML front matter from the Markdown body.

    Returns:
        (front matter text or None, body, line number of the body's first line minus one).

    Raises:
        ValueError: the front matter is opened with ``---`` on line 1 but never closed.
    """
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return None, text, 0
    start = text.index("\n") + 1
    end = _FRONT_MATTER_END.search(text, start)
    if end is None:
        raise ValueError("front matter opened with '---' on line 1 is never closed")
    yaml_text = text[start : end.start()]
    after = text.find("\n", end.end())
    body = "" if after == -1 else text[after + 1 :]
    offset = text.count("\n", 0, after + 1) if after != -1 else text.count("\n") + 1
    return yaml_text, body, offset


# the front matter `patchbay waiver new` writes, without PyYAML: `key: value` lines whose values
# are dates, quoted strings without escapes, plain words, or lists of plain words; for anything
# else (or anything PyYAML would read differently: numbers, booleans, nulls...) _plain_yaml
# returns None and parse_yaml reads the text
_YAML_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(?: +(.*))?$")
_YAML_ITEM = re.compile(r"( *)- +(.*)$")
_YAML_WORD = re.compile(r"[A-Za-z][A-Za-z0-9._/@+-]*")
_YAML_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9._/@:#+-]*(?: [A-Za-z0-9._/@:#+-]+)*")
_YAML_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_YAML_WORDS = frozenset(["yes", "no", "true", "false", "on", "off", "null", "y", "n"])
_YAML_NOT_PLAIN = re.compile(r"[^\n\x20-\x7e]")  # tabs, control and non-ASCII characters


def _yaml_scalar(text: str, *, word: bool = False) -> tuple[Any] | None:
    """(value,) of a plain or quoted YAML scalar as PyYAML's safe loader reads it, or None
    when it is not one of the forms this path knows."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        inner = text[1:-1]
        return None if word or text[0] in inner or "\\" in inner else (inner,)
    m = _YAML_DATE.fullmatch(text)
    if m and not word:
        try:
            return (date(int(m.group(1)), int(m.group(2)), int(m.group(3))),)
        except ValueError:
            return None
    if not (_YAML_WORD if word else _YAML_PLAIN).fullmatch(text):
        return None
    if text.lower() in _YAML_WORDS or text.endswith(":") or ": " in text or " #" in text:
        return None
    return (text,)


def _plain_yaml(text: str, path: Path, first_line: int) -> YamlDocument | None:
    """What :func:`~patchbay.yamlfile.parse_yaml` returns for plain front matter, or None."""
    if _YAML_NOT_PLAIN.search(text):
        return None
    data: dict[str, Any] = {}
    lines: dict[tuple[Any, ...], int] = {}
    rows = text.split("\n")
    k = 0
    while k < len(rows):
        row = rows[k]
        line = first_line + k
        k += 1
        if not row or row.startswith("#"):
            continue
        m = _YAML_KEY.match(row)
        if m is None or m.group(1) in data or m.group(1).lower() in _YAML_WORDS:
            return None
        key, value = m.group(1), m.group(2)
        lines.setdefault((), line)
        lines[(key,)] = line
        if value is None:  # a block sequence of words on the lines below
            items: list[Any] = []
            indent = None
            while k < len(rows) and (item := _YAML_ITEM.match(rows[k])):
                scalar = _yaml_scalar(item.group(2), word=True)
                if scalar is None or indent not in (None, item.group(1)):
                    return None
                indent = item.group(1)
                lines[(key, len(items))] = first_line + k
                items.append(scalar[0])
                k += 1
            if not items:
                return None
            data[key] = items
        elif value.startswith("["):
            if not value.endswith("]"):
                return None
            inner = value[1:-1].strip(" ")
            items = []
            for part in inner.split(",") if inner else []:
                scalar = _yaml_scalar(part.strip(" "), word=True)
                if scalar is None:
                    return None
                lines[(key, len(items))] = line
                items.append(scalar[0])
            data[key] = items
        else:
            scalar = _yaml_scalar(value)
            if scalar is None:
                return None
            data[key] = scalar[0]
    if not data:
        return None
    return YamlDocument(path=path, data=data, lines=lines)


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
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read waiver: {exc}", file=path) from None
    try:
        yaml_text, body, offset = split_front_matter(text)
    except ValueError as exc:
        raise InputError(str(exc), file=path, line=1) from None
    waiver = Waiver(path=path, id=path.stem, front_matter=None)
    if yaml_text is not None:
        doc = _plain_yaml(yaml_text, path, 2) if plain else None
        _read_front_matter(waiver, doc or parse_yaml(yaml_text, path, first_line=2))
    parser = _BodyParser(offset)
    parser.parse(body, plain=plain)
    waiver.meta = parser.meta
    waiver.fields = {name: _field_result(name, parser) for name in FIELDS}
    lower = {k.lower(): v for k, v in (names or {}).items()}
    known = {p.lower() for p in projects} | set(lower)
    waiver.references = _references(parser.segments, lower, known)
    return waiver


def _read_front_matter(waiver: Waiver, doc: YamlDocument) -> None:
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
        waiver.front_matter = FrontMatter.model_validate(clean)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            line = doc.line_of(loc) or 2
            where = ".".join(str(p) for p in loc) or "front matter"
            msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
            problems.append((line, f"{where}: {msg}"))
        (line, first), rest = problems[0], problems[1:]
        raise InputError(
            f"waiver front matter: {first}",
            file=path,
            line=line,
            details=[f"{path}:{n}: {m}" for n, m in rest],
        ) from None
    if waiver.front_matter.id:
        waiver.id = waiver.front_matter.id


def _field_result(name: str, parser: _BodyParser) -> FieldResult:
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
        if blank is not None:
            blanks.append(Placeholder(seg.line, blank, name, seg.row))
    return FieldResult(name, "placeholder" if blanks else "found", best.line, best.where, blanks)


def _references(
    segments: list[_Segment], names: Mapping[str, str], known: set[str]
) -> list[Reference]:
    found: list[Reference] = []
    seen: set[str] = set()

    def add(ref: Reference | None) -> None:
        if ref is not None and ref.canonical not in seen:
            seen.add(ref.canonical)
            found.append(ref)

    for seg in segments:
        if seg.code:
            continue
        in_upstream = "upstream" in seg.fields
        for href in seg.hrefs:
            ref = _forge_reference(href, seg.line, "link")
            if ref is None and in_upstream and href.startswith(("http://", "https://")):
                ref = Reference(href, seg.line, "link")
            add(ref)
        text = seg.outside_links
        # each pattern needs a character the text may not hold: skip the ones that cannot match
        if "http" in text:
            for m in _URL.finditer(text):
                url = _strip_url(m.group(0))
                ref = _forge_reference(url, seg.line, "url")
                if ref is None and in_upstream:
                    ref = Reference(url, seg.line, "url")
                add(ref)
            text = _URL.sub(" ", text)
        if "#" not in text and "@" not in text:
            continue
        for m in _OWNER_REPO_NUM.finditer(text):
            add(Reference(m.group(0), seg.line, "owner/repo#N", m.group(1), number=int(m.group(2))))
        for m in _OWNER_REPO_SHA.finditer(text):
            add(Reference(m.group(0), seg.line, "owner/repo@commit", m.group(1), commit=m.group(2)))
        text = _OWNER_REPO_NUM.sub(" ", _OWNER_REPO_SHA.sub(" ", text))
        for m in _PROJECT_NUM.finditer(text):
            project = m.group(1)
            key = project.lower()
            if key in _NOT_PROJECTS or not (in_upstream or key in known):
                continue
            repo = names.get(key)
            add(
                Reference(
                    m.group(0),
                    seg.line,
                    "project #N",
                    repository=repo,
                    number=int(m.group(2)),
                    project=project,
                )
            )
    return found


def read_waivers(
    folder: Path,
    *,
    names: Mapping[str, str] | None = None,
    projects: Iterable[str] = (),
) -> list[Waiver]:
    """Parse every waiver in ``folder`` (``*.md``, recursively, sorted; ``README.md`` and files
    starting with ``_`` are documentation, not waivers). A missing folder holds no waiver.

    Raises:
        InputError: the first malformed waiver (see :func:`parse_waiver`).
    """
    if not folder.is_dir():
        return []
    projects = list(projects)
    out = []
    for path in sorted(folder.rglob("*.md")):
        if path.name.lower() == "readme.md" or path.name.startswith("_"):
            continue
        out.append(parse_waiver(path, names=names, projects=projects))
    return out


# -- `patchbay waiver new` --------------------------------------------------------------------


@dataclass
class PatchSummary:
    """What the template says about one patch (read from the patchset by the command)."""

    id: str
    kind: str
    target: str | None
    description: str
    content: str  # one line: files touched (the kind's own description)
    upstream: list[str]
    upstream_status: str | None  # "Pending: reason"
    ref: str | None = None  # how the waiver's `patches` list names it (default: the id)


def waiver_template(
    *,
    waiver_id: str,
    patchset_name: str,
    patchset_path: str,
    image: str,
    patches: list[PatchSummary],
    today: date,
) -> str:
    """The text of a new waiver, prefilled from a patchset.

    Everything the patchset knows is written out (patch ids, files touched, upstream references,
    image); what only a person can say is a ``<TODO: ...>`` blank, which ``patchbay audit``
    reports (PB202) until it is filled.
    """

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    ids = ", ".join(p.ref or p.id for p in patches)
    rows = "\n".join(
        f"| `{p.id}` | {p.kind} | {p.target or '-'} | {cell(p.content)} | {cell(p.description)} |"
        for p in patches
    )
    upstream_lines = []
    for p in patches:
        refs = ", ".join(p.upstream)
        status = f" (Upstream-Status {p.upstream_status})" if p.upstream_status else ""
        if refs:
            upstream_lines.append(f"- `{p.id}`: {refs}{status}")
        else:
            upstream_lines.append(
                f"- `{p.id}`: no upstream reference{status}; "
                "<TODO: the upstream PR or issue that removes the need, once there is one>"
            )
    upstream = "\n".join(upstream_lines)
    return f"""---
id: {waiver_id}
patches: [{ids}]
owner: "<TODO: who carries these patches>"
filed: {today.isoformat()}
review_by: "<TODO: YYYY-MM-DD, when this waiver is looked at again>"
status: requested
# approval: <link to the approving review>  (required once status is approved)
---

# Waiver {waiver_id}: patchset {patchset_name}

<!-- Written by `patchbay waiver new`. Replace every <TODO: ...>; `patchbay audit` lists the
     ones left. -->

Image: `{image}`. Patchset: `{patchset_path}`.

## What is patched

| patch | kind | target | content | description |
|---|---|---|---|---|
{rows}

## Why the unmodified image cannot run the benchmark

<TODO: what fails without these patches (error, crash or wrong result), on which config>

## Upstream

{upstream}

## Removal plan

<TODO: when these patches are dropped (e.g. an image that has the upstream fixes), and by whom>
"""
