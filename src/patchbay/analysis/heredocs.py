"""One here-document of a script, by its delimiter: the bytes a patch script feeds to
``cat > x.diff``, read from the bash grammar's tree (:mod:`.syntax`), never by line matching.

A source that points into a script (``source: {file, heredoc}``) takes its diff from here, so the
diff is the script author's bytes, not a retyped copy.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from .syntax import iter_nodes, parse_shell


@dataclass(frozen=True)
class HereDocument:
    """A here-document found in a script.

    Attributes:
        delimiter: the word after ``<<`` without its quotes.
        body: the bytes the shell passes on (the lines between the operator's line and the
            delimiter; leading tabs removed for ``<<-``).
        line: 1-based line of the ``<<`` operator.
        quoted: the delimiter was quoted, so the shell expands nothing in the body.
    """

    delimiter: str
    body: bytes
    line: int
    quoted: bool


def here_documents(data: bytes, path: str) -> list[HereDocument]:
    """Every here-document of the shell script ``data``, in script order.

    Args:
        data: the script's bytes (UTF-8; other bytes are kept as they are).
        path: the file, for messages.

    Raises:
        ShellSyntaxError: an unterminated here-document.
    """
    source = parse_shell(data.decode("utf-8", "surrogateescape"), path)
    found = []
    for node in iter_nodes(source.root):
        if node.type != "heredoc_redirect":
            continue
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        if start is None:
            continue
        word = source.text(start)
        body = source.heredoc_body(node).encode("utf-8", "surrogateescape")
        found.append(
            HereDocument(
                delimiter=word.strip("'\"\\"),
                body=body,
                line=source.line(node),
                quoted=any(q in word for q in "'\"\\"),
            )
        )
    return found


def here_document(data: bytes, delimiter: str, path: str) -> HereDocument:
    """The one here-document of ``data`` delimited by ``delimiter``.

    An unquoted delimiter is taken only when its body holds nothing the shell would expand
    (``$``, a backquote, a backslash): otherwise the bytes written at run time are not the
    bytes of the file.

    Raises:
        InputError: no here-document, or more than one, has this delimiter; or its body would
            be expanded by the shell (``path`` and the line are named).
        ShellSyntaxError: an unterminated here-document.
    """
    matches = [h for h in here_documents(data, path) if h.delimiter == delimiter]
    if not matches:
        raise InputError(f"no here-document <<{delimiter} in the script", file=path)
    if len(matches) > 1:
        lines = ", ".join(str(h.line) for h in matches)
        raise InputError(
            f"{len(matches)} here-documents <<{delimiter} in the script (lines {lines}); "
            "cannot tell which one is the diff",
            file=path,
            line=matches[1].line,
        )
    (found,) = matches
    if not found.quoted and any(c in found.body for c in (b"$", b"`", b"\\")):
        raise InputError(
            f"here-document <<{delimiter} is unquoted and its body holds $, ` or \\, which the "
            "shell expands: its bytes at run time are not the file's",
            file=path,
            line=found.line,
        )
    return found
