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
    from collections.abc import Callable, Sequence
    from datetime import date
    from pathlib import Path
    from typing import Any, NoReturn

SHELLS = ("bash", "zsh", "fish")


class UsageError(Exception):
    """A command line argparse refused; printed as one line, exit 2."""


class Parser(argparse.ArgumentParser):
    """argparse with patchbay's error style: one line naming the command, exit 2."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("patchbay").strip()
        where = f"{command}: " if command else ""
        hint = f"`{self.prog} -h` shows the usage"
        raise UsageError(f"{where}{message} ({hint})")


class Formatter(argparse.HelpFormatter):
    """Help at the terminal's width (argparse reads ``COLUMNS``), options aligned wider."""

    def __init__(self, prog: str) -> None:
        # argparse makes a formatter for every argument it adds: the terminal's width is
        # looked up only when help is formatted
        super().__init__(prog, max_help_position=30, width=100)

    def format_help(self) -> str:
        self._width = terminal_width()
        self._max_help_position = min(30, max(self._width - 20, 4))
        return super().format_help()

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
