"""The scanner: engine patching in scripts and Dockerfiles that no patchset declares.

Benchmark scripts modify engine images in a handful of ways: ``git apply``/``patch`` into
site-packages, ``sed -i`` on an installed module, a ``python - <<EOF`` heredoc that rewrites one,
``cp``/``curl -o`` over installed files, ``pip install`` of a fork, a ``git clone`` of a moving
branch that is then built, and ``PYTHONPATH``/``sitecustomize``/``.pth`` injection. Each is a rule
(PB401-PB409). A ``patchbay apply`` call is declared patching and never a finding.

Precision matters as much as recall: a command is a finding only when what it writes is an
*installed location*. A path is one when it

- contains ``site-packages`` or ``dist-packages``;
- expands a variable assigned from one (``SITE=$(python3 -c '...purelib...')``, ``getsitepackages``,
  ``get_python_lib``, an engine module's ``__file__``/``__path__``, ``find_spec``, ``pip show``);
- is a file under an engine package folder (``/opt/x/vllm/envs.py``);
- is relative while the working folder (``cd``, ``WORKDIR``) is such a location.

``git apply``/``patch`` count in an engine *source tree* too (a folder named after an engine, as
editable installs in images use). Installing harness tools, copying results out and editing the
benchmark's own config are not findings.

A line is reviewed with an annotation that must give a reason, on the line or on a comment line
right above it::

    cp k/*.co "$SITE/aiter_meta/"  # patchbay-reviewed PB404: kernels the image lacks, see W-12

Only lines holding one of :data:`TRIGGERS` (or an engine folder) are looked at, and only those a
cheap test finds relevant are parsed, with the lines they depend on (variables, ``cd``,
heredocs). Scripts of a repository repeat the same lines, so :class:`LineFilter` judges each
distinct line once per run; a file none of whose lines is kept is read, split and skipped.
"""

from __future__ import annotations

import heapq
import json
import os
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress, count
from pathlib import Path
from typing import Literal

from .config import SKIPPED_DIRS, globs_regex, normalise_name
from .rules import Finding, Suppression

ScriptKind = Literal["shell", "dockerfile", "python"]

# -- what makes a file worth reading -----------------------------------------------------------

INSTALLED_MARKERS = (
    "site-packages",
    "dist-packages",
    "purelib",
    "platlib",
    "sitepackages",
    "get_python_lib",
    "__file__",
    "__path__",
    "find_spec",
)
"""Substrings that name (or compute) an installed location."""

TRIGGERS = (
    *INSTALLED_MARKERS,
    "PYTHONPATH",
    "customize",
    ".pth",
    "git+",
    ".whl",
    "clone",
    "pip",
    "apply",
    "patch",
)
"""A script containing none of these substrings has nothing for the scanner (engine package
folder names are added per run)."""

GREP_PATTERN = "|".join(re.escape(t).replace("\\-", "-") for t in TRIGGERS)
"""The triggers as one POSIX extended regex (for ``grep -rE``, as the benchmark's baseline)."""

_INSTALLED_RE = re.compile("|".join(re.escape(m) for m in INSTALLED_MARKERS) + r"|\bpip3?\s+show\b")
_ANNOTATION = re.compile(r"patchbay-reviewed\b(?P<codes>(?:[\s,]*PB\d{3})*)\s*:?\s*(?P<reason>.*)$")
_SHA40 = re.compile(r"[0-9a-f]{40}")
_SOURCE_SUFFIXES = (".py", ".pyi", ".so", ".co", ".hsaco", ".cubin", ".cu", ".cuh", ".pth")
# substrings that make a line worth parsing (besides installed markers and variables)
_LINE_TRIGGERS = ("customize", ".pth", "git+", ".whl", "clone", "apply", "patch")
# PYTHONPATH=<something besides its own old value>
_PYTHONPATH_SELF = re.compile(r"\$\{PYTHONPATH[^}]*\}|\$PYTHONPATH\b")
_PYTHONPATH_ADDS = re.compile(r"PYTHONPATH[=\s]+['\"]?[^\s'\":;&|]")
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "exec", "command", "nice", "stdbuf"})
_SWALLOW = frozenset({"true", ":", "/bin/true"})
# `|| echo failed` swallows the failure too, unless the script still exits (`|| { echo; exit 1; }`)
_SWALLOW_ECHO = frozenset({"echo", "printf"})
_STOPS = frozenset({"exit", "return", "false", "kill"})
# shell keywords that start a compound command's part (`do sed -i ...`, `then cp ...`)
_KEYWORDS = frozenset({"do", "then", "else", "elif", "if", "while", "until"})
_DONE = re.compile(r"(?:^|[\s;&|])done(?=$|[\s;&|)<>])")


@dataclass(frozen=True)
class EngineNames:
    """What counts as an engine: distribution names, import (folder) names, repositories.

    Attributes:
        distributions: PEP 503-normalised distribution names (``vllm``, ``demo-engine``).
        imports: package folder names (``vllm``, ``demo_engine``, ``flash_attn``).
        upstreams: repository name (lower case) -> upstream ``owner/repo`` (from components).
    """

    distributions: frozenset[str]
    imports: frozenset[str]
    upstreams: dict[str, str] = field(default_factory=dict, hash=False)

    @classmethod
    def build(
        cls,
        distributions: Iterable[str],
        packages: Iterable[str] = (),
        repositories: Iterable[str] = (),
    ) -> EngineNames:
        """Engine names from distribution names, target packages and ``owner/repo`` upstreams."""
        dists = {normalise_name(d) for d in distributions}
        upstreams = {}
        for repo in repositories:
            name = repo.rsplit("/", 1)[-1].lower()
            upstreams[name] = repo
            dists.add(normalise_name(name))
        imports = {d.replace("-", "_") for d in dists}
        imports |= {p.split(".")[0] for p in packages}
        return cls(frozenset(dists), frozenset(imports), upstreams)

    @cached_property
    def needles(self) -> tuple[str, ...]:
        """Substrings that make a script worth reading: :data:`TRIGGERS` and engine folders."""
        return (*TRIGGERS, *(f"{name}/" for name in sorted(self.imports)))

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """Any engine name as a word (``vllm``, ``demo-engine``, ``demo_engine``)."""
        names = sorted(self.distributions | self.imports, key=len, reverse=True)
        return re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-])")

    @cached_property
    def module_location(self) -> re.Pattern[str] | None:
        """An engine module's ``__file__``/``__path__`` (``vllm.__file__``); None: no engine."""
        if not self.imports:
            return None
        names = "|".join(map(re.escape, sorted(self.imports)))
        return re.compile(r"\b(?:" + names + r")\.__(?:file|path)__")

    def is_engine(self, name: str) -> bool:
        """True for an engine distribution, package or repository name (any spelling)."""
        key = normalise_name(name.removesuffix(".git"))
        return key in self.distributions or key.replace("-", "_") in self.imports


# -- shell words -------------------------------------------------------------------------------


@dataclass
class _Command:
    words: list[str] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)
    heredocs: list[str] = field(default_factory=list)
    op: str | None = None  # the operator after it: && || ; | &


