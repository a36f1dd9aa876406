"""``patchbay-reviewed`` annotations: the comments that mark a reviewed line of a script.

A reviewer marks a line that changes the engine on purpose with a comment that gives a reason,
on the line or on a comment line right above it (``# patchbay-reviewed PB404: why``). Only
comment nodes of the grammar count, never the same words inside a string.
"""

from __future__ import annotations

import re

from .model import ScriptAnalysis
from .syntax import Node, Source

_ANNOTATION = re.compile(r"patchbay-reviewed\b(?P<codes>(?:[\s,]*PB\d{3})*)\s*:?\s*(?P<reason>.*)$")

Annotations = dict[int, tuple[frozenset[str], str, int]]
"""Reviewed line -> (codes, reason, line of the comment)."""


class AnnotationsMixin:
    """The walker's reading of annotations (into ``self.result.annotations`` by default)."""

    result: ScriptAnalysis

    def note_annotations(self, source: Source, into: Annotations | None = None) -> None:
        """``patchbay-reviewed`` comments (comment nodes of the grammar, never text in a
        string): on a line, or on a comment line right above one."""
        data = source.data
        at = data.find(b"patchbay-reviewed")
        if at == -1:
            return
        comments: dict[int, Node] = {}  # the comment nodes that hold the word, by start
        while at != -1:
            node = source.root.descendant_for_byte_range(at, at + len(b"patchbay-reviewed"))
            if node is not None and node.type == "comment":
                comments.setdefault(node.start_byte, node)
            at = data.find(b"patchbay-reviewed", at + 1)
        lines = data.decode("utf-8", "replace").split("\n")
        for start in sorted(comments, reverse=True):  # a later one reviewing a line yields
            node = comments[start]
            text = source.text(node)
            row = node.start_point[0]
            before = lines[row][: node.start_point[1]] if row < len(lines) else ""
            self.annotate(
                text, row + 1 + source.line_offset, own_line=not before.strip(), into=into
            )

    def annotate(
        self,
        comment: str,
        line: int,
        *,
        own_line: bool,
        into: Annotations | None = None,
    ) -> None:
        """Record one comment's annotation; an own-line comment reviews the next line."""
        m = _ANNOTATION.search(comment)
        if not m:
            return
        codes = frozenset(re.findall(r"PB\d{3}", m.group("codes")))
        reviewed = line + 1 if own_line else line
        target = self.result.annotations if into is None else into
        target[reviewed] = (codes, m.group("reason").strip(), line)
