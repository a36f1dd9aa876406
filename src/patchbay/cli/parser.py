"""The ``patchbay`` command line's grammar: the table of sub-commands, each with its one-line
help, its ``examples:`` (:data:`EXAMPLES`) and its module in :mod:`patchbay.cli.grammar` (that
command's arguments and its handler), on the standard library's :mod:`argparse` (as
pre-commit's ``main.py``). Building it imports
nothing beyond argparse: a run builds only its own command's parser (:func:`build` with a name,
importing that one grammar module by name, as the kinds' registry imports a kind), the whole one
is for shell completion. Conventions: help shows metavariables, never types; a usage error is
:class:`~patchbay.cli.arguments.UsageError` (one line, exit 2, printed by
:func:`patchbay.cli.main`); the same option name for the same thing in every command
(:mod:`patchbay.cli.arguments`).
"""

from __future__ import annotations

import argparse
from importlib import import_module

from .. import __version__
from .arguments import Formatter, Parser, UsageError, examples, terminal_width

__all__ = [
    "COMMANDS",
    "DESCRIPTION",
    "EPILOG",
    "EXAMPLES",
    "UsageError",
    "build",
    "build_parser",
    "terminal_width",
]

DESCRIPTION = "Declarative, idempotent, all-or-nothing patches on a pinned inference-engine image."
EPILOG = (
    "`patchbay COMMAND -h` shows a command's options. Exit status: 0 done, 1 refused or failed "
    "(nothing changed), 2 bad input or usage."
)
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("apply", "apply", "Apply the pending patches; all or nothing; a re-run is a no-op."),
    (
        "status",
        "status",
        "Show every patch's state (pending, applied, redundant, outdated, partial, conflict).",
    ),
    ("revert", "revert", "Undo what the ledger says patchbay applied, newest first."),
    ("verify", "verify", "Check every patch is present and every touched Python file compiles."),
    ("validate", "validate", "Check a patchset's schema, consistency and patch files, offline."),
    (
        "check",
        "check",
        "Judge every patch against a candidate image (applies, upstream, partial, conflict).",
    ),
    (
        "vendor",
        "vendor",
        "Download remote diffs and unhashed artifacts, and pin them in patchbay.lock.",
    ),
    (
        "bundle",
        "bundle",
        "Gather everything apply needs (wheels, artifacts, vendored diffs, patchbay itself) for "
        "an offline run.",
    ),
    (
        "report",
        "report",
        "Upstream state and verdict (remove, bump, keep, attention) of every carried patch.",
    ),
    (
        "audit",
        "audit",
        "Audit patchsets, waivers and scripts (undeclared engine patching); exit 1 on findings.",
    ),
    ("waiver", "waiver", "Waiver documents: why a patch may be carried, and until when."),
    (
        "init",
        "init",
        "Start a patchset from an engine environment: components, versions and commits read "
        "from it.",
    ),
    (
        "capture",
        "capture",
        "Write edits made to the installed engine as a new diff patch of the patchset.",
    ),
    (
        "edit",
        "edit",
        "Bring the tree to the state just after patch ID (later patches taken off) to edit it.",
    ),
    (
        "refresh",
        "refresh",
        "Rewrite patch ID's diff from the tree, keeping its metadata; the ledger follows.",
    ),
    (
        "rebase",
        "rebase",
        "Carry the patchset onto a new image: drop what is upstream, 3-way merge conflicts.",
    ),
    (
        "import",
        "importer",
        "Turn a shell patch script into a draft patchset; exit 1 when part of it was not "
        "converted (IMPORT-NOTES.md lists it with the script's lines).",
    ),
    ("schema", "schema", "Print the JSON Schema of patchset.yaml."),
    ("version", "version", "Print patchbay's version."),
    (
        "completion",
        "completion",
        'Print the shell completion script (e.g. `eval "$(patchbay completion bash)"`).',
    ),
)
"""Every sub-command in the order of ``patchbay --help``: (name, module of
:mod:`patchbay.cli.grammar`, one-line help)."""

