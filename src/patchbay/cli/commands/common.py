"""What every command needs: the PATCHSET argument, the environment, printing.

Printing is cheap off a terminal: :func:`say` writes plain lines (redacted) and imports rich
only when the stream is a terminal (colours) or a table is drawn, so a command whose output is
a few lines does not pay for rich's import.
"""

from __future__ import annotations

import sys
from functools import cache

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (apply's no-op path)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from rich.console import Console

    from ...environment.targets import Environment
    from ...patchset.model import Patchset

SCHEMA_VERSION = 1  # of every JSON document a command prints (docs/schemas/)
READ_FORMATS = ("table", "concise", "json")

# a part of a line: text, or (text, rich style) coloured on a terminal


@cache
def _console(stderr: bool) -> Console:
    from rich.console import Console

    from ...redaction import RedactedStream

    # soft_wrap: one message is one line, whatever the width (paths stay greppable in CI logs);
    # whatever a command prints passes through the redaction (a URL with a password, a token)
    return Console(
        file=RedactedStream("stderr" if stderr else "stdout"), highlight=False, soft_wrap=True
    )


class _LazyConsole:
    """A rich console made on first use (its import costs more than most commands' work)."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr

    def __getattr__(self, name: str) -> Any:
        return getattr(_console(self._stderr), name)


console: Console = _LazyConsole(stderr=False)  # type: ignore[assignment]
err_console: Console = _LazyConsole(stderr=True)  # type: ignore[assignment]


def _stream(err: bool) -> Any:
    return sys.stderr if err else sys.stdout


def is_terminal(err: bool = False) -> bool:
    """Whether stdout (or stderr) is a terminal."""
    return bool(getattr(_stream(err), "isatty", lambda: False)())


def say(*parts: str | tuple[str, str], err: bool = False) -> None:
    """Print one line made of ``parts`` (redacted); styled parts are coloured on a terminal.

    Args:
        parts: plain strings, or ``(text, style)`` pairs with a rich style name (``"green"``).
        err: to stderr instead of stdout.
    """
    if is_terminal(err) and any(isinstance(p, tuple) for p in parts):
        from rich.text import Text

        line = Text()
        for p in parts:
            line.append(*(p if isinstance(p, tuple) else (p,)))
        _console(err).print(line)
        return
    from ...redaction import redact

    text = "".join(p if isinstance(p, str) else p[0] for p in parts)
    _stream(err).write(redact(text) + "\n")


def note(line: str, *, err: bool = False) -> None:
    """Print a note (apply's ``note: ...`` lines, report's summary of its run) as
    :func:`say` does, unless ``--quiet`` silenced progress and notes
    (:func:`patchbay.progress.quiet`); results, warnings and errors are never notes."""
    # not imported for this (it imports subprocess): a run with --quiet has imported it
    progress = sys.modules.get("patchbay.progress")
    if progress is None or not progress.quiet():
        say(line, err=err)


def say_each(head: str | tuple[str, str], items: list[str], *, err: bool = False) -> None:
    """Print one line per item, each ``head`` then the item, as :func:`say` would print
    ``say(head, item)`` for each, in one write (one redaction, one rich print on a terminal):
    a run that applied ten thousand patches prints ten thousand such lines."""
    if not items:
        return
    if is_terminal(err) and isinstance(head, tuple):
        from rich.text import Text

        block = Text()
        for n, item in enumerate(items):
            block.append(head[0], style=head[1])
            block.append(item + ("\n" if n < len(items) - 1 else ""))
        _console(err).print(block)
        return
    from ...redaction import redact

    text = head if isinstance(head, str) else head[0]
    _stream(err).write(redact("".join(f"{text}{item}\n" for item in items)))


def hint(
    *words: str | Path,
    python: str | None = None,
    root: Path | None = None,
    state_dir: Path | None = None,
) -> str:
    """A ``patchbay`` command line to print as a hint that runs as printed: the words, then
    the ``--python``/``--root``/``--state-dir`` the user gave (a hint without them would act on
    whatever ``python3`` is on ``PATH``), each quoted for a POSIX shell."""
    import shlex

    argv = ["patchbay", *map(str, words)]
    if python is not None:
        argv += ["--python", str(python)]
    if root is not None:
        argv += ["--root", str(root)]
    if state_dir is not None:
        argv += ["--state-dir", str(state_dir)]
    return shlex.join(argv)


def patchset_path(arg: str) -> Path:
    """:func:`~patchbay.patchset.inputfiles.patchset_location` as a path."""
    from pathlib import Path

    from ...patchset.inputfiles import patchset_location

    return Path(patchset_location(arg))


def load(arg: str) -> Patchset:
    """Load the patchset named by a PATCHSET argument (see :func:`patchset_path`)."""
    import os

    from ...patchset.inputfiles import patchset_side
    from ...patchset.loading import load_patchset

    path = patchset_path(arg)
    folder = path if path.is_dir() else path.parent
    if os.path.lexists(patchset_side(folder)):  # a write of the patchset was killed
        from ...apply.interrupted import recover_patchset_files

        for restored in recover_patchset_files(folder):
            note(f"rolled back an interrupted write of the patchset: restored {restored}")
    return load_patchset(path)


def environment(
    patchset: Patchset,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    extra_distributions: list[str] | None = None,
    *,
    writable: bool = False,
    probe_timeout: float | None = None,
) -> Environment:
    """Resolve the engine environment from the common options (``writable``: the command
    writes the state folder; see :func:`~patchbay.environment.targets.resolve_environment`)."""
    from ...environment.targets import resolve_environment

    return resolve_environment(
        patchset,
        python=python,
        root=root,
        state_dir=state_dir,
        extra_distributions=extra_distributions,
        writable=writable,
        probe_timeout=probe_timeout,
    )


def document(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as a JSON document of patchbay: ``schema_version`` first (the one key every
    document has; its schema is under ``docs/schemas/``)."""
    return {"schema_version": SCHEMA_VERSION, **data}


def print_json(data: Any) -> None:
    """JSON to stdout, for machines (a dict gets ``schema_version``, see :func:`document`)."""
    from ...printable import dumps
    from ...redaction import redact

    if isinstance(data, dict) and "schema_version" not in data:
        data = document(data)
    sys.stdout.write(redact(dumps(data, indent=2)) + "\n")


def read_format(requested: str | None, table: Any = None) -> str:
    """The output format of a read command: ``requested``, else ``table`` when ``table`` (a
    rich renderable) fits the width, else ``concise`` (one line per item). On a terminal a
    table fits when no column must be cut (a cell may wrap; a status cut to ``appli…`` would
    be misread); off one (a CI log, a pipe) only when no cell wraps either."""
    if requested is not None:
        return requested
    if table is None:
        return "table"
    return "table" if fits(table, wrapping=is_terminal()) else "concise"


def fits(table: Any, *, wrapping: bool = False) -> bool:
    """Whether the rich ``table`` is drawn at the console's width (on a terminal its width,
    off one ``$COLUMNS``, else 80) without wrapping a cell, or, with ``wrapping``, without
    cutting one (every column gets at least its widest unbreakable content)."""
    from rich.measure import Measurement

    c = _console(False)
    unbounded = c.options.update(max_width=1 << 16)  # get() clamps to the options' width
    measured = Measurement.get(c, unbounded, table)
    return (measured.minimum if wrapping else measured.maximum) <= c.width
