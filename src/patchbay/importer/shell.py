"""A reader for the shell scripts ``patchbay import`` converts; it parses, it never runs.

It covers POSIX sh and the bash that patch scripts use: simple commands with assignments and
redirections, here-documents (``<<``, ``<<-``, quoted or not), pipelines, ``&&``/``||`` lists,
``if``, ``for``, ``while``/``until``, ``case``, ``{ }`` and ``( )`` groups, function definitions,
``$(...)``, backquotes, ``${...}`` parameter forms, ``$'...'``, arrays, ``[[ ]]`` and ``(( ))``.
Every node keeps the lines it spans, here-document bodies included, so the importer can name
the script's lines for everything it converts or leaves.

Words keep their structure (:class:`Lit`, :class:`Param`, :class:`Subst`, :class:`Arith`) so
that expansion, done by the importer with what it knows of the script's variables, can tell a
literal from a computed value.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

# -- words ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lit:
    """Literal text; ``quoted`` when it came from quotes or a backslash escape (no globbing,
    no field splitting)."""

    text: str
    quoted: bool


@dataclass(frozen=True)
class Param:
    """A parameter expansion: ``$name``, ``${name}``, ``${name:-word}``, ``${#name}``, ...

    ``op`` is the operator (``""`` for none, ``":-"``, ``"#"``, ``"%%"``, ``"//"``, ``"len"``,
    ``"!"``, ...), ``arg`` the raw text after it, ``index`` an array subscript.
    """

    name: str
    op: str
    arg: str | None
    quoted: bool
    index: str | None = None


@dataclass(frozen=True)
class Subst:
    """A command substitution, ``$(...)`` or backquotes, with its raw text and first line."""

    text: str
    quoted: bool
    line: int


@dataclass(frozen=True)
class Arith:
    """An arithmetic expansion ``$((...))`` (never evaluated)."""

    text: str
    quoted: bool


Part = Lit | Param | Subst | Arith


@dataclass
class Word:
    """One shell word: its parts, its source text and its line."""

    parts: list[Part]
    raw: str
    line: int
    array: list[Word] | None = None  # NAME=(a b c): the elements

    @property
    def literal(self) -> str | None:
        """The word with quotes removed when it is literal text (no expansion), else None."""
        if any(not isinstance(p, Lit) for p in self.parts):
            return None
        return "".join(p.text for p in self.parts)  # type: ignore[union-attr]

    @property
    def quoted(self) -> bool:
        """Whether any part is quoted (a here-document delimiter so written keeps its body
        literal)."""
        return any(p.quoted for p in self.parts)


# -- nodes ------------------------------------------------------------------------------------


@dataclass
class Heredoc:
    """A here-document: delimiter, whether it was quoted (body literal), ``<<-`` tab
    stripping, the body, and the lines of the body's first line and of the delimiter line."""

    delimiter: str
    quoted: bool
    strip_tabs: bool
    line: int
    body: str = ""
    start: int = 0
    end: int = 0


@dataclass
class Redirect:
    """A redirection: operator, optional file descriptor, target word or here-document."""

    op: str
    fd: str
    target: Word | None = None
    heredoc: Heredoc | None = None


@dataclass
class Node:
    """Base of every command node: first and last line (here-document bodies included)."""

    line: int
    end: int = 0
    background: bool = False

    def last_line(self) -> int:
        """The last line the node spans, here-documents included."""
        return self.end


@dataclass
class Simple(Node):
    """A simple command: prefix assignments, words, redirections."""

    assigns: list[tuple[str, Word]] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)

    def last_line(self) -> int:
        ends = [r.heredoc.end for r in self.redirects if r.heredoc is not None]
        return max([self.end, *ends])

    @property
    def heredoc(self) -> Heredoc | None:
        """The (last) here-document feeding the command's standard input, if any."""
        docs = [r.heredoc for r in self.redirects if r.heredoc is not None and r.fd in ("", "0")]
        return docs[-1] if docs else None


def _last(nodes: list[Node], default: int) -> int:
    return max([default, *(n.last_line() for n in nodes)])


