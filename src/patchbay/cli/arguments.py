"""What the commands' grammars share: argparse with patchbay's error style (:class:`Parser`, a
usage error is :class:`UsageError`: one line, exit 2) and help at the terminal's width
(:class:`Formatter`), the argument types (messages in patchbay's words), the options several
commands share (``add_python``, ``add_root``, ...: the same option name for the same thing in
every command), and the network options built into :class:`~patchbay.options.RunOptions`.
Importing it costs argparse alone."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:  # imported when used: `--help` and `--version` need none of them
    from collections.abc import Callable, Iterable, Sequence
    from datetime import date
    from pathlib import Path
    from typing import Any, NoReturn

SHELLS = ("bash", "zsh", "fish")


class UsageError(Exception):
    """A command line argparse refused; printed as one line, exit 2."""


EXAMPLES_HEADING = "examples:"
# the namespace attribute where each parser that parsed a command line adds itself (a
# sub-command's parser first), for the options an unrecognized one is compared with
_PARSERS = "_patchbay_parsers"


def examples(lines: Sequence[str]) -> str:
    """A command's help epilog: ``examples:`` and one command line per line, indented (a line
    of a command continued with ``\\`` further), shown as written (:class:`Formatter` does not
    reflow it)."""
    return (
        EXAMPLES_HEADING
        + "\n"
        + "\n".join("  " + line.replace("\\\n", "\\\n      ") for line in lines)
    )


def did_you_mean(word: str, known: Iterable[str]) -> str | None:
    """The known word closest to ``word`` (:func:`difflib.get_close_matches`, its default
    cutoff), or None when none is close: the guess of a usage error."""
    import difflib  # only on the way to a usage error

    found = difflib.get_close_matches(word, list(known), n=1)
    return found[0] if found else None


def guess_text(pairs: Sequence[tuple[str, str]]) -> str:
    """``did you mean 'X'?`` for one guess; ``did you mean 'X' for 'x', 'Y' for 'y'?`` for
    several (``pairs``: (what was typed, the guess)); empty for none."""
    if not pairs:
        return ""
    if len(pairs) == 1:
        return f"did you mean {pairs[0][1]!r}?"
    return "did you mean " + ", ".join(f"{guess!r} for {typed!r}" for typed, guess in pairs) + "?"


class Parser(argparse.ArgumentParser):
    """argparse with patchbay's error style: one line naming the command, exit 2, with the
    closest known option, choice or sub-command when a word is not one (``did you mean``).

    :meth:`parse_args` takes positionals after options in every parser that allows it (no
    sub-commands; argparse's ``parse_intermixed_args``): ``revert PS --python P ID1 ID2`` is
    ``revert PS ID1 ID2 --python P``, where argparse alone would refuse ``ID1 ID2``.
    :meth:`parse_known_args` called directly (shell completion) parses as argparse does."""

    _intermix = False  # true while parse_args runs (for the sub-command's parser too)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """Parse a whole command line: a word no parser took is a usage error, with a guess
        for each mistyped option."""
        outer = not Parser._intermix
        Parser._intermix = True
        try:
            parsed, extras = self.parse_known_args(args, namespace)
        finally:
            if outer:
                Parser._intermix = False
        parsers: list[argparse.ArgumentParser] = getattr(parsed, _PARSERS, [self])
        if hasattr(parsed, _PARSERS):
            delattr(parsed, _PARSERS)
        if extras:  # named by the sub-command's parser (`waiver new: ...`), when there is one
            deepest = parsers[0] if isinstance(parsers[0], Parser) else self
            deepest._fail(
                f"unrecognized arguments: {' '.join(extras)}", _option_guesses(extras, parsers)
            )
        return parsed

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """argparse's, intermixed while :meth:`parse_args` runs and this parser allows it;
        records the parser in the namespace (for the guesses of :meth:`parse_args`)."""
        if getattr(self, "_intermixing", False):  # a pass of parse_known_intermixed_args
            return super().parse_known_args(args, namespace)
        if Parser._intermix and self._can_intermix():
            self._intermixing = True
            try:
                parsed, extras = self.parse_known_intermixed_args(args, namespace)
            finally:
                self._intermixing = False
        else:
            parsed, extras = super().parse_known_args(args, namespace)
        setattr(parsed, _PARSERS, [*getattr(parsed, _PARSERS, []), self])
        return parsed, extras

    def _can_intermix(self) -> bool:
        """argparse's conditions of ``parse_intermixed_args``: no sub-commands or remainder,
        no positional in a mutually exclusive group."""
        positionals = [a for a in self._actions if not a.option_strings]
        if any(a.nargs in (argparse.PARSER, argparse.REMAINDER) for a in positionals):
            return False
        return not any(
            a in positionals
            for group in self._mutually_exclusive_groups
            for a in group._group_actions
        )

    def _check_value(self, action: argparse.Action, value: object) -> None:
        # argparse's message, with the closest choice (a sub-command's name too)
        choices = action.choices
        if choices is not None and value not in choices:
            shown = ", ".join(map(repr, choices))
            guess = did_you_mean(str(value), [str(c) for c in choices])
            lead = f"did you mean {guess!r}? " if guess is not None else ""
            raise argparse.ArgumentError(
                action, f"invalid choice: {value!r} ({lead}choose from {shown})"
            )

    def error(self, message: str) -> NoReturn:
        """A usage error: :class:`UsageError`, one line naming the command."""
        self._fail(message, "")

    def _fail(self, message: str, guess: str) -> NoReturn:
        command = self.prog.removeprefix("patchbay").strip()
        where = f"{command}: " if command else ""
        hint = f"`{self.prog} -h` shows the usage"
        raise UsageError(f"{where}{message} ({guess + ' ' if guess else ''}{hint})")


def _option_guesses(extras: Sequence[str], parsers: Sequence[argparse.ArgumentParser]) -> str:
    """The guesses for the unrecognized words that look like options (``--pyhton``,
    ``--fromat=json``), among the options of the parsers that parsed the line."""
    known = [
        option
        for parser in parsers
        for action in parser._actions
        if action.help is not argparse.SUPPRESS
        for option in action.option_strings
    ]
    pairs: list[tuple[str, str]] = []
    for word in extras:
        if word in ("-", "--") or not word.startswith("-") or word[1:2].isdigit():
            continue
        typed = word.partition("=")[0]
        guess = did_you_mean(typed, known)
        if guess is not None and (typed, guess) not in pairs:
            pairs.append((typed, guess))
    return guess_text(pairs)


class Formatter(argparse.HelpFormatter):
    """Help at the terminal's width (argparse reads ``COLUMNS``), options aligned wider; an
    ``examples:`` epilog (:func:`examples`) is shown line for line."""

    def __init__(self, prog: str) -> None:
        # argparse makes a formatter for every argument it adds: the terminal's width is
        # looked up only when help is formatted
        super().__init__(prog, max_help_position=30, width=100)

    def format_help(self) -> str:
        self._width = terminal_width()
        self._max_help_position = min(30, max(self._width - 20, 4))
        return super().format_help()

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(EXAMPLES_HEADING + "\n"):  # command lines: never joined or cut
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)

    def _format_action(self, action: argparse.Action) -> str:
        text = super()._format_action(action)
        if action.nargs == argparse.PARSER:  # the commands' list, without a `COMMAND` line
            text = text.split("\n", 1)[1]
        return text


# -- argument types: messages in patchbay's words --------------------------------------------


def seconds(minimum: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not value >= minimum or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{text} is not a number of seconds >= {minimum:g}")
        return value

    parse.__name__ = "seconds"
    return parse


def path(text: str) -> Path:
    """A path option or argument; an empty one is a usage error (``Path("")`` is the current
    folder: ``--state-dir=`` would write the ledger there)."""
    from pathlib import Path

    return Path(given(text))


def given(text: str) -> str:
    """A value that must not be empty (``--python=``, an empty PATCHSET)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty value")
    return text


def count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a whole number >= 1")
    return value


def day(text: str) -> date:
    from datetime import datetime

    try:
        return datetime.strptime(text, "%Y-%m-%d").date()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date YYYY-MM-DD") from None


# -- options several commands share ----------------------------------------------------------


def add_patchset(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "patchset",
        metavar="PATCHSET",
        type=given,
        help="patchset folder or YAML file (or a name under ./patchsets)",
    )


def add_python(
    p: argparse.ArgumentParser, text: str = "engine interpreter (default: python3 on PATH)"
) -> None:
    p.add_argument("--python", metavar="PATH", type=given, help=text)


def add_root(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root",
        metavar="DIR",
        type=path,
        help="unpacked tree standing in for site-packages, instead of --python",
    )


def add_state(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        type=path,
        help="ledger folder (default: <sys.prefix>/share/patchbay, or <root>/.patchbay)",
    )


def add_probe(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--probe-timeout",
        metavar="SECONDS",
        type=seconds(0.1),
        help="longest wait for the engine interpreter's probe (default: $PATCHBAY_PROBE_TIMEOUT, "
        "else 120, and 10 for one that prints nothing)",
    )


def add_record(p: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup) -> None:
    p.add_argument("--record", metavar="FILE", type=path, help="write a provenance JSON record")


def add_lock(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lock-timeout",
        metavar="SECONDS",
        type=seconds(0),
        default=0.0,
        help="wait this long for another run's lock (default: 0)",
    )


def add_network(p: argparse.ArgumentParser, *, offline: bool = True, bundle: bool = True) -> None:
    if offline:
        p.add_argument(
            "--offline",
            action="store_true",
            help="use only the bundle and the cache; never the network",
        )
    if bundle:
        p.add_argument(
            "--bundle", metavar="DIR", type=path, help="a folder made by `patchbay bundle`"
        )


def add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cache-dir", metavar="DIR", type=path, help="download cache (default: ~/.cache/patchbay)"
    )


