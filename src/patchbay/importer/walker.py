"""Follow a parsed patch script the way bash would run it, without running anything.

The walker keeps what it can know of the script's state: variables (with ``$(...)`` of the
usual install-root probes understood), the working folder, the files written into temporary
folders (here-documents, downloads) and the helper functions (expanded at each call with their
arguments). Each command is then recognised as a patch (a diff applied with ``git apply`` or
``patch``, literal ``replace`` edits in a Python here-document, a ``pip install`` pin, a
download into the engine, a rebuild after removing a stale build), as something there is
nothing to import for (a message, a marker ``grep``, a variable), or as not convertible, with
the reason. Every command gets an :class:`~patchbay.importer.drafts.Outcome`.

Computed values are strings holding a NUL-delimited marker (``\\0$HOME\\0``), so equal
computations still compare equal while anything that depends on them is known to be computed.
Paths use :data:`~patchbay.analysis.pysnippet.SITE` for the engine's site-packages folder.
"""

from __future__ import annotations

import fnmatch
import hashlib
import posixpath
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..analysis import pysnippet as pyscan
from ..diffparse import parse_diff
from ..errors import InputError
from .drafts import (
    ArtifactDraft,
    CommandDraft,
    DiffDraft,
    Draft,
    Outcome,
    OutcomeKind,
    PipDraft,
    ReplaceDraft,
    Row,
    WalkResult,
)
from .refs import find_refs, github_source
from .shell import (
    AndOr,
    Arith,
    Case,
    For,
    FunctionDef,
    Group,
    If,
    Lit,
    Loop,
    Node,
    Param,
    Pipeline,
    Script,
    ShellSyntaxError,
    Simple,
    Subst,
    Word,
    parse_fragment,
    parse_word,
)

SITE = pyscan.SITE
MARK = "\x00"
CWD0 = f"/{MARK}cwd{MARK}"
_TMP = "/@tmp"
_GLOB = re.compile(r"[*?\[]")
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")
_PY_VAR = re.compile(r"\$\{?\w*PY\w*\}?", re.IGNORECASE)
_REBUILD = re.compile(r"build|jit|compile|get_module|load_module", re.IGNORECASE)
_BYTECODE = "removes bytecode caches (patchbay drops the stale bytecode of what it patches)"
_DEVICES = frozenset({"/dev/null", "/dev/stderr", "/dev/stdout", "/dev/tty"})
_WRAPPERS = frozenset({"sudo", "time", "nohup", "exec", "nice", "stdbuf", "builtin"})
_MESSAGES = frozenset({"echo", "printf", "true", ":", "sleep", "sync", "date", "logger"})
_BUILTINS = frozenset(
    {
        "set",
        "shopt",
        "umask",
        "ulimit",
        "alias",
        "unalias",
        "shift",
        "return",
        "exit",
        "break",
        "continue",
        "wait",
        "false",
        "hash",
        "type",
        "which",
        "nproc",
        "uname",
        "id",
        "whoami",
        "trap",
        "getopts",
        "read",
        "history",
        "enable",
    }
)
_READERS = frozenset(
    {
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ls",
        "head",
        "tail",
        "wc",
        "sort",
        "uniq",
        "tr",
        "cut",
        "awk",
        "gawk",
        "sed",
        "diff",
        "cmp",
        "sha256sum",
        "sha1sum",
        "md5sum",
        "stat",
        "du",
        "df",
        "printenv",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "column",
        "jq",
        "seq",
        "file",
        "cat",
        "find",
        "tee",
        "env",
        "test",
        "[",
        "[[",
        "((",
        "pwd",
        "xxd",
        "od",
        "less",
        "more",
        "nvidia-smi",
        "rocm-smi",
        "rocminfo",
        "hipconfig",
        "lscpu",
        "free",
    }
)
_ENGINE_DISTS = frozenset(
    {
        "torch",
        "torchvision",
        "torchaudio",
        "pytorch-triton-rocm",
        "amd-aiter",
        "flashinfer-python",
        "xformers",
        "flash-attn",
        "vllm",
        "sglang",
        "triton",
        "aiter",
        "flashinfer",
    }
)
_PIP_VALUE_OPTS = frozenset(
    {
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "-c",
        "--constraint",
        "-r",
        "--requirement",
        "-e",
        "--editable",
        "-t",
        "--target",
        "--prefix",
        "--root",
        "--trusted-host",
        "--upgrade-strategy",
        "--progress-bar",
        "--log",
        "--cache-dir",
        "--src",
        "--platform",
        "--python-version",
        "--implementation",
        "--abi",
        "--only-binary",
        "--no-binary",
        "--config-settings",
        "-C",
        "--global-option",
        "--build-option",
        "--timeout",
        "--retries",
        "--proxy",
        "--cert",
        "--client-cert",
        "--exists-action",
        "--python",
        "--root-user-action",
        "--report",
        "--python-platform",
    }
)
_PIP_SILENT_FLAGS = frozenset(
    {
        "-q",
        "--quiet",
        "-qq",
        "-v",
        "--verbose",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--no-input",
        "-U",
        "--upgrade",
        "--pre",
        "--no-warn-script-location",
        "--no-warn-conflicts",
        "--progress-bar",
        "--root-user-action",
        "--timeout",
        "--retries",
        "--log",
        "--cache-dir",
        "--proxy",
        "--cert",
        "--client-cert",
        "--exists-action",
        "--upgrade-strategy",
        "--break-system-packages",
    }
)


@dataclass
class Tracked:
    """A file the script wrote in a temporary place: a here-document, an ``echo``, a
    download. ``content`` is None when it is not known (computed, or a download)."""

    content: bytes | None
    spans: list[tuple[int, int]]
    comments: list[str] = field(default_factory=list)
    url: str | None = None
    delimiter: str | None = None
    name: str = ""
    problem: str | None = None
    checked_in: Path | None = None


@dataclass
class Context:
    """Where a command sits: the comments above its blocks, the loop it was unrolled from,
    the condition guarding it, the function call that ran it."""

    comments: list[str] = field(default_factory=list)
    group: str | None = None
    condition: str | None = None
    call_line: int | None = None
    in_function: bool = False


def _clean_comment(text: str) -> str:
    text = text.strip().strip("-=#*~ \t").strip()
    return re.sub(r"^(?:step\s*)?\(?\d+[.):]\s+", "", text, flags=re.IGNORECASE)


