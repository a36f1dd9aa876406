"""The command line's conventions: help without type placeholders, ``-h``, ``--version``,
one-line usage errors (exit 2), shell completion, one output switch on read commands, concise
output off a terminal when a table would wrap, ids never cut, ``schema_version`` in every JSON
document and each document valid against its schema under docs/schemas."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import get_args

import jsonschema
import pytest

from conftest import PATCHBAY, REPO, Engine, diff_patch, run_cli, run_in_pty, write_patchset
from inprocess import run_main
from patchbay.cli.parser import build as _build

SCHEMAS = REPO / "docs" / "schemas"
COMMANDS = [name for name, _ in _build("")[1]]
PLACEHOLDERS = re.compile(r"<bool>|<list\[|\[\[|\]\.\.\.\]|\{[A-Z_]+\}|<path>|<float>|<int>")


def _schema_check(name: str, doc: dict[str, object]) -> None:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == 1


def _tree(tmp_path: Path, n: int = 2) -> tuple[Path, Path]:
    root = tmp_path / "tree"
    (root / "demo_engine").mkdir(parents=True)
    patches, files = [], {}
    for i in range(n):
        (root / "demo_engine" / f"m{i}.py").write_text(f"V = {i}\n")
        pid = f"a-rather-long-patch-identifier-number-{i}"
        patches.append({"id": pid, "kind": "diff", "file": f"p{i}.patch"})
        files[f"p{i}.patch"] = diff_patch(f"demo_engine/m{i}.py", f"V = {i}\n", f"V = {i + 10}\n")
    return root, write_patchset(tmp_path / "ps", patches, files=files)


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_has_no_type_placeholders_and_h_works(command: str | None) -> None:
    args = ["-h"] if command is None else [command, "-h"]
    res = run_main(*args)
    assert res.code == 0 and res.err == ""
    assert res.out.startswith("usage: patchbay")
    assert not PLACEHOLDERS.findall(res.out), res.out
    assert "--help" in res.out


def test_help_defaults_are_whole_at_a_narrow_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    res = run_cli("apply", "--help")
    text = " ".join(res.out.split())  # lines wrapped, never cut
    assert "(default: <sys.prefix>/share/patchbay, or <root>/.patchbay)" in text
    assert "…" not in res.out


def test_version_and_usage_errors_are_one_line_exit_2() -> None:
    assert run_main("--version").out.strip() == run_main("version").out.strip() != ""
    for args in (["apply"], ["frobnicate"], ["status", "x", "--format", "nope"], ["--nope"],
                 ["waiver"], ["report", "--workers", "0"]):  # fmt: skip
        res = run_main(*args)
        assert res.code == 2, args
        assert res.out == ""
        assert res.err.count("\n") == 1 and res.err.startswith("patchbay: error: "), res.err


def test_a_dry_run_with_a_record_is_a_usage_error_and_writes_nothing(tmp_path: Path) -> None:
    """A dry run writes nothing, so it has no record to write: ``--dry-run --record F`` is
    refused (one line, exit 2) before anything runs, in either order, and neither ``F`` nor a
    state folder appears."""
    root, ps = _tree(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    record = tmp_path / "record.json"
    for order in (["--dry-run", "--record", record], ["--record", record, "--dry-run"]):
        res = run_main("apply", ps, "--root", root, *order)
        assert res.code == 2 and res.out == "", res.err
        assert res.err.count("\n") == 1, res.err
        assert res.err.startswith("patchbay: error: apply: argument "), res.err
        assert "--record" in res.err and "--dry-run" in res.err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert "[--dry-run | --record FILE]" in " ".join(run_main("apply", "-h").out.split())
    # each alone still works: the dry run prints the diff, the record is written
    assert "+V = 10" in run_main("apply", ps, "--root", root, "--dry-run").out
    assert run_main("apply", ps, "--root", root, "--record", record).code == 0
    assert json.loads(record.read_text())["schema_version"] == 1


def test_no_arguments_prints_the_help_and_exits_2() -> None:
    """A usage error: the help on stderr (as argparse prints a usage), nothing on stdout."""
    res = run_main()
    assert res.code == 2 and "commands:" in res.err and "apply" in res.err
    assert res.out == ""


def test_json_and_format_together_are_a_usage_error() -> None:
    """``--json --format table`` asks for two formats: a usage error, not the last one."""
    for command in ("status", "check", "verify", "validate", "audit", "report"):
        other = "html" if command == "report" else "table"
        res = run_main(command, "x", "--json", "--format", other)
        assert res.code == 2, (command, res.err)
        assert "not allowed with argument" in res.err and len(res.err.splitlines()) == 1


def test_a_folder_given_as_python_is_named_a_folder(tmp_path: Path) -> None:
    ps = write_patchset(tmp_path / "ps", [])
    res = run_main("status", ps, "--python", tmp_path)
    assert res.code == 2, res.err
    assert res.err.startswith(f"patchbay: error: {tmp_path}: engine interpreter is a folder"), (
        res.err
    )


def test_a_bug_prints_its_traceback_and_exits_with_the_internal_error_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An exception no command expects (here: the schema command, made to raise) is no
    result: its traceback, one line asking for a report, and exit 70 (EX_SOFTWARE), which no
    command returns, so `|| [ "$?" -eq 1 ]` in docs/examples/audit.yml does not let it pass."""
    from patchbay.cli import entry as cli
    from patchbay.cli.commands import schema

    def broken() -> int:
        raise RuntimeError("the schema went missing")

    monkeypatch.setattr(schema, "run", broken)
    res = run_main("schema")
    assert res.code == cli.INTERNAL_ERROR == 70
    assert "Traceback (most recent call last)" in res.err
    assert res.err.splitlines()[-1].startswith(
        "patchbay: internal error (RuntimeError: the schema went missing); this is a bug"
    )
    assert res.out == ""
    documented = (REPO / "README.md").read_text(encoding="utf-8")
    assert "exit 70" in documented
    codes = set(re.findall(r"\b(\d+)\b", "".join(re.findall(r"\| ([^|]*) \|\n", documented))))
    assert "70" not in codes  # no command's documented result