_DEMO = "--python .demo/engine/bin/python"  # the engine `./scripts/demo` makes (README)
EXAMPLES: dict[str, tuple[str, ...]] = {
    "apply": (
        f"patchbay apply patchsets/demo {_DEMO}",
        f"patchbay apply patchsets/demo {_DEMO} --dry-run  # the diff only",
        "patchbay apply bundle/patchset --bundle bundle --offline --python /opt/venv/bin/python",
    ),
    "status": (
        f"patchbay status patchsets/demo {_DEMO}",
        "patchbay status patchsets/demo --root ./image-tree --format json",
        f"patchbay status patchsets/demo {_DEMO} --trial",
    ),
    "revert": (
        f"patchbay revert patchsets/demo {_DEMO}",
        f"patchbay revert patchsets/demo mla-full-graph {_DEMO}",
        f"patchbay revert patchsets/demo --forget {_DEMO}",
    ),
    "verify": (
        f"patchbay verify patchsets/demo {_DEMO}",
        "patchbay verify patchsets/demo --root ./image-tree --installed --record verify.json",
    ),
    "validate": (
        "patchbay validate patchsets/demo",
        "patchbay validate patchsets/demo --format concise",
    ),
    "check": (
        "patchbay check patchsets/demo --python .demo/next/bin/python",
        "patchbay check patchsets/demo --root ./candidate-tree --format json",
    ),
    "vendor": (
        "patchbay vendor patchsets/kimik3-mi355x-vllm",
        "patchbay vendor patchsets/kimik3-mi355x-vllm --update  # accept changed upstream content",
    ),
    "bundle": (
        f"patchbay bundle patchsets/demo bundle {_DEMO}",
        "patchbay bundle patchsets/demo bundle --python /opt/venv/bin/python --without-patchbay",
    ),
    "report": (
        "patchbay report",
        "patchbay report patchsets/demo --format html -o report.html",
        "patchbay report patchsets/demo --candidate-python .demo/next/bin/python",
    ),
    "audit": (
        "patchbay audit",
        "patchbay audit --format github --fail-on warning",
        "patchbay audit --changed-since origin/main --format sarif -o audit.sarif",
    ),
    "waiver": (
        "patchbay waiver new patchsets/demo mla-full-graph",
        "patchbay waiver sync patchsets/demo waivers/demo-mla.md",
    ),
    "waiver new": (
        "patchbay waiver new patchsets/demo",
        "patchbay waiver new patchsets/demo mla-full-graph mla-large-cache --id demo-mla-cache",
    ),
    "waiver sync": (
        "patchbay waiver sync patchsets/demo waivers/demo-mla.md",
        "patchbay waiver sync patchsets/demo waivers/demo-asm-padding.md worker-triple  # add it",
    ),
    "init": (
        "patchbay init patchsets/vllm --package vllm --package aiter --python /opt/venv/bin/python",
        "patchbay init patchsets/vllm --package vllm --python /opt/venv/bin/python \\\n"
        "--image rocm/vllm:latest --from-git ../vllm",
    ),
    "capture": (
        f"patchbay capture patchsets/demo worker-triple demo_engine/worker.py \\\n{_DEMO}",
        f"patchbay capture patchsets/demo worker-triple {_DEMO} \\\n"
        "--wheel .demo/wheels/demo_engine-0.4.1+g1a2b3c4-py3-none-any.whl  # every changed file",
    ),
    "edit": (f"patchbay edit patchsets/demo mla-large-cache {_DEMO}",),
    "refresh": (
        f"patchbay refresh patchsets/demo mla-large-cache {_DEMO}",
        "patchbay refresh patchsets/demo mla-large-cache demo_engine/worker.py --root ./image-tree",
    ),
    "rebase": (
        f"patchbay rebase patchsets/demo {_DEMO} \\\n"
        "--onto-python .demo/next/bin/python --out .demo/demo-rebased",
        f"patchbay rebase patchsets/demo {_DEMO} \\\n"
        "--onto-python .demo/next/bin/python --write --resolved rebase-conflicts/demo",
    ),
    "import": (
        "patchbay import patch-image.sh --out patchsets/vllm-image",
        "patchbay import patch-image.sh --out patchsets/vllm-image --observe \\\n"
        '--python "$SCRATCH_ENGINE/bin/python"  # an engine copy made to be changed',
    ),
    "schema": ("patchbay schema > patchset.schema.json",),
    "version": ("patchbay version",),
    "completion": (
        'eval "$(patchbay completion bash)"  # e.g. in ~/.bashrc',
        'eval "$(patchbay completion zsh)"  # e.g. in ~/.zshrc',
        "patchbay completion fish | source  # e.g. in ~/.config/fish/config.fish",
    ),
}
"""The ``examples:`` of each command's ``-h`` (sub-commands as ``waiver new``): command lines
that run as written (against the demo of ``./scripts/demo`` where they can); a line ending in
``\\`` continues on the next."""


def _add_examples(p: argparse.ArgumentParser, words: str) -> None:
    """Give the parser of ``patchbay WORDS`` and those of its sub-commands their examples."""
    lines = EXAMPLES.get(words)
    if lines:
        p.epilog = examples(lines)
    for action in p._actions:
        if action.nargs == argparse.PARSER and isinstance(action.choices, dict):
            for name, sub in action.choices.items():
                _add_examples(sub, f"{words} {name}")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (every sub-command and option, e.g. for shell completion)."""
    parser, _ = build(None)
    assert parser is not None
    return parser


def build(only: str | None) -> tuple[argparse.ArgumentParser | None, list[tuple[str, str]]]:
    """With ``only`` None: the whole parser. With a command's name: that command's parser
    alone (``prog`` ``patchbay NAME``), or None when there is no such command. Also returns
    every command's ``(name, one-line help)``."""
    listing = [(name, text) for name, _, text in COMMANDS]
    sub = parser = None
    if only is None:
        parser = Parser(
            prog="patchbay",
            description=DESCRIPTION,
            formatter_class=Formatter,
            epilog=EPILOG,
        )
        parser.add_argument(
            "--version", action="version", version=__version__, help="print the version and exit"
        )
        sub = parser.add_subparsers(
            metavar="COMMAND", title="commands", parser_class=Parser, prog="patchbay"
        )
    for name, module, text in COMMANDS:
        if sub is not None:
            p = sub.add_parser(name, help=text, description=text, formatter_class=Formatter)
        elif name == only:
            p = Parser(prog=f"patchbay {name}", description=text, formatter_class=Formatter)
        else:
            continue
        grammar = import_module(f"{__package__}.grammar.{module}")
        p.set_defaults(handler=grammar.handle)
        grammar.arguments(p)
        _add_examples(p, name)
        if sub is None:
            return p, listing
    return parser, listing