def tokenize(line: str) -> tuple[list[_Command], str | None]:
    """Split one logical shell line into simple commands.

    Quotes are removed (``"$SITE/x"`` -> ``$SITE/x``); ``$(...)`` and backquotes stay inside
    their word as written; variables are not expanded.

    Returns:
        The commands, and the text of a trailing ``#`` comment (or None).
    """
    commands = [_Command()]
    cur: list[str] = []
    started = False
    comment = None
    pending_redirect: str | None = None
    i, n = 0, len(line)

    def flush() -> None:
        nonlocal cur, started, pending_redirect
        if started:
            word = "".join(cur)
            cmd = commands[-1]
            if pending_redirect is not None:
                if pending_redirect.startswith("<<") and pending_redirect != "<<<":
                    cmd.heredocs.append(word)
                else:
                    cmd.redirects.append((pending_redirect, word))
                pending_redirect = None
            elif word not in ("{", "}", "!"):
                cmd.words.append(word)
        cur, started = [], False

    while i < n:
        c = line[i]
        if c in " \t\n\r":
            flush()
            i += 1
        elif c == "\\":
            if i + 1 < n and line[i + 1] != "\n":
                cur.append(line[i + 1])
                started = True
            i += 2
        elif c == "'":
            j = line.find("'", i + 1)
            j = n if j == -1 else j
            cur.append(line[i + 1 : j])
            started = True
            i = j + 1
        elif c == '"':
            j = i + 1
            buf = []
            while j < n and line[j] != '"':
                if line[j] == "\\" and j + 1 < n and line[j + 1] in '"\\$`':
                    buf.append(line[j + 1])
                    j += 2
                elif line.startswith("$(", j):
                    k = _matching_paren(line, j + 1)
                    buf.append(line[j : k + 1])
                    j = k + 1
                else:
                    plain = _QUOTED_PLAIN.match(line, j)
                    k = plain.end() if plain else j + 1  # a run without " \\ $, else one char
                    buf.append(line[j:k])
                    j = k
            cur.append("".join(buf))
            started = True
            i = j + 1
        elif c == "$" and line.startswith("$(", i):
            k = _matching_paren(line, i + 1)
            cur.append(line[i : k + 1])
            started = True
            i = k + 1
        elif c == "`":
            j = line.find("`", i + 1)
            j = n if j == -1 else j
            cur.append(line[i : j + 1])
            started = True
            i = j + 1
        elif c == "#" and not started:
            comment = line[i + 1 :]
            break
        elif c == "&" and line.startswith("&>", i):
            flush()
            op = "&>>" if line.startswith("&>>", i) else "&>"
            pending_redirect = op
            i += len(op)
        elif c in ";&|":
            flush()
            two = line[i : i + 2]
            op = two if two in ("&&", "||", ";;", "|&") else c
            commands[-1].op = op
            commands.append(_Command())
            i += len(op)
        elif c in "<>":
            if started and all(ch.isdigit() for ch in cur):
                cur, started = [], False  # a file descriptor: 2>
            flush()
            for op in ("<<<", "<<-", "<<", ">>", ">|", ">&", "<&", "<>", ">", "<"):
                if line.startswith(op, i):
                    break
            i += len(op)
            if op in (">&", "<&"):
                m = re.match(r"\s*[\d-]+", line[i:])
                if m:  # 2>&1: a descriptor, not a file
                    i += m.end()
                    continue
            pending_redirect = op
        elif c in "()" and not started:
            flush()
            i += 1
        else:
            plain = _PLAIN.match(line, i)
            k = plain.end() if plain else i + 1  # a run of characters without a meaning
            cur.append(line[i:k])
            started = True
            i = k
    flush()
    return [c for c in commands if c.words or c.redirects or c.heredocs], comment


_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_HEREDOC_DELIMITERS = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1")
_NAME_AT_URL = re.compile(r"^[\w.-]+\s*@\s*\w+\+?\w*://")
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][\w.-]*)(\[[^\]]*\])?\s*(.*)$")
_HEREDOC_OPERATOR = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w]*)\2")
# characters that are part of a word whatever comes next (tokenize takes a run at once)
_PLAIN = re.compile(r"[^ \t\n\r\\'\"$`#&;|<>()]+")
_QUOTED_PLAIN = re.compile(r'[^"\\$]+')


def _matching_paren(text: str, open_index: int) -> int:
    depth = 0
    quote = None
    for k in range(open_index, len(text)):
        ch = text[k]
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return k
    return len(text) - 1


# -- findings inside one file ------------------------------------------------------------------


@dataclass
class _Hit:
    code: str
    line: int
    message: str
    end_line: int | None = None


@dataclass
class _Clone:
    line: int
    folder: str
    repo: str
    pinned: bool
    built_at: int | None