def test_every_command_that_can_print_progress_takes_quiet(tmp_path: Path) -> None:
    """``-q``/``--quiet`` on every command but the few that print only their result
    (schema, version, completion, waiver new); it silences progress and notes, never the
    result: ``validate -q`` drops its ``note:`` lines and keeps ``valid``."""
    _, listing = _build("")
    quiet_less = {"schema", "version", "completion", "waiver"}
    for name, _text in listing:
        if name not in quiet_less:
            assert "--quiet" in run_main(name, "-h").out, name
    edits = [{"file": "demo_engine/worker.py", "old": "a", "new": "b"}]
    ps = write_patchset(tmp_path / "ps", [
        {"id": "one", "kind": "replace", "edits": edits},
        {"id": "two", "kind": "replace", "edits": [{**edits[0], "old": "c", "new": "d"}]},
    ])  # fmt: skip
    loud = run_main("validate", ps)
    assert loud.code == 0 and "note: " in loud.out, loud.err
    quiet = run_main("validate", ps, "-q")
    assert quiet.code == 0 and "note: " not in quiet.out and "valid (2 patch(es))" in quiet.out


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script(shell: str) -> None:
    res = run_main("completion", shell)
    assert res.code == 0 and "patchbay" in res.out and "_ARGCOMPLETE" in res.out


