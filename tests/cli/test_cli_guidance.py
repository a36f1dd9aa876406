"""Guidance on the command line: a mistyped command, option, choice or sub-command is a one-line
usage error (exit 2) that names the closest known one (``did you mean``); every command's ``-h``
ends with ``examples:``, command lines that parse with that command's own options; positionals
may come after options (``revert PS --python P ID1 ID2``)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

import pytest

from conftest import run_cli
from inprocess import run_main
from patchbay.cli.arguments import UsageError
from patchbay.cli.parser import build, build_parser


def _subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-commands of a parser (``waiver``: ``new``, ...), by name; none for most."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in p._actions:
        if action.nargs == argparse.PARSER:
            found.update(action.choices)  # type: ignore[arg-type]
    return found


def _every_command() -> list[str]:
    """Every command and sub-command the whole parser has, as its words (``waiver new``)."""
    found: list[str] = []

    def walk(words: str, p: argparse.ArgumentParser) -> None:
        for name, sub in _subcommands(p).items():
            found.append(f"{words} {name}".strip())
            walk(f"{words} {name}", sub)

    walk("", build_parser())
    return found


COMMANDS = _every_command()


def _one_line_error(res: object) -> str:
    assert res.code == 2, res  # type: ignore[attr-defined]
    assert res.out == ""  # type: ignore[attr-defined]
    err: str = res.err  # type: ignore[attr-defined]
    assert err.count("\n") == 1 and err.startswith("patchbay: error: "), err
    return err


# -- did you mean --------------------------------------------------------------------------------


def test_the_command_list_covers_the_sub_commands() -> None:
    assert {"apply", "status", "waiver", "waiver new"} <= set(COMMANDS)
    assert len(COMMANDS) > len(build("")[1])  # the sub-commands of waiver are there too


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["aply", "PS"], "unknown command 'aply' (did you mean 'apply'? commands: apply, "),
        (["stauts"], "unknown command 'stauts' (did you mean 'status'? "),
        (["--verison"], "unknown option '--verison' (did you mean '--version'? "),
        (
            ["waiver", "nw"],
            "waiver: argument SUBCOMMAND: invalid choice: 'nw' (did you mean 'new'? ",
        ),
    ],
)
def test_a_mistyped_command_names_the_closest_one(args: list[str], said: str) -> None:
    err = _one_line_error(run_cli(*args))
    assert err.startswith(f"patchbay: error: {said}"), err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["apply", "PS", "--pyhton", "X"],
            "apply: unrecognized arguments: --pyhton X (did you mean '--python'? "
            "`patchbay apply -h` shows the usage)",
        ),
        (
            ["status", "--fromat", "json"],
            "status: unrecognized arguments: --fromat (did you mean '--format'? ",
        ),
        (
            ["status", "PS", "--fromat=json"],
            "status: unrecognized arguments: --fromat=json (did you mean '--format'? ",
        ),
        (
            ["waiver", "new", "PS", "--forse"],
            "waiver new: unrecognized arguments: --forse (did you mean '--force'? "
            "`patchbay waiver new -h` shows the usage)",
        ),
        (
            ["audit", "--fial-on=note", "--upstraem"],
            "audit: unrecognized arguments: --fial-on=note --upstraem (did you mean '--fail-on' "
            "for '--fial-on', '--upstream' for '--upstraem'? ",
        ),
    ],
)
def test_a_mistyped_option_names_the_closest_option_of_that_command(
    args: list[str], said: str
) -> None:
    err = _one_line_error(run_cli(*args))
    assert err.startswith(f"patchbay: error: {said}"), err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["status", "PS", "--format", "jsn"],
            "status: argument --format/-f: invalid choice: 'jsn' (did you mean 'json'? choose "
            "from 'table', 'concise', 'json') (`patchbay status -h` shows the usage)",
        ),
        (
            ["audit", "--format", "sraif"],
            "audit: argument --format/-f: invalid choice: 'sraif' (did you mean 'sarif'? ",
        ),
        (
            ["completion", "bsh"],
            "completion: argument SHELL: invalid choice: 'bsh' (did you mean 'bash'? ",
        ),
    ],
)
def test_an_invalid_choice_names_the_closest_choice(args: list[str], said: str) -> None:
    err = _one_line_error(run_cli(*args))
    assert err.startswith(f"patchbay: error: {said}"), err


@pytest.mark.parametrize(
    "args",
    [["frobnicate"], ["status", "PS", "--zzzzzz"], ["status", "PS", "--format", "xml"], ["-z"]],
)
def test_nothing_close_keeps_the_message_without_a_guess(args: list[str]) -> None:
    err = _one_line_error(run_cli(*args))
    assert "did you mean" not in err, err
    if args == ["frobnicate"]:
        assert err.startswith("patchbay: error: unknown command 'frobnicate' (commands: apply, ")
    if args[-1] == "xml":
        assert "invalid choice: 'xml' (choose from 'table', 'concise', 'json')" in err


# -- examples in every command's help ------------------------------------------------------------


def _examples(help_text: str) -> list[str]:
    """The command lines of a help's ``examples:`` section (a line ending in ``\\`` joined with
    the next), each cut to the ``patchbay ...`` command: no shell comment, pipe, redirection or
    the ``)`` of a ``$(...)``."""
    assert "\nexamples:\n" in help_text, help_text
    lines: list[str] = []
    for line in help_text.split("\nexamples:\n", 1)[1].splitlines():
        if not line.startswith("  "):
            break
        if lines and lines[-1].endswith("\\"):
            lines[-1] = lines[-1][:-1].rstrip() + " " + line.strip()
        else:
            lines.append(line.strip())
    commands = []
    for line in lines:
        assert "patchbay " in line, line
        command = line[line.index("patchbay ") :]
        for end in ("  #", " |", " >", ")"):
            command = command.split(end, 1)[0]
        commands.append(command.strip())
    return commands


def _options(p: argparse.ArgumentParser) -> set[str]:
    return {option for action in p._actions for option in action.option_strings}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_s_help_shows_examples_that_use_its_own_options(command: str) -> None:
    words = command.split()
    res = run_main(*words, "-h")
    assert res.code == 0 and res.err == "", res.err
    examples = _examples(res.out)
    assert 1 <= len(examples) <= 3, examples
    for example in examples:
        argv = shlex.split(example)
        assert argv[0] == "patchbay" and argv[1 : 1 + len(words)] == words, example
        # the options of the parsers the example goes through (`waiver`, then `waiver new`)
        parser: argparse.ArgumentParser = build_parser()
        known = _options(parser)
        for word in argv[1:]:
            sub = _subcommands(parser)
            if word not in sub:
                break
            parser = sub[word]
            known |= _options(parser)
        used = {word.partition("=")[0] for word in argv[1:] if word.startswith("-")}
        assert used <= known, (example, used - known)
        # and the whole line parses, as written, with that command's grammar
        try:
            build_parser().parse_args(argv[1:])
        except UsageError as exc:
            pytest.fail(f"{example}: {exc}")


def test_the_examples_are_shown_line_for_line_by_the_console_script() -> None:
    res = run_cli("rebase", "--help")
    assert res.code == 0, res.err
    section = res.out.split("\nexamples:\n", 1)[1]
    assert section.startswith("  patchbay rebase patchsets/demo --python ")
    assert "\n      --onto-python " in section  # the continued line, indented further
    top = run_cli("--help")
    assert "examples:" not in top.out  # the commands' own, not the list of commands'


# -- positionals after options ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "argv", "expected"),
    [
        ("apply", ["--python", "X", "PS"], {"patchset": "PS", "python": "X"}),
        ("audit", ["--format", "json", "DIR"], {"paths": [Path("DIR")], "output_format": "json"}),
        ("audit", ["a", "--format", "json", "b"], {"paths": [Path("a"), Path("b")]}),
        ("revert", ["PS", "--python", "X", "a", "b"], {"patch_ids": ["a", "b"], "python": "X"}),
        ("revert", ["--forget", "PS", "a", "--python", "X", "b"], {"patch_ids": ["a", "b"]}),
        (
            "capture",
            ["PS", "--python", "X", "ID", "f1", "--target", "t", "f2"],
            {"patch_id": "ID", "files": ["f1", "f2"], "target": "t"},
        ),
        ("refresh", ["PS", "ID", "f1", "--root", "R", "f2"], {"files": ["f1", "f2"]}),
        ("report", ["a", "--format", "json", "b"], {"patchsets": ["a", "b"]}),
        ("waiver", ["new", "PS", "a", "--id", "w", "b"], {"patch_ids": ["a", "b"], "id": "w"}),
    ],
)
def test_positionals_may_follow_options(
    command: str, argv: list[str], expected: dict[str, object]
) -> None:
    parser, _ = build(command)
    assert parser is not None
    args = parser.parse_args(argv)
    assert {name: getattr(args, name) for name in expected} == expected
    assert not any(name.startswith("_patchbay") for name in vars(args))


def test_positionals_after_options_through_the_console_script(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-patchset"
    res = run_cli("revert", missing, "--root", tmp_path, "one", "two")
    err = _one_line_error(res)  # the patchset's error, not the parser's
    assert "unrecognized arguments" not in err and f"{missing}" in err, err
    # a word too many is still refused
    err = _one_line_error(run_cli("apply", missing, missing))
    assert f"apply: unrecognized arguments: {missing} (`patchbay apply -h`" in err, err
