"""Placeholders: blanks left to fill in a waiver (``<...>``, ``TODO``, a bare "pending")."""

from __future__ import annotations

import re

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


REFERENCE_HINT = re.compile(r"https?://|#\d|@[0-9a-f]{7}")
"""Something that looks like a reference: a clause holding one says more than "pending"."""


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
            if not _PENDING.search(clause) or REFERENCE_HINT.search(clause):
                continue
            words = [w.strip("-") for w in re.split(r"[^\w-]+", clause.lower()) if w.strip("-")]
            if all(w in _VAGUE for w in words):
                return clause.strip()
    return None