def test_completion_completes_commands_and_options(tmp_path: Path) -> None:
    out = tmp_path / "completions"
    for line, expected in (("patchbay sta", "status"), ("patchbay apply --up", "--upgrade")):
        env = {**os.environ, "_ARGCOMPLETE": "1", "COMP_LINE": line,
               "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(out)}  # fmt: skip
        subprocess.run([str(PATCHBAY)], env=env, capture_output=True, check=False, timeout=60)
        assert expected in [c.strip() for c in out.read_text().split("\v")]


def test_one_output_switch_on_read_commands(tmp_path: Path) -> None:
    root, ps = _tree(tmp_path)
    as_json = run_main("status", ps, "--root", root, "--json")
    as_format = run_main("status", ps, "--root", root, "--format", "json")
    assert json.loads(as_json.out) == json.loads(as_format.out)
    concise = run_main("status", ps, "--root", root, "--format", "concise")
    assert concise.out.splitlines() == [
        "a-rather-long-patch-identifier-number-0: pending",
        "a-rather-long-patch-identifier-number-1: pending",
    ]
    check = run_main("check", ps, "--root", root, "-f", "concise")
    assert check.out.splitlines()[0] == "a-rather-long-patch-identifier-number-0: applies"
    for command in ("status", "check", "verify", "validate", "audit", "report"):
        assert "--format FORMAT" in run_main(command, "-h").out
        assert "--json" in run_main(command, "-h").out


def test_off_a_terminal_a_table_that_would_wrap_is_concise_and_ids_are_never_cut(
    tmp_path: Path,
) -> None:
    root, ps = _tree(tmp_path)
    wide = run_cli("status", ps, "--root", root)  # COLUMNS=200: the table fits
    assert "┃ patch" in wide.out
    env = {**os.environ, "COLUMNS": "40"}
    narrow = subprocess.run([str(PATCHBAY), "status", str(ps), "--root", str(root)],
                            capture_output=True, text=True, env=env, check=False)  # fmt: skip
    assert "┃" not in narrow.stdout
    assert "a-rather-long-patch-identifier-number-1: pending" in narrow.stdout.splitlines()
    forced = subprocess.run(
        [str(PATCHBAY), "status", str(ps), "--root", str(root), "--format", "table"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert "…" not in forced.stdout
    # folded over lines when the terminal is narrower than the id, never cut
    flat = "".join(c for c in forced.stdout if c.isalnum() or c == "-")
    assert "a-rather-long-patch-identifier-number-1" in flat


def test_on_a_terminal_a_table_whose_columns_would_be_cut_is_concise(tmp_path: Path) -> None:
    """On a terminal a table may wrap its detail cells, but a status cut to ``appli…`` (or a
    kind to ``repl…``) would be misread: when the columns that are never wrapped do not fit,
    status prints its concise lines instead."""
    root, ps = _tree(tmp_path)
    env = {**os.environ, "TERM": "xterm-256color"}
    shown = {}
    for width in ("40", "120"):
        args = [str(PATCHBAY), "status", str(ps), "--root", str(root)]
        code, screen = run_in_pty(args, {**env, "COLUMNS": width})
        assert code == 0, screen
        shown[width] = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    assert "…" not in shown["40"] and "┃" not in shown["40"]
    assert "a-rather-long-patch-identifier-number-1: pending" in shown["40"]
    assert "┃ patch" in shown["120"]  # wide enough: the table


def test_every_json_document_has_schema_version_and_matches_its_schema(
    tmp_path: Path, engine: Engine
) -> None:
    root, ps = _tree(tmp_path)
    _schema_check("status", json.loads(run_main("status", ps, "--root", root, "--json").out))
    _schema_check("check", json.loads(run_main("check", ps, "--root", root, "--json").out))
    _schema_check("validate", json.loads(run_main("validate", ps, "--json").out))
    record = tmp_path / "record.json"
    assert run_main("apply", ps, "--root", root, "--record", record).code == 0
    _schema_check("record", json.loads(record.read_text()))
    _schema_check("verify", json.loads(run_main("verify", ps, "--root", root, "--json").out))
    ps2 = write_patchset(tmp_path / "ps2", [])
    yaml_file = ps2 / "patchset.yaml"
    yaml_file.write_text(yaml_file.read_text() + "components: [{distribution: demo-engine}]\n")
    res = run_main("verify", ps2, "--python", engine.python, "--installed", "--json")
    _schema_check("verify-installed", json.loads(res.out))
    res = run_main("audit", "--repo", REPO, "--format", "json")
    _schema_check("audit", json.loads(res.out))


def _enums(node: object, where: str = "") -> dict[str, list[object]]:
    """Every ``enum`` of a JSON Schema, by the JSON pointer of the node that holds it."""
    found: dict[str, list[object]] = {}
    if isinstance(node, dict):
        if "enum" in node:
            found[where] = node["enum"]
        for key, value in node.items():
            found.update(_enums(value, f"{where}/{key}"))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found.update(_enums(value, f"{where}/{i}"))
    return found


def test_every_enum_of_every_schema_is_the_codes_enum() -> None:
    """Each ``enum`` of docs/schemas/*.json holds exactly the values of the code's enum that
    produces the field (a verdict the code can give is never refused by its own schema), and
    every ``enum`` of every schema is listed here, so a new one cannot escape the check."""
    from patchbay.apply.check import Verdict
    from patchbay.apply.results import PatchStatus
    from patchbay.audit.rules import Severity
    from patchbay.diff.hunkview import WORDS
    from patchbay.kinds.base import ContentState
    from patchbay.upstream.refs import RefKind
    from patchbay.upstream.verdicts import RefState
    from patchbay.upstream.verdicts import Verdict as ReportVerdict

    hunk_state = "/$defs/hunk/properties/state"
    guard_kind = "/$defs/guard/properties/checks/items/properties/kind"
    patch = "/properties/patches/items/properties"
    row = "/properties/rows/items/properties"
    # literals of one function each (engine.check_guard; PatchReport.applied_by;
    # upstream.evidence.evidence_of's callers), no enum
    guard = ["distribution", "file"]
    source: dict[tuple[str, str], object] = {
        ("audit", "/properties/findings/items/properties/severity"): Severity,
        ("check", f"{patch}/verdict"): Verdict,
        ("check", guard_kind): guard,
        ("check", hunk_state): list(WORDS),  # one word per hunk state (diff/hunkview.py)
        ("status", f"{patch}/status"): PatchStatus,
        ("status", f"{patch}/content_state"): ContentState,
        ("status", f"{patch}/applied_by"): ["patchbay", "image", None],
        ("status", guard_kind): guard,
        ("status", hunk_state): list(WORDS),
        ("record", f"{patch}/status"): PatchStatus,
        ("record", guard_kind): guard,
        ("record", hunk_state): list(WORDS),
        ("report", f"{row}/verdict"): ReportVerdict,
        ("report", f"{row}/refs/items/properties/verdict"): ReportVerdict,
        ("report", f"{row}/refs/items/properties/state"): RefState,
        ("report", f"{row}/refs/items/properties/kind"): list(get_args(RefKind)),
        ("report", f"{row}/evidence/items/properties/image"): ["pinned", "candidate"],
    }
    seen = set()
    for file in sorted(SCHEMAS.glob("*.schema.json")):
        name = file.name.removesuffix(".schema.json")
        for where, values in _enums(json.loads(file.read_text())).items():
            assert (name, where) in source, f"{file.name}{where}: which enum of the code is it?"
            seen.add((name, where))
            code = source[name, where]
            expected = code if isinstance(code, list) else [m.value for m in code]  # type: ignore[attr-defined]
            assert sorted(values, key=str) == sorted(expected, key=str), f"{file.name}{where}"
    assert seen == set(source)


def test_validate_reports_bad_input_as_json_with_exit_2(tmp_path: Path) -> None:
    ps = write_patchset(tmp_path / "ps", [{"id": "x", "kind": "diff", "file": "missing.patch"}])
    res = run_main("validate", ps, "--format", "json")
    assert res.code == 2
    doc = json.loads(res.out)
    _schema_check("validate", doc)
    assert doc["valid"] is False and "missing.patch" in doc["error"]["message"]
    assert doc["error"]["patch_id"] == "x" and doc["error"]["line"]


def test_audit_repo_option_and_its_old_positional_spelling_agree() -> None:
    new = run_main("audit", "--repo", REPO, "--format", "json")
    old = run_main("audit", REPO, "--format", "json")
    assert (new.code, json.loads(new.out)) == (old.code, json.loads(old.out))
    concise = run_main("audit", "--repo", REPO, "--format", "concise")
    lines = concise.out.splitlines()
    assert lines and all(re.match(r"^\S+(:\d+)?: PB\d{3} ", ln) for ln in lines[:-1])


# Every option and positional argument of the typer command line this one replaced (as main
# had it when the CLI moved to argparse): none may be lost.
TYPER_CLI = {
    "apply": ("--bundle --cache-dir --dry-run --lock-timeout --mirror --offline --probe-timeout "
              "--python --record --root --state-dir --upgrade", 1),
    "audit": ("--api-url --changed-since --config --fail-on --format --image-root --output --pr "
              "--python --today --upstream -f -o", 1),
    "bundle": ("--cache-dir --mirror --python --without-patchbay", 2),
    "capture": ("--description --from-git --python --root --state-dir --target --upstream "
                "--wheel", 3),
    "check": ("--json --probe-timeout --python --root", 1),
    "edit": ("--python --root --state-dir", 2),
    "import": ("--force --out --project --python", 1),
    "rebase": ("--conflicts --from-git --onto-python --onto-root --out --python --resolved "
               "--root --state-dir --wheel --write", 1),
    "refresh": ("--from-git --python --root --state-dir --wheel", 3),
    "report": ("--api-url --cache-dir --candidate-python --candidate-root --format --graphql "
               "--no-graphql --history --max-wait --no-history --output --publish --python "
               "--repo --root --timeout --today --workers -f -o", 1),
    "revert": ("--bundle --lock-timeout --offline --probe-timeout --python --root --state-dir", 2),
    "schema": ("", 0),
    "status": ("--json --probe-timeout --python --record --root --state-dir", 1),
    "validate": ("", 1),
    "vendor": ("--api-url --cache-dir --mirror --update", 1),
    "verify": ("--dist --installed --json --probe-timeout --python --record --root --state-dir", 1),
    "version": ("", 0),
    "waiver new": ("--force --id --output -o", 2),
}  # fmt: skip


def _parsers() -> dict[str, object]:
    import argparse

    from patchbay.cli.parser import build_parser

    out: dict[str, object] = {}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    out[f"{prefix}{name}".strip()] = sub
                    walk(sub, f"{prefix}{name} ")

    walk(build_parser(), "")
    return out


def test_no_option_or_argument_of_the_typer_cli_is_lost() -> None:
    import argparse

    parsers = _parsers()
    for command, (options, positionals) in TYPER_CLI.items():
        parser = parsers[command]
        assert isinstance(parser, argparse.ArgumentParser)
        have = {s for a in parser._actions for s in a.option_strings}
        missing = set(options.split()) - have
        assert not missing, (command, missing)
        assert len([a for a in parser._actions if not a.option_strings]) >= positionals, command
    # and a command built alone (as main() does) has the same options as in the whole parser
    for command in ("apply", "audit", "report", "revert"):
        alone, _ = _build(command)
        assert alone is not None
        whole = parsers[command]
        assert isinstance(whole, argparse.ArgumentParser)
        strings = {s for a in alone._actions for s in a.option_strings}
        assert strings == {s for a in whole._actions for s in a.option_strings}


def test_validate_json_lists_unordered_overlaps(tmp_path: Path) -> None:
    edit = {"file": "demo_engine/m.py", "old": "A", "new": "B"}
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "first", "kind": "replace", "edits": [edit]},
         {"id": "second", "kind": "replace", "edits": [{**edit, "old": "C", "new": "D"}]}],
    )  # fmt: skip
    res = run_main("validate", ps, "--format", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    _schema_check("validate", doc)
    (overlap,) = doc["overlaps"]
    assert (overlap["earlier"], overlap["later"]) == ("first", "second")
    assert overlap["path"].endswith("m.py") and overlap["line"]


@pytest.mark.parametrize("command", ["validate", "status", "apply"])
def test_a_reader_that_leaves_early_costs_no_traceback_and_not_the_status(
    tmp_path: Path, command: str, demo_wheel: Path
) -> None:
    """``patchbay ... | head -1``: the pipe's reader is gone before patchbay writes (EPIPE).
    The command still runs to its end and returns its own status; nothing on stderr."""
    tree = tmp_path / "tree"
    with zipfile.ZipFile(demo_wheel) as wheel:  # an unpacked install of the demo engine
        wheel.extractall(tree)
    args = [command, REPO / "patchsets" / "demo"]
    if command != "validate":
        args += ["--root", tree]
    read, write = os.pipe()
    os.close(read)  # the reader left
    proc = subprocess.run(
        [sys.executable, "-m", "patchbay", *map(str, args)],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )
    os.close(write)
    assert (proc.returncode, proc.stderr) == (0, "")
    if command == "apply":  # the work was done, and recorded: the re-run is a no-op
        again = run_cli("apply", REPO / "patchsets" / "demo", "--root", tree)
        assert again.code == 0 and "nothing to do" in again.out, again.out + again.err


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["apply", "PS", "--state-dir="], "--state-dir"),
        (["apply", "PS", "--root", ""], "--root"),
        (["status", "PS", "--python="], "--python"),
        (["apply", ""], "PATCHSET"),
        (["validate", ""], "PATCHSET"),
        (["report", ""], "PATCHSET"),
    ],
)
def test_an_empty_value_is_a_usage_error_not_the_current_folder(
    tmp_path: Path, args: list[str], option: str
) -> None:
    """``Path("")`` is ``.``: ``--state-dir=`` would put the ledger in the current folder."""
    ps = write_patchset(tmp_path / "ps", [])
    res = run_main(*[str(ps) if a == "PS" else a for a in args])
    assert res.code == 2 and f"argument {option}: an empty value" in res.err, res.err