@dataclass
class Pipeline(Node):
    """Commands joined by ``|``, optionally negated with ``!``."""

    commands: list[Node] = field(default_factory=list)
    negated: bool = False

    def last_line(self) -> int:
        return _last(self.commands, self.end)


@dataclass
class AndOr(Node):
    """Pipelines joined by ``&&`` and ``||`` (``ops[i]`` joins ``items[i]`` and ``items[i+1]``)."""

    items: list[Node] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)

    def last_line(self) -> int:
        return _last(self.items, self.end)


@dataclass
class If(Node):
    """``if``/``elif`` clauses (condition, body) and an optional ``else`` body."""

    clauses: list[tuple[list[Node], list[Node]]] = field(default_factory=list)
    else_body: list[Node] | None = None
    redirects: list[Redirect] = field(default_factory=list)

    def last_line(self) -> int:
        nodes = [n for cond, body in self.clauses for n in (*cond, *body)]
        return _last([*nodes, *(self.else_body or [])], self.end)


@dataclass
class For(Node):
    """``for NAME in WORDS; do BODY; done`` (``words`` None: ``"$@"``; ``arith``: C-style)."""

    var: str = ""
    words: list[Word] | None = None
    body: list[Node] = field(default_factory=list)
    arith: str | None = None
    redirects: list[Redirect] = field(default_factory=list)

    def last_line(self) -> int:
        return _last(self.body, self.end)


@dataclass
class Loop(Node):
    """``while``/``until`` COND; do BODY; done."""

    kind: str = "while"
    cond: list[Node] = field(default_factory=list)
    body: list[Node] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)

    def last_line(self) -> int:
        return _last([*self.cond, *self.body], self.end)


@dataclass
class Case(Node):
    """``case WORD in PATTERNS) BODY;; ... esac``."""

    word: Word | None = None
    arms: list[tuple[list[Word], list[Node]]] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)

    def last_line(self) -> int:
        return _last([n for _, body in self.arms for n in body], self.end)


@dataclass
class Group(Node):
    """``{ BODY; }`` or, with ``subshell``, ``( BODY )``."""

    body: list[Node] = field(default_factory=list)
    subshell: bool = False
    redirects: list[Redirect] = field(default_factory=list)

    def last_line(self) -> int:
        return _last(self.body, self.end)


@dataclass
class FunctionDef(Node):
    """``name() BODY`` or ``function name BODY``."""

    name: str = ""
    body: Node | None = None

    def last_line(self) -> int:
        return max(self.end, self.body.last_line() if self.body else 0)


@dataclass
class Comment:
    """A ``#`` comment: its line, its text (without ``#``), and whether it is alone on its
    line."""

    line: int
    text: str
    own_line: bool


@dataclass
class Script:
    """A parsed script: its top-level commands and every comment by line."""

    path: Path
    text: str
    nodes: list[Node]
    comments: dict[int, Comment]

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")


# -- the parser -------------------------------------------------------------------------------

