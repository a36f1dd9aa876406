"""The ``patchbay`` command line: :func:`main` parses (the grammar is
:mod:`patchbay.cli.parser`, on argparse), dispatches to the sub-command's handler (its module
in :mod:`patchbay.cli.grammar`) and turns expected failures into one line and an exit code;
the work is in ``commands/`` and the library.

A run builds only its own command's parser and imports only what that command needs
(``patchbay --help`` imports neither msgspec, YAML, rich nor the patch kinds); each handler imports
its ``commands`` module when it runs. ``apply PATCHSET`` in its plainest form (only
``--python``/``--root``/``--state-dir``/``--quiet``) tries the verified no-op
(:mod:`patchbay.apply.noop`) before even the parser module is imported: a re-run in a container
entrypoint then costs an interpreter start, ``json`` and ``hashlib``, and the hashing.

Conventions, the same for every command: ``-h``/``--help`` (ending with the command's
``examples:``); ``--version``; positionals may follow options; a usage error is one line
``patchbay: error: ...`` and exit 2, naming the closest command, option or choice when a word is
not one (``did you mean 'apply'?``), as patchbay's own errors are one line each
(:class:`~patchbay.errors.PatchbayError`, exit 1 or 2, secrets redacted); anything else is a bug:
its traceback, one line ``patchbay: internal error ...`` and exit :data:`INTERNAL_ERROR` (70,
``EX_SOFTWARE`` of BSD's ``sysexits.h``), a code no command gives as a result, so that a CI step
that accepts audit's 1 ("findings") never takes a crash for one. Read commands take
``--format table|concise|json`` (``--json`` is ``--format json``); commands with long steps
report progress on stderr (``--quiet`` silences it). Shell completion: ``patchbay completion
bash|zsh|fish`` prints the script (argcomplete).
"""

from __future__ import annotations

import os
import sys

from .. import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    from .parser import UsageError, build_parser

__all__ = ["INTERNAL_ERROR", "UsageError", "build_parser", "main"]

INTERNAL_ERROR = 70  # EX_SOFTWARE (sysexits.h): a bug; no command returns it as a result


