"""The YAML front matter of a waiver: the machine fields (id, patches, owner, dates, status,
approval), where the front matter ends, and a reader without PyYAML for the plain form
``patchbay waiver new`` writes (:func:`.document.read_front_matter` validates the fields)."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from ..patchset.yamlfile import YamlDocument

ID_PATTERN = (
    r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z"  # the id format of patches (model.py), for waivers too
)


class FrontMatter(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The machine fields of a waiver (all optional here: a missing one is an audit finding,
    a malformed one is bad input). Dates are YAML dates or ISO ``YYYY-MM-DD`` strings."""

    id: Annotated[str, msgspec.Meta(pattern=ID_PATTERN)] | None = None
    patches: list[str] | None = None
    owner: str | None = None
    filed: date | None = None
    review_by: date | None = None
    expires: date | None = None
    status: Literal["requested", "approved"] | None = None
    approval: str | None = None


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
# else (or anything PyYAML would read differently: numbers, booleans, nulls...) plain_yaml
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


def plain_yaml(text: str, path: Path, first_line: int) -> YamlDocument | None:
    """What :func:`~patchbay.patchset.yamlfile.parse_yaml` returns for plain front matter, or
    None."""
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
