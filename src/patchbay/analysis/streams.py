"""The values the walk passes between commands: what a command reads and prints, the files
the script wrote itself, the expanded command, and the frames of function calls."""

from __future__ import annotations

from dataclasses import dataclass, field

from .syntax import Node, Source
from .values import Val


@dataclass
class FileInfo:
    """A file the script wrote itself (or a checked-in file it names): what it holds.

    Attributes:
        kind: ``heredoc``, ``download``, ``filtered`` (``tr -d '\\r' < x > y``), ``repo``.
        text: the content when known (a here-document's text).
        url: for a download.
        source: for ``filtered``: the file it was made from.
        line, end_line: where the script made it.
        quoted: a here-document whose delimiter was quoted (no expansion).
        note: how it was made (``tr -d '\\r'``).
    """

    kind: str
    text: str | None = None
    url: str | None = None
    source: str | None = None
    line: int = 0
    end_line: int = 0
    quoted: bool = True
    note: str = ""
    delimiter: str = ""
    runtime: bool = False


@dataclass
class Stream:
    """What a command writes to its standard output (for pipes and ``$(...)``)."""

    value: Val | None = None  # printed text (a path, a URL)
    file: FileInfo | None = None  # printed content of a known file (cat x, curl URL)


@dataclass
class Frame:
    """A function call (or the top level)."""

    name: str | None
    line: int
    live: bool
    chain: tuple[str, ...] = ()  # the caller's: the scripts its call is in
    text: str = ""  # the call's source text (first line)


@dataclass
class Stdin:
    """What a command reads on its standard input."""

    kind: str  # heredoc, herestring, file, pipe
    text: str | None = None
    value: Val | None = None
    file: FileInfo | None = None
    quoted: bool = True
    line: int = 0
    end_line: int = 0
    delimiter: str = ""
    runtime: bool = False  # an unquoted here-document that expands values known only at run time


@dataclass
class Cmd:
    """One simple command, expanded.

    Attributes:
        name: the command's base name (``git``, ``python3``); for an interpreter variable
            whose value is unknown, ``python`` when its arguments look like Python.
        words: the arguments after the name.
        raw: the name as written.
        env: ``VAR=value`` prefixes.
        redirects: ``(operator, target)`` of output and input redirections.
        stdin: what it reads.
        line, end_line: its lines in the file (a here-document's end included).
        text: its source text (first line).
        node: its syntax node.
        output_to: where its standard output goes, when a handler needs to know.
        path: the name's value when it is a path (``./patch.sh``, ``"$DIR/fix.py"``): a
            script run by its path.
        forwarded: the call whose words this command runs (a step helper's ``"$@"``): what
            it changes is the call's statement, and is reported at the call's line.
    """

    name: str
    words: list[Val]
    raw: str
    env: dict[str, Val]
    redirects: list[tuple[str, Val]]
    stdin: Stdin | None
    line: int
    end_line: int
    text: str
    node: Node | None = None
    output_to: Val | None = None
    path: Val | None = None
    forwarded: Frame | None = None

    @property
    def args(self) -> list[str]:
        return [w.text for w in self.words]


@dataclass
class _Function:
    name: str
    body: Node
    source: Source
    chain: tuple[str, ...]
    line: int
    end_line: int
    calls: list[int] = field(default_factory=list)