class Walker:
    """Follows one parsed script; :meth:`run` returns the :class:`WalkResult`."""

    def __init__(self, script: Script, projects: dict[str, str]) -> None:
        self.script = script
        self.path = script.path
        self.script_dir = str(script.path.parent)
        self.projects = projects
        self.vars: dict[str, str | list[str]] = {}
        self.exported: set[str] = set()
        self.positional: list[str] = []
        self.frames: list[dict[str, str | list[str] | None]] = []
        self.cwd = CWD0
        self.dirs: list[str] = []
        self.functions: dict[str, FunctionDef] = {}
        self.called: set[str] = set()
        self.stack: list[str] = []
        self.files: dict[str, Tracked] = {}
        self.tmp_count = 0
        self.drafts: list[Draft] = []
        self.outcomes: list[Outcome] = []
        self.seen: set[tuple[int, int, str, str, int | None]] = set()
        self.rows: list[Row] = []
        self.row: Row | None = None
        self.packages: list[str] = []
        self.applied: dict[tuple[str, str, int], Draft] = {}
        self.pins: dict[tuple[str, str, str], Draft] = {}
        self.removal: list[tuple[str, Simple, Context, Row | None]] = []
        self.remarks: list[str] = []
        self.lines = script.text.split("\n")

    # -- the walk ------------------------------------------------------------------------------

    def run(self) -> WalkResult:
        """Walk the whole script."""
        nodes = self.script.nodes
        header = self.header(nodes[0].line if nodes else len(self.lines) + 1)
        prev = 0
        for index, node in enumerate(nodes):
            comments = self.preceding(prev, node.line, contiguous=index == 0)
            self.row = Row(node.line, node.last_line())
            self.rows.append(self.row)
            try:
                self.node(node, Context(comments=comments))
            except (RecursionError, ValueError, IndexError, KeyError, TypeError) as exc:
                # a bug of the importer on one command must not lose the rest of the script
                self.record(
                    node,
                    "unconverted",
                    f"the importer failed on this command ({type(exc).__name__}: {exc}); "
                    "please report it",
                )
            prev = node.last_line()
        self.row = None
        self.flush_removal()
        for name, fdef in self.functions.items():
            if name not in self.called:
                self.record(fdef, "consumed", f"function {name} is never called")
        return WalkResult(
            drafts=self.drafts,
            outcomes=self.outcomes,
            rows=self.rows,
            packages=self.packages,
            header=header,
            remarks=self.remarks,
        )

    def header(self, first_line: int) -> str:
        texts = []
        for line in range(1, first_line):
            c = self.script.comments.get(line)
            if c is None:
                if texts:
                    break
                continue
            if line == 1 and c.text.startswith("!"):
                continue
            text = _clean_comment(c.text)
            if text:
                texts.append(text)
        return " ".join(texts)

    def preceding(self, after: int, before: int, *, contiguous: bool = False) -> list[str]:
        """Own-line comments between two lines (with ``contiguous``, only the block right above
        ``before``), plus a trailing comment on ``before`` itself."""
        texts: list[str] = []
        lines = range(after + 1, before)
        if contiguous:
            block: list[int] = []
            for line in reversed(lines):
                c = self.script.comments.get(line)
                if c is None or not c.own_line:
                    break
                block.insert(0, line)
            lines = block  # type: ignore[assignment]
        for line in lines:
            c = self.script.comments.get(line)
            if c is not None and c.own_line and not (line == 1 and c.text.startswith("!")):
                text = _clean_comment(c.text)
                if text:
                    texts.append(text)
        c = self.script.comments.get(before)
        if c is not None and not c.own_line:
            text = _clean_comment(c.text)
            if text:
                texts.append(text)
        return texts

    def block(self, nodes: list[Node], ctx: Context, start: int) -> None:
        prev = start
        for node in nodes:
            extra = [] if ctx.in_function else self.preceding(prev, node.line)
            child = replace(ctx, comments=[*ctx.comments, *extra]) if extra else ctx
            self.node(node, child)
            prev = node.last_line()

    def node(self, node: Node, ctx: Context) -> str | None:
        if node.background:
            self.record(node, "review", "runs in the background (&); imported as a step in order")
        if isinstance(node, Simple):
            return self.simple(node, ctx)
        if isinstance(node, AndOr):
            tags = [self.node(item, ctx) for item in node.items]
            return "guard" if all(t == "guard" for t in tags) else None
        if isinstance(node, Pipeline):
            return self.pipeline(node, ctx)
        if isinstance(node, If):
            self.if_clause(node, ctx)
        elif isinstance(node, For):
            self.for_loop(node, ctx)
        elif isinstance(node, Loop):
            self.action()
            self.record(
                node,
                "unconverted",
                f"a {node.kind} loop: what it does depends on values known only at run time",
                hint="unroll it by hand into patches, or keep it as a `command` patch",
            )
        elif isinstance(node, Case):
            self.action()
            self.record(
                node,
                "unconverted",
                "a case statement: which branch runs is known only at run time",
                hint="keep the branch the target image takes and import it again",
            )
        elif isinstance(node, Group):
            saved = (self.cwd, dict(self.vars)) if node.subshell else None
            self.block(node.body, ctx, node.line - 1 if node.body else node.line)
            if saved is not None:
                self.cwd, self.vars = saved[0], saved[1]
        elif isinstance(node, FunctionDef):
            self.functions[node.name] = node
            self.record(node, "consumed", f"defines the helper function {node.name}")
        return None

    # -- outcomes ------------------------------------------------------------------------------

    def record(
        self,
        node: Node | tuple[int, int],
        kind: OutcomeKind,
        text: str,
        *,
        draft: Draft | None = None,
        ctx: Context | None = None,
        hint: str | None = None,
    ) -> None:
        start, end = node if isinstance(node, tuple) else (node.line, node.last_line())
        via = ctx.call_line if ctx is not None else None
        key = (start, end, kind, text, via)
        if key in self.seen and draft is None:
            return
        self.seen.add(key)
        outcome = Outcome(start, end, kind, text, draft=draft, via=via, hint=hint)
        self.outcomes.append(outcome)
        if self.row is not None:
            self.row.outcomes.append(outcome)

    def remark(self, text: str) -> None:
        if text not in self.remarks:
            self.remarks.append(text)

    def add(self, draft: Draft, node: Node, ctx: Context, what: str, extra_text: str = "") -> None:
        """Keep a draft: its comments, upstream references and the outcome that made it."""
        self.action()
        comments = []
        for text in [*draft.comments, *ctx.comments]:
            if text not in comments:
                comments.append(text)
        draft.comments = comments
        found = find_refs("\n".join([*comments, extra_text]), self.projects)
        draft.refs = found.refs
        draft.unknown_refs = found.unknown
        if ctx.condition:
            draft.notes.append(
                f"the script ran this only when `{ctx.condition}`; the patchset always applies it"
            )
        start, end = node.line, node.last_line()
        if ctx.call_line is not None:
            draft.spans.append((ctx.call_line, ctx.call_line))
        draft.spans.append((start, end))
        self.drafts.append(draft)
        self.record(node, "converted", what, draft=draft, ctx=ctx)

    def unconverted(self, node: Node, ctx: Context, text: str, hint: str | None = None) -> None:
        self.action()
        self.record(node, "unconverted", text, ctx=ctx, hint=hint)

    def consumed(self, node: Node, ctx: Context, text: str) -> None:
        self.record(node, "consumed", text, ctx=ctx)

    def action(self) -> None:
        """A command that changes something: a pending removal that no rebuild followed is
        reported now."""
        self.flush_removal()

    def flush_removal(self) -> None:
        removal, self.removal = self.removal, []
        for path, node, ctx, row in removal:
            self.row, current = row, self.row
            self.record(
                node,
                "unconverted",
                f"removes {path or 'the whole site-packages folder'} from the engine install, "
                "and no rebuild command follows",
                ctx=ctx,
                hint="patchbay removes files only as the `remove:` list of a `command` patch",
            )
            self.row = current

    # -- values --------------------------------------------------------------------------------

    def lookup(self, name: str) -> str | list[str] | None:
        return self.vars.get(name)

    def set_var(self, name: str, value: str | list[str], *, local: bool = False) -> None:
        if local and self.frames and name not in self.frames[-1]:
            self.frames[-1][name] = self.vars.get(name)
        self.vars[name] = value

    def getenv(self, name: str) -> str | None:
        value = self.vars.get(name)
        if name in self.exported and isinstance(value, str):
            return value
        return None

    def new_tmp(self) -> str:
        self.tmp_count += 1
        return f"{_TMP}{self.tmp_count}"

    def param(self, part: Param) -> list[str]:
        name = part.name
        if name in ("@", "*"):
            return list(self.positional)
        if name == "#":
            return [str(len(self.positional))]
        if name.isdigit():
            n = int(name)
            if n == 0:
                return [str(self.path)]
            value: str | list[str] | None = (
                self.positional[n - 1] if n <= len(self.positional) else None
            )
        elif name in ("?", "$", "!", "-", "RANDOM", "SECONDS", "EPOCHSECONDS", "BASHPID"):
            return [f"{MARK}${name}{MARK}"]
        elif name == "BASH_SOURCE":
            value = str(self.path)
        elif name == "PWD" and name not in self.vars:
            value = self.cwd
        else:
            value = self.lookup(name)
        if isinstance(value, list):
            if part.index in ("@", "*"):
                return list(value)
            if part.op == "len":
                return [str(len(value))]
            if part.index is not None and part.index.isdigit():
                idx = int(part.index)
                value = value[idx] if idx < len(value) else None
            else:
                value = value[0] if value else None
        op = part.op
        if op == "":
            return [value if value is not None else f"{MARK}${name}{MARK}"]
        if op in (":-", "-", ":=", "="):
            empty = value is None or (op.startswith(":") and value == "")
            if not empty:
                return [value]  # type: ignore[list-item]
            default = self.expand_text(part.arg or "")
            if op in (":=", "="):
                self.set_var(name, default)
            return [default]
        if op in (":+", "+"):
            set_ = value is not None and (value != "" or not op.startswith(":"))
            return [self.expand_text(part.arg or "") if set_ else ""]
        if value is None or MARK in value:
            return [f"{MARK}${{{name}{op}...}}{MARK}"]
        if op == "len":
            return [str(len(value))]
        if op in (":?", "?"):
            return [value]
        pattern = self.expand_text(part.arg or "")
        if MARK in pattern:
            return [f"{MARK}${{{name}{op}...}}{MARK}"]
        if op in ("#", "##"):
            sizes = range(len(value) + 1) if op == "#" else range(len(value), -1, -1)
            for n in sizes:
                if fnmatch.fnmatchcase(value[:n], pattern):
                    return [value[n:]]
            return [value]
        if op in ("%", "%%"):
            sizes = range(len(value), -1, -1) if op == "%" else range(len(value) + 1)
            for n in sizes:
                if fnmatch.fnmatchcase(value[n:], pattern):
                    return [value[:n]]
            return [value]
        if op in ("/", "//"):
            old, _, new = pattern.partition("/")
            if _GLOB.search(old) or not old:
                return [f"{MARK}${{{name}{op}...}}{MARK}"]
            return [value.replace(old, new) if op == "//" else value.replace(old, new, 1)]
        return [f"{MARK}${{{name}{op}...}}{MARK}"]

    def expand_text(self, text: str) -> str:
        try:
            word = parse_word(text, self.path, 0)
        except ShellSyntaxError:
            return f"{MARK}{text}{MARK}"
        return "".join(self.fields(word, split=False)[0]) if word.parts else ""

    def fields(self, word: Word, *, split: bool = True) -> tuple[list[str], bool]:
        """Expand a word into fields (quote removal, field splitting of unquoted expansions).

        Returns:
            The fields, and whether an unquoted glob character is in them.
        """
        out = [""]
        glob = False
        quoted_any = False

        def add(value: str, quoted: bool) -> None:
            if quoted or not split:
                out[-1] += value
                return
            pieces = value.split()
            if not pieces:
                return
            if value[:1].isspace() and out[-1]:
                out.append("")
            out[-1] += pieces[0]
            out.extend(pieces[1:])
            if value[-1:].isspace():
                out.append("")

        for part in word.parts:
            if isinstance(part, Lit):
                quoted_any = quoted_any or part.quoted
                if not part.quoted:
                    if _GLOB.search(part.text):
                        glob = True
                    text = part.text
                    if text.startswith("~") and out == [""]:
                        text = self.vars.get("HOME", f"{MARK}$HOME{MARK}") + text[1:]  # type: ignore[operator]
                    out[-1] += text
                else:
                    out[-1] += part.text
            elif isinstance(part, Param):
                values = self.param(part)
                quoted_any = quoted_any or part.quoted
                if part.name in ("@", "*") or part.index in ("@", "*"):
                    if part.quoted and part.name != "*":
                        if values:
                            out[-1] += values[0]
                            out.extend(values[1:])
                        continue
                    for v in values:
                        add(v + " ", False)
                    continue
                add(values[0] if values else "", part.quoted)
            elif isinstance(part, Subst):
                quoted_any = quoted_any or part.quoted
                add(self.substitute(part), part.quoted)
            elif isinstance(part, Arith):
                out[-1] += f"{MARK}$(({part.text})){MARK}"
        result = [f for f in out if f != ""] if not quoted_any else out
        if quoted_any and len(out) > 1:
            result = [f for i, f in enumerate(out) if f != "" or i == 0]
        return result, glob

    def expand(self, word: Word) -> str:
        """One word as one string (fields joined by a space)."""
        return " ".join(self.fields(word, split=False)[0])

    def argv(self, words: list[Word]) -> tuple[list[str], bool]:
        out: list[str] = []
        glob = False
        for word in words:
            if word.array is not None:
                items = [self.expand(w) for w in word.array]
                out.append(word.raw.rstrip("=") + "=(" + " ".join(items) + ")")
                continue
            f, g = self.fields(word)
            out.extend(f)
            glob = glob or g
        return out, glob

    def substitute(self, part: Subst) -> str:
        """The value of ``$(...)``: the install-root probes and path helpers scripts use."""
        unknown = f"{MARK}$({part.text.strip()}){MARK}"
        try:
            nodes = parse_fragment(part.text, self.path, part.line)
        except ShellSyntaxError:
            return unknown
        if len(nodes) != 1:
            return unknown
        node = nodes[0]
        if isinstance(node, AndOr) and len(node.items) == 2 and node.ops == ["&&"]:
            first, second = node.items
            if (
                isinstance(first, Simple)
                and isinstance(second, Simple)
                and first.words
                and first.words[0].literal == "cd"
                and [w.literal for w in second.words] in (["pwd"], ["pwd", "-P"])
            ):
                target = self.expand(first.words[1]) if len(first.words) > 1 else unknown
                return self.resolve(target)
            return unknown
        if isinstance(node, Pipeline):
            head = node.commands[0]
            if isinstance(head, Simple) and head.words:
                argv, _ = self.argv(head.words)
                names = [posixpath.basename(a) for a in argv[:3]]
                is_pip = "pip" in names or "pip3" in names or "-m" in argv
                if "show" in argv[:4] and is_pip and "location" in part.text.lower():
                    return SITE
                if argv and self.is_python(argv[0], head.words[0].raw) and "-c" in argv:
                    return self.python_print(argv, head)
            return unknown
        if not isinstance(node, Simple) or not node.words:
            return unknown
        argv, _ = self.argv(node.words)
        if not argv:
            return unknown
        cmd = posixpath.basename(argv[0])
        args = [a for a in argv[1:] if not a.startswith("-")]
        if cmd == "mktemp":
            return self.new_tmp()
        if cmd == "dirname" and args:
            return posixpath.dirname(args[0].rstrip("/")) or "."
        if cmd == "basename" and args:
            base = posixpath.basename(args[0].rstrip("/"))
            return base[: -len(args[1])] if len(args) > 1 and base.endswith(args[1]) else base
        if cmd in ("realpath", "readlink") and args:
            return self.resolve(args[-1])
        if cmd == "pwd":
            return self.cwd
        if cmd == "echo":
            return " ".join(args)
        if cmd == "printf" and len(argv) == 3 and argv[1] == "%s":
            return argv[2]
        if self.is_python(argv[0], node.words[0].raw):
            if len(argv) > 3 and argv[1:3] == ["-m", "site"]:
                return unknown
            return self.python_print(argv, node)
        return unknown

    def python_print(self, argv: list[str], node: Simple) -> str:
        if "-c" not in argv:
            return f"{MARK}$(python){MARK}"
        at = argv.index("-c")
        if at + 1 >= len(argv):
            return f"{MARK}$(python){MARK}"
        code = argv[at + 1]
        if MARK in code:
            return f"{MARK}$(python -c ...){MARK}"
        printed, packages = pyscan.printed_path(code, ["-c", *argv[at + 2 :]], self.getenv)
        self.note_packages(packages)
        return printed if printed is not None else f"{MARK}$(python -c ...){MARK}"

    def note_packages(self, packages: list[str]) -> None:
        for pkg in packages:
            if pkg not in self.packages:
                self.packages.append(pkg)

    # -- paths ---------------------------------------------------------------------------------

    def resolve(self, value: str) -> str:
        """An absolute, normalised path for ``value`` (relative to the working folder); a path
        through ``site-packages``/``dist-packages`` becomes :data:`SITE`-relative."""
        if not value.startswith("/"):
            value = posixpath.join(self.cwd, value)
        value = posixpath.normpath(value)
        m = re.search(r"/(?:site|dist)-packages(?=/|$)", value)
        if m is not None and not value.startswith(SITE):
            value = SITE + value[m.end() :]
        return value

    @staticmethod
    def site_rel(path: str) -> str | None:
        """The path relative to site-packages, or None (elsewhere, or computed)."""
        if MARK in path:
            return None
        if path == SITE:
            return ""
        if path.startswith(SITE + "/"):
            return path[len(SITE) + 1 :]
        return None

    @staticmethod
    def is_temp(path: str) -> bool:
        return path.startswith((_TMP, "/tmp/", "/var/tmp/", "/dev/shm/")) or path in (
            "/tmp",
            "/dev/null",
        )

    def checked_in(self, path: str) -> tuple[Path, str | None] | None:
        """A file the script refers to that exists next to it (a checked-in patch), with a
        note when the script's working folder had to be assumed."""
        if path.startswith(CWD0 + "/"):
            candidate = Path(self.script_dir) / path[len(CWD0) + 1 :]
            if candidate.is_file():
                return candidate, (
                    f"the script names {path[len(CWD0) + 1 :]} relative to the folder it is run "
                    "from; the importer assumed the script's own folder"
                )
            return None
        if MARK in path or path.startswith(("/@",)):
            return None
        candidate = Path(path)
        return (candidate, None) if candidate.is_file() else None

    def source(self, node: Node) -> str:
        """The command's first line, as written."""
        return self.lines[node.line - 1].strip() if 0 < node.line <= len(self.lines) else ""

    @staticmethod
    def is_python(value: str, raw: str) -> bool:
        base = posixpath.basename(value) if MARK not in value else ""
        return bool(_PYTHON.match(base)) or (MARK in value and bool(_PY_VAR.search(raw)))

    # -- compound commands ---------------------------------------------------------------------

    def if_clause(self, node: If, ctx: Context) -> None:
        """Both branches are imported; a condition that is no marker check is noted."""
        for cond, body in node.clauses:
            tags = [self.node(c, ctx) for c in cond]
            condition = None
            if not all(t == "guard" for t in tags):
                condition = " ".join(self.source(c) for c in cond)[:120]
            child = replace(ctx, condition=condition or ctx.condition)
            self.block(body, child, cond[-1].last_line() if cond else node.line)
        if node.else_body is not None:
            self.block(node.else_body, ctx, node.line)

    def for_loop(self, node: For, ctx: Context) -> None:
        """A loop over literal items (or checked-in files) is unrolled; others are not."""
        if node.arith is not None or node.words is None:
            self.action()
            what = "a C-style for loop" if node.arith is not None else "a loop over the arguments"
            self.record(
                node,
                "unconverted",
                f"{what}: its items are known only at run time",
                ctx=ctx,
                hint="unroll it by hand",
            )
            return
        items: list[str] = []
        globbed = False
        for word in node.words:
            fields, glob = self.fields(word)
            for value in fields:
                if glob:
                    expanded = self.glob_here(value)
                    if expanded is None:
                        self.action()
                        self.record(
                            node,
                            "unconverted",
                            f"a loop over {word.raw}, a list computed at run time",
                            ctx=ctx,
                            hint="list the items in the script, or unroll the loop by hand",
                        )
                        return
                    items.extend(expanded)
                    globbed = True
                elif MARK in value:
                    self.action()
                    self.record(
                        node,
                        "unconverted",
                        f"a loop over {word.raw}, a list computed at run time",
                        ctx=ctx,
                        hint="list the items in the script, or unroll the loop by hand",
                    )
                    return
                else:
                    items.append(value)
        what = "checked-in file(s), listed now," if globbed else "literal item(s),"
        self.record(node, "consumed", f"a loop over {len(items)} {what} unrolled", ctx=ctx)
        group = f"loop-{node.line}"
        for item in items:
            self.set_var(node.var, item)
            self.block(node.body, replace(ctx, group=group), node.line)

    def glob_here(self, pattern: str) -> list[str] | None:
        """A glob over checked-in files next to the script, expanded now (sorted, as bash does
        in the C locale); None for any other glob."""
        path = self.resolve(pattern)
        if path.startswith(CWD0 + "/"):
            path = self.script_dir + path[len(CWD0) :]
        if MARK in path or path.startswith("/@") or not path.startswith(self.script_dir + "/"):
            return None
        matches = sorted(str(p) for p in Path("/").glob(path.lstrip("/")))
        return matches or None

    def pipeline(self, node: Pipeline, ctx: Context) -> str | None:
        """``cat F | git apply`` and ``curl URL | patch`` feed a diff; others run in turn."""
        cmds = node.commands
        if len(cmds) == 2 and all(isinstance(c, Simple) and c.words for c in cmds):
            first, second = cmds  # type: ignore[misc]
            head, _ = self.argv(first.words)  # type: ignore[union-attr]
            tail, _ = self.argv(second.words)  # type: ignore[union-attr]
            if head and tail and self.applies(tail):
                stdin = self.stdin_from(head, first, ctx)  # type: ignore[arg-type]
                if stdin is not None:
                    self.consumed(first, ctx, "feeds the diff to the next command")
                    return self.simple(second, ctx, stdin=stdin)  # type: ignore[arg-type]
        tags = [self.node(c, ctx) for c in cmds]
        return "guard" if all(t == "guard" for t in tags) else None

    @staticmethod
    def applies(argv: list[str]) -> bool:
        base = posixpath.basename(argv[0])
        return base == "patch" or (base == "git" and "apply" in argv)

    def stdin_from(self, argv: list[str], node: Simple, ctx: Context) -> Tracked | None:
        base = posixpath.basename(argv[0])
        args = [a for a in argv[1:] if not a.startswith("-")]
        if base == "cat" and len(args) == 1:
            return self.tracked_or_checked_in(args[0], node, ctx)
        if base in ("curl", "wget") and len(args) >= 1:
            urls = [a for a in args if "://" in a]
            if len(urls) == 1:
                return Tracked(None, [(node.line, node.last_line())], url=urls[0])
        return None

    def tracked_or_checked_in(self, value: str, node: Node, ctx: Context) -> Tracked | None:
        path = self.resolve(value)
        if path in self.files:
            return self.files[path]
        found = self.checked_in(path)
        if found is None:
            return None
        real, note = found
        try:
            data = real.read_bytes()
        except OSError:
            return None
        return Tracked(data, [], name=real.name, problem=note, checked_in=real)

    # -- simple commands -----------------------------------------------------------------------

    def simple(self, node: Simple, ctx: Context, stdin: Tracked | None = None) -> str | None:
        """Recognise one simple command; returns ``guard``/``check`` for read-only tests."""
        env: dict[str, str] = {}
        for name, value in node.assigns:
            if value.array is not None:
                items = [self.expand(w) for w in value.array]
                if node.words:
                    continue
                self.set_var(name, items)
                continue
            text = self.expand(value)
            if node.words:
                env[name] = text
            else:
                self.set_var(name, text)
                if self.injects(name, text, node, ctx):
                    return None
        heredoc = node.heredoc
        if heredoc is not None:
            stdin = self.heredoc_file(heredoc, ctx)
        outputs: list[tuple[str, str, bool]] = []
        for r in node.redirects:
            if r.heredoc is not None or r.target is None:
                continue
            target = self.expand(r.target)
            if r.op in ("<", "<>") and r.fd in ("", "0"):
                stdin = self.tracked_or_checked_in(target, node, ctx) or Tracked(
                    None, [], problem=f"reads {r.target.raw}, which the importer cannot see"
                )
            elif r.op in (">", ">>", ">|", "&>", "&>>") or (r.op == ">&" and not target.isdigit()):
                if r.op in (">&", "<&") and target in ("-",):
                    continue
                path = self.resolve(target)
                if path not in _DEVICES:
                    outputs.append((path, r.target.raw, ">>" in r.op))
        if not node.words:
            if outputs:
                return self.write_outputs(node, ctx, outputs, None, "truncates")
            if node.assigns:
                self.consumed(node, ctx, "sets a variable")
            return None
        argv, _ = self.argv(node.words)
        raw0 = node.words[0].raw
        while argv and posixpath.basename(argv[0]) in _WRAPPERS | {"env", "command"}:
            base = posixpath.basename(argv[0])
            if base == "command" and len(argv) > 1 and argv[1] in ("-v", "-V"):
                self.consumed(node, ctx, "checks that a command exists")
                return "guard"
            argv = argv[1:]
            while base == "env" and argv and re.match(r"[A-Za-z_]\w*=", argv[0]):
                key, _, val = argv[0].partition("=")
                env[key] = val
                argv = argv[1:]
            while argv and argv[0].startswith("-") and base in ("sudo", "nice", "env", "stdbuf"):
                argv = argv[1:]
            raw0 = argv[0] if argv else raw0
        if not argv:
            self.consumed(node, ctx, "no command")
            return None
        cmd = posixpath.basename(argv[0]) if MARK not in argv[0] else argv[0]
        engine_writes = [o for o in outputs if self.site_rel(o[0]) is not None or MARK in o[0]]
        if engine_writes and cmd not in ("curl", "wget", "cat", "echo", "printf", "tee"):
            where = (
                "a file of the engine install"
                if MARK not in engine_writes[0][0]
                else ("a computed path")
            )
            self.unconverted(
                node,
                ctx,
                f"writes {engine_writes[0][1]} ({where}) with the output of {cmd}",
                hint="express the new content as a diff (a new file is a diff too)",
            )
            return None
        if cmd in self.functions:
            return self.call(self.functions[cmd], argv, node, ctx)
        if cmd in ("export", "local", "declare", "typeset", "readonly"):
            self.declare(cmd, node, ctx)
            return None
        if cmd == "unset":
            for name in argv[1:]:
                self.vars.pop(name, None)
            self.consumed(node, ctx, "unsets a variable")
            return None
        if cmd in ("cd", "pushd", "popd"):
            return self.change_dir(cmd, argv, node, ctx)
        if cmd in ("source", "."):
            self.unconverted(
                node,
                ctx,
                f"sources another script ({' '.join(argv[1:2])})",
                hint="import that script separately",
            )
            return None
        if cmd == "patchbay":
            self.consumed(node, ctx, "runs patchbay itself; nothing to import")
            return None
        if cmd in ("eval", "exec"):
            self.unconverted(node, ctx, f"{cmd} of text built at run time")
            return None
        if self.is_python(argv[0], raw0):
            return self.python(argv, node, ctx, stdin, env)
        if cmd == "git":
            return self.git(argv, node, ctx, stdin)
        if cmd == "patch":
            return self.patch(argv, node, ctx, stdin)
        if re.fullmatch(r"pip3?(\.\d+)?", cmd):
            return self.pip(argv[1:], node, ctx, env)
        if cmd == "uv" and argv[1:2] == ["pip"]:
            return self.pip(argv[2:], node, ctx, env)
        if cmd in ("curl", "wget"):
            return self.download(cmd, argv, node, ctx, outputs)
        if cmd == "rm":
            return self.remove(argv, node, ctx)
        if cmd in ("cp", "mv", "install"):
            return self.copy(cmd, argv, node, ctx)
        if cmd in ("sed", "perl") and any(
            a == "-i"
            or a.startswith(("-i", "--in-place"))
            or (cmd == "perl" and "i" in a[1:] and a.startswith("-p"))
            for a in argv[1:]
        ):
            self.unconverted(
                node,
                ctx,
                f"edits a file in place with {cmd}",
                hint="rewrite it as a `replace` patch (literal old and new text) or a diff",
            )
            return None
        if cmd == "awk" and "inplace" in argv:
            self.unconverted(
                node, ctx, "edits a file in place with awk", hint="rewrite it as a diff"
            )
            return None
        if cmd == "find" and any(a in ("-delete", "-exec", "-execdir") for a in argv):
            text = " ".join(argv)
            if "__pycache__" in text or ".pyc" in text:
                self.consumed(
                    node,
                    ctx,
                    _BYTECODE,
                )
                return None
            self.unconverted(node, ctx, "runs find with -delete or -exec")
            return None
        if cmd in ("cat", "echo", "printf", "tee") and (outputs or cmd == "tee"):
            return self.write_outputs(node, ctx, outputs, stdin, cmd, argv)
        if cmd == "mkdir":
            self.consumed(node, ctx, "creates folders (patchbay creates the folders a patch needs)")
            return None
        if cmd in ("touch", "chmod", "chown", "ln", "truncate"):
            paths = [self.resolve(a) for a in argv[1:] if not a.startswith("-")]
            if any(self.site_rel(p) is not None or (MARK in p) for p in paths):
                self.unconverted(
                    node, ctx, f"{cmd} on files of the engine install (or computed paths)"
                )
            else:
                self.consumed(node, ctx, f"{cmd} outside the engine install")
            return None
        if outputs:
            tag = self.write_outputs(node, ctx, outputs, None, cmd, argv)
            if tag != "written":
                return tag
        if cmd in _MESSAGES:
            self.consumed(
                node,
                ctx,
                "prints a message" if cmd in ("echo", "printf") else "no effect on the engine",
            )
            return None
        if cmd in _BUILTINS:
            self.consumed(node, ctx, f"shell built-in `{cmd}`; nothing to import")
            return None
        if cmd in ("test", "[", "[["):
            text = " ".join(argv[1:])
            if re.search(r"(^|\s)!?\s*-[efdsrxLhw]\s", text + " "):
                self.consumed(node, ctx, "a file test")
                return "guard"
            self.consumed(node, ctx, "a test")
            return "condition"
        if cmd in _READERS:
            self.consumed(node, ctx, "reads or checks; changes nothing")
            return "guard" if cmd in ("grep", "egrep", "fgrep", "rg", "cmp", "diff") else "check"
        self.unconverted(
            node,
            ctx,
            f"runs {cmd}, which the importer does not convert",
            hint="keep it outside the patchset, or declare it as a `command` patch by hand",
        )
        return None

    def declare(self, cmd: str, node: Simple, ctx: Context) -> None:
        """``export``/``local``/``declare``/``readonly`` with their assignments."""
        for word in node.words[1:]:
            if word.array is not None:
                name = word.raw.rstrip("=").lstrip("+")
                self.set_var(name, [self.expand(w) for w in word.array], local=cmd == "local")
                continue
            text = self.expand(word)
            if text.startswith("-"):
                continue
            name, eq, value = text.partition("=")
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                continue
            if eq:
                self.set_var(name, value, local=cmd == "local")
                if self.injects(name, value, node, ctx):
                    return
            elif cmd == "local":
                self.set_var(name, "", local=True)
            if cmd == "export":
                self.exported.add(name)
        self.consumed(node, ctx, "sets a variable" if cmd != "export" else "exports a variable")

    def injects(self, name: str, value: str, node: Simple, ctx: Context) -> bool:
        """A search-path variable that adds code to the engine at run time (reported)."""
        if name not in ("PYTHONPATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONSTARTUP"):
            return False
        added = [p for p in value.split(":") if p and MARK not in p]
        if not added:
            return False
        self.unconverted(
            node,
            ctx,
            f"adds {':'.join(added)} to {name}: code the engine picks up at run time",
            hint="make it a patch of the installed files, or set it where the engine is started",
        )
        return True

    def change_dir(self, cmd: str, argv: list[str], node: Simple, ctx: Context) -> None:
        if cmd == "popd":
            self.cwd = self.dirs.pop() if self.dirs else f"/{MARK}popd{MARK}"
        else:
            target = argv[1] if len(argv) > 1 else self.vars.get("HOME", f"{MARK}$HOME{MARK}")
            if cmd == "pushd":
                self.dirs.append(self.cwd)
            self.cwd = f"/{MARK}cd -{MARK}" if target == "-" else self.resolve(str(target))
        self.consumed(node, ctx, "changes the working folder")
        return None

    def call(self, fdef: FunctionDef, argv: list[str], node: Simple, ctx: Context) -> str | None:
        """Expand a helper function at its call, with its arguments as ``$1``..."""
        if fdef.name in self.stack or len(self.stack) > 8:
            self.unconverted(node, ctx, f"a recursive call of {fdef.name}")
            return None
        self.called.add(fdef.name)
        saved_positional = self.positional
        self.positional = argv[1:]
        self.frames.append({})
        self.stack.append(fdef.name)
        self.consumed(node, ctx, f"calls {fdef.name} (lines {fdef.line}-{fdef.last_line()})")
        inner = replace(ctx, call_line=ctx.call_line or node.line, in_function=True)
        body = fdef.body
        try:
            if isinstance(body, Group):
                self.block(body.body, inner, body.line)
            elif body is not None:
                self.node(body, inner)
        finally:
            self.stack.pop()
            frame = self.frames.pop()
            for name, old in frame.items():
                if old is None:
                    self.vars.pop(name, None)
                else:
                    self.vars[name] = old
            self.positional = saved_positional
        return None

    def heredoc_file(self, doc: object, ctx: Context) -> Tracked:
        """A here-document's content (expanded when its delimiter is not quoted)."""
        from .shell import Heredoc

        assert isinstance(doc, Heredoc)
        body = doc.body
        problem = None
        if not doc.quoted and any(c in body for c in "$`\\"):
            word = parse_word(body, self.path, doc.start, heredoc=True)
            text = "".join(self.fields(word, split=False)[0])
            if MARK in text:
                problem = (
                    f"the here-document <<{doc.delimiter} is not quoted and expands values "
                    "known only at run time"
                )
            body = text
        return Tracked(
            body.encode("utf-8", "surrogateescape") if problem is None else None,
            [(doc.line, doc.end)],
            comments=list(ctx.comments),
            delimiter=doc.delimiter,
            problem=problem,
        )

    def write_outputs(
        self,
        node: Simple,
        ctx: Context,
        outputs: list[tuple[str, str, bool]],
        stdin: Tracked | None,
        cmd: str,
        argv: list[str] | None = None,
    ) -> str | None:
        """Output redirections and ``tee``: files written in temporary folders are kept."""
        args = [a for a in (argv or [])[1:] if not a.startswith("-")]
        if cmd == "tee":
            outputs = [*outputs, *((self.resolve(a), a, "-a" in (argv or [])) for a in args)]
        real = [o for o in outputs if o[0] not in _DEVICES]
        if not real:
            self.consumed(
                node,
                ctx,
                "prints a message"
                if cmd in ("echo", "printf")
                else "reads or checks; changes nothing",
            )
            return "check"
        content: bytes | None = None
        reads_stdin = cmd == "tee" or (cmd == "cat" and not args)
        if reads_stdin and stdin is not None:
            content = stdin.content
        elif cmd == "cat" and len(args) == 1:
            src = self.files.get(self.resolve(args[0]))
            content = src.content if src else None
        elif cmd == "echo" and argv is not None:
            words = argv[1:]
            newline = "-n" not in words[:1]
            words = [w for w in words if w not in ("-n", "-e", "-E")]
            text = " ".join(words)
            content = None if MARK in text else (text + ("\n" if newline else "")).encode()
        for path, raw, append in real:
            rel = self.site_rel(path)
            if rel is not None or MARK in path:
                where = "a file of the engine install" if rel is not None else "a computed path"
                self.unconverted(
                    node,
                    ctx,
                    f"writes {raw} ({where}) with {cmd}",
                    hint="express the new content as a diff (a new file is a diff too)",
                )
                return None
            if self.is_temp(path):
                name = posixpath.basename(path)
                tracked = Tracked(
                    None if append else content,
                    list(stdin.spans) if stdin is not None and cmd in ("cat", "tee") else [],
                    comments=list(stdin.comments if stdin else ctx.comments) or list(ctx.comments),
                    delimiter=stdin.delimiter if stdin is not None else None,
                    name=name,
                    problem=(stdin.problem if stdin is not None else None)
                    or ("the script appends to it" if append else None),
                )
                if not tracked.spans:
                    tracked.spans = [(node.line, node.last_line())]
                self.files[path] = tracked
                self.consumed(node, ctx, f"writes {raw} into a temporary folder")
            else:
                self.consumed(node, ctx, f"writes {raw}, outside the engine install")
        return "written"

    # -- diffs ---------------------------------------------------------------------------------

    def git(self, argv: list[str], node: Simple, ctx: Context, stdin: Tracked | None) -> str | None:
        """``git [-C DIR] apply ...`` is a diff; read-only git commands need nothing."""
        cwd = self.cwd
        i = 1
        while i < len(argv) and argv[i].startswith("-"):
            if argv[i] == "-C" and i + 1 < len(argv):
                cwd = self.resolve(posixpath.join(cwd, argv[i + 1]))
                i += 2
            elif argv[i] == "-c":
                i += 2
            else:
                i += 1
        sub = argv[i] if i < len(argv) else ""
        if sub == "apply":
            return self.git_apply(argv[i + 1 :], cwd, node, ctx, stdin)
        if sub in (
            "diff",
            "status",
            "log",
            "show",
            "rev-parse",
            "describe",
            "ls-files",
            "branch",
            "config",
            "--version",
            "version",
            "remote",
        ):
            self.consumed(node, ctx, f"git {sub}: reads; changes nothing")
            return "check"
        self.unconverted(
            node,
            ctx,
            f"git {sub or '(no command)'}",
            hint="a clone or checkout that is built later belongs in a `pip` pin of a commit",
        )
        return None

    def git_apply(
        self, args: list[str], cwd: str, node: Simple, ctx: Context, stdin: Tracked | None
    ) -> str | None:
        """``git apply`` options: ``-p``, ``--directory``, ``--check``, ``-R``."""
        strip, directory, check, reverse = 1, None, False, False
        files: list[str] = []
        notes: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            if a == "-p" and i + 1 < len(args):
                strip = int(args[i + 1]) if args[i + 1].isdigit() else strip
                i += 1
            elif re.fullmatch(r"-p\d+", a):
                strip = int(a[2:])
            elif a.startswith("--directory="):
                directory = a.split("=", 1)[1]
            elif a == "--directory" and i + 1 < len(args):
                directory = args[i + 1]
                i += 1
            elif a == "--check":
                check = True
            elif a in ("-R", "--reverse"):
                reverse = True
            elif a in ("--cached", "--index", "--include", "--exclude") or a.startswith(
                ("--include=", "--exclude=")
            ):
                notes.append(f"the script passed {a} to git apply, which the patchset ignores")
            elif a in (
                "--ignore-whitespace",
                "--ignore-space-change",
                "--recount",
                "--unidiff-zero",
                "--inaccurate-eof",
            ) or re.fullmatch(r"-C\d+", a):
                notes.append(f"the script applied it with {a}; patchbay matches context exactly")
            elif a == "-":
                files.append("-")
            elif a.startswith("-"):
                pass  # -v, -q, --whitespace=..., -3: no effect on the result
            else:
                files.append(a)
            i += 1
        if check:
            self.consumed(
                node, ctx, "checks whether the diff applies (patchbay decides from content)"
            )
            return "guard"
        if reverse:
            self.unconverted(
                node,
                ctx,
                "reverse-applies a diff (takes a change out)",
                hint="revert is what `patchbay revert` does; drop it or make a diff of the result",
            )
            return None
        root = cwd if directory is None else self.resolve(posixpath.join(cwd, directory))
        sources = files or ["-"]
        for src in sources:
            tracked = stdin if src == "-" else self.tracked_or_checked_in(src, node, ctx)
            self.diff(tracked, src, root, strip, node, ctx, notes, "git apply")
        return None

    def patch(
        self, argv: list[str], node: Simple, ctx: Context, stdin: Tracked | None
    ) -> str | None:
        """GNU ``patch`` options: ``-p``, ``-d``, ``-i``, ``--dry-run``, ``-R``."""
        strip: int | None = None
        directory: str | None = None
        infile: str | None = None
        dry = reverse = False
        positional: list[str] = []
        notes: list[str] = []
        args = argv[1:]
        i = 0
        with_value = {
            "-d": "d",
            "--directory": "d",
            "-i": "i",
            "--input": "i",
            "-p": "p",
            "--strip": "p",
            "-F": "F",
            "--fuzz": "F",
            "-r": "r",
            "--reject-file": "r",
            "-o": "o",
            "--output": "o",
            "-B": "B",
            "--prefix": "B",
            "-z": "z",
            "--suffix": "z",
            "-D": "D",
            "--ifdef": "D",
            "-V": "V",
        }
        while i < len(args):
            a = args[i]
            key, value = None, None
            if "=" in a and a.startswith("--") and a.split("=", 1)[0] in with_value:
                key, value = with_value[a.split("=", 1)[0]], a.split("=", 1)[1]
            elif a in with_value and i + 1 < len(args):
                key, value = with_value[a], args[i + 1]
                i += 1
            elif re.fullmatch(r"-[dipFrBzDoV].+", a):
                key, value = a[1], a[2:]
            elif a == "--dry-run" or a == "-C" or a == "--check":
                dry = True
            elif a in ("-R", "--reverse"):
                reverse = True
            elif a in ("-l", "--ignore-whitespace"):
                notes.append(
                    "the script applied it with patch -l; patchbay matches whitespace exactly"
                )
            elif a.startswith("-"):
                if re.fullmatch(r"-[A-Za-z]+", a) and "R" in a[1:] and len(a) > 2:
                    reverse = True
            else:
                positional.append(a)
            if key == "p" and value is not None and value.isdigit():
                strip = int(value)
            elif key == "d":
                directory = value
            elif key == "i":
                infile = value
            elif key == "o":
                notes.append("the script wrote the result to another file (-o)")
            i += 1
        if dry:
            self.consumed(
                node, ctx, "checks whether the diff applies (patchbay decides from content)"
            )
            return "guard"
        if reverse:
            self.unconverted(node, ctx, "reverse-applies a diff (takes a change out)")
            return None
        if positional:
            self.unconverted(
                node,
                ctx,
                "patch with the file to patch named on its command line",
                hint="make the diff's own paths name the file, and import again",
            )
            return None
        self.remark(
            "The script's `patch` calls apply diffs with fuzz (GNU patch allows fuzz 2 by default, "
            "more with --fuzz); patchbay never fuzzes, so a diff that only applied with fuzz shows "
            "as a conflict in `patchbay status`."
        )
        root = self.cwd if directory is None else self.resolve(directory)
        tracked = stdin if infile is None else self.tracked_or_checked_in(infile, node, ctx)
        self.diff(tracked, infile or "-", root, strip, node, ctx, notes, "patch")
        return None

    def diff(
        self,
        tracked: Tracked | None,
        src: str,
        root: str,
        strip: int | None,
        node: Simple,
        ctx: Context,
        notes: list[str],
        tool: str,
    ) -> None:
        """A diff applied in ``root`` with ``strip``: a draft, once per content and root."""
        label = src if src != "-" else "standard input"
        if tracked is None:
            self.unconverted(
                node,
                ctx,
                f"{tool} of {label}, a file the importer cannot find (a computed path, "
                "or not next to the script)",
                hint="add the diff to the patchset by hand",
            )
            return
        if tracked.url is not None and tracked.content is None:
            self.remote_diff(tracked, root, strip, node, ctx, tool)
            return
        if tracked.content is None:
            self.unconverted(
                node,
                ctx,
                f"{tool} of {label}: {tracked.problem or 'its content is not known'}",
                hint="quote the here-document delimiter (<<'EOF') or add the diff by hand",
            )
            return
        content = tracked.content
        if strip is None:
            strip = 1 if re.search(rb"(?m)^--- a/", content) else 0
            notes = [*notes, f"patch ran without -p; the importer chose strip level {strip}"]
        rel = self.site_rel(root)
        try:
            parsed = parse_diff(content, source=Path(tracked.name or "diff"), strip=strip)
        except InputError as exc:
            self.unconverted(node, ctx, f"{tool} of a diff that does not parse: {exc.reason}")
            return
        paths = [fp.path for fp in parsed.files]
        if rel is None:
            tops = {p.split("/")[0] for p in paths}
            if tops and tops <= set(self.packages) and MARK in root:
                rel = ""
                notes = [
                    *notes,
                    "where the script applies it is computed at run time; the target was "
                    "inferred from the package names in the diff's paths",
                ]
            else:
                where = "a folder computed at run time" if MARK in root else root
                self.unconverted(
                    node,
                    ctx,
                    f"{tool} of {label} in {where}, which is not under the engine's site-packages",
                    hint="only files under an installed package can be a patchbay target",
                )
                return
        key = (hashlib.sha256(content).hexdigest(), rel, strip)
        if key in self.applied:
            first = self.applied[key]
            self.consumed(
                node,
                ctx,
                f"applies the same diff again (first applied at line {first.first_line})",
            )
            return
        checked = tracked.checked_in
        names = []
        if tracked.delimiter:
            names.append(tracked.delimiter)
        if tracked.name:
            names.append(tracked.name.rsplit(".", 1)[0])
        names.extend(posixpath.basename(p).rsplit(".", 1)[0] for p in paths[:1])
        draft = DiffDraft(
            spans=list(tracked.spans),
            comments=list(tracked.comments),
            names=names,
            content=content,
            root=rel,
            strip=strip,
            paths=paths,
            copied_from=checked,
        )
        draft.notes.extend(notes)
        if tracked.problem and checked is not None:
            draft.notes.append(tracked.problem)
        if parsed.crlf_normalised:
            draft.notes.append("the diff has CRLF line endings")
        preamble = content.split(b"\n--- ", 1)[0].split(b"\ndiff --git ", 1)[0]
        self.note_packages([p.split("/")[0] for p in paths if p.endswith(".py") and rel == ""])
        self.applied[key] = draft
        what = "a diff" + (f" (checked-in {checked.name})" if checked else "")
        self.add(
            draft, node, ctx, f"{what}, applied with {tool}", preamble.decode("utf-8", "replace")
        )

    def remote_diff(
        self, tracked: Tracked, root: str, strip: int | None, node: Simple, ctx: Context, tool: str
    ) -> None:
        """A GitHub PR or commit diff fetched at run time: a ``diff`` with a ``source``."""
        url = tracked.url or ""
        source = github_source(url)
        rel = self.site_rel(root)
        if source is None or rel is None or (strip or 1) != 1 or MARK in url:
            self.unconverted(
                node,
                ctx,
                f"{tool} of a diff downloaded at run time from {url}",
                hint="download it once and add it as a diff, or declare an upstream `source`",
            )
            return
        repo, pr, commit = source
        ref = f"{repo}#{pr}" if pr is not None else f"{repo}@{commit}"
        key = (url, rel, 1)
        if key in self.applied:
            self.consumed(node, ctx, "applies the same downloaded diff again")
            return
        draft = DiffDraft(
            spans=list(tracked.spans),
            comments=list(tracked.comments),
            names=[f"{repo.split('/')[-1]}-{pr or (commit or '')[:12]}"],
            root=rel,
            strip=1,
            source=source,
        )
        draft.notes.append(
            f"the script downloaded {url} at every run; the patchset pins it with `source` "
            "(run `patchbay vendor` to fetch and lock it)"
        )
        self.applied[key] = draft  # type: ignore[index]
        self.add(draft, node, ctx, f"an upstream diff ({ref}), applied with {tool}", ref)

    # -- python --------------------------------------------------------------------------------

    def python(
        self,
        argv: list[str],
        node: Simple,
        ctx: Context,
        stdin: Tracked | None,
        env: dict[str, str],
    ) -> str | None:
        """Python run by the script: ``-m pip``, a rebuild, or literal ``replace`` edits."""
        i = 1
        while i < len(argv) and argv[i] in ("-u", "-B", "-E", "-I", "-s", "-S", "-O", "-OO", "-q"):
            i += 1
        while i + 1 < len(argv) and argv[i] in ("-W", "-X"):
            i += 2
        rest = argv[i:]
        if rest[:2] == ["-m", "pip"]:
            return self.pip(rest[2:], node, ctx, env)
        if rest[:1] == ["-m"] and len(rest) > 1:
            if rest[1] in ("compileall", "py_compile"):
                self.consumed(
                    node,
                    ctx,
                    "byte-compiles (patchbay drops the stale bytecode of what it patches)",
                )
                return None
            if rest[1] in ("site", "sysconfig", "pip_audit") or rest[1] == "json.tool":
                self.consumed(node, ctx, "reads or checks; changes nothing")
                return "check"
            return self.rebuild(["{python}", *rest], node, ctx, env, code=None)
        if rest[:1] == ["-c"] and len(rest) > 1:
            code = rest[1]
            pargv = ["-c", *rest[2:]]
        elif not rest or rest[0] == "-":
            if stdin is None or stdin.content is None:
                problem = stdin.problem if stdin is not None else None
                self.unconverted(
                    node,
                    ctx,
                    "Python read from standard input that the importer cannot see"
                    + (f" ({problem})" if problem else ""),
                )
                return None
            code = stdin.content.decode("utf-8", "surrogateescape")
            pargv = ["-", *rest[1:]] if rest else [""]
        else:
            script = self.tracked_or_checked_in(rest[0], node, ctx)
            if script is None or script.content is None:
                self.unconverted(
                    node, ctx, f"runs the Python script {rest[0]}, which the importer cannot read"
                )
                return None
            code = script.content.decode("utf-8", "surrogateescape")
            pargv = [self.resolve(rest[0]), *rest[1:]]
        if MARK in code:
            self.unconverted(node, ctx, "Python whose text depends on values computed at run time")
            return None
        try:
            analysis = pyscan.analyse(code, pargv, self.getenv)
        except pyscan.NotUnderstood as exc:
            _, packages = pyscan.printed_path(code, pargv, self.getenv)
            self.note_packages(packages)
            looks_like_build = _REBUILD.search(code) and (
                set(packages) & set(self.packages) or self.removal
            )
            if rest[:1] == ["-c"] and (self.removal or looks_like_build):
                return self.rebuild(["{python}", *rest], node, ctx, env, code=code)
            if not pyscan.writes_anything(code):
                self.consumed(node, ctx, "Python that reads or checks; changes nothing")
                return "check"
            where = f" (line {exc.line} of the snippet)" if exc.line else ""
            self.unconverted(
                node,
                ctx,
                f"Python the importer does not follow: {exc.reason}{where}",
                hint="rewrite it as `replace` edits with literal old and new text, or as a diff",
            )
            return None
        self.note_packages(analysis.packages)
        if not analysis.edits:
            if rest[:1] == ["-c"] and self.removal:
                return self.rebuild(["{python}", *rest], node, ctx, env, code=code)
            self.consumed(node, ctx, "Python that reads or checks; changes nothing")
            return "check"
        edits: list[tuple[str, str, str, int | None]] = []
        no_ops = False
        for fe in analysis.edits:
            path = self.resolve(fe.file)
            rel = self.site_rel(path)
            if rel is None:
                self.unconverted(
                    node,
                    ctx,
                    f"Python edits {fe.file if MARK not in fe.file else 'a computed path'}"
                    ", which is not under the engine's site-packages",
                )
                return None
            edits.extend((rel, old, new, count) for old, new, count in fe.edits if old != new)
            if any(old == new for old, new, _ in fe.edits):
                no_ops = True
        if not edits:
            self.consumed(node, ctx, "Python whose replace() calls change nothing")
            return None
        draft = ReplaceDraft(
            spans=list(stdin.spans) if stdin is not None and rest[:1] != ["-c"] else [],
            comments=list(stdin.comments) if stdin is not None else [],
            names=[
                *([stdin.delimiter] if stdin is not None and stdin.delimiter else []),
                posixpath.basename(edits[0][0]).rsplit(".", 1)[0] + "-edit",
            ],
            edits=edits,
        )
        for rel, old, new, count in edits:
            if old in new:
                draft.notes.append(
                    f"in {rel}, the new text contains the old text, so the edit would still find "
                    "its old text after applying: patchbay refuses such an edit as not idempotent; "
                    "widen `old` to include what makes it unique, or make it a diff"
                )
            if count not in (None, 1):
                draft.notes.append(
                    f"in {rel}, the script replaced only the first {count} occurrences"
                )
        if no_ops:
            draft.notes.append("a replace() that changes nothing was left out")
        if analysis.unwritten:
            draft.notes.append("the snippet also edits text it never writes back: check the edits")
        self.remark(
            "Python `str.replace` changes every occurrence of the old text; a `replace` edit "
            "expects exactly `count` occurrences (default 1), and `patchbay status` shows a "
            "conflict when the file has another number."
        )
        self.add(draft, node, ctx, f"{len(edits)} literal replace edit(s) in Python")
        return None

    def rebuild(
        self,
        argv: list[str],
        node: Simple,
        ctx: Context,
        env: dict[str, str],
        code: str | None,
    ) -> str | None:
        """A rebuild after removing a stale build: a ``command`` draft."""
        removal, self.removal = self.removal, []
        if any(MARK in a or "/@" in a for a in argv) or any(MARK in v for v in env.values()):
            self.removal = removal
            self.unconverted(
                node,
                ctx,
                "a rebuild whose command line depends on paths computed at run time",
                hint="write the command with paths relative to the target, as a `command` patch",
            )
            return None
        if not removal and not _REBUILD.search(" ".join(argv)):
            self.unconverted(
                node, ctx, f"runs python {' '.join(argv[1:3])}, which the importer does not convert"
            )
            return None
        exported = {
            k: v
            for k in sorted(self.exported)
            if isinstance(v := self.vars.get(k), str)
            and MARK not in v
            and "/@" not in v
            and k not in ("PATH", "HOME", "PYTHONPATH", "LD_LIBRARY_PATH")
        }
        comments: list[str] = []
        for _, _, rm_ctx, _ in removal:
            comments.extend(c for c in rm_ctx.comments if c not in comments)
        draft = CommandDraft(
            spans=[(n.line, n.last_line()) for _, n, _, _ in removal],
            comments=comments,
            names=[],
            argv=argv,
            remove=[rel for rel, _, _, _ in removal],
            env={**exported, **env},
            cwd=self.site_rel(self.cwd) or None,
        )
        for rel in draft.remove:
            if re.search(r"\.(so|pyd|hsaco)$", rel):
                draft.output = rel
                break
        stem = draft.output or (draft.remove[0] if draft.remove else "")
        draft.names.append(
            "rebuild-" + posixpath.basename(stem).split(".")[0] if stem else "rebuild"
        )
        if self.site_rel(self.cwd) is None and self.cwd != CWD0:
            draft.notes.append(
                "the script ran it in a folder outside the engine; the command runs in the "
                "target root"
            )
        draft.notes.append(
            "`after` lists every earlier file patch; keep only the ones this rebuild depends on"
        )
        if draft.env:
            draft.notes.append(f"environment taken from the script: {', '.join(sorted(draft.env))}")
        self.add(draft, node, ctx, "a rebuild step")
        current = self.row
        for rel, rm_node, rm_ctx, row in removal:
            self.row = row
            self.record(
                rm_node, "converted", f"removes {rel} before the rebuild", draft=draft, ctx=rm_ctx
            )
        self.row = current
        return None

    # -- pip -----------------------------------------------------------------------------------

    def pip(self, args: list[str], node: Simple, ctx: Context, env: dict[str, str]) -> str | None:
        """``pip install`` of pinned requirements: one ``pip`` draft per requirement."""
        i = 0
        while i < len(args) and args[i].startswith("-"):
            i += 2 if args[i] in _PIP_VALUE_OPTS else 1
        sub = args[i] if i < len(args) else ""
        if sub in (
            "show",
            "list",
            "freeze",
            "check",
            "--version",
            "config",
            "inspect",
            "debug",
            "index",
        ):
            self.consumed(node, ctx, f"pip {sub}: reads; changes nothing")
            return "check"
        if sub != "install":
            self.unconverted(
                node,
                ctx,
                f"pip {sub or '(no command)'}",
                hint="a pin can add or change a package, not remove one",
            )
            return None
        opts = args[:i] + args[i + 1 :]
        draft_opts: dict[str, object] = {
            "index_url": None,
            "extra": [],
            "links": [],
            "no_deps": False,
            "no_build_isolation": False,
        }
        notes: list[str] = []
        reqs: list[str] = []
        j = 0
        while j < len(opts):
            a = opts[j]
            name, eq, inline = a.partition("=")
            key = name if a.startswith("--") else a
            value = inline if eq and a.startswith("--") else None
            if key in _PIP_VALUE_OPTS and value is None:
                value = opts[j + 1] if j + 1 < len(opts) else ""
                j += 1
            if key in ("-i", "--index-url"):
                draft_opts["index_url"] = value
            elif key == "--extra-index-url":
                draft_opts["extra"].append(value)  # type: ignore[union-attr]
            elif key in ("-f", "--find-links"):
                draft_opts["links"].append(value)  # type: ignore[union-attr]
            elif key == "--no-deps":
                draft_opts["no_deps"] = True
            elif key == "--no-build-isolation":
                draft_opts["no_build_isolation"] = True
            elif key in (
                "-r",
                "--requirement",
                "-e",
                "--editable",
                "-t",
                "--target",
                "--prefix",
                "--root",
                "--user",
            ):
                self.unconverted(
                    node,
                    ctx,
                    f"pip install {key} {value or ''}".rstrip(),
                    hint="pin each package with its version (a `pip` patch per requirement)",
                )
                return None
            elif key in ("-c", "--constraint"):
                notes.append(f"the script passed a constraints file ({value}); the pin ignores it")
            elif key in ("--force-reinstall", "-I", "--ignore-installed"):
                notes.append(
                    f"the script passed {key}; patchbay skips pip when the pin is already satisfied"
                )
            elif key == "--trusted-host":
                notes.append(f"the script trusted the host {value}; patchbay has no such option")
            elif key in (
                "--no-binary",
                "--only-binary",
                "--config-settings",
                "-C",
                "--global-option",
                "--build-option",
                "--require-hashes",
            ):
                notes.append(f"the script passed {a} {value or ''}; the pin does not".rstrip())
            elif a.startswith("-") and key not in _PIP_SILENT_FLAGS:
                notes.append(f"the script passed {a}; the pin does not")
            elif not a.startswith("-"):
                reqs.append(a)
            j += 1
        if not reqs:
            self.unconverted(node, ctx, "pip install without a requirement the importer can read")
            return None
        made = []
        for req_text in reqs:
            if MARK in req_text:
                self.unconverted(
                    node,
                    ctx,
                    "pip install of a requirement computed at run time",
                )
                continue
            requirement = self.requirement(req_text)
            if requirement is None:
                self.unconverted(
                    node,
                    ctx,
                    f"pip install {req_text}: not pinned to a version (or to a commit)",
                    hint="give the version the image should have: name==version",
                )
                continue
            req = Requirement(requirement)
            name = canonicalize_name(req.name)
            harness = not self.engine_package(name)
            draft = PipDraft(
                spans=[],
                names=[f"{name}-{_version_of(req)}"],
                requirement=requirement,
                name=name,
                index_url=draft_opts["index_url"],  # type: ignore[arg-type]
                extra_index_urls=list(draft_opts["extra"]),  # type: ignore[call-overload]
                find_links=list(draft_opts["links"]),  # type: ignore[call-overload]
                no_deps=bool(draft_opts["no_deps"]),
                no_build_isolation=bool(draft_opts["no_build_isolation"]),
                build_env={k: v for k, v in env.items() if MARK not in v},
            )
            draft.notes.extend(notes)
            if not any(str(s.operator) in ("==", "===") for s in req.specifier) and not req.url:
                draft.notes.append(f"{requirement} is a range, not an exact pin")
            if harness:
                draft.harness = True
                draft.notes.append(
                    f"{req.name} is not an engine package (a harness tool?); it was imported "
                    "because it is pinned: consider installing it outside the engine's patchset"
                )
            for url in [draft.index_url, *draft.extra_index_urls, *draft.find_links]:
                if url and MARK in url:
                    draft.notes.append("an index URL is computed at run time: fill it in")
            made.append(draft)
        if len(made) > 1:
            for d in made:
                d.notes.append(
                    "the script installed it together with "
                    + ", ".join(o.requirement for o in made if o is not d)
                    + " in one pip run; the patchset pins each on its own"
                )
        for d in made:
            key = ("pip", d.requirement, repr((d.index_url, d.extra_index_urls, d.find_links)))
            if key in self.pins:
                self.consumed(
                    node,
                    ctx,
                    f"installs {d.requirement} again (pinned at line {self.pins[key].first_line})",
                )
                continue
            self.pins[key] = d
            self.add(d, node, ctx, f"a package pin ({d.requirement})")
        return None

    def requirement(self, text: str) -> str | None:
        """A pinned PEP 508 requirement for a pip argument, or None."""
        if text.startswith("git+"):
            m = re.match(r"git\+(\S+?)@([0-9a-f]{40})(?:#egg=([\w.-]+))?$", text)
            if m is None or m.group(3) is None:
                return None
            return f"{m.group(3)} @ git+{m.group(1)}@{m.group(2)}"
        try:
            req = Requirement(text)
        except InvalidRequirement:
            return None
        if req.url:
            m = re.match(r"git\+\S+@[0-9a-f]{40}$", req.url)
            return text if m else None
        return text if req.specifier else None

    def engine_package(self, name: str) -> bool:
        names = {canonicalize_name(p) for p in self.packages}
        names |= {canonicalize_name(p) for p in self.projects}
        return name in names or name in _ENGINE_DISTS

    # -- downloads, removals, copies -----------------------------------------------------------

    def download(
        self,
        cmd: str,
        argv: list[str],
        node: Simple,
        ctx: Context,
        outputs: list[tuple[str, str, bool]],
    ) -> str | None:
        """``curl``/``wget``: into the engine an artifact, into a temporary folder kept."""
        urls: list[str] = []
        outs: list[str] = []
        remote_name = False
        out_dir: str | None = None
        notes: list[str] = []
        args = argv[1:]
        i = 0
        curl_value = set("oHuAexdXwKCTErmyYzbcQ")
        while i < len(args):
            a = args[i]
            if cmd == "curl":
                if a in ("-o", "--output") and i + 1 < len(args):
                    outs.append(args[i + 1])
                    i += 2
                    continue
                if a.startswith("--output="):
                    outs.append(a.split("=", 1)[1])
                elif a in ("-O", "--remote-name"):
                    remote_name = True
                elif a == "--output-dir" and i + 1 < len(args):
                    out_dir = args[i + 1]
                    i += 2
                    continue
                elif a in ("-k", "--insecure"):
                    notes.append(
                        "the script turned off certificate checks (curl -k); patchbay does not"
                    )
                elif a.startswith("--"):
                    if a in (
                        "--header",
                        "--user",
                        "--user-agent",
                        "--retry",
                        "--retry-delay",
                        "--max-time",
                        "--connect-timeout",
                        "--proxy",
                        "--data",
                        "--request",
                        "--write-out",
                        "--config",
                        "--cacert",
                        "--cert",
                        "--retry-max-time",
                        "--limit-rate",
                        "--referer",
                        "--range",
                    ):
                        i += 2
                        continue
                elif a.startswith("-") and len(a) > 1:
                    cluster = a[1:]
                    for k, ch in enumerate(cluster):
                        if ch == "O":
                            remote_name = True
                        if ch in curl_value:
                            value = cluster[k + 1 :]
                            if not value and i + 1 < len(args):
                                value = args[i + 1]
                                i += 1
                            if ch == "o":
                                outs.append(value)
                            break
                else:
                    urls.append(a)
            else:
                if a in ("-O", "--output-document") and i + 1 < len(args):
                    outs.append(args[i + 1])
                    i += 2
                    continue
                if a.startswith("--output-document="):
                    outs.append(a.split("=", 1)[1])
                elif a.startswith("-O") and len(a) > 2:
                    outs.append(a[2:])
                elif a in ("-P", "--directory-prefix") and i + 1 < len(args):
                    out_dir = args[i + 1]
                    i += 2
                    continue
                elif a.startswith("--directory-prefix="):
                    out_dir = a.split("=", 1)[1]
                elif a == "--no-check-certificate":
                    notes.append("the script turned off certificate checks; patchbay does not")
                elif a in ("-t", "--tries", "-T", "--timeout", "-U", "--user-agent", "--header"):
                    i += 2
                    continue
                elif a.startswith("-") and len(a) > 1:
                    if re.fullmatch(r"-[a-zA-Z]*O", a) and i + 1 < len(args):
                        outs.append(args[i + 1])
                        i += 2
                        continue
                else:
                    urls.append(a)
                if not outs and not out_dir:
                    remote_name = True
            i += 1
        if not urls:
            self.unconverted(node, ctx, f"{cmd} without a URL the importer can read")
            return None
        stdout_file = list(outputs)
        pairs: list[tuple[str, str]] = []
        for n, url in enumerate(urls):
            if n < len(outs) and outs[n] != "-":
                pairs.append((url, outs[n]))
            elif stdout_file and len(urls) == 1:
                pairs.append((url, stdout_file[0][1]))
            elif remote_name or out_dir:
                base = posixpath.basename(url.split("?", 1)[0])
                pairs.append((url, posixpath.join(out_dir, base) if out_dir else base))
            else:
                self.consumed(node, ctx, f"{cmd} that prints what it fetches; changes nothing")
                return "check"
        files: list[tuple[str, str]] = []
        for url, out in pairs:
            dest = (
                self.resolve(out)
                if not any(o[1] == out for o in stdout_file)
                else next(o[0] for o in stdout_file if o[1] == out)
            )
            if MARK in url:
                self.unconverted(
                    node,
                    ctx,
                    "downloads from a URL computed at run time",
                    hint="write the URL out, and import again",
                )
                return None
            rel = self.site_rel(dest)
            if rel is not None:
                files.append((url, rel))
            elif self.is_temp(dest):
                self.files[dest] = Tracked(
                    None,
                    [(node.line, node.last_line())],
                    comments=list(ctx.comments),
                    url=url,
                    name=posixpath.basename(dest),
                )
                self.consumed(node, ctx, f"downloads {url} into a temporary folder")
            else:
                where = "a computed path" if MARK in dest else dest
                self.unconverted(
                    node,
                    ctx,
                    f"downloads {url} to {where}, outside the engine's site-packages",
                    hint="an artifact's destination must be under an installed package",
                )
                return None
        if files:
            self.artifact(files, node, ctx, notes)
        return None

    def artifact(
        self, files: list[tuple[str, str]], node: Simple, ctx: Context, notes: list[str]
    ) -> None:
        """Keep downloaded files; those of one unrolled loop share one draft."""
        for url, _ in files:
            if url.startswith("http://"):
                notes = [*notes, f"{url} is plain http: marked `insecure_http: true`; prefer https"]
        if ctx.group is not None:
            for draft in reversed(self.drafts):
                if isinstance(draft, ArtifactDraft) and draft.group == ctx.group:
                    draft.files.extend(files)
                    for n in notes:
                        if n not in draft.notes:
                            draft.notes.append(n)
                    draft.spans.append((node.line, node.last_line()))
                    self.record(
                        node,
                        "converted",
                        "a download into the engine (same loop)",
                        draft=draft,
                        ctx=ctx,
                    )
                    return
        dests = [d for _, d in files]
        folder = posixpath.basename(posixpath.dirname(dests[0])) or "files"
        names = [
            f"download-{folder}"
            if ctx.group or len(files) > 1
            else "download-" + posixpath.basename(dests[0]).split(".")[0]
        ]
        draft = ArtifactDraft(spans=[], names=names, files=list(files), group=ctx.group)
        draft.notes.extend(notes)
        self.add(draft, node, ctx, "a download into the engine")

    def remove(self, argv: list[str], node: Simple, ctx: Context) -> str | None:
        """``rm``: temporary files and bytecode need nothing; engine files wait for a rebuild."""
        paths = [a for a in argv[1:] if not a.startswith("-")]
        bytecode = temp = 0
        for value in paths:
            path = self.resolve(value)
            rel = self.site_rel(path)
            if rel is not None and ("__pycache__" in rel.split("/") or rel.endswith(".pyc")):
                bytecode += 1
            elif rel is not None:
                self.removal.append((rel, node, ctx, self.row))
            elif self.is_temp(path):
                temp += 1
            else:
                self.unconverted(
                    node, ctx, f"removes {value}" + (" (a computed path)" if MARK in path else "")
                )
                return None
        if bytecode:
            self.consumed(
                node,
                ctx,
                _BYTECODE,
            )
        if temp:
            self.consumed(node, ctx, "removes temporary files")
        return None

    def copy(self, cmd: str, argv: list[str], node: Simple, ctx: Context) -> str | None:
        """``cp``/``mv``/``install`` of a download into the engine is an artifact."""
        args: list[str] = []
        target_dir: str | None = None
        a_iter = iter(range(1, len(argv)))
        skip = False
        for k in a_iter:
            a = argv[k]
            if skip:
                skip = False
                continue
            if a in ("-t", "--target-directory") and k + 1 < len(argv):
                target_dir = argv[k + 1]
                skip = True
            elif a in ("-m", "--mode", "-o", "-g", "--owner", "--group") and cmd == "install":
                skip = True
            elif a.startswith("-"):
                continue
            else:
                args.append(a)
        if target_dir is None and len(args) < 2:
            self.unconverted(node, ctx, f"{cmd} the importer cannot read")
            return None
        dest_value = target_dir if target_dir is not None else args[-1]
        srcs = args if target_dir is not None else args[:-1]
        dest = self.resolve(dest_value)
        as_dir = target_dir is not None or dest_value.endswith("/") or len(srcs) > 1
        rel = self.site_rel(dest)
        if rel is None:
            if MARK in dest:
                self.unconverted(node, ctx, f"{cmd} to a computed path ({dest_value})")
                return None
            for src in srcs:
                tracked = self.files.get(self.resolve(src))
                if tracked is not None and self.is_temp(dest):
                    target = posixpath.join(dest, posixpath.basename(src)) if as_dir else dest
                    self.files[target] = tracked
            self.consumed(node, ctx, f"{cmd} outside the engine install")
            return None
        files = []
        for src in srcs:
            src_path = self.resolve(src)
            tracked = self.files.get(src_path)
            target = posixpath.join(rel, posixpath.basename(src_path)) if as_dir else rel
            if tracked is not None and tracked.url is not None and tracked.content is None:
                files.append((tracked.url, target))
            else:
                what = "a file written by the script" if tracked is not None else src
                self.unconverted(
                    node,
                    ctx,
                    f"{cmd} of {what} into the engine install",
                    hint="a new file is a diff that creates it; a binary file can be an artifact "
                    "served from a URL",
                )
                return None
        self.artifact(files, node, ctx, [])
        return None


def _version_of(req: Requirement) -> str:
    for spec in req.specifier:
        if spec.operator in ("==", "==="):
            return spec.version
    if req.url:
        return req.url.rsplit("@", 1)[-1][:12]
    return "pin"


def walk(script: Script, projects: dict[str, str]) -> WalkResult:
    """Follow ``script`` and collect its draft patches and the outcome of every command.

    Args:
        script: the parsed script.
        projects: project name -> ``owner/repo`` for ``name #N`` references.
    """
    return Walker(script, projects).run()