_META = frozenset(" \t\n;&|()<>")
_BLANK = " \t"
_RESERVED = re.compile(
    r"(if|then|elif|else|fi|for|select|while|until|do|done|case|esac|in|function|\{|\}|!|\[\[)"
    r"(?=[ \t\n;&|()<>]|$)"
)
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]\n]*\])?(\+?=)")
_REDIRECT = re.compile(r"(\d*)(>>|>\||>&|<<<|<<-|<<|<&|<>|>|<)|(&>>|&>)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARAM_OPS = (":-", ":=", ":+", ":?", "-", "=", "+", "?", "##", "#", "%%", "%", "//", "/")
_PARAM_OPS += ("^^", "^", ",,", ",", ":")


class ShellSyntaxError(InputError):
    """The script is not shell the reader understands (or not shell at all)."""


class _Parser:
    def __init__(self, text: str, path: Path, first_line: int = 1) -> None:
        self.s = text
        self.n = len(text)
        self.i = 0
        self.path = path
        self.first_line = first_line
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.pending: list[Heredoc] = []
        self.comments: dict[int, Comment] = {}

    # -- positions and errors

    def line_at(self, pos: int) -> int:
        return bisect_right(self.starts, pos) - 1 + self.first_line

    def error(self, msg: str, pos: int | None = None) -> ShellSyntaxError:
        return ShellSyntaxError(
            msg, file=self.path, line=self.line_at(self.i if pos is None else pos)
        )

    def at(self, text: str) -> bool:
        return self.s.startswith(text, self.i)

    def char(self, offset: int = 0) -> str:
        j = self.i + offset
        return self.s[j] if j < self.n else ""

    # -- blanks, comments, newlines

    def skip_blank(self) -> None:
        while self.i < self.n:
            c = self.s[self.i]
            if c in _BLANK:
                self.i += 1
            elif c == "\\" and self.char(1) == "\n":
                self.i += 2
            else:
                break

    def comment(self) -> None:
        start = self.i
        end = self.s.find("\n", start)
        end = self.n if end == -1 else end
        line_start = self.starts[bisect_right(self.starts, start) - 1]
        own = self.s[line_start:start].strip() == ""
        line = self.line_at(start)
        self.comments[line] = Comment(line, self.s[start + 1 : end], own)
        self.i = end

    def newline(self) -> None:
        self.i += 1
        pending, self.pending = self.pending, []
        for doc in pending:
            self.heredoc_body(doc)

    def skip_space(self) -> None:
        """Blanks, comments and newlines (reading pending here-document bodies)."""
        while True:
            self.skip_blank()
            c = self.char()
            if c == "#":
                self.comment()
            elif c == "\n":
                self.newline()
            else:
                return

    def heredoc_body(self, doc: Heredoc) -> None:
        doc.start = self.line_at(self.i)
        lines = []
        while True:
            if self.i >= self.n:
                raise ShellSyntaxError(
                    f"here-document <<{doc.delimiter} is not terminated (no line "
                    f"{doc.delimiter!r} before the end of the script)",
                    file=self.path,
                    line=doc.line,
                )
            end = self.s.find("\n", self.i)
            end = self.n if end == -1 else end
            line = self.s[self.i : end]
            if doc.strip_tabs:
                line = line.lstrip("\t")
            here = self.line_at(self.i)
            self.i = min(end + 1, self.n)
            if line == doc.delimiter:
                doc.end = here
                break
            lines.append(line + "\n")
        doc.body = "".join(lines)
        if not lines:
            doc.start = doc.end

    def reserved(self) -> str | None:
        m = _RESERVED.match(self.s, self.i)
        return m.group(1) if m else None

    def expect(self, word: str) -> None:
        self.skip_space()
        if self.reserved() != word:
            found = self.s[self.i : self.i + 20].split("\n")[0] or "end of script"
            raise self.error(f"expected '{word}', found {found!r}")
        self.i += len(word)

    # -- lists

    def program(self, stop: frozenset[str] = frozenset()) -> list[Node]:
        items: list[Node] = []
        while True:
            self.skip_space()
            if self.i >= self.n:
                if stop:
                    want = " or ".join(sorted(stop))
                    raise self.error(f"unexpected end of script (expected {want})")
                return items
            c = self.char()
            if c == ")" and ")" in stop:
                return items
            if self.at(";;") and ";;" in stop:
                return items
            if self.at(";&") and ";;" in stop:
                return items
            word = self.reserved()
            if word is not None and word in stop:
                return items
            if word in ("then", "elif", "else", "fi", "do", "done", "esac", "}", "in"):
                raise self.error(f"unexpected '{word}'")
            if c in ";&|)":
                raise self.error(f"unexpected {c!r}")
            node = self.and_or()
            items.append(node)
            self.skip_blank()
            c = self.char()
            if c == ";" and not self.at(";;") and not self.at(";&"):
                self.i += 1
            elif c == "&" and not self.at("&&"):
                node.background = True
                self.i += 1
            elif c in ("", "\n", "#", ")") or self.at(";;") or self.at(";&"):
                pass
            elif self.reserved() in stop:
                pass
            else:
                raise self.error(f"unexpected {self.s[self.i : self.i + 10]!r}")

    def and_or(self) -> Node:
        start = self.i
        first = self.pipeline()
        items, ops = [first], []
        while True:
            self.skip_blank()
            if self.at("&&") or self.at("||"):
                ops.append(self.s[self.i : self.i + 2])
                self.i += 2
                self.skip_space()
                items.append(self.pipeline())
            else:
                break
        if not ops:
            return first
        return AndOr(line=self.line_at(start), end=self.line_at(self.i - 1), items=items, ops=ops)

    def pipeline(self) -> Node:
        self.skip_blank()
        start = self.i
        negated = False
        if self.reserved() == "!":
            negated = True
            self.i += 1
            self.skip_blank()
        commands = [self.command()]
        while True:
            self.skip_blank()
            if self.char() == "|" and not self.at("||"):
                self.i += 2 if self.at("|&") else 1
                self.skip_space()
                commands.append(self.command())
            else:
                break
        if len(commands) == 1 and not negated:
            return commands[0]
        return Pipeline(
            line=self.line_at(start),
            end=self.line_at(self.i - 1),
            commands=commands,
            negated=negated,
        )

    # -- commands

    def command(self) -> Node:
        self.skip_blank()
        start = self.i
        line = self.line_at(start)
        word = self.reserved()
        node: Node
        if word == "if":
            node = self.if_clause(line)
        elif word in ("for", "select"):
            node = self.for_clause(line)
        elif word in ("while", "until"):
            node = self.loop_clause(line, word)
        elif word == "case":
            node = self.case_clause(line)
        elif word == "{":
            self.i += 1
            body = self.program(frozenset({"}"}))
            self.expect("}")
            node = Group(line=line, body=body)
        elif word == "function":
            self.i += len("function")
            self.skip_blank()
            name = self.word().raw
            self.skip_blank()
            if self.at("()"):
                self.i += 2
            elif self.char() == "(":
                self.i += 1
                self.skip_blank()
                if self.char() != ")":
                    raise self.error("expected ')' after 'function NAME ('")
                self.i += 1
            self.skip_space()
            body = self.command()
            return FunctionDef(line=line, end=self.line_at(self.i - 1), name=name, body=body)
        elif word == "[[":
            return self.double_bracket(line)
        elif self.at("(("):
            return self.arith_command(line)
        elif self.char() == "(":
            self.i += 1
            body = self.program(frozenset({")"}))
            self.skip_space()
            if self.char() != ")":
                raise self.error("expected ')'")
            self.i += 1
            node = Group(line=line, body=body, subshell=True)
        elif word in ("then", "elif", "else", "fi", "do", "done", "esac", "}", "in"):
            raise self.error(f"unexpected '{word}'")
        else:
            return self.simple(line)
        redirects = self.trailing_redirects()
        if redirects and hasattr(node, "redirects"):
            node.redirects.extend(redirects)  # type: ignore[attr-defined]
        node.end = self.line_at(self.i - 1)
        return node

    def trailing_redirects(self) -> list[Redirect]:
        out = []
        while True:
            self.skip_blank()
            r = self.redirect()
            if r is None:
                return out
            out.append(r)

    def if_clause(self, line: int) -> If:
        self.i += 2
        node = If(line=line)
        cond = self.program(frozenset({"then"}))
        self.expect("then")
        body = self.program(frozenset({"elif", "else", "fi"}))
        node.clauses.append((cond, body))
        while True:
            self.skip_space()
            word = self.reserved()
            if word == "elif":
                self.i += 4
                cond = self.program(frozenset({"then"}))
                self.expect("then")
                body = self.program(frozenset({"elif", "else", "fi"}))
                node.clauses.append((cond, body))
            elif word == "else":
                self.i += 4
                node.else_body = self.program(frozenset({"fi"}))
            elif word == "fi":
                self.i += 2
                return node
            else:
                raise self.error("expected 'fi'")

    def for_clause(self, line: int) -> For:
        self.i += 3 if self.at("for") else 6
        self.skip_blank()
        node = For(line=line)
        if self.at("(("):
            end = self.s.find("))", self.i)
            if end == -1:
                raise self.error("unterminated 'for ((')")
            node.arith = self.s[self.i + 2 : end]
            self.i = end + 2
        else:
            node.var = self.word().raw
            self.skip_space()
            if self.reserved() == "in":
                self.i += 2
                node.words = []
                while True:
                    self.skip_blank()
                    c = self.char()
                    if c in ("", "\n", ";", "#"):
                        break
                    node.words.append(self.word())
        self.skip_blank()
        if self.char() == ";":
            self.i += 1
        self.expect("do")
        node.body = self.program(frozenset({"done"}))
        self.expect("done")
        return node

    def loop_clause(self, line: int, kind: str) -> Loop:
        self.i += len(kind)
        node = Loop(line=line, kind=kind)
        node.cond = self.program(frozenset({"do"}))
        self.expect("do")
        node.body = self.program(frozenset({"done"}))
        self.expect("done")
        return node

    def case_clause(self, line: int) -> Case:
        self.i += 4
        self.skip_blank()
        node = Case(line=line, word=self.word())
        self.expect("in")
        while True:
            self.skip_space()
            if self.reserved() == "esac":
                self.i += 4
                return node
            if self.i >= self.n:
                raise self.error("expected 'esac'")
            if self.char() == "(":
                self.i += 1
            patterns = []
            while True:
                self.skip_blank()
                patterns.append(self.word())
                self.skip_blank()
                c = self.char()
                if c == "|":
                    self.i += 1
                elif c == ")":
                    self.i += 1
                    break
                else:
                    raise self.error("expected ')' after a case pattern")
            body = self.program(frozenset({";;", "esac"}))
            self.skip_space()
            for term in (";;&", ";;", ";&"):
                if self.at(term):
                    self.i += len(term)
                    break
            node.arms.append((patterns, body))

    def double_bracket(self, line: int) -> Simple:
        start = self.i
        self.i += 2
        while True:
            if self.i >= self.n:
                raise self.error("unterminated '[['", start)
            c = self.char()
            if c in "'\"":
                self.skip_quoted()
            elif c == "\\":
                self.i += 2
            elif self.at("]]") and self.s[self.i - 1] in " \t":
                self.i += 2
                break
            else:
                self.i += 1
        inner = self.s[start + 2 : self.i - 2].strip()
        node = Simple(
            line=line,
            words=[Word([Lit("[[", False)], "[[", line), Word([Lit(inner, True)], inner, line)],
        )
        node.redirects = self.trailing_redirects()
        node.end = self.line_at(self.i - 1)
        return node

    def arith_command(self, line: int) -> Simple:
        end = self.s.find("))", self.i)
        if end == -1:
            raise self.error("unterminated '(('")
        inner = self.s[self.i + 2 : end]
        self.i = end + 2
        return Simple(
            line=line,
            end=self.line_at(self.i - 1),
            words=[Word([Lit("((", False)], "((", line), Word([Lit(inner, True)], inner, line)],
        )

    def skip_quoted(self) -> None:
        q = self.char()
        j = self.i + 1
        while j < self.n and self.s[j] != q:
            j += 2 if (q == '"' and self.s[j] == "\\") else 1
        if j >= self.n:
            raise self.error(f"unterminated {q} quote")
        self.i = j + 1

    def simple(self, line: int) -> Node:
        node = Simple(line=line)
        while True:
            self.skip_blank()
            c = self.char()
            if (c == "" or c in "\n;&|)") and not self.at("&>"):
                break
            if c == "#":
                break
            if c == "(":
                if len(node.words) == 1 and not node.assigns and not node.redirects:
                    return self.function_def(node.words[0], line)
                if node.words and node.words[-1].raw.endswith("=") and self.s[self.i - 1] == "=":
                    node.words[-1].array = self.array_items()
                    continue
                raise self.error("unexpected '('")
            redirect = self.redirect()
            if redirect is not None:
                node.redirects.append(redirect)
                continue
            if not node.words:
                m = _ASSIGN.match(self.s, self.i)
                if m:
                    self.i = m.end()
                    if self.char() == "(":
                        value = Word([], "", self.line_at(self.i))
                        value.array = self.array_items()
                    elif self.char() == "" or self.char() in _META:
                        value = Word([Lit("", True)], "", self.line_at(self.i))
                    else:
                        value = self.word()
                    node.assigns.append((m.group(1), value))
                    continue
            node.words.append(self.word())
        if not node.words and not node.assigns and not node.redirects:
            raise self.error(f"unexpected {self.s[self.i : self.i + 10]!r}")
        node.end = self.line_at(self.i - 1 if self.i > 0 else 0)
        return node

    def function_def(self, name: Word, line: int) -> FunctionDef:
        self.i += 1
        self.skip_blank()
        if self.char() != ")":
            raise self.error("expected ')' in a function definition")
        self.i += 1
        self.skip_space()
        body = self.command()
        return FunctionDef(line=line, end=self.line_at(self.i - 1), name=name.raw, body=body)

    def array_items(self) -> list[Word]:
        self.i += 1
        items = []
        while True:
            self.skip_space()
            c = self.char()
            if c == ")":
                self.i += 1
                return items
            if c == "":
                raise self.error("unterminated array '('")
            items.append(self.word())

    def redirect(self) -> Redirect | None:
        m = _REDIRECT.match(self.s, self.i)
        if m is None:
            return None
        at_paren = m.end() < self.n and self.s[m.end()] == "("
        if self.s[m.end() - 1] in "<>" and at_paren and m.group(1) == "":
            return None  # <(...) / >(...): a process substitution word
        op = m.group(2) or m.group(3)
        fd = m.group(1) or ""
        self.i = m.end()
        self.skip_blank()
        if op in ("<<", "<<-"):
            delim = self.word()
            doc = Heredoc(
                delimiter="".join(p.text for p in delim.parts if isinstance(p, Lit)) or delim.raw,
                quoted=delim.quoted,
                strip_tabs=op == "<<-",
                line=self.line_at(self.i - 1),
            )
            self.pending.append(doc)
            return Redirect(op=op, fd=fd, heredoc=doc)
        if self.char() == "" or self.char() in "\n;&|)":
            raise self.error(f"redirection {op} without a target")
        return Redirect(op=op, fd=fd, target=self.word())

    # -- words

    def word(self) -> Word:
        start = self.i
        line = self.line_at(start)
        parts: list[Part] = []
        buf: list[str] = []

        def flush() -> None:
            if buf:
                parts.append(Lit("".join(buf), False))
                buf.clear()

        if self.char() in "<>" and self.char(1) == "(":
            j = self.matching_paren(self.i + 1)
            parts.append(Subst(self.s[self.i + 2 : j], False, line))
            self.i = j + 1
            return Word(parts, self.s[start : self.i], line)
        while self.i < self.n:
            c = self.s[self.i]
            if c in _META:
                break
            if c == "\\":
                nxt = self.char(1)
                if nxt == "\n":
                    self.i += 2
                    continue
                flush()
                if nxt:
                    parts.append(Lit(nxt, True))
                self.i += 2
            elif c == "'":
                j = self.s.find("'", self.i + 1)
                if j == -1:
                    raise self.error("unterminated ' quote")
                flush()
                parts.append(Lit(self.s[self.i + 1 : j], True))
                self.i = j + 1
            elif c == '"':
                flush()
                self.i += 1
                parts.extend(self.double_quoted())
            elif c == "$":
                flush()
                parts.append(self.dollar(quoted=False))
            elif c == "`":
                flush()
                parts.append(self.backquote(quoted=False))
            else:
                buf.append(c)
                self.i += 1
        flush()
        if self.i == start:
            raise self.error(f"unexpected {self.s[self.i : self.i + 10]!r}")
        return Word(parts, self.s[start : self.i], line)

    def double_quoted(self) -> list[Part]:
        start = self.i - 1
        parts: list[Part] = []
        buf: list[str] = []

        def flush() -> None:
            parts.append(Lit("".join(buf), True))
            buf.clear()

        while True:
            if self.i >= self.n:
                raise self.error('unterminated " quote', start)
            c = self.s[self.i]
            if c == '"':
                self.i += 1
                break
            if c == "\\" and self.char(1) in ('"', "\\", "$", "`", "\n"):
                if self.char(1) != "\n":
                    buf.append(self.char(1))
                self.i += 2
            elif c == "$" and self.char(1) not in ('"', ""):
                flush()
                parts.append(self.dollar(quoted=True))
            elif c == "`":
                flush()
                parts.append(self.backquote(quoted=True))
            else:
                buf.append(c)
                self.i += 1
        flush()
        return [p for p in parts if not (isinstance(p, Lit) and p.text == "")] or [Lit("", True)]

    def dollar(self, quoted: bool) -> Part:
        start = self.i
        nxt = self.char(1)
        line = self.line_at(start)
        if nxt == "(":
            if self.char(2) == "(":
                j = self.matching_paren(self.i + 1)
                self.i = j + 1
                return Arith(self.s[start + 3 : j - 1], quoted)
            j = self.matching_paren(self.i + 1)
            self.i = j + 1
            return Subst(self.s[start + 2 : j], quoted, line)
        if nxt == "{":
            j = self.matching_brace(self.i + 1)
            self.i = j + 1
            return _param(self.s[start + 2 : j], quoted)
        if nxt == "'" and not quoted:
            j = self.i + 2
            while j < self.n and self.s[j] != "'":
                j += 2 if self.s[j] == "\\" else 1
            if j >= self.n:
                raise self.error("unterminated $' quote")
            self.i = j + 1
            return Lit(_ansi_c(self.s[start + 2 : j]), True)
        if nxt == '"' and not quoted:
            self.i += 2
            parts = self.double_quoted()
            return parts[0] if len(parts) == 1 else Lit("".join(_flat(parts)), True)
        m = _NAME.match(self.s, self.i + 1)
        if m:
            self.i = m.end()
            return Param(m.group(0), "", None, quoted)
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            self.i += 2
            return Param(nxt, "", None, quoted)
        self.i += 1
        return Lit("$", quoted)

    def backquote(self, quoted: bool) -> Subst:
        start = self.i
        j = self.i + 1
        out = []
        while j < self.n and self.s[j] != "`":
            if self.s[j] == "\\" and j + 1 < self.n and self.s[j + 1] in "`$\\":
                out.append(self.s[j + 1])
                j += 2
                continue
            out.append(self.s[j])
            j += 1
        if j >= self.n:
            raise self.error("unterminated ` quote", start)
        self.i = j + 1
        return Subst("".join(out), quoted, self.line_at(start))

    def matching_paren(self, open_index: int) -> int:
        """Index of the ')' closing the '(' at ``open_index``, skipping quotes and comments."""
        depth = 0
        j = open_index
        while j < self.n:
            c = self.s[j]
            if c == "\\":
                j += 2
                continue
            if c == "'":
                k = self.s.find("'", j + 1)
                if k == -1:
                    break
                j = k + 1
                continue
            if c == '"':
                j += 1
                while j < self.n and self.s[j] != '"':
                    j += 2 if self.s[j] == "\\" else 1
                j += 1
                continue
            if c == "#" and (j == 0 or self.s[j - 1] in " \t\n"):
                k = self.s.find("\n", j)
                j = self.n if k == -1 else k
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return j
            j += 1
        raise self.error("unterminated '$(' or '('", open_index)

    def matching_brace(self, open_index: int) -> int:
        depth = 0
        j = open_index
        while j < self.n:
            c = self.s[j]
            if c == "\\":
                j += 2
                continue
            if c in "'\"":
                k = j + 1
                while k < self.n and self.s[k] != c:
                    k += 2 if (c == '"' and self.s[k] == "\\") else 1
                j = k + 1
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return j
            j += 1
        raise self.error("unterminated '${'", open_index)


def _flat(parts: list[Part]) -> list[str]:
    return [p.text if isinstance(p, Lit) else "" for p in parts]


def _param(inner: str, quoted: bool) -> Param:
    if inner.startswith("#") and len(inner) > 1 and _NAME.fullmatch(inner[1:]):
        return Param(inner[1:], "len", None, quoted)
    if inner.startswith("!"):
        return Param(inner[1:], "!", None, quoted)
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*|\d+|[@*#?$!-])(\[[^\]]*\])?", inner)
    if m is None:
        return Param(inner, "?bad", None, quoted)
    name = m.group(1)
    index = m.group(2)[1:-1] if m.group(2) else None
    rest = inner[m.end() :]
    if not rest:
        return Param(name, "", None, quoted, index)
    for op in _PARAM_OPS:
        if rest.startswith(op):
            return Param(name, op, rest[len(op) :], quoted, index)
    return Param(name, "?bad", rest, quoted, index)


_ANSI = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b"}
_ANSI |= {"e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v", "?": "?"}


def _ansi_c(body: str) -> str:
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _ANSI:
                out.append(_ANSI[nxt])
                i += 2
                continue
            m = re.match(r"x([0-9A-Fa-f]{1,2})|([0-7]{1,3})", body[i + 1 :])
            if m:
                out.append(chr(int(m.group(1), 16) if m.group(1) else int(m.group(2), 8)))
                i += 1 + m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_script(text: str, path: Path) -> Script:
    """Parse a shell script.

    Args:
        text: the script's text.
        path: the script (for error messages).

    Returns:
        The :class:`Script` with its top-level commands and comments.

    Raises:
        ShellSyntaxError: unterminated quotes, here-documents or compound commands, or a
            token where none may be; the error names ``path:line``.
    """
    parser = _Parser(text, path)
    nodes = parser.program()
    if parser.pending:
        raise ShellSyntaxError(
            f"here-document <<{parser.pending[0].delimiter} has no body",
            file=path,
            line=parser.pending[0].line,
        )
    return Script(path=path, text=text, nodes=nodes, comments=parser.comments)


def parse_fragment(text: str, path: Path, line: int) -> list[Node]:
    """Parse a piece of shell (a command substitution's text, a trap) starting at ``line``.

    Raises:
        ShellSyntaxError: as :func:`parse_script`.
    """
    parser = _Parser(text, path, first_line=line)
    nodes = parser.program()
    return nodes


def parse_word(text: str, path: Path, line: int, *, heredoc: bool = False) -> Word:
    """Parse ``text`` as the inside of a double-quoted word (for ``${x:-word}`` arguments and
    the bodies of unquoted here-documents, where ``$``, backquotes and ``\\`` are special).

    Raises:
        ShellSyntaxError: an unterminated ``$(`` or ``${``.
    """
    parser = _Parser(text, path, first_line=line)
    parts: list[Part] = []
    buf: list[str] = []

    def flush() -> None:
        if buf:
            parts.append(Lit("".join(buf), True))
            buf.clear()

    specials = ("$", "`", "\\", "\n") if heredoc else ("$", "`", "\\", "\n", '"', "'")
    while parser.i < parser.n:
        c = parser.s[parser.i]
        if not heredoc and c == '"':
            parser.i += 1  # quote removal: ${x:-"a b"} is a b
        elif not heredoc and c == "'":
            j = parser.s.find("'", parser.i + 1)
            j = parser.n if j == -1 else j
            buf.append(parser.s[parser.i + 1 : j])
            parser.i = j + 1
        elif c == "\\" and parser.char(1) in specials:
            if parser.char(1) != "\n":
                buf.append(parser.char(1))
            parser.i += 2
        elif c == "$" and parser.char(1) != "":
            flush()
            parts.append(parser.dollar(quoted=True))
        elif c == "`":
            flush()
            parts.append(parser.backquote(quoted=True))
        else:
            buf.append(c)
            parser.i += 1
    flush()
    return Word(parts or [Lit("", True)], text, line)