def __getattr__(name: str) -> object:
    """``UsageError`` and ``build_parser`` from :mod:`patchbay.cli.parser`, imported on first
    use (the verified no-op of ``apply`` runs before the parser module is imported)."""
    if name in ("UsageError", "build_parser"):
        from . import parser

        return getattr(parser, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- running -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``patchbay ARGV...`` (default: ``sys.argv[1:]``); returns the exit status.

    ``--help`` and ``--version`` print and return 0; a usage error prints one line and
    returns 2; an expected failure (:class:`~patchbay.errors.PatchbayError`) prints one line
    (and detail lines) and returns its exit code; Ctrl-C returns 130, SIGTERM 143
    (one line; see :func:`_catch_sigterm`); any other exception is a bug: its traceback and
    one line, and :data:`INTERNAL_ERROR` (see :func:`_internal_error`).
    """
    from ..errors import Terminated

    out, err = sys.stdout, sys.stderr
    # (None when started with the descriptor closed: print() then writes nothing, as before)
    sys.stdout = None if out is None else _ReaderMayLeave(out)  # type: ignore[assignment]
    sys.stderr = None if err is None else _ReaderMayLeave(err)  # type: ignore[assignment]
    previous = _catch_sigterm()
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except Terminated:  # before the command ran (the verified no-op, the parser)
        return _terminated()
    except Exception as exc:
        return _internal_error(exc)
    finally:
        if previous is not None:
            import signal

            signal.signal(signal.SIGTERM, previous)
        sys.stdout, sys.stderr = out, err


def _catch_sigterm() -> object:
    """Make SIGTERM (``docker stop``, a CI cancel) raise :class:`~patchbay.errors.Terminated`
    in the main thread for the whole command, as a :class:`~patchbay.apply.transaction.Transaction`
    makes it while it is open, so that a run stopped before (planning, waiting for the lock)
    or between its transactions ends as one stopped inside: one line, exit 143, nothing
    half-written. Returns the handler to put back (None: none was set: not the main thread,
    or SIGTERM is ignored, as the parent asked)."""
    import signal

    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN:
        return None
    try:
        signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread (a library caller's thread)
        return None
    return previous


def _raise_terminated(signum: int, frame: object) -> None:
    from ..errors import Terminated

    raise Terminated


def _terminated() -> int:
    """Report a run stopped by SIGTERM outside a transaction, in the line and exit code of one
    stopped inside it (:meth:`patchbay.apply.transaction.Transaction.__exit__`); no transaction was
    open, so no write was under way (one that was open reports the stop itself)."""
    print(
        "patchbay: error: terminated by SIGTERM; no write was under way, none is left half done",
        file=sys.stderr,
    )
    return 128 + 15  # 128 plus SIGTERM, as a shell reports it


def _internal_error(exc: Exception) -> int:
    """Report a bug: the traceback (for the report), then one line saying what it is, on
    stderr; returns :data:`INTERNAL_ERROR`."""
    import traceback

    from ..redaction import redact

    text = "".join(traceback.format_exception(exc))
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    print(redact(text), end="", file=sys.stderr)
    print(
        redact(
            f"patchbay: internal error ({what}); this is a bug of patchbay {__version__}, "
            "please report it with the traceback above"
        ),
        file=sys.stderr,
    )
    return INTERNAL_ERROR


class _ReaderMayLeave:
    """``sys.stdout``/``sys.stderr`` for one run: when the reader of the pipe has gone
    (``patchbay status | head -1``: EPIPE, a ``BrokenPipeError`` in Python, which ignores
    SIGPIPE), the rest of the output is dropped and the command runs to its end and returns
    its own status (an apply that committed still exits 0). The stream's descriptor is pointed
    at ``/dev/null`` then, so that the interpreter's last flush finds no closed pipe either
    (the recipe of Python's documentation of SIGPIPE). Text with a file name that is not UTF-8
    is written by :func:`patchbay.printable.printable` (``\\xNN`` per undecodable byte), never
    as a crash of the encoder. Everything else is the wrapped stream."""

    def __init__(self, stream: object) -> None:
        self._stream = stream
        self._gone = False

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)

    def write(self, text: str) -> int:
        if not self._gone:
            if not text.isascii():
                from ..printable import printable

                text = printable(text)
            try:
                self._stream.write(text)  # type: ignore[attr-defined]
            except BrokenPipeError:
                self._reader_left()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()  # type: ignore[attr-defined]
            except BrokenPipeError:
                self._reader_left()

    def _reader_left(self) -> None:
        self._gone = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())  # type: ignore[attr-defined]
            os.close(devnull)
        except (OSError, AttributeError, ValueError):  # no descriptor (a test's StringIO)
            pass


def _main(args_list: list[str]) -> int:
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (patchbay completion)
        import argcomplete

        from .parser import build_parser

        argcomplete.autocomplete(build_parser())
    tried = None
    replay_key = None
    if "_ARGCOMPLETE" not in os.environ and args_list[:1] == ["apply"]:
        tried = _verified_noop(args_list[1:])
        if tried:
            return 0
    if "_ARGCOMPLETE" not in os.environ and args_list[:1] == ["status"]:
        from . import replay

        code, replay_key = replay.replayed(args_list[1:])
        if code is not None:
            return code
    from .parser import UsageError, build

    try:
        first = args_list[0] if args_list else None
        if first is None:  # a usage error: the help, on stderr
            print(_top_help(), end="", file=sys.stderr)
            return 2
        if first in ("-h", "--help"):
            print(_top_help(), end="")
            return 0
        if first == "--version":
            print(__version__)
            return 0
        parser, listing = build(first)
        if parser is None:
            raise UsageError(_unknown_command(first, [name for name, _ in listing]))
        try:
            args = parser.parse_args(args_list[1:])
        except SystemExit as exc:  # -h
            return exc.code if isinstance(exc.code, int) else 0
        # the no-op was checked on this very command line already: apply does not check again
        args.noop_checked = tried is False
        # status of a verified identity with nothing kept yet: the full run keeps its output
        args.replay = None if replay_key is None else (replay_key, args_list[1:])
        return _run(args.handler, args)
    except UsageError as exc:
        print(f"patchbay: error: {exc}", file=sys.stderr)
        return 2


def _unknown_command(first: str, commands: list[str]) -> str:
    """The usage error of a first word that is neither a command nor ``-h``/``--version``,
    with the closest command (or option) when one is close: ``unknown command 'aply' (did you
    mean 'apply'? commands: ...)``."""
    from .arguments import did_you_mean

    option = first.startswith("-")
    guess = did_you_mean(first.partition("=")[0], ("--help", "--version") if option else commands)
    lead = f"did you mean {guess!r}? " if guess is not None else ""
    what = "option" if option else "command"
    return f"unknown {what} {first!r} ({lead}commands: {', '.join(commands)}; `patchbay -h`)"


# the options of `apply` the fast path knows, each taking one value (see _verified_noop)
_NOOP_OPTIONS = {"--python": "python", "--root": "root", "--state-dir": "state_dir"}


def _verified_noop(words: list[str]) -> bool | None:
    """Answer ``patchbay apply WORDS...`` by the verified no-op (:func:`patchbay.apply.noop.check`)
    before the command line parser and the command modules are imported: True when it printed
    "nothing to do", False when it checked and could not verify it, None when it did not check.

    Only the plainest form is taken: one PATCHSET and ``--python``/``--root``/``--state-dir``
    (``--opt VALUE`` or ``--opt=VALUE``, spelled in full) and ``--quiet``/``-q``. Any other word
    (``-h``, ``--dry-run``, ``--record``, ``--``, an abbreviation, a second PATCHSET, an option
    without its value) returns None without a check, and argparse then parses the whole line as
    usual (so every usage error keeps argparse's wording); a no-op the check cannot verify
    (False) goes the same way to the full engine, which decides without checking it again.
    """
    from .plainline import plain_words

    plain = plain_words(words, _NOOP_OPTIONS, {"--quiet": "quiet", "-q": "quiet"})
    if plain is None:
        return None
    patchset, found = plain
    quiet = found.pop("quiet", None) is not None  # no progress either way; no notes
    from ..apply import noop

    verified = noop.check(patchset, **found)
    if verified is None:
        return False
    from .commands.apply import print_noop

    print_noop(verified, quiet=quiet)
    return True


def _top_help() -> str:
    """``patchbay --help``: the usage, every command with its one-line help, the epilog."""
    import textwrap

    from .parser import DESCRIPTION, EPILOG, build, terminal_width

    _, listing = build("")
    width = terminal_width()
    name_width = max(len(name) for name, _ in listing) + 2
    lines = ["usage: patchbay [-h] [--version] COMMAND ...", "", DESCRIPTION, "", "commands:"]
    for name, text in listing:
        wrapped = textwrap.wrap(text, max(30, width - name_width - 4), break_on_hyphens=False) or [
            ""
        ]
        lines.append(f"  {name:<{name_width}}{wrapped[0]}")
        lines += [" " * (name_width + 2) + more for more in wrapped[1:]]
    lines += ["", "options:", "  -h, --help  show this help message and exit"]
    lines += ["  --version   print the version and exit", ""]
    lines += textwrap.wrap(EPILOG, width)
    return "\n".join(lines) + "\n"


def _committed() -> list[str]:
    """The transactions this process committed (none when no transaction module was loaded:
    nothing was written through one)."""
    module = sys.modules.get("patchbay.apply.transaction")
    return list(getattr(module, "COMMITTED", [])) if module is not None else []


def _run(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a command; expected failures become one line (redacted) and their exit code."""
    from ..errors import PatchbayError, Terminated

    quiet = getattr(args, "quiet", False)
    if quiet:
        from .. import progress

        progress.silence()
    committed_before = len(_committed())
    try:
        return handler(args)
    except PatchbayError as exc:
        from ..redaction import redact

        print(redact(f"patchbay: error: {exc}"), file=sys.stderr)
        return exc.exit_code
    except Terminated:  # SIGTERM outside a transaction (one inside raises Interrupted)
        return _terminated()
    except KeyboardInterrupt:
        # a Ctrl-C inside a transaction is reported by it (Interrupted, with what was
        # restored); one that reaches here came before the run's transaction or after it
        if len(_committed()) > committed_before:
            print(
                "patchbay: interrupted after this run's changes were committed: they stay "
                "applied and recorded in the ledger (`patchbay status` shows them)",
                file=sys.stderr,
            )
        else:
            print(
                "patchbay: interrupted; no change of this run was committed to the engine or "
                "its ledger",
                file=sys.stderr,
            )
        return 130
    finally:
        if quiet:  # for this run only (main() may be called again in one process)
            progress.silence(False)


if __name__ == "__main__":
    sys.exit(main())
