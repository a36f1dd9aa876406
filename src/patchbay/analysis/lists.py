"""And-or lists, pipelines and redirections of the walk: which command reads what (a
here-document, a file, the previous command's output), where output goes, the scope of
``cd X && cmd``, failures swallowed by ``|| true``/``|| echo``, and fallbacks (``A || B``: one
change with an alternative)."""

from __future__ import annotations

import re

from .model import Modification
from .streams import Stdin, Stream
from .syntax import Node, statements
from .values import Val


class ListsMixin:
    """Lists and redirections for :class:`~.walk.Walker` (it holds the state)."""

    # -- and-or lists: swallowing, fallbacks, the scope of `cd X && ...`

    def flatten(self, node: Node) -> list[tuple[str | None, Node]]:
        out: list[tuple[str | None, Node]] = []
        op: str | None = None
        for child in node.children:
            if child.type in ("&&", "||"):
                op = child.type
            elif child.type == "list" or self.dup_only_list(child):
                inner = self.flatten(
                    child if child.type == "list" else child.child_by_field_name("body")
                )
                if inner:
                    out.append((op, inner[0][1]))
                    out.extend(inner[1:])
                op = None
            elif child.is_named and child.type != "comment":
                out.append((op, child))
                op = None
        return out

    def dup_only_list(self, node: Node) -> bool:
        """``a || echo failed >&2``: the grammar hangs the ``>&2`` on the whole list."""
        if node.type != "redirected_statement":
            return False
        body = node.child_by_field_name("body")
        redirects = [c for c in node.children if c.type.endswith("_redirect")]
        return (
            body is not None
            and body.type == "list"
            and all(re.search(r">&\s*\d+$", self.src.text(r)) for r in redirects)
        )

    def and_or(self, node: Node, items: list[tuple[str | None, Node]] | None = None) -> Stream:
        items = items if items is not None else self.flatten(node)
        saved_cwd = (self.state.cwd, self.state.cwd_written)
        groups: list[tuple[str | None, list[Modification], Node]] = []
        stream = Stream()
        for k, (op, child) in enumerate(items):
            before = len(self.mods)
            stream = self.statement(child)
            groups.append((op, self.mods[before:], child))
            # `cd X && cmd`: cmd runs in X, the script goes on where it was
            if k == len(items) - 1 and k > 0 and self.is_cd(items[0][1]):
                self.state.cwd, self.state.cwd_written = saved_cwd
        if any(self.is_cd(c) for _op, c in items[:-1]) and not self.is_cd(items[-1][1]):
            self.state.cwd, self.state.cwd_written = saved_cwd
        self.alternatives_and_swallowing(groups)
        return stream

    def is_cd(self, node: Node) -> bool:
        if node.type != "command":
            return False
        name = node.child_by_field_name("name")
        return name is not None and self.src.text(name) in ("cd", "pushd")

    def alternatives_and_swallowing(
        self, groups: list[tuple[str | None, list[Modification], Node]]
    ) -> None:
        for k, (_op, mods, _node) in enumerate(groups):
            if not mods:
                continue
            j = k + 1
            while j < len(groups) and groups[j][0] in ("&&",):
                j += 1
            while j < len(groups) and groups[j][0] == "||":
                nxt_mods, nxt = groups[j][1], groups[j][2]
                if nxt_mods:
                    # variant B when A fails: one change with alternatives
                    first = mods[0]
                    for alt in nxt_mods:
                        if alt in self.mods:
                            self.mods.remove(alt)
                        first.alternatives.append(alt)
                    groups[j] = (groups[j][0], [], nxt)
                else:
                    swallow = self.swallows(nxt, groups[j + 1 :])
                    if swallow:
                        for mod in mods:
                            mod.swallowed = mod.swallowed or swallow
                    break
                j += 1

    def swallows(self, node: Node, rest: list[tuple[str | None, list[Modification], Node]]) -> str:
        """``|| true``, ``|| :``, ``|| echo ...`` (unless the script still stops after it)."""
        text = self.src.text(node).strip()
        first = text.split()[0] if text.split() else ""
        if node.type == "compound_statement":
            inner = statements(node)
            if any(self.src.text(i).split()[0] in ("exit", "return", "false") for i in inner):
                return ""
            first = self.src.text(inner[0]).split()[0] if inner else ""
            if first in ("echo", "printf"):
                return f"{first} ..."
            return ""
        if first in ("true", ":", "/bin/true"):
            return first
        if first in ("echo", "printf", "log", "warn"):
            stops = ("exit", "return", "false", "kill")
            if any(self.src.text(n).split()[0] in stops for _o, _m, n in rest if self.src.text(n)):
                return ""
            return f"{first} ..."
        return ""

    # -- pipelines and redirections

    def pipeline(self, node: Node) -> Stream:
        stream = Stream()
        stdin: Stdin | None = None
        parts = [c for c in node.named_children if c.type != "comment"]
        for k, part in enumerate(parts):
            if k + 1 == len(parts):
                stream = self.statement(part, stdin)
                break
            # what a stage prints goes down the pipe, never to the enclosing `$(...)`: the
            # value of `$(echo X | base64 -d)` is the last stage's output, not X
            self.captures.append([])
            try:
                stream = self.statement(part, stdin)
            finally:
                printed = self.captures.pop()
            if stream.value is None and stream.file is None and printed:
                stream = printed[-1]
            stdin = Stdin("pipe", value=stream.value, file=stream.file, line=self.src.line(part))
        return stream

    def redirected(self, node: Node, stdin: Stdin | None) -> Stream:
        body = node.child_by_field_name("body")
        redirects = [c for c in node.children if c.type.endswith("_redirect")]
        tail: Node | None = None
        tail_op: str | None = None
        for r in redirects:
            if r.type == "heredoc_redirect":
                text = self.src.heredoc_body(r)
                start = next((c for c in r.children if c.type == "heredoc_start"), None)
                quoted = start is not None and any(q in self.src.text(start) for q in "'\"\\")
                end = next((c for c in r.children if c.type == "heredoc_end"), r)
                runtime = False
                if not quoted:
                    text, runtime = self.expand_heredoc(r, text)
                stdin = Stdin(
                    "heredoc",
                    text,
                    quoted=quoted,
                    line=self.src.line(r),
                    end_line=self.src.line(end),
                    delimiter=self.src.text(start).strip("'\"\\") if start is not None else "",
                    runtime=runtime,
                )
                for c in r.children:
                    if c.type in ("pipeline", "list") or c.type in ("&&", "||"):
                        if c.type in ("&&", "||"):
                            tail_op = c.type
                        else:
                            tail = c
            elif r.type == "herestring_redirect":
                word = r.named_children[-1] if r.named_children else None
                val = self.word(word) if word is not None else Val("")
                stdin = Stdin("herestring", val.text + "\n", value=val, line=self.src.line(r))
        if body is None:
            return Stream()
        if tail is not None and tail.type == "pipeline" and tail_op is None:
            # `cat <<EOF | git apply`: the here-document feeds the first command
            stream = self.statement_with(body, node, stdin)
            for part in [c for c in tail.named_children if c.type != "comment"]:
                pipe = Stdin("pipe", value=stream.value, file=stream.file, line=self.src.line(part))
                stream = self.statement(part, pipe)
            return stream
        if tail is not None:
            before = len(self.mods)
            stream = self.statement_with(body, node, stdin)
            first = (None, self.mods[before:], body)
            rest = self.flatten(tail) if tail.type == "list" else [(None, tail)]
            if rest:
                rest[0] = (tail_op, rest[0][1])
            groups = [first]
            saved_cwd = (self.state.cwd, self.state.cwd_written)
            for op, child in rest:
                b = len(self.mods)
                stream = self.statement(child)
                groups.append((op, self.mods[b:], child))
            if self.is_cd(body):
                self.state.cwd, self.state.cwd_written = saved_cwd
            self.alternatives_and_swallowing(groups)
            return stream
        return self.statement_with(body, node, stdin)

    def statement_with(self, body: Node, node: Node, stdin: Stdin | None) -> Stream:
        if body.type == "command":
            return self.command(body, stdin, outer=node)
        if body.type in ("while_statement", "for_statement"):
            return self.statement(body, stdin or self.file_stdin(node))
        if body.type in ("compound_statement", "subshell", "if_statement"):
            before = len(self.mods)
            self.statement(body, stdin)
            out = self.output_redirect(node)
            if out is not None:
                self.commands_write(out, node, before)
            return Stream()
        return self.statement(body, stdin)

    def file_stdin(self, node: Node) -> Stdin | None:
        for r in node.children:
            if r.type == "file_redirect" and self.src.text(r).lstrip().startswith("<"):
                dest = r.child_by_field_name("destination") or (
                    r.named_children[-1] if r.named_children else None
                )
                if dest is None:
                    continue
                if dest.type == "process_substitution":
                    inner = statements(dest)
                    stream = self.capture(inner)
                    return Stdin("pipe", value=stream.value, file=stream.file)
                val = self.word(dest)
                return Stdin("file", value=val, file=self.files.get(val.text))
        return None

    def output_redirect(self, node: Node) -> Val | None:
        for r in node.children:
            if r.type == "file_redirect":
                text = self.src.text(r).lstrip()
                if re.match(r"^\d*(>>?|&>>?|>\|)", text) and not re.search(r">&\s*\d", text):
                    dest = r.child_by_field_name("destination") or r.named_children[-1]
                    return self.word(dest)
        return None

    def commands_write(self, out: Val, node: Node, before: int) -> None:
        cmd = self.make_cmd("{", [], node, None)
        self.commands.write_file(self, cmd, out, ">")


def same_place(a: Modification, b: Modification) -> bool:
    if a.target is not None and b.target is not None:
        return a.target.path == b.target.path or a.target.root == b.target.root == "unknown"
    return a.mechanism == b.mechanism
