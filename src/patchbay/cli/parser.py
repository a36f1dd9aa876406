"""The ``patchbay`` command line's grammar: every sub-command, its options and their help,
on the standard library's :mod:`argparse` (as pre-commit's ``main.py``). Building it imports
nothing beyond argparse; a run builds only its own command's parser (:func:`build` with a
name), the whole one is for shell completion. Conventions: help shows metavariables, never
types; a usage error is :class:`UsageError` (one line, exit 2, printed by
:func:`patchbay.cli.main`); the same option name for the same thing in every command.
"""

from __future__ import annotations

import argparse

from .. import __version__
from . import handlers as h

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:  # imported when used: `--help` and `--version` need none of them
    from collections.abc import Callable, Sequence
    from datetime import date
    from pathlib import Path
    from typing import Any, NoReturn

DESCRIPTION = "Declarative, idempotent, all-or-nothing patches on a pinned inference-engine image."
EPILOG = (
    "`patchbay COMMAND -h` shows a command's options. Exit status: 0 done, 1 refused or failed "
    "(nothing changed), 2 bad input or usage."
)
SHELLS = ("bash", "zsh", "fish")


class UsageError(Exception):
    """A command line argparse refused; printed as one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with patchbay's error style: one line naming the command, exit 2."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("patchbay").strip()
        where = f"{command}: " if command else ""
        hint = f"`{self.prog} -h` shows the usage"
        raise UsageError(f"{where}{message} ({hint})")


class _Formatter(argparse.HelpFormatter):
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


def _seconds(minimum: float) -> Callable[[str], float]:
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


def _path(text: str) -> Path:
    """A path option or argument; an empty one is a usage error (``Path("")`` is the current
    folder: ``--state-dir=`` would write the ledger there)."""
    from pathlib import Path

    return Path(_given(text))


def _given(text: str) -> str:
    """A value that must not be empty (``--python=``, an empty PATCHSET)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty value")
    return text


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a whole number >= 1")
    return value


def _day(text: str) -> date:
    from datetime import datetime

    try:
        return datetime.strptime(text, "%Y-%m-%d").date()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date YYYY-MM-DD") from None


# -- options several commands share ----------------------------------------------------------


def _patchset(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "patchset",
        metavar="PATCHSET",
        type=_given,
        help="patchset folder or YAML file (or a name under ./patchsets)",
    )


def _python(
    p: argparse.ArgumentParser, text: str = "engine interpreter (default: python3 on PATH)"
) -> None:
    p.add_argument("--python", metavar="PATH", type=_given, help=text)


def _root(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root",
        metavar="DIR",
        type=_path,
        help="unpacked tree standing in for site-packages, instead of --python",
    )


def _state(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        type=_path,
        help="ledger folder (default: <sys.prefix>/share/patchbay, or <root>/.patchbay)",
    )


def _probe(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--probe-timeout",
        metavar="SECONDS",
        type=_seconds(0.1),
        help="longest wait for the engine interpreter's probe (default: $PATCHBAY_PROBE_TIMEOUT, "
        "else 120, and 10 for one that prints nothing)",
    )


def _record(p: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup) -> None:
    p.add_argument("--record", metavar="FILE", type=_path, help="write a provenance JSON record")


def _lock(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lock-timeout",
        metavar="SECONDS",
        type=_seconds(0),
        default=0.0,
        help="wait this long for another run's lock (default: 0)",
    )


def _network(p: argparse.ArgumentParser, *, offline: bool = True, bundle: bool = True) -> None:
    if offline:
        p.add_argument(
            "--offline",
            action="store_true",
            help="use only the bundle and the cache; never the network",
        )
    if bundle:
        p.add_argument(
            "--bundle", metavar="DIR", type=_path, help="a folder made by `patchbay bundle`"
        )


def _cache(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cache-dir", metavar="DIR", type=_path, help="download cache (default: ~/.cache/patchbay)"
    )


