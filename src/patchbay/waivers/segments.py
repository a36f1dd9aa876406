"""The text segments of a waiver's body: one line of text (or one table cell) with the fields
it belongs to, its links and code spans. :mod:`.body` makes them; :mod:`.references` and
:mod:`.paths` read them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Segment:
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
    code_spans: list[str] = field(default_factory=list)  # `...` contents (paths, commands)
