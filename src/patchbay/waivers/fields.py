"""The four body fields of a waiver, the labels that name them, and what was found for each."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

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
META_LABELS = {
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


def normalise_label(text: str) -> str:
    """A heading or label in lower case without emphasis, parentheses and final colon."""
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
    for part in re.split(r"\s*(?:/|&|\+|,|\band\b|\bor\b)\s*", normalise_label(label)):
        if not part:
            continue
        for name, patterns in _SYNONYMS.items():
            for rank, pattern in patterns:
                if pattern.fullmatch(part) and rank < out.get(name, 99):
                    out[name] = rank
    return out
