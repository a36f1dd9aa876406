"""Placeholders: blanks left to fill in a waiver or a patchset (``<...>``, ``TODO``, a bare
"pending"), found without loading the waiver parser (``validate`` asks too)."""

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
# words that say a reference does not exist yet ("upstream tracking pending", "being filed",
# "currently unavailable", "pending while this draft is reviewed"): a clause needs one of them,
# and nothing but _VAGUE words, to be a blank
_ABSENT = re.compile(
    r"\b(?:pending|unavailable|not (?:yet )?available|yet|being|to be|will|forthcoming|awaiting"
    r"|soon|later|in progress|to follow|tba|tbc)\b",
    re.IGNORECASE,
)
# a reference said to be on its way, whatever else the clause says ("PR to be opened after
# validation", "the upstream issue is being filed", "no upstream issue yet")
_NOT_YET = re.compile(
    r"\b(?:being|to be|will be|yet to be|not yet(?: been)?|still to be|about to be)"
    r"\s+(?:filed|opened|created|submitted|raised|reported|added|linked|posted|sent|written"
    r"|prepared|drafted|shared|published)\b"
    r"|\b(?:prs?|pull requests?|issues?|tickets?|bug reports?|links?|urls?|mrs?|merge requests?"
    r"|references?)\s+(?:is\s+|are\s+)?(?:currently\s+|still\s+|temporarily\s+|not\s+yet\s+)?"
    r"(?:unavailable|not\s+(?:yet\s+)?available|pending|forthcoming|to\s+follow|in\s+progress)\b"
    r"|\bno\s+(?:upstream\s+)?(?:prs?|pull requests?|issues?|tickets?|links?|mrs?|references?)"
    r"(?:\s+\w+)?\s+yet\b",
    re.IGNORECASE,
)
_VAGUE_WORDS = """
    a an the is are was be been being to of for in on at by as and or so it its this that our
    we they one once while still yet not no now currently current presently moment time soon
    later will upstream tracking tracked track status upstream-status pr prs mr mrs pull
    request requests merge issue issues ticket tickets bug report link links linked reference
    references ref url urls fix patch review reviewed reviewing under internal internally draft
    drafts drafted filed filing file submission submitted submit opened open created create
    raised added add posted reported written sent prepared preparing preparation forthcoming
    follow awaiting await available unavailable progress ready wip number tbd tba tbc pending
"""
_VAGUE = frozenset(_VAGUE_WORDS.split())


REFERENCE_HINT = re.compile(r"https?://|#\d|@[0-9a-f]{7}")
"""Something that looks like a reference: a clause holding one says more than "pending"."""

_CLAUSES = re.compile(r";|\.\s|\.$|\n|\s[-\u2013\u2014]\s")


def placeholder_in(text: str) -> str | None:
    """The first placeholder in ``text``, or None.

    A placeholder is a blank left to fill: ``<...>`` that is not an HTML tag or autolink,
    ``TODO``/``TBD``/``FIXME``/``XXX``/``???``, or a clause that says only that a reference does
    not exist yet: "upstream tracking pending", "being filed", "currently unavailable", "pending
    while this draft is reviewed", "no upstream issue yet", "PR to be opened after validation".
    A clause that holds a reference ("review pending in https://...") or gives a reason
    ("Pending: no standalone PR; part of a larger change") is a statement, not a blank.

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
    m = _NOT_YET.search(text)
    if m:
        for clause in _CLAUSES.split(text):
            if _NOT_YET.search(clause) and not REFERENCE_HINT.search(clause):
                return clause.strip()
    if _ABSENT.search(text):
        for clause in _CLAUSES.split(text):
            if not _ABSENT.search(clause) or REFERENCE_HINT.search(clause):
                continue
            words = [w.strip("-") for w in re.split(r"[^\w-]+", clause.lower()) if w.strip("-")]
            if all(w in _VAGUE for w in words):
                return clause.strip()
    return None