def add_mirror(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mirror",
        metavar="FROM=TO",
        action="append",
        help="fetch URLs starting with FROM from TO instead (repeatable)",
    )


def add_api(p: argparse.ArgumentParser, text: str = "GitHub API base") -> None:
    p.add_argument(
        "--api-url",
        metavar="URL",
        help=f"{text} (default: $PATCHBAY_GITHUB_API, else https://api.github.com)",
    )


def add_wheel(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wheel",
        metavar="FILE",
        type=path,
        action="append",
        help="a wheel of the installed version: pristine copies of edited files (repeatable)",
    )


def add_from_git(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--from-git",
        metavar="DIR|URL",
        help="the component's repository, read at the commit `components` pins",
    )


def add_format(
    p: argparse.ArgumentParser,
    choices: Sequence[str] = ("table", "concise", "json"),
    default: str | None = None,
    text: str = "table (people), concise (one line per item, for CI logs) or json; default: "
    "table on a terminal, elsewhere table when it fits the width, else concise",
) -> None:
    # one or the other: `--json --format table` is a usage error, not the last one silently
    one = p.add_mutually_exclusive_group()
    one.add_argument(
        "--format",
        "-f",
        dest="output_format",
        metavar="FORMAT",
        choices=choices,
        default=default,
        help=text,
    )
    one.add_argument(
        "--json",
        dest="output_format",
        action="store_const",
        const="json",
        help="the same as --format json",
    )


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress lines and no notes (results, warnings and errors are still printed)",
    )


