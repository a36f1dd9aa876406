"""The symbolic walk over a parsed shell script.

The walk reads a script the way a reviewer does, without running it: it tracks variables and
their possible values, the working folder, helper functions (expanded at each call with their
arguments; functions never called are walked once with unknown arguments and marked), literal
loops (unrolled), ``if``/``case`` branches (alternatives), ``source``/``bash other.sh`` of the
same repository (followed, with the chain recorded), files the script writes itself
(here-documents into temporary files, downloads), and what command substitutions print. The
commands themselves are judged in :mod:`.commands`; what they change is recorded as
:class:`~.model.Modification` values.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .annotations import AnnotationsMixin
from .budget import MAX_DEPTH, Budget, Exhausted
from .control import ControlMixin
from .engines import EngineNames
from .inputs import Inputs
from .lists import ListsMixin
from .model import (
    ENGINE_DIR,
    TMP,
    FunctionInfo,
    Incomplete,
    Mechanism,
    Modification,
    ScriptAnalysis,
    Target,
)
from .running import RunningMixin
from .streams import Cmd, FileInfo, Frame, Stdin, Stream, _Function
from .syntax import Node, Source, statements
from .values import PIP_VAR, POSITIONAL, PYTHON_VAR, SCRIPT_DIR, State, Val, display, join, unknown
from .words import WordsMixin

_SOURCE_SUFFIXES = (".py", ".pyi", ".so", ".co", ".hsaco", ".cubin", ".cu", ".cuh", ".pth")
_DATA_SUFFIXES = (".csv", ".json", ".yaml", ".yml", ".txt", ".cfg", ".toml", ".h", ".hpp", ".cpp")
_COMMENT_LINE = re.compile(r"^[ \t]*#.*$", re.M)
_CHECKOUT_WORDS = (
    "src", "source", "local", "main", "master", "dev", "git", "repo", "checkout", "upstream",
    "fork", "nightly",
)  # fmt: skip
_CHECKOUT = re.compile(rf"([a-z][\w.]*?)[-_](?:{'|'.join(_CHECKOUT_WORDS)})")
_COMPUTED_NAME = frozenset(
    ("simple_expansion", "expansion", "string", "concatenation", "command_substitution")
)
"""Syntax of a command name whose value the walk computes (``$CMD``, ``"$@"``, ``"$1"``)."""
_MAY_ACT = re.compile(rb"\$[({]|[`<>]")
"""Bytes of a command that may run code, assign or redirect when its words are expanded."""
_LITERAL_NAME = re.compile(rb"[A-Za-z0-9_./+:-]+")
_DUP = re.compile(r">&\s*-?\d*$")
_REDIRECT_OP = re.compile(r"^(\d*)(&>>|&>|>>|>\||>|<)")


@dataclass(frozen=True)
class CommandTable:
    """What the walk dispatches each command to: :data:`.handlers.COMMANDS`, the functions of
    :mod:`.commands` with every handler registered (passed in, so the walk imports no handler)."""

    run_command: Callable[[Walker, Cmd], Stream | None]
    inert_command: Callable[[str], bool]
    environment_change: Callable[..., None]
    write_file: Callable[..., None]


class Walker(AnnotationsMixin, ControlMixin, ListsMixin, RunningMixin, WordsMixin):
    """Walks one script (and what it sources) and collects its modifications.

    Args:
        source: the parsed script.
        path: the script's path relative to ``root`` (for chains and messages).
        engines: what counts as an engine.
        root: the repository, to follow ``source``/``bash other.sh`` and read checked-in files
            (None: nothing is followed).
        commands: what each command is dispatched to (:data:`.handlers.COMMANDS`).
    """

    def __init__(
        self,
        source: Source,
        path: str,
        engines: EngineNames,
        root: Path | None = None,
        *,
        commands: CommandTable,
    ) -> None:
        self.src = source
        self.result_source = source  # the analysed file (``src`` moves into what it follows)
        self.commands = commands
        self.path = path
        self.engines = engines
        self.root = root
        self.state = State()
        self.chain: tuple[str, ...] = (path,)
        self.frames: list[Frame] = [Frame(None, 0, True)]
        self.functions: dict[str, _Function] = {}
        self.mods: list[Modification] = []
        self.files: dict[str, FileInfo] = {}
        self.clones: dict[str, tuple[str, int]] = {}  # folder -> (engine, line)
        self.conditions: list[str] = []
        self.tmp_count = 0
        self.depth = 0
        self.captures: list[list[Stream]] = []
        self.result = ScriptAnalysis(path, "shell")
        self.seen: set[tuple[object, ...]] = set()
        self.stopped = False
        self.installs: list[Modification] = []  # harness packages installed
        self.packages: list[str] = []  # packages named by the script's Python
        self.repos: dict[str, dict[str, object]] = {}  # folder -> git init / remote add facts
        self.vcs: list[Modification] = []  # clones and fetches of engines (built later?)
        self.pending: dict[str, FileInfo] = {}  # downloads to a temporary name in the engine
        self.last_removal: Modification | None = None
        self._root_text: str | None = None
        self.inputs = Inputs()  # the repository files looked at, for the audit's cache
        self._repo_files: dict[tuple[str, str, str | None], Path | None] = {}
        self.fn_stdin: list[Stdin | None] = []  # the standard input of each function call
        self.uninstalled: dict[str, int] = {}  # distribution -> line of its pip uninstall
        self.budget = Budget()
        self.standalone: frozenset[str] = frozenset()  # files analysed on their own too
        self.script_text: str | None = None  # the analysed file's text, when not ``source``
        self._names_engine: bool | None = None
        self.reached_at: tuple[Source, tuple[str, ...], Node] | None = None  # walked last
        self.moved = False  # a `cd` was walked: a relative path may be anywhere
        self.venvs: set[str] = set()  # folders of virtual environments the script creates

    # ------------------------------------------------------------------ driver

    def run(self) -> ScriptAnalysis:
        """Walk the script, then the functions it never calls; return the analysis (with
        :attr:`~.model.ScriptAnalysis.incomplete` set when a bound or a fault stopped it)."""
        self.note_annotations(self.src)
        self.guarded(self.walk_all)
        self.result.modifications = sorted(self.mods, key=lambda m: (m.chain, m.line))
        self.result.functions = [
            FunctionInfo(f.name, f.line, f.end_line, tuple(f.calls))
            for f in self.functions.values()
        ]
        self.result.set_e = self.state.set_e
        self.result.steps = self.budget.steps
        return self.result

    def walk_all(self) -> None:
        self.block(self.src.root)
        for fn in list(self.functions.values()):
            if fn.calls or (len(fn.chain) > 1 and fn.chain[-1] in self.standalone):
                continue  # called, or judged in the analysis of its own file
            self.walk_uncalled(fn)

    def guarded(self, work: Callable[[], None]) -> None:
        """Run ``work`` (a walk); a bound that runs out or a fault of the analyser stops it
        and is recorded as :class:`~.model.Incomplete` at the statement reached, so that one
        file never takes down a whole audit (what was found before is kept)."""
        try:
            work()
        except Exhausted as exc:
            self.result.incomplete = Incomplete(*self.reached, str(exc), "budget")
        except RecursionError:
            reason = "the script nests deeper than the analyser can follow"
            self.result.incomplete = Incomplete(*self.reached, reason, "budget")
        except Exception as exc:  # a fault in one file is that file's finding, not the run's
            reason = f"{type(exc).__name__}: {exc}"
            self.result.incomplete = Incomplete(*self.reached, reason, "error")

    @property
    def reached(self) -> tuple[str, int | None]:
        """The file and line of the statement walked last (where a stopped walk stopped)."""
        if self.reached_at is None:
            return (self.path, None)
        src, chain, node = self.reached_at
        return (chain[-1], src.line(node))

    def walk_uncalled(self, fn: _Function) -> None:
        saved = (self.state, self.src, self.chain)
        self.state = self.state.copy()
        self.state.args = [
            unknown(f"${k}", f"argument ${k} of {fn.name}(), which is never called")
            for k in range(1, 10)
        ]
        self.state.cwd, self.state.cwd_written = None, None
        self.src, self.chain = fn.source, fn.chain
        self.frames.append(Frame(fn.name, fn.line, False))
        try:
            self.block(fn.body)
        finally:
            self.frames.pop()
            self.state, self.src, self.chain = saved

    # ------------------------------------------------------------------ recording

    @property
    def live(self) -> bool:
        return all(f.live for f in self.frames)

    @property
    def names_engine(self) -> bool:
        """The analysed script names an engine, as a word, outside its comment lines (``#
        works with a stock vllm image`` alone is not naming one)."""
        if self._names_engine is None:
            text = self.script_text
            if text is None:
                text = self.result_source.data.decode("utf-8", "replace")
            code = _COMMENT_LINE.sub("", text) if "#" in text else text
            self._names_engine = self.engines.named_in(code) is not None
        return self._names_engine

    @property
    def function(self) -> str | None:
        for f in reversed(self.frames):
            if f.name:
                return f.name
        return None

    def emit(
        self, mechanism: Mechanism, tool: str, cmd: Cmd, target: Target | None = None, **kw: object
    ) -> Modification | None:
        """Record a modification made by ``cmd`` (duplicates of one line are kept once)."""
        chain, line, end, text = self.chain, cmd.line, max(cmd.end_line, cmd.line), cmd.text
        if cmd.forwarded is not None and cmd.forwarded.chain:
            call = cmd.forwarded
            chain, line, end, text = call.chain, call.line, call.line, call.text
        key = (chain, line, mechanism, tool, target.path if target else None)
        key = (*key, kw.get("url"), str(kw.get("content"))[:200])
        if key in self.seen:
            return None
        self.seen.add(key)
        mod = Modification(
            mechanism,
            tool,
            line,
            end,
            target,
            chain=chain,
            function=self.function,
            called=self.live,
            condition=self.conditions[-1] if self.conditions else None,
            text=text,
            **kw,  # type: ignore[arg-type]
        )
        if self.budget.summaries:
            mod.details["summarised"] = self.budget.summaries[-1]
        via = [f.line for f in self.frames if f.name and f.live]
        if via:
            mod.details.setdefault("via", via)
        # without `set -e` a failure does not stop the script: every failure is swallowed
        mod.details.setdefault("set_e", self.state.set_e)
        if target is not None and target.root == "unknown":
            mod.resolved = False
            mod.why = mod.why or f"the path {target.written} is not known before the script runs"
        if not self.live:
            mod.why = (mod.why + "; " if mod.why else "") + (
                f"in {self.function}(), which the script never calls"
            )
        self.mods.append(mod)
        return mod

    # ------------------------------------------------------------------ locations

    def target(self, val: Val, written: str | None = None, cwd: Val | None = None) -> Target:
        """Where a path word points: site-packages, an engine tree, unknown, or ``none``."""
        written = written if written is not None else val.display()
        base = cwd if cwd is not None else self.state.cwd
        how = val.how
        full = val
        if not val.text.startswith(("/", "~")):
            if base is not None:
                full = join(base, val)
                if base.installed or self.engine_tree(base.text):
                    how = f"working folder {self.state.cwd_written or base.display()}"
            elif val.unknown:
                return Target(val.text, written, "unknown", None, val.unknown)
            else:
                return Target(val.text, written, "none")
        origin = full.origin or val.origin
        if full.installed:
            rel = Target(full.text, written, "site-packages").site_relative or ""
            if self.engines.is_harness(rel):
                return Target(full.text, written, "none")  # an evaluation harness's file
            engine = self.engines.package_of(rel)
            return Target(
                full.text, written, "site-packages", engine, how or "site-packages", origin
            )
        helper = self.engine_helper_folder(full.text)
        if helper is not None:
            return Target(full.text, written, "engine-tree", helper[0], how or helper[1], origin)
        tree = self.engine_tree(full.text)
        if tree is not None:
            return Target(full.text, written, "engine-tree", tree[0], how or tree[1], origin)
        if full.unknown and not full.text.startswith((TMP, SCRIPT_DIR)):
            return Target(full.text, written, "unknown", None, full.unknown)
        return Target(full.text, written, "none")

    def engine_tree(self, text: str) -> tuple[str, str] | None:
        """(engine, how) for a path inside an engine checkout: one this script cloned, or a
        source or data file below a folder named after an engine package."""
        for folder, (engine, line) in self.clones.items():
            if text == folder or text.startswith(folder.rstrip("/") + "/"):
                return engine, f"the {engine} checkout cloned at line {line}"
        if not text.startswith(("/", "~")) or text.startswith((TMP, SCRIPT_DIR)):
            return None
        parts = text.split("/")
        if text.endswith(_SOURCE_SUFFIXES):
            for part in parts[1:-1]:
                if part in self.engines.imports:
                    return part, "an engine package folder"
        if text.endswith(_SOURCE_SUFFIXES + _DATA_SUFFIXES):
            for part in parts[1:-1]:
                engine = self.named_checkout(part)
                if engine is not None:
                    return engine, f"a file of {part}, a {engine} checkout"
        return None

    def named_checkout(self, name: str) -> str | None:
        """The engine of a folder named as a checkout of it: ``vllm-src``, ``vllm_local``,
        ``sglang-main`` (an engine name, then one of :data:`_CHECKOUT_WORDS`), or None."""
        m = _CHECKOUT.fullmatch(name)
        if m is None or not self.engines.is_engine(m.group(1)):
            return None
        return m.group(1)

    def engine_helper_folder(self, text: str) -> tuple[str, str] | None:
        """(engine, how) for a path below a folder an engine's own helper returns
        (:data:`~.model.ENGINE_DIR`: ``get_user_jit_dir()``, its JIT cache)."""
        if not text.startswith(ENGINE_DIR + "/"):
            return None
        name = text[len(ENGINE_DIR) + 1 :].split("()", 1)[0]
        top = name.split(".", 1)[0]
        if not self.engines.is_engine(top):
            return None
        return top, f"the folder {name}() returns"

    def engine_folder(self, text: str) -> str | None:
        """The engine a folder is a checkout of (``/opt/vllm``, a clone), or None."""
        for folder, (engine, _line) in self.clones.items():
            if text.rstrip("/") == folder.rstrip("/") or text.startswith(folder.rstrip("/") + "/"):
                return engine
        name = text.rstrip("/").rsplit("/", 1)[-1]
        plain = text.startswith(("/", "~", ".")) or "/" not in text
        if plain and not text.startswith((TMP, SCRIPT_DIR)):
            if self.engines.is_engine(name):
                return name
            return self.named_checkout(name)
        return None

    def new_tmp(self) -> Val:
        self.tmp_count += 1
        return Val(f"{TMP}{self.tmp_count}")

    # ------------------------------------------------------------------ statements

    def block(self, node: Node) -> None:
        for child in statements(node):
            if self.stopped:
                return
            self.statement(child)

    def statement(self, node: Node, stdin: Stdin | None = None) -> Stream:
        self.budget.step()
        self.reached_at = (self.src, self.chain, node)  # its line only when a walk stops
        t = node.type
        if t in ("command",):
            return self.command(node, stdin)
        if t == "redirected_statement":
            return self.redirected(node, stdin)
        if t == "list":
            return self.and_or(node)
        if t == "pipeline":
            return self.pipeline(node)
        if t in ("variable_assignment", "variable_assignments"):
            for a in [node] if t == "variable_assignment" else node.named_children:
                if a.type == "variable_assignment":
                    self.assign(a, self.src.line(a))
            return Stream()
        if t == "declaration_command":
            return self.declaration(node)
        if t in ("subshell",):
            saved = self.state
            self.state = self.state.copy()
            try:
                self.block(node)
            finally:
                self.state = saved
            return Stream()
        if t in ("compound_statement", "do_group"):
            self.block(node)
            return Stream()
        if t == "if_statement":
            self.if_statement(node)
            return Stream()
        if t == "case_statement":
            self.case_statement(node)
            return Stream()
        if t == "for_statement":
            self.for_statement(node, stdin)
            return Stream()
        if t in ("while_statement", "c_style_for_statement"):
            self.while_statement(node, stdin)
            return Stream()
        if t == "function_definition":
            self.define(node)
            return Stream()
        if t == "negated_command":
            inner = statements(node)
            return self.statement(inner[0], stdin) if inner else Stream()
        return Stream()

    def define(self, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is None or body is None:
            return
        name = self.src.text(name_node)
        if name in self.functions and self.functions[name].calls:
            return
        self.functions[name] = _Function(
            name, body, self.src, self.chain, self.src.line(node), self.src.end_line(node)
        )

    # ------------------------------------------------------------------ commands

    def command_name(self, node: Node) -> str:
        name = node.child_by_field_name("name")
        return self.src.text(name) if name is not None else ""

    def make_cmd(
        self, name: str, words: list[Val], node: Node, stdin: Stdin | None, env=None
    ) -> Cmd:
        end = self.src.end_line(node)
        if stdin is not None and stdin.kind == "heredoc":
            end = max(end, stdin.end_line)
        data = self.src.data
        stop = data.find(b"\n", node.start_byte, node.end_byte)
        stop = node.end_byte if stop == -1 else stop
        text = data[node.start_byte : stop].decode("utf-8", "replace").strip()
        return Cmd(name, words, name, env or {}, [], stdin, self.src.line(node), end, text, node)

    def command(self, node: Node, stdin: Stdin | None, outer: Node | None = None) -> Stream:
        if outer is None and self.inert(node):
            return Stream()
        env: dict[str, Val] = {}
        name_node = node.child_by_field_name("name")
        for child in node.children:
            if child.type == "variable_assignment":
                n = child.child_by_field_name("name")
                v = child.child_by_field_name("value")
                if n is not None:
                    env[self.src.text(n)] = self.word(v) if v is not None else Val("")
        if name_node is None:
            for k, v in env.items():
                self.set_var(k, [v], self.src.line(node))
            return Stream()
        name_child = name_node.named_children[0] if name_node.named_children else name_node
        words: list[Val] = []
        if name_child.type in _COMPUTED_NAME:
            # `"$@"`, `$CMD`, `"${cmd[@]}"`: the name is the first field, the rest are words
            fields = self.fields(name_child)
            if not fields:
                return Stream()  # `"$@"` of no words runs nothing
            name_val, words = fields[0], fields[1:]
        else:
            name_val = self.word(name_child)
        for arg in node.children_by_field_name("argument"):
            words.extend(self.fields(arg))
        where = outer if outer is not None else node
        redirects: list[tuple[str, Val]] = []
        for r in [*node.children, *(outer.children if outer is not None else [])]:
            if r.type == "file_redirect":
                text = self.src.text(r).lstrip()
                dest = r.child_by_field_name("destination") or (
                    r.named_children[-1] if r.named_children else None
                )
                if dest is None or _DUP.search(text) or dest.type == "number":
                    continue
                op = _REDIRECT_OP.match(text)
                if op is None:
                    continue
                if dest.type == "process_substitution":
                    continue
                fd, operator = op.groups()
                value = self.word(dest)
                if fd not in ("", "0", "1"):  # `2>/dev/null`: the command still prints
                    if value.text == "/dev/null":
                        continue
                    operator = fd + operator
                redirects.append((operator, value))
        if stdin is None:
            for op, val in redirects:
                if op == "<":
                    stdin = Stdin("file", value=val, file=self.files.get(val.text))
        if stdin is None and self.fn_stdin:
            stdin = self.fn_stdin[-1]
        if not name_val.known and name_child.type in _COMPUTED_NAME:
            name_val, words = self.computed_name(name_val, words, node)
        cmd = self.make_cmd(name_val.text, words, where, stdin, env)
        cmd.raw = self.src.text(name_node)
        cmd.redirects = redirects
        cmd.name = self.interpreter_name(name_val, cmd)
        if "/" in name_val.text:
            cmd.path = name_val
        if self.frames[-1].name and POSITIONAL.fullmatch(self.src.text(name_child)):
            cmd.forwarded = self.frames[-1]  # `step "label" sed -i ...`: the call's statement
        return self.commands.run_command(self, cmd) or Stream()

    def inert(self, node: Node) -> bool:
        """A command that changes nothing whatever its words are, judged on its bytes without
        expanding them: a literal name with no handler, no wrapper and no function of that
        name, no ``VAR=x`` prefix, no redirection, and no word whose expansion runs code or
        assigns (``$(...)``, backticks, ``${X:=y}``, ``<(...)``). Walking it would record
        nothing and change no state."""
        first = node.child(0)
        if first is None or first.type != "command_name":
            return False
        data = self.src.data
        name = data[first.start_byte : first.end_byte]
        if _LITERAL_NAME.fullmatch(name) is None:
            return False
        base = name.rsplit(b"/", 1)[-1].decode("ascii")
        if base in self.functions or not self.commands.inert_command(base):
            return False
        return _MAY_ACT.search(data, node.start_byte, node.end_byte) is None

    def interpreter_name(self, name: Val, cmd: Cmd) -> str:
        base = name.text.rsplit("/", 1)[-1]
        if name.known or not name.text.startswith("$"):
            return base
        # "$PY" with no known value: an interpreter variable, judged by how it is used
        var = re.sub(r"[^A-Za-z_]", "", name.text.split(":")[0]).upper()
        args = cmd.args
        looks_python = bool(args) and (
            args[0] in ("-", "-c", "-m", "-u", "-I", "-E", "-s", "-B") or args[0].endswith(".py")
        )
        if PYTHON_VAR.search(var) and (looks_python or cmd.stdin is not None):
            return "python3"
        if PIP_VAR.search(var):
            return "pip"
        return base

    def call_function(self, fn: _Function, cmd: Cmd) -> Stream:
        if self.live and cmd.line not in fn.calls:
            fn.calls.append(cmd.line)
        if self.depth >= MAX_DEPTH:
            return Stream()
        saved = (self.state.args, self.src, self.chain)
        self.state.args = list(cmd.words)
        self.src, self.chain = fn.source, fn.chain
        call = cmd.forwarded  # a helper run by another's "$@": the statement is the outer call
        if call is not None and call.chain:
            self.frames.append(Frame(fn.name, call.line, True, call.chain, call.text))
        else:
            self.frames.append(Frame(fn.name, cmd.line, True, saved[2], cmd.text))
        self.depth += 1
        self.captures.append([])
        self.fn_stdin.append(cmd.stdin)  # `helper <<EOF`: its commands read the here-document
        try:
            self.statement(fn.body)
        finally:
            self.fn_stdin.pop()
            self.depth -= 1
            printed = self.captures.pop()
            self.frames.pop()
            self.state.args, self.src, self.chain = saved
        if printed:
            return printed[-1]
        return Stream()

    def print(self, stream: Stream) -> None:
        """A command printed something: the capture of the innermost ``$(...)`` or function."""
        if self.captures:
            self.captures[-1].append(stream)

    # ------------------------------------------------------------------ variables

    def set_var(self, name: str, values: list[Val], line: int) -> None:
        out = []
        for v in values:
            if v.installed or self.engine_tree(v.text) or v.text.startswith(ENGINE_DIR):
                origin = v.origin or ("" if v.how.startswith("$") else v.how)
                v = Val(v.text, f"${name}, set at line {line}", v.unknown, origin)
            out.append(v)
        self.state.vars[name] = out or [Val("")]
        if name in ("PYTHONPATH", "LD_PRELOAD", "LD_LIBRARY_PATH") or name in self.state.exported:
            pass

    def assign(self, node: Node, line: int) -> None:
        n = node.child_by_field_name("name")
        v = node.child_by_field_name("value")
        if n is None:
            return
        name = self.src.text(n)
        if n.type == "subscript":
            return
        append = "+=" in self.src.text(node)[: len(name) + 3]
        if v is not None and v.type == "array":
            items: list[Val] = []
            for item in v.named_children:
                if item.type != "comment":  # a comment line inside `( ... )` is no element
                    items.extend(self.fields(item))
            self.state.arrays[name] = (self.state.arrays.get(name, []) if append else []) + items
            self.state.vars[name] = items[:1] or [Val("")]
            return
        value = self.word(v) if v is not None else Val("")
        previous = self.lookup(name)
        if append:
            value = (previous[0] if previous else Val("")) + value
        self.set_var(name, [value], line)
        before = previous[0].text if previous else ""
        self.commands.environment_change(
            self, name, value, line, self.src.text(node), before=before
        )

    def declaration(self, node: Node) -> Stream:
        kind = node.children[0].type if node.children else ""
        line = self.src.line(node)
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assign(child, line)
                n = child.child_by_field_name("name")
                if kind == "export" and n is not None:
                    self.state.exported.add(self.src.text(n))
            elif child.type == "variable_name" and kind == "export":
                self.state.exported.add(self.src.text(child))
            elif child.type == "variable_name" and kind == "local":
                self.state.vars[self.src.text(child)] = [Val("")]
        return Stream()

    def lookup(self, name: str) -> list[Val] | None:
        if name.isdigit():
            k = int(name)
            if k == 0:
                return [Val(f"{SCRIPT_DIR}/{posixpath.basename(self.chain[-1])}")]
            if k <= len(self.state.args):
                return [self.state.args[k - 1]]
            if self.frames[-1].name is None and self.depth == 0:
                return [unknown(f"${k}", f"the script's argument ${k}")]
            return [Val("")]
        return self.state.vars.get(name)


__all__ = ["Cmd", "CommandTable", "FileInfo", "Stdin", "Stream", "Walker", "display"]
