"""Words of the walk: a word node's value (quotes, escapes, ``$VAR``, ``${VAR:-x}`` and the
other parameter operators, arrays, ``$@``, ``$(...)`` run in a captured sub-walk, here-document
expansion), as :class:`~.values.Val` values."""

from __future__ import annotations

import codecs
import re

from .streams import Stream
from .syntax import Node, statements
from .values import Val, basename, dirname, unknown

_SPACE = re.compile(r"\s")
_MANY = re.compile(r'"?\$\{?(@|\*|[A-Za-z_]\w*\[[@*]\])\}?"?')


class WordsMixin:
    """Word expansion for :class:`~.walk.Walker` (it holds the state these methods read)."""

    def fields(self, node: Node) -> list[Val]:
        """A word as the arguments it becomes (``"${arr[@]}"`` and ``$@`` become several)."""
        t = node.type
        if t == "word":  # the common case: a literal (backslashes removed)
            data = self.src.data[node.start_byte : node.end_byte]
            if b"\\" not in data:
                return [Val(data.decode("utf-8", "replace"))]
        if t in ("string", "expansion", "simple_expansion", "concatenation"):
            many = self.many(node)
            if many is not None:
                return many
        val = self.word(node)
        unquoted = t in ("simple_expansion", "expansion", "command_substitution")
        if unquoted and val.known and _SPACE.search(val.text.strip()):
            return [Val(p, val.how, val.unknown) for p in val.text.split()]
        return [val]

    def many(self, node: Node) -> list[Val] | None:
        text = self.src.text(node)
        m = _MANY.fullmatch(text) if "@" in text or "*" in text else None
        if not m:
            return None
        what = m.group(1)
        if what in ("@", "*"):
            return list(self.state.args)
        name = what.split("[", 1)[0]
        return list(self.state.arrays.get(name, self.state.vars.get(name, [])))

    def word(self, node: Node | None) -> Val:
        """The value of one word node (first alternative of each variable)."""
        if node is None:
            return Val("")
        t = node.type
        text = self.src.text(node)
        if t in ("word", "number", "extglob_pattern", "regex", "special_variable_name"):
            return Val(re.sub(r"\\(.)", r"\1", text) if "\\" in text else text)
        if t == "raw_string":
            return Val(text[1:-1])
        if t == "ansi_c_string":
            try:
                return Val(codecs.decode(text[2:-1], "unicode_escape"))
            except (UnicodeDecodeError, ValueError):
                return Val(text[2:-1])
        if t in ("string", "translated_string"):
            return self.parts(node, quoted=True)
        if t == "concatenation":
            return self.parts(node, quoted=False)
        if t == "simple_expansion":
            name = text[1:]
            return self.var(name, text)
        if t == "expansion":
            return self.expansion(node)
        if t == "command_substitution":
            return self.substitution(node)
        if t == "arithmetic_expansion":
            return unknown(text, "an arithmetic expansion")
        if t == "process_substitution":
            return unknown(text, "a process substitution")
        if t == "command_name":
            return self.word(node.named_children[0]) if node.named_children else Val(text)
        return Val(text)

    def parts(self, node: Node, *, quoted: bool) -> Val:
        out = Val("")
        pos = node.start_byte + (1 if quoted and self.src.text(node).startswith('"') else 0)
        end = node.end_byte - (1 if quoted and self.src.text(node).endswith('"') else 0)
        if node.type == "translated_string":
            pos += 1
        for child in node.children:
            if child.start_byte < pos or not child.is_named:
                continue
            if child.start_byte > pos:
                out += Val(self._literal(self.src.data[pos : child.start_byte], quoted))
            if child.type == "string_content":
                out += Val(self._literal(self.src.data[child.start_byte : child.end_byte], quoted))
            else:
                out += self.word(child)
            pos = child.end_byte
        if pos < end:
            out += Val(self._literal(self.src.data[pos:end], quoted))
        return out

    @staticmethod
    def _literal(data: bytes, quoted: bool) -> str:
        text = data.decode("utf-8", "replace")
        if quoted:  # `\<newline>` is a line continuation, removed whole, quoted or not
            return re.sub(r'\\([$`"\\\n])', lambda m: "" if m[1] == "\n" else m[1], text)
        return re.sub(r"\\(.)", r"\1", re.sub(r"\\\n", "", text))

    def var(self, name: str, written: str) -> Val:
        if name in ("HOME",):
            values = self.state.vars.get(name)
            return values[0] if values else unknown(written, "$HOME is known only at run time")
        if name in ("PWD",):
            return self.state.cwd or Val(".")
        if name in ("$", "!", "?", "#", "-", "RANDOM"):
            return unknown(written, f"{written} is known only at run time")
        if name == "BASH_SOURCE" and name not in self.state.vars:
            return self.lookup("0")[0]  # `$BASH_SOURCE`: the file the statement is in
        values = self.lookup(name)
        if values:
            return values[0]
        return unknown(written, f"${name} is not set by the script")

    def expansion(self, node: Node) -> Val:
        text = self.src.text(node)
        named = node.named_children
        name_node = next(
            (c for c in named if c.type in ("variable_name", "special_variable_name")), None
        )
        if name_node is None:
            sub = next((c for c in named if c.type == "subscript"), None)
            if sub is not None:
                arr = sub.child_by_field_name("name")
                idx = sub.child_by_field_name("index")
                arr_name = self.src.text(arr) if arr else ""
                if arr_name == "BASH_SOURCE" and arr_name not in self.state.arrays:
                    return self.lookup("0")[0]  # the file the statement is in, as `$0`
                items = self.state.arrays.get(arr_name, [])
                idx_text = self.src.text(idx) if idx is not None else ""
                if idx_text.isdigit() and int(idx_text) < len(items):
                    return items[int(idx_text)]
                if items:
                    return Val(" ".join(i.text for i in items), items[0].how)
            return unknown(text, f"{text} is known only at run time")
        name = self.src.text(name_node)
        if text.startswith("${#"):
            return unknown(text, "a length")
        op = None
        for i, c in enumerate(node.children):
            if node.field_name_for_child(i) == "operator":
                op = c.type
                break
        values = self.lookup(name)
        current = values[0] if values and (values[0].text or not values[0].known) else None
        arg_nodes = [c for c in named if c is not name_node]
        arg = Val("")
        for a in arg_nodes:
            arg += self.word(a)
        if op in (":-", "-", ":=", "="):
            if current is not None and current.known:
                return current
            if current is not None and not current.known and current.text != f"${name}":
                return current
            if op in (":=", "="):
                self.state.vars[name] = [arg]
            default = Val(
                arg.text,
                arg.how or (f"default of ${{{name}}}" if arg.installed else ""),
                arg.unknown,
            )
            return default
        if op in (":+", "+"):
            return arg if current is not None and current.text else Val("")
        if op in ("%", "%%", "#", "##") and current is not None:
            pattern = self.src.text(arg_nodes[0]) if arg_nodes else ""
            return _strip(current, op, pattern)
        if op in ("/", "//") and current is not None:
            return unknown(text, "a substitution in a value")
        if current is not None:
            return current
        return self.var(name, text)

    def substitution(self, node: Node) -> Val:
        inner = statements(node)
        stream = self.capture(inner)
        if stream.value is not None:
            return stream.value
        text = self.src.text(node)
        return unknown(text, f"{text} is known only at run time")

    def capture(self, inner: list[Node]) -> Stream:
        """Run statements whose output is captured (``$(...)``): the last thing printed."""
        saved = self.state
        self.state = self.state.copy()
        self.captures.append([])
        stream = Stream()
        try:
            for n in inner:
                stream = self.statement(n)
        finally:
            printed = self.captures.pop()
            self.state = saved
        if stream.value is None and printed:
            stream = printed[-1]
        return stream

    def expand_heredoc(self, redirect: Node, text: str) -> tuple[str, bool]:
        """An unquoted here-document's text with the variables the walk knows expanded
        (unknown ones stay as written), and whether any value is known only at run time."""
        body = next((c for c in redirect.children if c.type == "heredoc_body"), None)
        runtime = False
        if body is None:
            return text, False
        out = []
        pos = body.start_byte
        first_line_start = self.src.data.rfind(b"\n", 0, body.start_byte) + 1
        out.append(self.src.data[first_line_start:pos].decode("utf-8", "replace"))
        for child in body.named_children:
            if child.type in ("simple_expansion", "expansion", "command_substitution"):
                out.append(self.src.data[pos : child.start_byte].decode("utf-8", "replace"))
                val = self.word(child)
                runtime = runtime or not val.known or val.text.startswith("/@")
                out.append(
                    val.text if val.known or val.text.startswith("/@") else self.src.text(child)
                )
                pos = child.end_byte
        end = next((c for c in redirect.children if c.type == "heredoc_end"), None)
        stop = (
            self.src.data.rfind(b"\n", 0, end.start_byte) + 1 if end is not None else body.end_byte
        )
        out.append(self.src.data[pos:stop].decode("utf-8", "replace"))
        joined = "".join(out)
        return re.sub(r"\\([$`\\])", r"\1", joined), runtime


def _strip(v: Val, op: str, pattern: str) -> Val:
    """``${x%/*}`` and friends for the common patterns (a suffix or prefix up to a ``/``)."""
    text = v.text
    if op in ("%", "%%") and pattern in ("/*",):
        return dirname(v) if op == "%" else Val(text.split("/", 1)[0], v.how, v.unknown)
    if op in ("#", "##") and pattern in ("*/",):
        return basename(v) if op == "##" else Val(text.split("/", 1)[-1], v.how, v.unknown)
    if op in ("%", "%%") and "*" not in pattern and text.endswith(pattern):
        return Val(text[: len(text) - len(pattern)], v.how, v.unknown)
    if op in ("#", "##") and "*" not in pattern and text.startswith(pattern):
        return Val(text[len(pattern) :], v.how, v.unknown)
    return unknown(f"${{...{op}{pattern}}}", "a pattern removal") if "*" in pattern else v