def _mirror(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mirror",
        metavar="FROM=TO",
        action="append",
        help="fetch URLs starting with FROM from TO instead (repeatable)",
    )


def _api(p: argparse.ArgumentParser, text: str = "GitHub API base") -> None:
    p.add_argument(
        "--api-url",
        metavar="URL",
        help=f"{text} (default: $PATCHBAY_GITHUB_API, else https://api.github.com)",
    )


def _wheel(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wheel",
        metavar="FILE",
        type=_path,
        action="append",
        help="a wheel of the installed version: pristine copies of edited files (repeatable)",
    )


def _from_git(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--from-git",
        metavar="DIR|URL",
        help="the component's repository, read at the commit `components` pins",
    )


def _format(
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


def _quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress lines and no notes (results, warnings and errors are still printed)",
    )


# -- the parser --------------------------------------------------------------------------------


class _Skipped:
    """Stands for the parser of a command this run does not build: what is added is dropped
    (building every command's parser would cost more than a short command's whole run)."""

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        return None

    def set_defaults(self, **kwargs: Any) -> None:
        return None

    def add_subparsers(self, **kwargs: Any) -> _Skipped:
        return self

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _Skipped:
        return self

    def add_parser(self, *args: Any, **kwargs: Any) -> _Skipped:
        return self


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (every sub-command and option, e.g. for shell completion)."""
    parser, _ = build(None)
    assert parser is not None
    return parser


def build(only: str | None) -> tuple[argparse.ArgumentParser | None, list[tuple[str, str]]]:
    """With ``only`` None: the whole parser. With a command's name: that command's parser
    alone (``prog`` ``patchbay NAME``), or None when there is no such command. Also returns
    every command's ``(name, one-line help)``."""
    listing: list[tuple[str, str]] = []
    built: list[argparse.ArgumentParser] = []
    sub = parser = None
    if only is None:
        parser = _Parser(
            prog="patchbay",
            description=DESCRIPTION,
            formatter_class=_Formatter,
            epilog=EPILOG,
        )
        parser.add_argument(
            "--version", action="version", version=__version__, help="print the version and exit"
        )
        sub = parser.add_subparsers(
            metavar="COMMAND", title="commands", parser_class=_Parser, prog="patchbay"
        )

    def command(name: str, text: str, handler: Callable[[argparse.Namespace], int]) -> Any:
        listing.append((name, text))
        if sub is not None:
            p = sub.add_parser(name, help=text, description=text, formatter_class=_Formatter)
        elif name == only:
            p = _Parser(prog=f"patchbay {name}", description=text, formatter_class=_Formatter)
            built.append(p)
        else:
            return _Skipped()
        p.set_defaults(handler=handler)
        return p

    p = command("apply", "Apply the pending patches; all or nothing; a re-run is a no-op.", h.apply)
    _patchset(p)
    _python(p)
    _root(p)
    _state(p)
    p.add_argument(
        "--upgrade",
        action="store_true",
        help="revert recorded versions of edited or removed patches, then apply, in one step",
    )
    _lock(p)
    # a dry run writes nothing, a record neither: asking for both is a usage error
    writes = p.add_mutually_exclusive_group()
    writes.add_argument(
        "--dry-run",
        action="store_true",
        help="print the unified diff apply would write; write nothing (not with --record)",
    )
    _record(writes)
    _network(p)
    _cache(p)
    _mirror(p)
    _probe(p)
    _quiet(p)

    p = command(
        "status",
        "Show every patch's state (pending, applied, redundant, outdated, partial, conflict).",
        h.status,
    )
    _patchset(p)
    _python(p)
    _root(p)
    _state(p)
    _format(p)
    _record(p)
    _probe(p)
    _quiet(p)

    p = command("revert", "Undo what the ledger says patchbay applied, newest first.", h.revert)
    _patchset(p)
    p.add_argument(
        "patch_ids",
        metavar="ID",
        nargs="*",
        help="revert these patches and those applied after them (default: all)",
    )
    _python(p)
    _root(p)
    _state(p)
    _lock(p)
    _network(p)
    _probe(p)
    _quiet(p)

    p = command(
        "verify", "Check every patch is present and every touched Python file compiles.", h.verify
    )
    _patchset(p)
    _python(p)
    _root(p)
    _state(p)
    _format(p)
    p.add_argument(
        "--installed",
        action="store_true",
        help="check every installed file of the engine's distributions against its RECORD; "
        "differences must be declared patches",
    )
    p.add_argument(
        "--dist",
        metavar="NAME",
        action="append",
        help="distribution to check (repeatable; default: the components)",
    )
    _record(p)
    _probe(p)
    _quiet(p)

    p = command(
        "validate", "Check a patchset's schema, consistency and patch files, offline.", h.validate
    )
    _patchset(p)
    _format(p)
    _quiet(p)

    p = command(
        "check",
        "Judge every patch against a candidate image (applies, upstream, partial, conflict).",
        h.check,
    )
    _patchset(p)
    _python(p)
    _root(p)
    _format(p)
    _probe(p)
    _quiet(p)

    p = command(
        "vendor",
        "Download remote diffs and unhashed artifacts, and pin them in patchbay.lock.",
        h.vendor,
    )
    _patchset(p)
    _api(p)
    _cache(p)
    _mirror(p)
    p.add_argument(
        "--update", action="store_true", help="accept upstream content that differs from the lock"
    )
    _quiet(p)

    p = command(
        "bundle",
        "Gather everything apply needs (wheels, artifacts, vendored diffs, patchbay itself) "
        "for an offline run.",
        h.bundle,
    )
    _patchset(p)
    p.add_argument("out", metavar="OUT", type=_path, help="new folder for the bundle")
    _python(p)
    _cache(p)
    _mirror(p)
    p.add_argument(
        "--without-patchbay",
        action="store_true",
        help="do not carry patchbay itself (its wheels and install-patchbay.sh)",
    )
    _quiet(p)

    p = command(
        "report",
        "Upstream state and verdict (remove, bump, keep, attention) of every carried patch.",
        h.report,
    )
    p.add_argument(
        "patchsets",
        metavar="PATCHSET",
        nargs="*",
        type=_given,
        help="patchsets to cover (default: all under patchsets/)",
    )
    p.add_argument(
        "--repo",
        metavar="DIR",
        type=_path,
        default=".",
        help="repository with patchsets/ and waivers/ (default: .)",
    )
    _format(
        p,
        choices=("markdown", "json", "html"),
        text="markdown (issue, chat), json or html (one page); default: markdown",
    )
    p.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        type=_path,
        action="append",
        help="write the report to FILE (repeatable; .md, .json, .html pick the format)",
    )
    p.add_argument(
        "--history",
        metavar="FILE",
        type=_path,
        help="JSON-lines history of runs (default: REPO/.patchbay/upstream-history.jsonl)",
    )
    p.add_argument("--no-history", action="store_true", help="neither read nor append the history")
    _api(p)
    _cache(p)
    p.add_argument(
        "--publish",
        metavar="OWNER/REPO",
        help="create or update the tracking issue there (needs GITHUB_TOKEN or GH_TOKEN)",
    )
    p.add_argument(
        "--candidate-python",
        metavar="PATH",
        help="a candidate image's interpreter: list the patches the bump drops",
    )
    p.add_argument(
        "--candidate-root", metavar="DIR", type=_path, help="a candidate image as an unpacked tree"
    )
    _python(p, "the pinned image's interpreter: a patch it already ships is `remove`")
    _root(p)
    p.add_argument(
        "--today",
        metavar="YYYY-MM-DD",
        type=_day,
        help="count days and judge waivers as of this date",
    )
    p.add_argument(
        "--max-wait",
        metavar="SECONDS",
        type=_seconds(0),
        default=60.0,
        help="longest total wait for rate limits (default: 60)",
    )
    p.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_seconds(0.1),
        default=20.0,
        help="seconds per request (default: 20)",
    )
    p.add_argument(
        "--workers", metavar="N", type=_count, default=8, help="concurrent requests (default: 8)"
    )
    p.add_argument(
        "--graphql",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="batch look-ups with GraphQL (default: with a token)",
    )
    _quiet(p)

    p = command(
        "audit",
        "Audit patchsets, waivers and scripts (undeclared engine patching); exit 1 on findings.",
        h.audit,
    )
    p.add_argument("root", metavar="ROOT", nargs="?", type=_path, help=argparse.SUPPRESS)
    p.add_argument(
        "--repo",
        metavar="DIR",
        type=_path,
        help="repository to audit (default: .; `audit DIR` is the old spelling)",
    )
    _format(
        p,
        choices=("table", "concise", "json", "github", "sarif"),
        text="table (people), concise (path:line: CODE message), json, github (annotations) or "
        "sarif; default: table",
    )
    p.add_argument(
        "--fail-on",
        metavar="LEVEL",
        choices=("error", "warning", "note"),
        help="lowest severity that makes the run exit 1: error, warning or note (default: the "
        "configuration's, else error)",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        type=_path,
        help="patchbay.toml or pyproject.toml (default: the one in the repository)",
    )
    p.add_argument("--output", "-o", metavar="FILE", type=_path, help="write the report to FILE")
    p.add_argument(
        "--today", metavar="YYYY-MM-DD", type=_day, help="judge review dates as of this date"
    )
    p.add_argument(
        "--upstream",
        action="store_true",
        help="ask GitHub about every patch's upstream fix: PB501 when it is in the pin",
    )
    _api(p, "GitHub API base for --upstream")
    _python(
        p,
        "with --upstream: the pinned image's interpreter; its files are content evidence for "
        "PB501, as in `patchbay report --python`",
    )
    p.add_argument(
        "--image-root",
        metavar="DIR",
        type=_path,
        help="with --upstream: the pinned image as an unpacked folder (as --root elsewhere)",
    )
    p.add_argument(
        "--changed-since",
        metavar="REF",
        help="audit the change since the merge base of REF and HEAD (a pull request): script "
        "findings of its files, and a waiver of its own for the patching it adds",
    )
    p.add_argument(
        "--pr",
        metavar="N",
        type=_count,
        help="the pull request's number, for change-waiver (default: from GitHub Actions)",
    )
    _quiet(p)

    p = command(
        "waiver", "Waiver documents: why a patch may be carried, and until when.", _missing_sub
    )
    waiver_sub = p.add_subparsers(
        metavar="SUBCOMMAND", title="subcommands", parser_class=_Parser, prog="patchbay waiver"
    )
    w = waiver_sub.add_parser(
        "new",
        help="Write a waiver prefilled from the patchset, with <TODO: ...> blanks to fill.",
        description="Write a waiver prefilled from the patchset, with <TODO: ...> blanks to fill.",
        formatter_class=_Formatter,
    )
    w.set_defaults(handler=h.waiver_new)
    _patchset(w)
    w.add_argument(
        "patch_ids", metavar="PATCH_ID", nargs="*", help="patches to cover (default: all)"
    )
    w.add_argument(
        "--id", metavar="ID", help="waiver id (default: the patch id, or the patchset name)"
    )
    w.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        type=_path,
        help="where to write (default: waivers/<id>.md)",
    )
    w.add_argument("--force", action="store_true", help="overwrite an existing file")

    p = command(
        "capture",
        "Write edits made to the installed engine as a new diff patch of the patchset.",
        h.capture,
    )
    _patchset(p)
    p.add_argument("patch_id", metavar="ID", help="id of the new patch")
    p.add_argument(
        "files",
        metavar="FILE",
        nargs="*",
        help="edited files (default: every file that differs from RECORD, undeclared)",
    )
    _python(p)
    _state(p)
    p.add_argument("--target", metavar="NAME", help="target of the patch (default: the deepest)")
    _wheel(p)
    _from_git(p)
    p.add_argument("--description", metavar="TEXT", help="what the patch does")
    p.add_argument(
        "--upstream",
        metavar="REF",
        action="append",
        help="upstream PR, issue or commit (repeatable)",
    )
    _quiet(p)

    p = command(
        "edit",
        "Bring the tree to the state just after patch ID (later patches taken off) to edit it.",
        h.edit,
    )
    _patchset(p)
    p.add_argument("patch_id", metavar="ID", help="the patch's id")
    _python(p)
    _root(p)
    _state(p)
    _quiet(p)

    p = command(
        "refresh",
        "Rewrite patch ID's diff from the tree, keeping its metadata; the ledger follows.",
        h.refresh,
    )
    _patchset(p)
    p.add_argument("patch_id", metavar="ID", help="the patch's id")
    p.add_argument("files", metavar="FILE", nargs="*", help="more files to take into the patch")
    _python(p)
    _root(p)
    _state(p)
    _wheel(p)
    _from_git(p)
    _quiet(p)

    p = command(
        "rebase",
        "Carry the patchset onto a new image: drop what is upstream, 3-way merge conflicts.",
        h.rebase,
    )
    _patchset(p)
    _python(p)
    _root(p)
    _state(p)
    p.add_argument("--onto-python", metavar="PATH", help="the candidate image's interpreter")
    p.add_argument(
        "--onto-root", metavar="DIR", type=_path, help="the candidate image as an unpacked tree"
    )
    p.add_argument("--out", metavar="DIR", type=_path, help="new folder for the rebased patchset")
    p.add_argument(
        "--write", action="store_true", help="rewrite the patchset itself instead of --out"
    )
    p.add_argument(
        "--conflicts",
        metavar="DIR",
        type=_path,
        help="side folder for merged files with conflict markers (default: OUT/conflicts, or "
        "rebase-conflicts/NAME with --write)",
    )
    _wheel(p)
    _from_git(p)
    p.add_argument(
        "--resolved",
        metavar="DIR",
        type=_path,
        help="a conflicts folder of an earlier run, merged by hand: take its files",
    )
    _quiet(p)

    p = command(
        "import",
        "Turn a shell patch script into a draft patchset; exit 1 when part of it was not "
        "converted (IMPORT-NOTES.md lists it with the script's lines).",
        h.import_script,
    )
    p.add_argument("script", metavar="SCRIPT", type=_path, help="the shell patch script to convert")
    p.add_argument(
        "--out",
        metavar="DIR",
        type=_path,
        required=True,
        help="the new patchset folder, e.g. patchsets/NAME",
    )
    _python(p, "also show `status` of the result in this engine")
    p.add_argument(
        "--project",
        metavar="NAME=OWNER/REPO",
        action="append",
        help="read `NAME #N` in comments as OWNER/REPO#N (repeatable; vllm, aiter, sglang, "
        "triton and flashinfer are known)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a folder that is not empty (replaces patches/)",
    )
    _quiet(p)

    command("schema", "Print the JSON Schema of patchset.yaml.", h.schema)
    command("version", "Print patchbay's version.", h.version)
    p = command(
        "completion",
        'Print the shell completion script (e.g. `eval "$(patchbay completion bash)"`).',
        h.completion,
    )
    p.add_argument("shell", metavar="SHELL", choices=SHELLS, help="bash, zsh or fish")
    if only is None:
        return parser, listing
    return (built[0] if built else None), listing


def _missing_sub(args: argparse.Namespace) -> int:
    raise UsageError("waiver: a subcommand is required: new (`patchbay waiver -h` shows the usage)")


_WIDTH: list[int] = []


def terminal_width() -> int:
    """The help's width (argparse's rule: ``$COLUMNS`` or the terminal, less 2), once."""
    if not _WIDTH:
        import shutil

        _WIDTH.append(max(shutil.get_terminal_size().columns - 2, 40))
    return _WIDTH[0]
