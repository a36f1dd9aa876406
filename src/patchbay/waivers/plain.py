"""Plain Markdown without markdown-it: the tokens of a body that uses only what
``patchbay waiver new`` writes, an order of magnitude faster than the full parser."""

from __future__ import annotations

import re
from typing import Any

# -- plain Markdown without markdown-it ---------------------------------------------------------
#
# Most waivers (the ones `patchbay waiver new` writes, once filled, and generated ones) are plain:
# ATX headings, paragraphs, `- ` items (continued by lines indented by two spaces), GFM tables,
# `code` spans. For such a body,
# plain_tokens builds the tokens markdown-it would give BodyParser (same types, lines, content
# and inline children), an order of magnitude faster; for anything else (emphasis, links, HTML,
# escapes, entities, indentation, fences, quotes, ordered lists...) it returns None and
# markdown-it parses the body. Every rule below follows markdown-it-py's commonmark preset with
# tables (rules_block/heading.py, paragraph.py, list.py, table.py; rules_inline/backticks.py).


class _Tok:
    """The attributes of a markdown-it ``Token`` that :class:`BodyParser` reads."""

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


def plain_tokens(body: str) -> list[_Tok] | None:
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
