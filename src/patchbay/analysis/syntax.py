"""Shell and Dockerfile syntax trees, from the tree-sitter grammars (never a reader of our own).

``tree-sitter-bash`` parses sh/bash scripts (here-documents, ``$(...)``, functions, arrays,
``case``, exact positions); ``tree-sitter-dockerfile`` splits a Dockerfile into instructions whose
``RUN`` bodies are parsed with the bash grammar. Everything below works on the grammars' nodes;
this module adds what the grammar leaves to its users: here-document bodies as the shell reads
them (``<<-`` strips leading tabs), the statements of a node, and syntax errors as values.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser, Tree

from ..errors import InputError

__all__ = ["Node", "ShellSyntaxError", "Source", "parse_dockerfile", "parse_shell"]


class ShellSyntaxError(InputError):
    """A script the grammar cannot read (an unterminated here-document, ...): exit 2."""


@cache
def _parser(grammar: str) -> Parser:
    if grammar == "bash":
        return Parser(Language(tree_sitter_bash.language()))
    import tree_sitter_dockerfile

    with warnings.catch_warnings():  # the wheel hands its language over as an int pointer
        warnings.simplefilter("ignore", DeprecationWarning)
        return Parser(Language(tree_sitter_dockerfile.language()))


@dataclass
class Source:
    """One parsed piece of shell: its bytes, its tree, and where it sits in its file.

    Attributes:
        data: the UTF-8 bytes that were parsed.
        tree: the tree-sitter tree of ``data``.
        path: the file, for messages.
        line_offset: 0-based line of ``data``'s first line in the file (a Dockerfile ``RUN``,
            a ``bash -c`` string).
    """

    data: bytes
    tree: Tree
    path: str
    line_offset: int = 0

    @property
    def root(self) -> Node:
        return self.tree.root_node

    def text(self, node: Node) -> str:
        """The source text of ``node``."""
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def line(self, node: Node) -> int:
        """1-based line of the start of ``node`` in the file."""
        return node.start_point[0] + 1 + self.line_offset

    def end_line(self, node: Node) -> int:
        """1-based last line of ``node`` (a node ending at a line start ends on the line
        before)."""
        row, col = node.end_point
        if col == 0 and row > node.start_point[0]:
            row -= 1
        return row + 1 + self.line_offset

    def heredoc_body(self, redirect: Node) -> str:
        """The body of a ``heredoc_redirect`` as the shell reads it: the lines between the
        operator's line and the delimiter, with leading tabs removed for ``<<-``."""
        body = end = None
        strip = False
        for child in redirect.children:
            if child.type == "heredoc_body":
                body = child
            elif child.type == "heredoc_end":
                end = child
            elif child.type == "<<-":
                strip = True
        if end is None:
            return ""
        first = (body or end).start_byte
        first = self.data.rfind(b"\n", 0, first) + 1 if body is not None else first
        last = self.data.rfind(b"\n", 0, end.start_byte) + 1
        text = self.data[first:last].decode("utf-8", "replace") if last > first else ""
        if strip:
            text = "".join(line.lstrip("\t") for line in text.splitlines(keepends=True))
        return text


def _check(source: Source) -> None:
    """Raise on what must never be read past: an unterminated here-document."""
    stack = [source.root]
    while stack:
        node = stack.pop()
        if not node.has_error and node.type != "heredoc_redirect":
            continue
        if node.type == "heredoc_redirect":
            end = next((c for c in node.children if c.type == "heredoc_end"), None)
            if end is None or end.start_byte == end.end_byte or end.is_missing:
                start = next((c for c in node.children if c.type == "heredoc_start"), None)
                delim = source.text(start).strip("'\"") if start is not None else "?"
                raise ShellSyntaxError(
                    f"here-document <<{delim} is not terminated (no line {delim!r} before the "
                    "end of the script)",
                    file=source.path,
                    line=source.line(node),
                )
            continue
        stack.extend(node.children)


@lru_cache(maxsize=256)
def parse_shell(text: str, path: str, line_offset: int = 0) -> Source:
    """Parse sh/bash text.

    Args:
        text: the script (or a fragment of one: a ``RUN`` body, a ``bash -c`` string).
        path: the file, for messages.
        line_offset: 0-based line of the text's first line in the file.

    Returns:
        The parsed :class:`Source`, shared by equal calls (a library every script sources
        is parsed once per run; the walk never changes a source).

    Raises:
        ShellSyntaxError: an unterminated here-document (``file:line`` of its operator).
    """
    data = text.encode("utf-8", "surrogateescape")
    source = Source(data, _parser("bash").parse(data), path, line_offset)
    _check(source)
    return source


def parse_dockerfile(text: str) -> tuple[bytes, Tree]:
    """Parse a Dockerfile (instructions, ``RUN`` shell commands, BuildKit here-documents)."""
    data = text.encode("utf-8", "surrogateescape")
    return data, _parser("dockerfile").parse(data)


def statements(node: Node) -> list[Node]:
    """The named children of a block that are statements (comments and tokens left out)."""
    return [c for c in node.named_children if c.type != "comment"]


def iter_nodes(node: Node) -> Iterator[Node]:
    """Every node of the tree under ``node``, ``node`` first, in source order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))