class FileScanner:
    """Scans one file's text; :meth:`scan` returns its findings (annotations applied).

    Args:
        text: the file's content.
        path: the file, relative to the root (for findings).
        kind: ``shell``, ``dockerfile`` or ``python``.
        engines: the engine names.
        root: the audited folder (to look into ``PYTHONPATH`` folders that are in the
            repository).
    """

    def __init__(
        self, text: str, path: str, kind: ScriptKind, engines: EngineNames, root: Path
    ) -> None:
        self.text = text
        self.path = path
        self.kind = kind
        self.engines = engines
        self.root = root
        self.hits: list[_Hit] = []
        self.installed_vars: dict[str, int] = {}  # name -> line of its assignment
        self.heredocs: dict[int, tuple[int, str]] = {}  # operator line idx -> (end idx, delim)
        self.body_of: dict[int, int] = {}  # body line idx -> operator line idx
        self.clones: list[_Clone] = []
        # logical line index -> (codes, reason, line of the annotation)
        self.annotations: dict[int, tuple[frozenset[str], str, int]] = {}
        self._cd_lines: list[int] | None = None
        self._in_installed_cwd: set[int] = set()  # lines after a `cd` into an installed location
        self.loop_scopes: dict[str, tuple[int, int]] = {}  # loop variable -> (first, last) index
        self._idx = 0  # 0-based index of the logical line being judged
        self.python_locations: dict[str, str] = {}  # "python:<expr>" -> where it comes from
        self._done: set[int] = set()

    @cached_property
    def lines(self) -> list[str]:
        return self.text.split("\n")

    # ---- driver

    def scan(self, starts: list[int] | None = None) -> list[Finding]:
        """The file's findings.

        Args:
            starts: for a shell script or Dockerfile, the lines :meth:`first_look` would return,
                when the caller already knows them (:class:`LineFilter`).
        """
        if self.kind == "python":
            self.scan_python(self.lines, 0, {})
        else:
            self.scan_shell(starts)
        return self.findings()

    def line_of(self, pos: int) -> int:
        """0-based line index of a character position (hits are few: counting is cheap)."""
        return self.text.count("\n", 0, pos)

    def positions(self, needle: str) -> Iterable[int]:
        text = self.text
        i = text.find(needle)
        while i != -1:
            yield i
            i = text.find(needle, i + len(needle))

    def find_heredocs(self) -> None:
        for pos in self.positions("<<"):
            idx = self.line_of(pos)
            if idx in self.body_of or idx in self.heredocs:
                continue
            m = _HEREDOC_OPERATOR.match(self.text, pos)
            if m is None or self.text.startswith("<<<", pos):
                continue
            start = self.logical_end(idx)
            delims = _HEREDOC_DELIMITERS.findall(self.joined(idx, start))
            j = start + 1
            for _quote, delim in delims:
                while j < len(self.lines) and self.lines[j].strip() != delim:
                    j += 1
            end = min(j, len(self.lines) - 1)
            self.heredocs[idx] = (end, delims[-1][1] if delims else m.group(3))
            for k in range(start + 1, end + 1):
                self.body_of[k] = idx

    def logical_start(self, idx: int) -> int:
        while idx > 0 and self.lines[idx - 1].endswith("\\") and (idx - 1) not in self.body_of:
            idx -= 1
        return idx

    def logical_end(self, idx: int) -> int:
        while idx + 1 < len(self.lines) and self.lines[idx].endswith("\\"):
            idx += 1
        return idx

    def joined(self, start: int, end: int) -> str:
        return "\n".join(
            line[:-1] if line.endswith("\\") else line for line in self.lines[start : end + 1]
        )

    def first_look(self) -> list[int]:
        """A first, cheap look at every physical line holding a trigger (:func:`needles_of`):
        most are harness lines (a tool's pip install), judged irrelevant without parsing.

        Returns:
            Sorted 0-based indexes of the lines to parse: relevant ones, and trigger lines that
            are part of a continued (``\\``) line.
        """
        text = self.text
        checked: set[int] = set()
        starts: list[int] = []
        for needle in needles_of(self.kind, self.engines):
            i = text.find(needle)
            while i != -1:
                ls = text.rfind("\n", 0, i) + 1
                le = text.find("\n", i)
                le = len(text) if le == -1 else le
                if ls not in checked:
                    checked.add(ls)
                    line = text[ls:le]
                    continued = line.endswith("\\") or text.endswith("\\\n", 0, ls)
                    if continued or self.relevant(line):
                        starts.append(ls)
                i = text.find(needle, le)
        return sorted(self.line_of(ls) for ls in starts)

    def scan_shell(self, starts: list[int] | None = None) -> None:
        queue = self.first_look() if starts is None else list(starts)
        if not queue:
            return
        self.find_heredocs()
        seen_vars: set[str] = set()
        while queue:
            idx = heapq.heappop(queue)
            forced = idx in self.body_of
            if forced:
                idx = self.body_of[idx]  # a hit inside a heredoc: judge the heredoc
            start = self.logical_start(idx)
            if start in self._done:
                continue
            self._done.add(start)
            end = self.logical_end(start)
            self.scan_logical_line(start, end, forced=forced)
            if self.kind == "shell":
                for line in self.after_installed_cd(start, end):
                    heapq.heappush(queue, line)
            for name in self.installed_vars.keys() - seen_vars:
                seen_vars.add(name)
                for needle in (f"${name}", f"${{{name}"):
                    for pos in self.positions(needle):
                        line = self.line_of(pos)
                        if line > start:
                            heapq.heappush(queue, line)

    def after_installed_cd(self, start: int, end: int) -> list[int]:
        """The lines after a ``cd``/``pushd`` into an installed location that ends lines
        ``start``-``end``, up to the next ``cd`` (they are judged whatever they hold: a relative
        ``sed -i envs.py`` there edits the engine)."""
        text = self.joined(start, end)
        if "cd " not in text and "pushd " not in text:
            return []
        # only a `cd` that ends its line moves the script there: `cd "$SITE" && git apply x`
        # is judged as one line, and the harness lines after it stay out (as scripts mean them)
        commands, _ = tokenize(text)
        last = next((c.words for c in reversed(commands) if c.words), None)
        if not last or _base(last[0]) not in ("cd", "pushd"):
            return []
        folder = self.cwd_before(end + 1)
        if folder is None or self.installed_reason(folder, None) is None:
            return []
        assert self._cd_lines is not None
        k = bisect_right(self._cd_lines, end)
        stop = self._cd_lines[k] if k < len(self._cd_lines) else len(self.lines) - 1
        out = [i for i in range(end + 1, stop + 1) if i not in self._in_installed_cwd]
        self._in_installed_cwd.update(out)
        return out

    # ---- one logical line of shell (or a Dockerfile instruction)

    def relevant(self, text: str) -> bool:
        """Cheap test before parsing a line: could any rule apply to it?"""
        stripped = text.lstrip()
        if not stripped or stripped.startswith("#"):
            return False
        if self.kind == "dockerfile" and stripped[:4].upper() in ("COPY", "ADD ", "ENV ", "ARG "):
            return True
        if any(m in text for m in INSTALLED_MARKERS) or ("pip" in text and "show" in text):
            return True
        if "PYTHONPATH" in text and _PYTHONPATH_ADDS.search(_PYTHONPATH_SELF.sub("", text)):
            return True
        if any(t in text for t in _LINE_TRIGGERS):
            return True
        if "$" in text and any(f"${v}" in text or f"${{{v}" in text for v in self.installed_vars):
            return True
        if "/" in text and any(f"{name}/" in text for name in self.engines.imports):
            return True
        # pip: only an engine package, or a path, URL or editable install, can be a finding
        return "pip" in text and (
            any(t in text for t in ("-e ", "--editable", "@", "://", "./", "/"))
            or self.engines.pattern.search(text) is not None
        )

    def scan_logical_line(self, start: int, end: int, *, forced: bool = False) -> None:
        text = self.joined(start, end)
        if not forced and start not in self._in_installed_cwd and not self.relevant(text):
            return
        line_no = start + 1
        self._idx = start
        self.note_annotation(start, end)
        if self.kind == "dockerfile":
            m = re.match(r"\s*([A-Za-z]+)\s+(.*)", text, re.DOTALL)
            if not m:
                return
            instruction, rest = m.group(1).upper(), m.group(2)
            if instruction in ("COPY", "ADD"):
                self.docker_copy(rest, line_no, instruction)
                return
            if instruction in ("ENV", "ARG"):
                self.docker_env(rest, line_no, instruction)
                return
            if instruction != "RUN":
                return
            text = rest
            exec_form = self.exec_form(rest)
            if exec_form is not None:
                text = exec_form
            if start in self.heredocs and re.match(r"\s*<<", rest):
                self.scan_run_heredoc(start)
                return
        commands, _comment = tokenize(text)
        heredoc = self.heredocs.get(start) or self.heredocs.get(end)
        op_line = start if start in self.heredocs else end
        cwd = None if self.kind == "dockerfile" else self.cwd_before(start)
        if self.kind == "dockerfile":
            cwd = self.workdir_before(start)
        self.commands(commands, line_no, cwd, heredoc=(op_line, heredoc) if heredoc else None)

    def commands(
        self,
        commands: list[_Command],
        line_no: int,
        cwd: str | None,
        heredoc: tuple[int, tuple[int, str]] | None = None,
    ) -> None:
        for k, cmd in enumerate(commands):
            before = len(self.hits)
            cwd = self.command(cmd, line_no, cwd, heredoc)
            swallow = self.swallowed(commands, k) if len(self.hits) > before else None
            if swallow:
                words = [w for w in cmd.words if w not in _KEYWORDS and not _ASSIGNMENT.match(w)]
                name = words[0] if words else "the command"
                self.hits.append(
                    _Hit(
                        "PB409", line_no, f"the failure of {_base(name)} is ignored (|| {swallow})"
                    )
                )

    @staticmethod
    def swallowed(commands: list[_Command], k: int) -> str | None:
        """The command that swallows the failure of command ``k``: its and-or list goes on with
        ``|| true`` (or ``|| :``), or ``|| echo ...`` after which the script does not stop."""
        j = k
        while j < len(commands) and commands[j].op in ("|", "&&", "|&"):
            j += 1
        while j < len(commands) and commands[j].op == "||":
            nxt = commands[j + 1] if j + 1 < len(commands) else None
            first = nxt.words[0] if nxt and nxt.words else None
            if first in _SWALLOW:
                return first
            if first in _SWALLOW_ECHO:
                # `|| { echo failed; exit 1; }` and `|| echo failed && exit 1` still fail
                if not any(c.words and _base(c.words[0]) in _STOPS for c in commands[j + 2 :]):
                    return f"{first} ..."
                return None
            j += 1
        return None

    def command(
        self,
        cmd: _Command,
        line_no: int,
        cwd: str | None,
        heredoc: tuple[int, tuple[int, str]] | None,
    ) -> str | None:
        """Judge one simple command; returns the working folder after it (for ``cd``)."""
        words = list(cmd.words)
        while words and words[0] in _KEYWORDS:
            words.pop(0)
        assignments = []
        while words and _ASSIGNMENT.match(words[0]):
            assignments.append(words.pop(0))
        while words and _base(words[0]) in _WRAPPERS:
            wrapper = _base(words.pop(0))
            while words and (words[0].startswith("-") or (wrapper == "env" and "=" in words[0])):
                flag = words.pop(0)
                if "=" in flag and wrapper == "env":
                    assignments.append(flag)
                elif flag in ("-u", "-n", "-g") and words:
                    words.pop(0)
        for assignment in assignments:
            self.assignment(assignment, line_no)
        name = _base(words[0]) if words else ""
        if name in ("export", "declare", "local", "readonly", "typeset"):
            for word in words[1:]:
                if "=" in word and not word.startswith("-"):
                    self.assignment(word, line_no)
            words = []
            name = ""
        if name == "patchbay":
            return cwd  # declared patching (or a read-only command)
        for op, target in cmd.redirects:
            if op.startswith(">") or op.startswith("&>"):
                self.written(target, cwd, line_no, f"{name or 'a redirection'} >", heredoc)
        if not words:
            return cwd
        args = words[1:]
        if name in ("cd", "pushd"):
            return args[0] if args else None
        handler = getattr(self, f"cmd_{name.replace('-', '_').replace('.', '_')}", None)
        if name.startswith("python"):
            handler = self.cmd_python
        elif name.startswith("pip"):
            handler = self.cmd_pip
        if handler is not None:
            handler(args, line_no, cwd, heredoc)
        return cwd

    # ---- variables and the working folder

    def assignment(self, word: str, line_no: int) -> None:
        var, _, value = word.partition("=")
        if var == "PYTHONPATH":
            self.pythonpath(value, line_no)
        elif self.installed_reason(value, None):
            self.installed_vars.setdefault(var, line_no)

    def cwd_before(self, start: int) -> str | None:
        """The folder of the last ``cd``/``pushd`` before line ``start`` (None: unknown)."""
        if self._cd_lines is None:
            self._cd_lines = [
                i for i in _lines_with(self.text, ("cd ", "pushd ")) if i not in self.body_of
            ]
        k = bisect_right(self._cd_lines, start - 1)
        while k > 0:
            k -= 1
            idx = self._cd_lines[k]
            commands, _ = tokenize(self.joined(self.logical_start(idx), self.logical_end(idx)))
            folder = None
            found = False
            for cmd in commands:
                if cmd.words and _base(cmd.words[0]) in ("cd", "pushd"):
                    folder = cmd.words[1] if len(cmd.words) > 1 else None
                    found = True
            if found:
                return folder
        return None

    def workdir_before(self, start: int) -> str | None:
        for idx in range(start - 1, -1, -1):
            m = re.match(r"\s*WORKDIR\s+(\S+)", self.lines[idx], re.IGNORECASE)
            if m:
                return m.group(1).strip("\"'")
        return None

    def installed_reason(self, word: str, cwd: str | None) -> str | None:
        """Why ``word`` (a path) is an installed location, or None when it is not one."""
        if word in self.python_locations:
            return self.python_locations[word]
        if "site-packages" in word or "dist-packages" in word:
            return "site-packages"
        for var in self.installed_vars:
            if (f"${var}" in word or f"${{{var}" in word) and re.search(
                rf"\$\{{?{re.escape(var)}\b", word
            ):
                scope = self.loop_scopes.get(var)
                if scope is not None and not scope[0] <= self._idx <= scope[1]:
                    continue  # a loop variable, used after its loop
                return f"${var}, set at line {self.installed_vars[var]}"
        if "$(" in word or "`" in word:
            m = _INSTALLED_RE.search(word)
            if m:
                return f"computed with {m.group(0)}"
        if self.engine_package_file(word):
            return "an engine package folder"
        relative = word and not word.startswith(("/", "~", "$"))
        if relative and cwd is not None and self.installed_reason(cwd, None):
            return f"working folder {cwd}"
        return None

    def engine_package_file(self, word: str) -> bool:
        """``/opt/x/vllm/envs.py``: a source or binary file below an engine package folder."""
        if not word.endswith(_SOURCE_SUFFIXES) or not word.startswith(("/", "~", "$")):
            return False
        parts = word.split("/")
        return any(part in self.engines.imports for part in parts[1:-1])

    def engine_tree(self, folder: str | None) -> bool:
        """A folder named after an engine (a source checkout, as editable installs use)."""
        if not folder:
            return False
        last = folder.rstrip("/").rsplit("/", 1)[-1]
        return bool(last) and self.engines.is_engine(last)

    def target_reason(self, folder: str | None, cwd: str | None) -> str | None:
        """Why a ``git apply``/``patch`` target folder is engine code (installed or a tree)."""
        where = folder if folder is not None else cwd
        if where is None:
            return None
        if folder is not None and not folder.startswith(("/", "~", "$")) and cwd is not None:
            reason = self.installed_reason(folder, cwd)
        else:
            reason = self.installed_reason(where, None)
        if reason:
            return f"{where} ({reason})" if where != "site-packages" else where
        if self.engine_tree(where) or (folder and self.engine_tree(cwd)):
            return f"{where} (an engine source tree)"
        return None

    # ---- writes

    def written(
        self,
        target: str,
        cwd: str | None,
        line_no: int,
        how: str,
        heredoc: tuple[int, tuple[int, str]] | None = None,
    ) -> bool:
        """Report a write of ``target`` by ``how`` when it is an installed location (or a
        ``sitecustomize``/``usercustomize`` module anywhere, or a ``.pth`` file installed)."""
        base = target.rstrip("/").rsplit("/", 1)[-1]
        reason = self.installed_reason(target, cwd)
        if base in ("sitecustomize.py", "usercustomize.py") or (base.endswith(".pth") and reason):
            self.hits.append(
                _Hit(
                    "PB407",
                    line_no,
                    f"{how} writes {target}: {base} is imported at start-up and can "
                    "monkey-patch engine modules",
                )
            )
            return True
        if reason is None:
            return False
        if heredoc is not None:
            op_line, (end, _delim) = heredoc
            self.hits.append(
                _Hit(
                    "PB403",
                    op_line + 1,
                    f"heredoc ({how.strip(' >')}) rewrites an installed file: {target} ({reason})",
                    end + 1,
                )
            )
        else:
            self.hits.append(
                _Hit(
                    "PB404",
                    line_no,
                    f"{how} writes into an installed location: {target} ({reason})",
                )
            )
        return True

    def cmd_cp(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        self.copy_like("cp", args, line_no, cwd, {"-t", "--target-directory", "-S", "--suffix"})

    def cmd_mv(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        self.copy_like("mv", args, line_no, cwd, {"-t", "--target-directory", "-S", "--suffix"})

    def cmd_install(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        self.copy_like("install", args, line_no, cwd, {"-t", "-m", "-o", "-g", "-S", "--mode"})

    def cmd_ln(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        self.copy_like("ln", args, line_no, cwd, {"-t", "--target-directory", "-S"})

    def cmd_rsync(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        self.copy_like("rsync", args, line_no, cwd, {"-e", "--rsh", "--exclude", "--include"})

    def copy_like(
        self, name: str, args: list[str], line_no: int, cwd: str | None, with_value: set[str]
    ) -> None:
        positional, options = _split_args(args, with_value)
        target = options.get("-t") or options.get("--target-directory")
        if target is None and len(positional) >= 2:
            target = positional[-1]
        if target is None and name == "install" and positional:
            target = positional[-1]
        if target is None:
            return
        sources = (
            positional
            if options.get("-t") or options.get("--target-directory")
            else positional[:-1]
        )
        for source in sources:
            base = source.rstrip("/").rsplit("/", 1)[-1]
            hook = base in ("sitecustomize.py", "usercustomize.py") or base.endswith(".pth")
            if hook and (target.endswith("/") or self.installed_reason(target, cwd)):
                self.written(f"{target.rstrip('/')}/{base}", cwd, line_no, name)
                return
        self.written(target, cwd, line_no, name)

    def cmd_rm(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        positional, _ = _split_args(args, set())
        for target in positional:
            reason = self.installed_reason(target, cwd)
            if reason and (self.engine_package_file(target) or self.names_engine(target)):
                self.hits.append(
                    _Hit(
                        "PB404",
                        line_no,
                        f"rm deletes from an installed location: {target} ({reason})",
                    )
                )
                return

    def names_engine(self, word: str) -> bool:
        return any(
            self.engines.is_engine(p.split("-")[0]) or self.engines.is_engine(p)
            for p in re.split(r"[/*]", word)
            if p
        )

    def cmd_tee(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        positional, _ = _split_args(args, set())
        for target in positional:
            if self.written(target, cwd, line_no, "tee", heredoc):
                return

    def cmd_curl(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        _, options = _split_args(
            args,
            {
                "-o",
                "--output",
                "--output-dir",
                "-H",
                "-d",
                "-X",
                "-u",
                "-A",
                "-e",
                "--header",
                "--data",
            },
        )
        target = options.get("-o") or options.get("--output")
        if target is None and options.get("--output-dir"):
            target = options["--output-dir"]
        if target is None and ("-O" in options or "--remote-name" in options):
            target = cwd
        if target:
            self.download("curl -o", target, cwd, line_no)

    def cmd_wget(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        positional, options = _split_args(
            args, {"-O", "--output-document", "-P", "--directory-prefix", "--header"}
        )
        target = options.get("-O") or options.get("--output-document")
        target = target or options.get("-P") or options.get("--directory-prefix") or cwd
        if target and positional:
            self.download("wget -O", target, cwd, line_no)

    def download(self, how: str, target: str, cwd: str | None, line_no: int) -> None:
        reason = self.installed_reason(target, cwd)
        if reason:
            self.hits.append(
                _Hit(
                    "PB404",
                    line_no,
                    f"download ({how}) into an installed location: {target} ({reason}); "
                    "unpinned, no hash checked",
                )
            )

    def cmd_tar(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        first = args[0] if args else ""
        extract = any(
            a == "--extract" or (a.startswith("-") and not a.startswith("--") and "x" in a)
            for a in args
        )
        extract = extract or (bool(first) and not first.startswith("-") and "x" in first)
        if not extract:
            return
        _, options = _split_args(args, {"-C", "--directory", "-f", "--file"})
        target = options.get("-C") or options.get("--directory") or cwd
        if target:
            self.written(target, cwd, line_no, "tar -x")

    def cmd_unzip(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        _, options = _split_args(args, {"-d"})
        target = options.get("-d") or cwd
        if target:
            self.written(target, cwd, line_no, "unzip")

    # ---- commands that run other commands

    def cmd_find(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        """``find ROOT ... -exec CMD {} +``: CMD judged with ``{}`` as the files found under
        ROOT (``ROOT/*.py`` for ``-name '*.py'``)."""
        roots = []
        k = 0
        while k < len(args) and not args[k].startswith(("-", "(", "!")):
            roots.append(args[k])
            k += 1
        roots = roots or ["."]
        name = None
        while k < len(args):
            a = args[k]
            if a in ("-name", "-iname") and k + 1 < len(args):
                name = args[k + 1]
            if a in ("-exec", "-execdir", "-ok", "-okdir"):
                j = k + 1
                while j < len(args) and args[j] not in (";", "+"):
                    j += 1
                sub = args[k + 1 : j]
                if sub:
                    for root in roots:
                        found = f"{root.rstrip('/')}/{name or '{}'}"
                        words = [w.replace("{}", found) for w in sub]
                        self.command(_Command(words=words), line_no, cwd, None)
                k = j
            k += 1

    def cmd_for(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        """``for f in $SITE/vllm/*.py; do sed -i ... "$f"; done``: the loop variable is an
        installed location until its ``done``."""
        if len(args) < 3 or args[1] != "in" or not re.fullmatch(r"[A-Za-z_]\w*", args[0]):
            return
        var = args[0]
        if any(self.installed_reason(item, cwd) for item in args[2:]):
            end = next(
                (i for i in range(self._idx, len(self.lines)) if _DONE.search(self.lines[i])),
                len(self.lines) - 1,
            )
            self.installed_vars[var] = line_no
            self.loop_scopes[var] = (self._idx, end)

    def cmd_docker(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        """``docker exec CONTAINER CMD...``: CMD judged as if run here (in the container)."""
        rest = list(args)
        if rest[:1] == ["container"]:
            rest = rest[1:]
        if rest[:1] != ["exec"]:
            return
        rest = rest[1:]
        workdir = None
        with_value = {"-u", "--user", "-w", "--workdir", "-e", "--env", "--env-file"}
        while rest and rest[0].startswith("-"):
            flag = rest.pop(0)
            if flag in with_value and rest:
                value = rest.pop(0)
                if flag in ("-w", "--workdir"):
                    workdir = value
            elif flag.startswith(("--workdir=", "-w=")):
                workdir = flag.split("=", 1)[1]
        if len(rest) < 2:
            return
        self.command(_Command(words=rest[1:]), line_no, workdir, None)

    cmd_podman = cmd_docker

    # ---- in-place edits and diffs

    def cmd_sed(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        in_place = any(
            a.startswith("--in-place")
            or (re.match(r"^-[a-zA-Z]*i", a) is not None and not a.startswith("--"))
            for a in args
        )
        if not in_place:
            return
        positional, options = _split_args(args, {"-e", "--expression", "-f", "--file", "-l"})
        files = (
            positional
            if ("-e" in options or "-f" in options or "--expression" in options)
            else positional[1:]
        )
        self.edited("sed -i", files, line_no, cwd)

    def cmd_perl(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        if not any(re.match(r"^-[a-zA-Z]*i", a) for a in args):
            return
        # perl's switch clusters: -i takes the rest as its backup suffix; -e/-E the rest, or
        # else the next word, as the program (-pi -e PROG, -i -pe PROG); -M/-I likewise a value
        positional: list[str] = []
        script_given = False
        k = 0
        while k < len(args):
            a = args[k]
            k += 1
            if a == "--":
                positional.extend(args[k:])
                break
            if not a.startswith("-") or a == "-" or a.startswith("--"):
                if not a.startswith("--"):
                    positional.append(a)
                continue
            for n, ch in enumerate(a[1:], start=2):
                if ch == "i":
                    break
                if ch in "eEMI":
                    if ch in "eE":
                        script_given = True
                    if n == len(a) and k < len(args):
                        k += 1  # the value is the next word
                    break
        files = positional if script_given else positional[1:]
        self.edited("perl -i", files, line_no, cwd)

    def cmd_awk(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        joined = " ".join(args)
        if not re.search(r"(?:^|\s)(?:-i\s*inplace|--include[= ]inplace)\b", joined):
            return
        positional, _ = _split_args(args, {"-i", "--include", "-v", "-f", "-F"})
        self.edited("awk -i inplace", positional[1:], line_no, cwd)

    cmd_gawk = cmd_awk

    def edited(self, how: str, files: list[str], line_no: int, cwd: str | None) -> None:
        for target in files:
            reason = self.installed_reason(target, cwd)
            if reason:
                self.hits.append(
                    _Hit(
                        "PB402",
                        line_no,
                        f"in-place edit ({how}) of an installed file: {target} ({reason})",
                    )
                )
                return

    def cmd_git(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        folder = cwd
        rest = list(args)
        while rest and rest[0].startswith("-"):
            flag = rest.pop(0)
            if flag in ("-C", "-c", "--git-dir", "--work-tree") and rest:
                value = rest.pop(0)
                if flag == "-C":
                    folder = value
        if not rest:
            return
        sub, sub_args = rest[0], rest[1:]
        if sub == "apply":
            _, options = _split_args(sub_args, {"--directory", "-p", "--exclude", "--include"})
            directory = options.get("--directory")
            if any(a in ("--check", "--stat", "--numstat", "--summary") for a in sub_args):
                return
            reason = (
                self.target_reason(directory, folder)
                if directory
                else self.target_reason(None, folder)
            )
            if reason:
                self.hits.append(_Hit("PB401", line_no, f"git apply into {reason}"))
        elif sub == "clone":
            self.clone(sub_args, line_no)

    def cmd_patch(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        positional, options = _split_args(
            args,
            {
                "-d",
                "--directory",
                "-i",
                "--input",
                "-p",
                "-o",
                "--output",
                "-r",
                "-B",
                "-F",
                "--fuzz",
                "-V",
                "-z",
                "-D",
            },
        )
        if "--dry-run" in options or "-C" in options:
            return
        directory = options.get("-d") or options.get("--directory")
        reason = None
        if positional:
            reason = self.installed_reason(positional[0], directory or cwd)
            reason = f"{positional[0]} ({reason})" if reason else None
        reason = reason or self.target_reason(directory, cwd)
        if reason:
            self.hits.append(_Hit("PB401", line_no, f"patch into {reason}"))

    # ---- inline scripts

    def cmd_bash(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        if "-c" in args and args.index("-c") + 1 < len(args):
            commands, _ = tokenize(args[args.index("-c") + 1])
            self.commands(commands, line_no, cwd)

    cmd_sh = cmd_bash
    cmd_zsh = cmd_bash

    def cmd_python(
        self,
        args: list[str],
        line_no: int,
        cwd: str | None,
        heredoc: tuple[int, tuple[int, str]] | None,
    ) -> None:
        if args[:2] == ["-m", "pip"]:
            self.cmd_pip(args[2:], line_no, cwd, heredoc)
            return
        argv = args
        if "-c" in args and args.index("-c") + 1 < len(args):
            k = args.index("-c")
            code = args[k + 1]
            script_argv = {
                i: a for i, a in enumerate(["-c", *args[k + 2 :]]) if self.installed_reason(a, cwd)
            }
            before = len(self.hits)
            self.scan_python(_statements(code), line_no - 1, script_argv, single=True)
            for hit in self.hits[before:]:
                hit.line = line_no
            return
        if heredoc is not None and (not argv or argv[0] == "-" or argv[0].startswith("-")):
            op_line, (end, _delim) = heredoc
            script_args = argv[1:] if argv and argv[0] == "-" else argv
            script_argv = {
                i + 1: a for i, a in enumerate(script_args) if self.installed_reason(a, cwd)
            }
            body = self.lines[op_line + 1 : end]
            before = len(self.hits)
            self.scan_python(body, op_line + 1, script_argv, single=True)
            if len(self.hits) > before:
                targets = "; ".join(h.message for h in self.hits[before:])
                del self.hits[before:]
                self.hits.append(
                    _Hit("PB403", op_line + 1, f"inline Python heredoc {targets}", end + 1)
                )

    def cmd_uv(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        if args[:1] == ["pip"]:
            self.cmd_pip(args[1:], line_no, cwd, heredoc)

    # ---- pip and git clone

    def cmd_pip(self, args: list[str], line_no: int, cwd: str | None, heredoc: object) -> None:
        if not args or args[0] != "install":
            return
        with_value = {
            "-r", "--requirement", "-c", "--constraint", "-i", "--index-url",
            "--extra-index-url", "-f", "--find-links", "--target", "-t", "--prefix", "--root",
            "--upgrade-strategy", "--no-binary", "--only-binary", "--platform", "--python-version",
            "--implementation", "--abi", "--src", "-C", "--config-settings", "--global-option",
            "--build-option", "--trusted-host", "--proxy", "--retries", "--timeout",
            "--exists-action", "--cache-dir", "--log", "--python", "--report", "--progress-bar",
            "--root-user-action",
        }  # fmt: skip
        rest = args[1:]
        specs: list[tuple[str, bool]] = []
        k = 0
        while k < len(rest):
            a = rest[k]
            if a in ("-e", "--editable") and k + 1 < len(rest):
                specs.append((rest[k + 1], True))
                k += 2
                continue
            if a.startswith("--editable="):
                specs.append((a.split("=", 1)[1], True))
            elif a in with_value:
                k += 1
            elif not a.startswith("-"):
                specs.append((a, False))
            k += 1
        # "name @ git+https://..." arrives as three words
        joined: list[tuple[str, bool]] = []
        for spec, editable in specs:
            if joined and (spec == "@" or joined[-1][0].endswith(" @")):
                joined[-1] = (f"{joined[-1][0]} {spec}", joined[-1][1])
            else:
                joined.append((spec, editable))
        for spec, editable in joined:
            self.requirement(spec.strip(), editable, line_no, cwd)

    def requirement(self, spec: str, editable: bool, line_no: int, cwd: str | None) -> None:
        name, _, url = (
            spec.partition("@") if " @ " in spec or _NAME_AT_URL.match(spec) else ("", "", spec)
        )
        name, url = name.strip(), url.strip()
        if re.match(r"^(?:git|hg|svn|bzr)\+", url):
            self.vcs_install(name, url, line_no)
            return
        if re.match(r"^https?://", url):
            base = url.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
            repo = _repo_of(url)
            dist = name or (
                base.split("-")[0] if base.endswith((".whl", ".tar.gz", ".zip")) else ""
            )
            candidates = [n for n in (dist, repo[1] if repo else "") if n]
            engine = next((n for n in candidates if self.engines.is_engine(n)), None)
            if engine:
                kind = "a wheel URL" if base.endswith(".whl") else "an archive URL"
                self.hits.append(
                    _Hit(
                        "PB405",
                        line_no,
                        f"pip install of engine package {engine} from {kind} ({url})",
                    )
                )
            return
        base = spec.rstrip("/").rsplit("/", 1)[-1]
        if base.endswith(".whl"):
            dist = base.split("-")[0]
            if self.engines.is_engine(dist):
                self.hits.append(
                    _Hit(
                        "PB405",
                        line_no,
                        f"pip install of engine package "
                        f"{normalise_name(dist)} from a local wheel ({spec})",
                    )
                )
            return
        is_path = editable or spec.startswith((".", "/", "~", "$")) or "/" in spec
        if is_path:
            folder = cwd if spec in (".", "./") else spec
            if self.from_clone(spec, cwd):
                return
            if self.engine_tree(folder) or (
                spec.endswith((".tar.gz", ".zip")) and self.engines.is_engine(base.split("-")[0])
            ):
                self.hits.append(
                    _Hit(
                        "PB405",
                        line_no,
                        f"pip install of an engine from a local source tree ({folder})",
                    )
                )
            return
        m = _REQUIREMENT.match(spec)
        if m and self.engines.is_engine(m.group(1)):
            pin = m.group(3).strip() or "latest"
            self.hits.append(
                _Hit(
                    "PB408",
                    line_no,
                    f"pip install replaces engine package "
                    f"{normalise_name(m.group(1))} ({pin}) of the image from an index",
                )
            )

    def vcs_install(self, name: str, url: str, line_no: int) -> None:
        repo = _repo_of(url.split("+", 1)[1])
        egg = re.search(r"[#&]egg=([\w.-]+)", url)
        names = [n for n in (name, egg.group(1) if egg else "", repo[1] if repo else "") if n]
        engine = next((n for n in names if self.engines.is_engine(n)), None)
        if engine is None:
            return
        detail = []
        if repo:
            owner, repo_name = repo
            upstream = self.engines.upstreams.get(repo_name.lower())
            if upstream and upstream.split("/")[0].lower() != owner.lower():
                detail.append(f"on a fork ({owner}/{repo_name}; upstream {upstream})")
        path = url.split("://", 1)[-1].split("#")[0]
        ref = path.rsplit("@", 1)[1] if "@" in path.split("/", 1)[-1] else None
        if ref is None:
            detail.append("at the default branch (moving)")
        elif not _SHA40.fullmatch(ref):
            detail.append(f"at a moving ref ({ref})")
        self.hits.append(
            _Hit(
                "PB405",
                line_no,
                f"pip install of engine package {normalise_name(engine)} from a VCS URL"
                + (" " + " ".join(detail) if detail else ""),
            )
        )

    def clone(self, args: list[str], line_no: int) -> None:
        positional, options = _split_args(
            args,
            {
                "-b",
                "--branch",
                "--depth",
                "-c",
                "--config",
                "--filter",
                "-o",
                "--origin",
                "--reference",
                "-j",
                "--jobs",
                "--revision",
                "--shallow-since",
            },
        )
        if not positional:
            return
        url = positional[0]
        repo = _repo_of(url)
        name = repo[1] if repo else url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
        if not self.engines.is_engine(name):
            return
        folder = positional[1] if len(positional) > 1 else name
        branch = options.get("-b") or options.get("--branch")
        # the rest of the clone's own line (`git clone X && cd X && pip install .`), then the
        # lines after it
        own = self.lines[line_no - 1] if line_no - 1 < len(self.lines) else ""
        at = own.find(url)
        after = (own[at + len(url) :] if at != -1 else "") + "\n" + "\n".join(self.lines[line_no:])
        pinned = bool(options.get("--revision")) or bool(
            re.search(
                r"\b(?:checkout|reset\s+--hard|switch\s+--detach)\s+(?:-\S+\s+)*"
                r"(?:[0-9a-f]{7,40}\b|\$)",
                after,
            )
        )
        built = re.search(
            r"(?m)^.*(?:pip3?\s+install\b[^\n]*(?:\s-e\b|\s\.(?:\s|$)|"
            + re.escape(folder)
            + r")|setup\.py\s+(?:install|develop|build)|python3?\s+-m\s+build\b).*$",
            after,
        )
        built_at = line_no + after.count("\n", 0, built.start()) if built else None
        self.clones.append(_Clone(line_no, folder, url, pinned, built_at))
        if not pinned and built_at:
            ref = f"branch {branch}" if branch else "the default branch"
            self.hits.append(
                _Hit(
                    "PB406",
                    line_no,
                    f"git clone of engine {name} at a moving ref ({ref}, no "
                    f"commit pinned), built or installed at line {built_at}",
                )
            )

    def from_clone(self, spec: str, cwd: str | None) -> bool:
        """True when a local install is of a folder this file cloned (judged at the clone)."""
        for clone in self.clones:
            folder = clone.folder.rstrip("/")
            if spec.rstrip("/") == folder or (
                spec in (".", "./") and cwd and cwd.rstrip("/").endswith(folder)
            ):
                return True
        return False

    # ---- module injection

    def pythonpath(self, value: str, line_no: int) -> None:
        # the variable's own value (${PYTHONPATH:-}, $PYTHONPATH) is not an addition
        value = re.sub(r"\$\{PYTHONPATH[^}]*\}|\$PYTHONPATH\b", "", value)
        entries = [e for e in value.split(":") if e]
        for entry in entries:
            if not self.harmless_path_entry(entry):
                self.hits.append(
                    _Hit(
                        "PB407",
                        line_no,
                        f"PYTHONPATH injection of {entry} (can shadow or "
                        "monkey-patch engine modules)",
                    )
                )
                return

    def harmless_path_entry(self, entry: str) -> bool:
        """A folder of this repository that holds no start-up hook and no engine-named
        module; anything else (absolute, computed, missing) cannot be vouched for."""
        if entry.startswith(("/", "~")) or "$(" in entry or "`" in entry:
            return False
        entry = re.sub(r"^\$\{?PWD\}?|^\$\(pwd\)", ".", entry)
        if "$" in entry:
            return False
        script_dir = (self.root / self.path).parent
        for base in (script_dir, self.root):
            folder = (base / entry).resolve()
            if folder.is_dir():
                try:
                    names = os.listdir(folder)
                except OSError:
                    return False
                for item in names:
                    stem = item.removesuffix(".py")
                    if item in ("sitecustomize.py", "usercustomize.py") or item.endswith(".pth"):
                        return False
                    if stem in self.engines.imports:
                        return False
                return True
        return False

    # ---- Dockerfile instructions

    @staticmethod
    def exec_form(rest: str) -> str | None:
        text = rest.strip()
        if not text.startswith("["):
            return None
        try:
            argv = json.loads(text)
        except ValueError:
            return None
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            return None
        if len(argv) >= 3 and _base(argv[0]) in ("sh", "bash") and argv[1] == "-c":
            return argv[2]
        return " ".join(_quote(a) for a in argv)

    def docker_copy(self, rest: str, line_no: int, instruction: str) -> None:
        argv = None
        if rest.strip().startswith("["):
            try:
                argv = json.loads(rest.strip())
            except ValueError:
                argv = None
        if argv is None:
            commands, _ = tokenize(rest)
            argv = commands[0].words if commands else []
        argv = [a for a in argv if not a.startswith("--")]
        if len(argv) >= 2:
            self.written(argv[-1], self.workdir_before(line_no - 1), line_no, instruction)

    def docker_env(self, rest: str, line_no: int, instruction: str) -> None:
        commands, _ = tokenize(rest)
        words = commands[0].words if commands else []
        if len(words) >= 2 and "=" not in words[0]:
            words = [f"{words[0]}={' '.join(words[1:])}"]
        for word in words:
            if "=" in word:
                self.assignment(word, line_no)

    def scan_run_heredoc(self, op_idx: int) -> None:
        """``RUN <<EOF`` (BuildKit): the body is a shell script of its own."""
        end, _delim = self.heredocs[op_idx]
        first = self.lines[op_idx]
        interpreter = re.search(r"<<-?\s*['\"]?\w+['\"]?\s*(\S*)", first)
        body = "\n".join(self.lines[op_idx + 1 : end])
        if interpreter and interpreter.group(1).startswith("python"):
            before = len(self.hits)
            self.scan_python(self.lines[op_idx + 1 : end], op_idx + 1, {})
            for hit in self.hits[before:]:
                hit.line = op_idx + 1
                hit.end_line = end + 1
            return
        inner = FileScanner(body, self.path, "shell", self.engines, self.root)
        inner.installed_vars = dict(self.installed_vars)
        inner.scan_shell()
        for hit in inner.hits:
            hit.line += op_idx + 1
            if hit.end_line:
                hit.end_line += op_idx + 1
            self.hits.append(hit)

    # ---- Python (files, heredoc bodies, python -c)

    def scan_python(
        self,
        lines: list[str],
        offset: int,
        argv: dict[int, str],
        *,
        single: bool = False,
    ) -> None:
        """Python that writes installed files, sets PYTHONPATH, or runs shell commands.

        Args:
            lines: the source lines.
            offset: 0-based index of ``lines[0]`` in the file.
            argv: ``sys.argv`` indexes that are installed locations -> the word passed.
            single: report at most one write (an inline script is one finding).
        """
        source = "\n".join(lines)
        if self.kind == "python" and not any(t in source for t in _PYTHON_TRIGGERS):
            return
        engine_attr = self.engines.module_location
        tainted: dict[str, str] = {}  # name -> where its installed location comes from

        def origin(expr: str) -> str | None:
            for marker in _PYTHON_MARKERS:
                if marker in expr:
                    return marker
            if engine_attr is not None:
                m = engine_attr.search(expr)
                if m:
                    return m.group(0)
            for m in re.finditer(r"sys\.argv\[(\d+)\]", expr):
                if int(m.group(1)) in argv:
                    return f"sys.argv[{m.group(1)}] = {argv[int(m.group(1))]}"
            for name, where in tainted.items():
                if re.search(rf"\b{re.escape(name)}\b", expr):
                    return f"{name} = {where}"
            return None

        # only a script that names an installed location can write one
        located = bool(argv) or any(m in source for m in _PYTHON_MARKERS)
        located = located or (
            engine_attr is not None
            and ("__file__" in source or "__path__" in source)
            and engine_attr.search(source) is not None
        )
        shell = self.kind == "python" and ("subprocess" in source or "os.system" in source)
        env = "PYTHONPATH" in source
        assign = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)\s*(.+)$")
        for _ in range(2 if located else 0):  # names assigned from such names, too
            for line in lines:
                m = assign.match(line)
                if m and m.group(1) not in tainted:
                    where = origin(m.group(2))
                    if where:
                        tainted[m.group(1)] = where
        reported = False
        if located:
            candidates: Iterable[int] = range(len(lines))
        else:  # only these lines can hold a PYTHONPATH assignment or a subprocess call
            literals = (*(_SUBPROCESS_CALLS if shell else ()), *(("PYTHONPATH",) if env else ()))
            candidates = _lines_with(source, literals)
        for k in candidates:
            line = lines[k]
            if not (located or (shell and "(" in line) or (env and "PYTHONPATH" in line)):
                continue
            code = (
                line.split("#", 1)[0]
                if "#" in line and "'" not in line and '"' not in line
                else line
            )
            line_no = offset + k + 1
            target = _python_write(code) if located else None
            if target is not None and not (single and reported):
                where = origin(target)
                if where:
                    self.hits.append(
                        _Hit(
                            "PB403",
                            line_no,
                            f"writes an installed file: {target.strip()} ({where})",
                        )
                    )
                    reported = True
            if env and "PYTHONPATH" in code:
                self.python_pythonpath(code, line_no)
            if shell:
                self.python_subprocess(code, line_no, origin)

    def python_pythonpath(self, code: str, line_no: int) -> None:
        m = re.search(
            r"""(?:environ|env)\s*(?:\[\s*['"]PYTHONPATH['"]\s*\]\s*=|\.setdefault\(\s*"""
            r"""['"]PYTHONPATH['"]\s*,)\s*(.*)""",
            code,
        )
        if m is None:
            return
        literal = re.match(r"""\s*(['"])([^'"]*)\1""", m.group(1))
        entries = [e for e in literal.group(2).split(":") if e] if literal else []
        if literal is None or not all(self.harmless_path_entry(e) for e in entries):
            self.hits.append(
                _Hit(
                    "PB407",
                    line_no,
                    "PYTHONPATH set for child processes (can shadow or "
                    "monkey-patch engine modules)",
                )
            )

    def python_subprocess(
        self, code: str, line_no: int, origin: Callable[[str], str | None]
    ) -> None:
        m = _SUBPROCESS_CALL.search(code)
        if not m:
            return
        arg = m.group(1)
        if arg.startswith("["):
            words = []
            for item in re.finditer(r"""(['"])(.*?)\1|([A-Za-z_][\w.]*)""", arg):
                if item.group(3):
                    words.append(self.python_word(item.group(3), origin))
                else:
                    words.append(item.group(2))
            commands = [_Command(words=words)]
        else:
            commands, _ = tokenize(arg[1:-1])
        cwd_m = re.search(r"cwd\s*=\s*([^,)]+)", code)
        cwd = self.python_word(cwd_m.group(1).strip(), origin) if cwd_m else None
        self.commands(commands, line_no, cwd)

    def python_word(self, expr: str, origin: Callable[[str], str | None]) -> str:
        """A Python expression as a shell word; an installed location is remembered so that
        :meth:`installed_reason` knows it."""
        where = origin(expr)
        if where is None:
            return expr
        word = f"python:{expr}"
        self.python_locations[word] = where
        return word

    # ---- annotations and the result

    def note_annotation(self, start: int, end: int) -> None:
        """Remember a ``patchbay-reviewed`` annotation on the logical line or right above it."""
        for idx in (start - 1, *range(start, end + 1)):
            if idx < 0 or idx >= len(self.lines) or "patchbay-reviewed" not in self.lines[idx]:
                continue
            line = self.lines[idx]
            if idx == start - 1 and not line.lstrip().startswith("#"):
                continue
            m = _ANNOTATION.search(line)
            if m:
                codes = frozenset(re.findall(r"PB\d{3}", m.group("codes")))
                self.annotations[start] = (codes, m.group("reason").strip(), idx + 1)

    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        seen: set[tuple[str, int]] = set()
        for hit in sorted(self.hits, key=lambda h: (h.line, h.code)):
            if (hit.code, hit.line) in seen:
                continue
            seen.add((hit.code, hit.line))
            finding = Finding.of(hit.code, self.path, hit.line, hit.message, hit.end_line)
            note = self.annotations.get(hit.line - 1)
            if note is not None and (not note[0] or hit.code in note[0]) and _real_reason(note[1]):
                finding.suppression = Suppression("inSource", note[1])
            out.append(finding)
        unreasoned = {line for _c, why, line in self.annotations.values() if not _real_reason(why)}
        for line in sorted(unreasoned):
            out.append(
                Finding.of(
                    "PB410",
                    self.path,
                    line,
                    "`patchbay-reviewed` needs a reason "
                    "(# patchbay-reviewed: why this change to the engine is fine)",
                )
            )
        return out


_DOCKERFILE_NEEDLES = ("COPY", "ADD", "ENV", "copy ", "add ")


def needles_of(kind: ScriptKind, engines: EngineNames) -> tuple[str, ...]:
    """Substrings that make a line of a shell script (or Dockerfile) worth a first look."""
    needles = engines.needles
    return (*needles, *_DOCKERFILE_NEEDLES) if kind == "dockerfile" else needles


class LineFilter:
    """:meth:`FileScanner.first_look` for the files of one run, judging each distinct line once.

    The scripts of a repository repeat the same lines (exports, harness installs, server
    launches, client sweeps). Each distinct line is searched for the needles once, and a line
    holding one is judged by :meth:`FileScanner.relevant` once; a file is then a few set
    operations. A file without a relevant line, and without a trigger line on a continued
    (``\\``) line, has nothing to parse.

    Args:
        kind: ``shell`` or ``dockerfile`` (the needles and the judgement differ).
        engines: the engine names.
    """

    def __init__(self, kind: ScriptKind, engines: EngineNames) -> None:
        self.needles = needles_of(kind, engines)
        self.probe = FileScanner("", "", kind, engines, Path())
        self.known: set[str] = set()
        self.triggers: set[str] = set()  # distinct lines holding a needle
        self.relevant: set[str] = set()  # ... that the first look keeps on their own

    def learn(self, lines: set[str]) -> None:
        """Judge the lines not seen yet: all of them at once, one search per needle."""
        new = lines - self.known
        if not new:
            return
        self.known |= new
        blob = "\n".join(new)
        found: set[str] = set()
        for needle in self.needles:
            i = blob.find(needle)
            while i != -1:
                ls = blob.rfind("\n", 0, i) + 1
                le = blob.find("\n", i)
                le = len(blob) if le == -1 else le
                found.add(blob[ls:le])
                i = blob.find(needle, le)
        self.triggers |= found
        self.relevant.update(line for line in found if self.probe.relevant(line))

    def starts(self, text: str) -> list[int]:
        """What :meth:`FileScanner.first_look` returns for a file of this text."""
        lines = text.split("\n")
        if not self.known.issuperset(lines):
            self.learn(set(lines))
        relevant = self.relevant
        out = []
        for i in compress(count(), map(self.triggers.__contains__, lines)):
            line = lines[i]
            if line in relevant or line.endswith("\\") or (i and lines[i - 1].endswith("\\")):
                out.append(i)
        return out


_PYTHON_TRIGGERS = (*INSTALLED_MARKERS, "PYTHONPATH", "subprocess", "os.system")
_PYTHON_MARKERS = (
    "site-packages",
    "dist-packages",
    "purelib",
    "platlib",
    "getsitepackages",
    "get_python_lib",
    "find_spec",
)


_SUBPROCESS_CALL = re.compile(
    r"(?:subprocess\.\w+|os\.system|check_call|check_output|Popen)\(\s*(\[[^\]]*\]|(['\"]).*?\2)"
)
_SUBPROCESS_CALLS = ("subprocess.", "os.system", "check_call", "check_output", "Popen")
"""Literals of which a line matching :data:`_SUBPROCESS_CALL` holds one."""


def _lines_with(source: str, literals: Iterable[str]) -> list[int]:
    """Sorted 0-based indexes of the lines of ``source`` that hold one of ``literals``."""
    found: set[int] = set()
    for literal in literals:
        i = source.find(literal)
        while i != -1:
            found.add(source.count("\n", 0, i))
            end = source.find("\n", i)
            if end == -1:
                break
            i = source.find(literal, end)
    return sorted(found)


def _python_write(code: str) -> str | None:
    """The target expression of a file write on this line (open for writing, write_text,
    shutil.copy/move, os.replace/rename/remove, fileinput inplace), or None."""
    m = re.search(
        r"""\bopen\(\s*([^,()]+(?:\([^()]*\))?[^,()]*),\s*(?:mode\s*=\s*)?['"]([rwaxbt+]+)['"]""",
        code,
    )
    if m and any(ch in m.group(2) for ch in "wax+"):
        return m.group(1)
    m = re.search(r"([\w.\[\]()'\"/ +]+?)\.write_(?:text|bytes)\(", code)
    if m:
        return m.group(1)
    m = re.search(r"\b(?:shutil\.(?:copy\w*|move)|os\.(?:replace|rename))\((.*)\)", code)
    if m:
        parts = _split_top(m.group(1))
        return parts[1] if len(parts) > 1 else parts[0]
    m = re.search(r"\bos\.(?:remove|unlink)\((.*)\)", code)
    if m:
        return m.group(1)
    m = re.search(r"fileinput\.input\((.*inplace\s*=\s*True.*)\)", code)
    if m:
        return m.group(1)
    return None


def _statements(code: str) -> list[str]:
    """The lines of a ``python -c`` program, one statement each: ``a = 1; open(a, "w")`` is
    split at the ``;`` outside strings and brackets, so that assignments are seen."""
    if ";" not in code:
        return code.split("\n")
    out, cur, depth, quote = [], [], 0, ""
    for ch in code:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif (ch == ";" and depth == 0) or ch == "\n":
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur).strip())
    return out


def _split_top(args: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in args:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [p.strip() for p in out]


def _real_reason(reason: str) -> bool:
    from ..waivers import placeholder_in

    return len(reason.split()) >= 2 and placeholder_in(reason) is None


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'" if re.search(r"[\s;&|<>]", word) else word


def _split_args(args: list[str], with_value: set[str]) -> tuple[list[str], dict[str, str]]:
    """Positional arguments and options (``-o X``, ``-oX`` for short ones, ``--opt=X``)."""
    positional: list[str] = []
    options: dict[str, str] = {}
    k = 0
    while k < len(args):
        a = args[k]
        if a == "--":
            positional.extend(args[k + 1 :])
            break
        if a.startswith("--") and "=" in a:
            key, value = a.split("=", 1)
            options[key] = value
        elif a in with_value:
            options[a] = args[k + 1] if k + 1 < len(args) else ""
            k += 1
        elif a.startswith("-") and len(a) > 2 and not a.startswith("--") and a[:2] in with_value:
            options[a[:2]] = a[2:]
        elif a.startswith("-") and a != "-":
            options[a] = ""
        else:
            positional.append(a)
        k += 1
    return positional, options


def _repo_of(url: str) -> tuple[str, str] | None:
    """``(owner, repo)`` of a forge URL (``https://host/owner/repo(.git)(@ref)``)."""
    m = re.match(
        r"^(?:\w+://)?(?:[^@/]+@)?[^/:]+[/:]([\w.-]+)/([\w.-]+?)(?:\.git)?(?:[@/#?]|$)", url
    )
    return (m.group(1), m.group(2)) if m else None


# -- the tree ---------------------------------------------------------------------------------

_SHEBANG = re.compile(rb"^#!\s*\S*?(?:\b(?:env\s+)?)(?P<interp>ba|z|k|da)?(?P<name>sh|python3?)\b")


def script_kind(rel: str, head: bytes | None = None) -> ScriptKind | None:
    """How to read a file: by name (``*.py``, ``Dockerfile*``, ``*.sh``...) or, for a file
    without a suffix, by its ``#!`` line."""
    name = rel.rsplit("/", 1)[-1]
    lower = name.lower()
    if lower.endswith(".py"):
        return "python"
    if lower.startswith(("dockerfile", "containerfile")) or lower.endswith(".dockerfile"):
        return "dockerfile"
    if lower.endswith((".sh", ".bash", ".zsh", ".ksh")):
        return "shell"
    if head is not None and "." not in name and head.startswith(b"#!"):
        first = head.split(b"\n", 1)[0]
        if b"python" in first:
            return "python"
        if re.search(rb"\b(?:ba|z|k|da)?sh\b", first):
            return "shell"
    return None


def script_files(
    root: Path, include: list[str], exclude: list[str]
) -> list[tuple[str, ScriptKind]]:
    """The files the scanner reads: ``include`` globs, and files without a suffix that start
    with a shell or Python ``#!``; never ``exclude`` globs or :data:`SKIPPED_DIRS`.

    Folders are walked as :func:`os.walk` does (symbolic links to folders are not followed,
    unreadable folders are skipped).

    Returns:
        (path relative to ``root`` with ``/``, kind), sorted by path.
    """
    included = globs_regex(tuple(include))
    excluded = globs_regex(tuple(exclude))
    out: list[tuple[str, ScriptKind]] = []
    folders = [(os.fspath(root), "")]
    while folders:
        folder, prefix = folders.pop()
        if excluded is not None and prefix and excluded.match(prefix[:-1]):
            continue
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if name in SKIPPED_DIRS or name.endswith(".egg-info"):
                    continue
                try:
                    link = entry.is_symlink()
                except OSError:
                    link = False
                if not link:
                    folders.append((entry.path, f"{prefix}{name}/"))
                continue
            rel = prefix + name
            if excluded is not None and excluded.match(rel):
                continue
            kind: ScriptKind | None = None
            if included is not None and included.match(rel):
                kind = script_kind(rel) or "shell"
            elif "." not in name:
                try:
                    with open(entry.path, "rb") as fh:
                        head = fh.read(128)
                except OSError:
                    continue
                kind = script_kind(rel, head)
            if kind is not None:
                out.append((rel, kind))
    out.sort()
    return out


def read_script(path: str) -> str | None:
    """A file's text as ``open(path, encoding="utf-8", errors="replace")`` reads it (universal
    newlines), or None when it cannot be read; one read of the bytes, one decode."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 1 << 16)
        if data:
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            if len(chunks) > 1:
                data = b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def scan_tree(
    root: Path, include: list[str], exclude: list[str], engines: EngineNames
) -> list[Finding]:
    """Scan every script under ``root`` (see :func:`script_files`).

    Each file is read once; a shell script or Dockerfile none of whose lines the first look
    keeps (:class:`LineFilter`), or a Python file without :data:`_PYTHON_TRIGGERS`, has no
    finding and is not parsed.

    Returns:
        Findings of PB401-PB410, annotated ones carrying their suppression.
    """
    findings: list[Finding] = []
    filters: dict[str, LineFilter] = {}
    base = os.path.join(os.fspath(root), "")  # + rel: os.path.join(root, rel), faster
    for rel, kind in script_files(root, include, exclude):
        text = read_script(base + rel)
        if text is None:
            continue
        starts = None
        if kind == "python":
            if not any(t in text for t in _PYTHON_TRIGGERS):
                continue
        else:
            line_filter = filters.get(kind)
            if line_filter is None:
                line_filter = filters[kind] = LineFilter(kind, engines)
            starts = line_filter.starts(text)
            if not starts:
                continue
        findings.extend(FileScanner(text, rel, kind, engines, root).scan(starts))
    return findings