def add_verbose(
    p: argparse.ArgumentParser,
    text: str = "print long lists (packages, URLs) in full; they are summarised otherwise",
) -> None:
    """``--verbose``/``-v`` (``args.verbose``): what the human formats shorten, in full."""
    p.add_argument("--verbose", "-v", action="store_true", help=text)


def run_options(args: argparse.Namespace) -> Any:
    """The :class:`~patchbay.options.RunOptions` of the network options, built on demand."""
    from ..errors import InputError
    from ..options import RunOptions

    pairs = []
    for item in getattr(args, "mirror", None) or []:
        prefix, sep, replacement = item.partition("=")
        if not sep or not prefix or not replacement:
            raise InputError(f"--mirror {item!r}: expected FROM=TO")
        pairs.append((prefix, replacement))
    options = RunOptions(
        offline=getattr(args, "offline", False), bundle=getattr(args, "bundle", None), mirrors=pairs
    )
    if getattr(args, "cache_dir", None) is not None:
        options.cache_dir = args.cache_dir
    return options


_WIDTH: list[int] = []


def terminal_width() -> int:
    """The help's width (argparse's rule: ``$COLUMNS`` or the terminal, less 2), once."""
    if not _WIDTH:
        import shutil

        _WIDTH.append(max(shutil.get_terminal_size().columns - 2, 40))
    return _WIDTH[0]