class _StoppedUnhandled(Exception):
    """What the test's own SIGTERM handler raises: a run that does not handle SIGTERM itself
    lets it escape (a traceback, ``Result.crash``), instead of the process dying."""


def _raise_stopped(signum: int, frame: object) -> None:
    raise _StoppedUnhandled


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd (Linux)")
def test_sigterm_before_the_transaction_ends_the_run_as_one_inside_it(tmp_path: Path) -> None:
    """SIGTERM while apply waits for the lock another run holds (planned, nothing written
    yet): the run ends as one stopped inside its transaction does, in one line and exit 143
    (128 plus SIGTERM), without a traceback; nothing is written, and SIGTERM's handler is the
    caller's again afterwards."""
    import fcntl
    import signal
    import threading

    root, ps = _tree(tmp_path)
    before = {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    state = root / ".patchbay"
    state.mkdir()
    lock = state / "lock"
    held = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(held, fcntl.LOCK_EX)  # another open file: the run's own flock waits for it

    def opened_by_the_run() -> bool:
        names = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                names.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                continue
        return names.count(str(lock)) >= 2

    def stop_once_waiting() -> None:
        for _ in range(6000):  # at most a minute (the run waits 120 s for the lock)
            if opened_by_the_run():
                os.kill(os.getpid(), signal.SIGTERM)
                return
            threading.Event().wait(0.01)

    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    stopper = threading.Thread(target=stop_once_waiting)
    try:
        stopper.start()
        res = run_main("apply", ps, "--root", root, "--lock-timeout", "120")
        stopper.join()
        assert signal.getsignal(signal.SIGTERM) is _raise_stopped
    finally:
        signal.signal(signal.SIGTERM, previous)
        os.close(held)
    assert res.crash is None, res.crash
    assert res.code == 143, res.err
    assert res.err == (
        "patchbay: error: terminated by SIGTERM; no write was under way, none is left half done\n"
    )
    after = {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file() and p != lock}
    assert after == before
    assert not (state / "journal").exists()
