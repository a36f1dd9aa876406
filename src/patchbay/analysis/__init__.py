"""The script analyser: which statements of a script change the installed engine, how, and
with what content.

One question, asked by two features: the audit (``patchbay audit`` turns the modifications no
patchset declares into PB4xx findings) and ``patchbay import`` (which turns them into patches).
Both get their answer here, from one parse and one walk:

- :mod:`.syntax` parses shell with tree-sitter-bash and Dockerfiles with tree-sitter-dockerfile;
- :mod:`.walk` is the symbolic walk (variables, working folder, functions, ``source``), with
  the values of :mod:`.values`, the branches and loops of :mod:`.control`, the bounds of
  :mod:`.budget` (a walk that runs past them, or fails, stops with
  :class:`~.model.Incomplete`: one file never takes down a run) and the ``patchbay-reviewed``
  comments of :mod:`.annotations`;
- :mod:`.commands` dispatches each command to its handler in :mod:`.handlers` (one module per
  family: the shell's own commands, diffs and checkouts, file changes, interpreters and pip;
  the walk is given the table :data:`.handlers.COMMANDS`, so it imports no handler);
  :mod:`.lists` and :mod:`.words` are the walk's and-or lists/redirections and word expansion;
- :mod:`.python` reads Python code (snippets, ``.py`` patcher files) with :mod:`ast`;
  :mod:`.pysnippet` is its strict form for the import's literal ``replace`` edits;
- :mod:`.model` holds the result: :class:`Modification` values;
- :mod:`.dockerfile` walks Dockerfile instructions;
- :mod:`.engines` names the engines' packages, :mod:`.inputs` the files a script reads
  (patch files, snippets), :mod:`.streams` what commands read and print (pipes, ``$(...)``).

It reads scripts as text and imports no other wing (only :mod:`patchbay.errors`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .engines import DEFAULT_ENGINES, EngineNames, normalise_name
from .model import (
    SITE,
    TMP,
    FunctionInfo,
    Mechanism,
    Modification,
    ScriptAnalysis,
    Target,
)

if TYPE_CHECKING:
    from .syntax import ShellSyntaxError, parse_shell  # noqa: F401


def __getattr__(name: str) -> object:
    # the grammars (tree-sitter) load on first use: an audit whose scripts are all cached, or
    # that only needs the model and the engine names, never loads them
    if name in ("ShellSyntaxError", "parse_shell"):
        from . import syntax

        return getattr(syntax, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_ENGINES",
    "SITE",
    "TMP",
    "EngineNames",
    "FunctionInfo",
    "Mechanism",
    "Modification",
    "ScriptAnalysis",
    "ShellSyntaxError",
    "Target",
    "analyse",
    "analyse_python",
    "analyse_shell",
    "normalise_name",
]


def analyse_shell(
    text: str,
    path: str,
    engines: EngineNames | None = None,
    root: Path | None = None,
    standalone: frozenset[str] = frozenset(),
) -> ScriptAnalysis:
    """The modifications a shell script makes.

    Args:
        text: the script.
        path: its path relative to ``root`` (for chains and messages).
        engines: what counts as an engine (default: the known engines).
        root: the repository, to follow ``source``/``bash other.sh`` and read checked-in patch
            files; None: nothing outside ``text`` is read.
        standalone: repository-relative scripts the caller analyses on their own too (the
            audit's whole tree): the functions of such a script that this one sources but
            never calls are judged there, once, not again in every script that sources it.

    Raises:
        ShellSyntaxError: an unterminated here-document (``path:line``).
    """
    from .handlers import COMMANDS
    from .syntax import parse_shell
    from .walk import Walker

    source = parse_shell(text, path)
    walker = Walker(source, path, engines or EngineNames.build(), root, commands=COMMANDS)
    walker.standalone = standalone
    result = walker.run()
    result.modifications = _finish(walker, result.modifications)
    result.installs = list(walker.installs)
    result.packages = list(walker.packages)
    result.inputs = walker.inputs.probes
    return result


def _finish(walker: object, mods: list[Modification]) -> list[Modification]:
    """Drop engine clones never built or installed (a checkout alone changes nothing)."""
    out = []
    for mod in mods:
        if mod.mechanism is Mechanism.VCS and mod.details.get("built_at") is None:
            continue
        out.append(mod)
    return out


def analyse_python(
    text: str, path: str, engines: EngineNames | None = None, root: Path | None = None
) -> ScriptAnalysis:
    """The modifications a Python patcher file makes (writes, copies, removals, edits of
    engine files; commands it runs; ``PYTHONPATH`` it sets)."""
    from .handlers import COMMANDS
    from .handlers.installs import python_effects
    from .python import read_python
    from .syntax import parse_shell
    from .walk import Cmd, Walker

    walker = Walker(
        parse_shell("", path), path, engines or EngineNames.build(), root, commands=COMMANDS
    )
    walker.result.kind = "python"
    walker.script_text = text
    if "patchbay-reviewed" in text:
        _python_annotations(walker, text)

    def walk() -> None:
        facts = read_python(text, [path])
        if facts.error:  # a patcher in a newer Python's syntax is not "clean"
            walker.unresolved(1, f"the Python of {path}", facts.error)
        cmd = Cmd("python", [], "python", {}, [], None, 1, 1, "")
        python_effects(walker, cmd, facts.effects, text, [path], per_line=True, offset=0,
                       uncalled=facts.uncalled_lines)  # fmt: skip

    walker.guarded(walk)
    result = walker.result
    result.modifications = _finish(walker, sorted(walker.mods, key=lambda m: m.line))
    result.installs = list(walker.installs)
    result.inputs = walker.inputs.probes
    return result


def _python_annotations(walker: object, text: str) -> None:
    """``patchbay-reviewed`` in the comments of Python code (``tokenize``), never in strings."""
    import io
    import tokenize

    lines = text.split("\n")
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return
    for tok in tokens:
        if tok.type == tokenize.COMMENT and "patchbay-reviewed" in tok.string:
            row, col = tok.start
            own = not lines[row - 1][:col].strip()
            walker.annotate(tok.string, row, own_line=own)  # type: ignore[attr-defined]


def analyse(
    text: str,
    path: str,
    kind: str,
    engines: EngineNames | None = None,
    root: Path | None = None,
    standalone: frozenset[str] = frozenset(),
) -> ScriptAnalysis:
    """:func:`analyse_shell`, :func:`analyse_python` or the Dockerfile walk, by ``kind``
    (``shell``, ``python``, ``dockerfile``); ``standalone`` as for :func:`analyse_shell`."""
    if kind == "python":
        return analyse_python(text, path, engines, root)
    if kind == "dockerfile":
        from .dockerfile import analyse_dockerfile

        return analyse_dockerfile(text, path, engines or EngineNames.build(), root)
    return analyse_shell(text, path, engines, root, standalone)
