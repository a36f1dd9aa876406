"""What Python code does to files, read with :mod:`ast` and never run.

:mod:`.pysnippet` answers the import's strict question (exactly which literal ``replace`` edits,
or *not understood*); this module answers the analyser's tolerant one, for heredoc snippets,
``python -c`` programs and ``.py`` patcher files alike: which statements write, copy, remove or
edit which paths, which shell commands they run (``subprocess``, ``os.system``), which
environment they inject (``PYTHONPATH``), and what the code prints. It follows assignments,
helper functions (a path returned by one function and written in another), ``with`` blocks,
loops over literal lists, and both branches of ``if``/``try``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .memo import by_code
from .pysnippet import (
    PyHandle,
    PyList,
    PyModule,
    PyPath,
    PyStr,
    PyText,
    PyUnknown,
    _Reader,
    parse_cached,
)

_COPY = {
    "shutil.copy",
    "shutil.copy2",
    "shutil.copyfile",
    "shutil.copytree",
    "shutil.move",
    "os.replace",
    "os.rename",
    "os.symlink",
    "os.link",
}
_REMOVE = {"os.remove", "os.unlink", "shutil.rmtree", "os.rmdir"}
_SHELL = {
    "subprocess.run",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "subprocess.Popen",
    "os.system",
    "os.popen",
}


@dataclass
class Effect:
    """One thing the code does outside itself.

    Attributes:
        kind: ``write``, ``edit`` (read, changed and written back), ``copy``, ``remove``,
            ``shell`` (a command run), ``env`` (an environment variable set).
        line: 1-based line in the code.
        path: the path written (``/@site/...`` when computed from an install root), or the
            variable name for ``env``.
        expr: the expression as written (``os.path.join(site, "vllm/envs.py")``).
        how: where the path comes from (``site = sysconfig purelib``).
        argv: for ``shell``: the command's words (None: a shell string, in ``text``).
        text: a shell command string, or the value assigned for ``env``.
        cwd: the ``cwd=`` of a ``subprocess`` call.
        edits: literal ``(old, new)`` replacements made to ``path`` before it was written.
    """

    kind: str
    line: int
    path: str = ""
    expr: str = ""
    how: str = ""
    argv: list[str] | None = None
    text: str = ""
    cwd: str | None = None
    edits: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class PythonFacts:
    """What :func:`read_python` found.

    Attributes:
        effects: every effect, in the order met.
        printed: the last path or text printed at the top level (``print(find_spec(...))``).
        uncalled: functions defined and never called (their effects are in ``effects`` too,
            marked by ``uncalled_lines``).
        uncalled_lines: lines of effects that sit in functions never called.
        error: the code does not parse (the message), or None.
    """

    effects: list[Effect] = field(default_factory=list)
    printed: Any = None
    uncalled: list[str] = field(default_factory=list)
    uncalled_lines: set[int] = field(default_factory=set)
    error: str | None = None
    packages: list[str] = field(default_factory=list)


def _is_sys_argv(node: ast.expr) -> bool:
    """``sys.argv`` (what ``ast.unparse`` spells so), judged on the tree, not its text."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "argv"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def _text_of(value: Any) -> str | None:
    if isinstance(value, (PyStr, PyPath)):
        return value.text if isinstance(value, PyStr) else value.path
    return None


class _Facts(_Reader):
    def __init__(self, argv: list[str], getenv: Callable[[str], str | None]) -> None:
        super().__init__(argv, getenv)
        self.facts = PythonFacts()
        self.origin: dict[str, str] = {}  # name -> "name = expr" of its path value
        self.functions: dict[str, ast.FunctionDef] = {}
        self.called: set[str] = set()
        self.depth = 0
        self.returned: Any = None
        self.results: dict[int, Any] = {}
        self.read_paths: set[str] = set()  # files the code read (a write of one is an edit)
        self.argv_how = {
            i: f"sys.argv[{i}] = {a}" for i, a in enumerate(argv) if a.startswith(("/", "$"))
        }

    # -- values (tolerant: anything not followed is PyUnknown)

    def value(self, node: ast.expr) -> Any:  # type: ignore[override]
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else None
            if name in self.functions:
                return self.call_function(name, node)
            if name == "open" or self.dotted(node.func) in ("io.open", "builtins.open"):
                return self.open_call(node)
            if isinstance(node.func, ast.Attribute):
                owner = self.value(node.func.value)
                attr = node.func.attr
                if attr in ("read_text", "read") and isinstance(owner, (PyPath, PyHandle)):
                    read = owner.path if isinstance(owner, PyPath) else owner.file
                    self.read_paths.add(read)
                    return PyText(read)
                if attr == "replace" and isinstance(owner, PyText):
                    args = [self.value(a) for a in node.args]
                    if len(args) >= 2 and all(isinstance(a, PyStr) for a in args[:2]):
                        return PyText(
                            owner.file, (*owner.edits, (args[0].text, args[1].text, None))
                        )
                    return PyText(owner.file, owner.edits)
                if attr in ("sub", "subn") and len(node.args) >= 3:
                    subject = self.value(node.args[2])
                    if isinstance(subject, PyText):
                        return PyText(subject.file, (*subject.edits, ("", "", None)))
        try:
            return super().value(node)
        except (RecursionError, TypeError, ValueError):
            return PyUnknown("an expression")

    def open_call(self, node: ast.Call) -> Any:
        args = [self.value(a) for a in node.args]
        path = _text_of(args[0]) if args else None
        mode = _text_of(args[1]) if len(args) > 1 else "r"
        for kw in node.keywords:
            if kw.arg == "mode":
                mode = _text_of(self.value(kw.value))
            if kw.arg == "file":
                path = _text_of(self.value(kw.value))
        return PyHandle(path or "", mode or "?")

    def how_of(self, node: ast.expr) -> str:
        """Where a path expression's value comes from, for a reader."""
        origin = self.origin_of(node)
        return origin if origin is not None else ast.unparse(node)

    def origin_of(self, node: ast.expr) -> str | None:
        """Where a path expression's value comes from, when a name or a ``sys.argv`` item
        in it says (:meth:`how_of` without the expression's own text)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in self.origin:
                return self.origin[sub.id]
            if isinstance(sub, ast.Subscript) and _is_sys_argv(sub.value):
                index = sub.slice.value if isinstance(sub.slice, ast.Constant) else None
                if isinstance(index, int) and index in self.argv_how:
                    return self.argv_how[index]
        return None

    def call_function(self, name: str, node: ast.Call) -> Any:
        if id(node) in self.results:  # a call met both as a value and as an effect
            return self.results[id(node)]
        result = self.results[id(node)] = self.run_function(name, node)
        return result

    def run_function(self, name: str, node: ast.Call) -> Any:
        func = self.functions[name]
        self.called.add(name)
        if self.depth > 6:
            return PyUnknown(f"a call of {name}")
        saved = dict(self.names), dict(self.origin), self.returned
        params = [a.arg for a in func.args.args]
        for param, arg in zip(params, node.args, strict=False):
            self.names[param] = self.value(arg)
            origin = self.origin_of(arg)  # the argument's text only when it is needed
            if (origin is not None and origin != ast.unparse(arg)) or _text_of(self.names[param]):
                self.origin[param] = (
                    f"{param} = {origin if origin is not None else ast.unparse(arg)}"
                )
        self.depth += 1
        self.returned = None
        try:
            self.block(func.body)
            result = self.returned
        finally:
            self.depth -= 1
            names, origin, self.returned = saved
            self.names, self.origin = names, origin
        return result if result is not None else PyUnknown(f"the result of {name}()")

    # -- statements

    def block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.stmt(stmt)

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            self.statement(s)
        elif isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef):
            self.functions[s.name] = s  # type: ignore[assignment]
        elif isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            self.assign(s)
        elif isinstance(s, ast.Return):
            self.effects_in(s)
            if s.value is not None:
                self.returned = self.value(s.value)
        elif isinstance(s, ast.Expr):
            self.effects_in(s)
            call = s.value
            is_print = isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            if is_print and call.func.id == "print" and call.args and self.depth == 0:
                self.facts.printed = self.value(call.args[0])
        elif isinstance(s, ast.If | ast.While):
            self.effects_in(s.test)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.For):
            self.effects_in(s.iter)  # `for line in fileinput.input(p, inplace=True)`
            items = self.value(s.iter)
            values = items.items if isinstance(items, PyList) else (PyUnknown("a loop value"),)
            for item in values[:16]:
                self.bind_loose(s.target, item)
                self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.With):
            for item in s.items:
                self.effects_in(item.context_expr)
                if item.optional_vars is not None:
                    self.bind_loose(item.optional_vars, self.value(item.context_expr))
            self.block(s.body)
        elif isinstance(s, ast.Try):
            for part in (s.body, *(h.body for h in s.handlers), s.orelse, s.finalbody):
                self.block(part)
        else:
            self.effects_in(s)

    def bind_loose(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.names[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = value.items if isinstance(value, PyList) else ()
            for k, elt in enumerate(target.elts):
                self.bind_loose(elt, items[k] if k < len(items) else PyUnknown("an item"))

    def assign(self, s: ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
        if s.value is None:
            return
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        for target in targets:
            env = self.environ_key(target)
            if env is not None:
                self.facts.effects.append(
                    Effect("env", s.lineno, env, text=_text_of(self.value(s.value)) or "")
                )
        self.effects_in(s.value)
        value = self.value(s.value)
        for target in targets:
            if isinstance(s, ast.AugAssign):
                continue
            self.bind_loose(target, value)
            if isinstance(target, ast.Name) and _text_of(value) is not None:
                how = self.how_of(s.value)
                self.origin[target.id] = f"{target.id} = {how}"

    def environ_key(self, target: ast.expr) -> str | None:
        if isinstance(target, ast.Subscript) and self.dotted(target.value) == "os.environ":
            key = target.slice.value if isinstance(target.slice, ast.Constant) else None
            return key if isinstance(key, str) else None
        return None

    # -- effects of the calls in a statement

    def effects_in(self, node: ast.AST) -> None:
        # inner calls first: `open(p, "w").write(text)` opens before it writes
        for sub in reversed(list(ast.walk(node))):
            if isinstance(sub, ast.Call):
                self.call_effect(sub)

    def add(self, kind: str, node: ast.Call, target: ast.expr | None, **kw: Any) -> None:
        path = _text_of(self.value(target)) if target is not None else None
        expr = ast.unparse(target) if target is not None else ""
        how = self.how_of(target) if target is not None else ""
        if kind == "write" and path and path in self.read_paths:
            kind = "edit"  # read, then written back
        effect = Effect(kind, node.lineno, path or expr, expr, how, **kw)
        if self.depth and self.current_uncalled:
            self.facts.uncalled_lines.add(node.lineno)
        self.facts.effects.append(effect)

    current_uncalled = False

    def call_effect(self, node: ast.Call) -> None:
        func = node.func
        name = self.dotted(func) or (func.id if isinstance(func, ast.Name) else None)
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if isinstance(func, ast.Name) and func.id in self.functions:
            self.call_function(func.id, node)
            return
        if name in ("open", "io.open", "builtins.open") or (
            isinstance(func, ast.Name) and func.id == "open"
        ):
            handle = self.open_call(node)
            if set(handle.mode) & set("wax+") and node.args:
                self.add("write", node, node.args[0])
            return
        if isinstance(func, ast.Attribute):
            attr = func.attr
            if attr in ("write_text", "write_bytes"):
                text = self.value(node.args[0]) if node.args else None
                edits = _edits(text)
                self.add("edit" if edits else "write", node, func.value, edits=edits)
                return
            if attr == "write":
                owner = self.value(func.value)
                text = self.value(node.args[0]) if node.args else None
                if isinstance(owner, PyHandle) and isinstance(text, PyText) and text.edits:
                    for effect in reversed(self.facts.effects):
                        if effect.kind in ("write", "edit") and effect.path == owner.file:
                            effect.kind, effect.edits = "edit", _edits(text)
                            break
                return
            if attr in ("unlink", "rmdir") and name is None:
                self.add("remove", node, func.value)
                return
            if attr in ("symlink_to", "rename", "replace", "touch") and name is None:
                if isinstance(self.value(func.value), PyPath):
                    self.add("copy" if attr != "touch" else "write", node, func.value)
                return
        if name in _COPY and len(node.args) >= 2:
            self.add("copy", node, node.args[1])
        elif name in _REMOVE and node.args:
            self.add("remove", node, node.args[0])
        elif name == "fileinput.input" and "inplace" in kw:
            target = node.args[0] if node.args else kw.get("files")
            self.add("edit", node, target)
        elif name in _SHELL and node.args:
            arg = self.value(node.args[0])
            cwd = _text_of(self.value(kw["cwd"])) if "cwd" in kw else None
            effect = Effect("shell", node.lineno, cwd=cwd)
            if "cwd" in kw:
                effect.how = self.how_of(kw["cwd"])
            if isinstance(arg, PyList):
                effect.argv = [_text_of(a) or ast.unparse(e) for a, e in _items(arg, node)]
            else:
                effect.text = _text_of(arg) or ""
            self.facts.effects.append(effect)
        elif name in ("os.environ.setdefault", "os.putenv", "os.environ.update") and node.args:
            key = _text_of(self.value(node.args[0]))
            if key:
                value = _text_of(self.value(node.args[1])) if len(node.args) > 1 else ""
                self.facts.effects.append(Effect("env", node.lineno, key, text=value or ""))


def _items(value: PyList, node: ast.Call) -> list[tuple[Any, ast.expr]]:
    elts = node.args[0].elts if isinstance(node.args[0], (ast.List, ast.Tuple)) else []
    out = []
    for k, item in enumerate(value.items):
        out.append((item, elts[k] if k < len(elts) else ast.Constant("?")))
    return out


def _edits(text: Any) -> list[tuple[str, str]]:
    if isinstance(text, PyText):
        return [(old, new) for old, new, _count in text.edits]
    return []


@by_code
def read_python(
    code: str, argv: list[str] | None = None, getenv: Callable[[str], str | None] | None = None
) -> PythonFacts:
    """The effects of Python code.

    Args:
        code: the source (a file, a heredoc body, a ``-c`` program).
        argv: ``sys.argv`` (``["-", "/@site/vllm/envs.py"]``); paths use ``/@site``.
        getenv: the value of an environment variable the calling script set, or None.

    Returns:
        :class:`PythonFacts` (shared between equal questions, :func:`.memo.by_code`: never
        change it); code that does not parse has ``error`` set and no effects.
    """
    try:
        tree = parse_cached(code)
    except (SyntaxError, ValueError) as exc:
        return PythonFacts(error=f"Python that does not parse ({exc})")
    reader = _Facts(list(argv or []), getenv or (lambda _name: None))
    reader.block(tree.body)
    for name, func in list(reader.functions.items()):
        if name in reader.called:
            continue
        reader.facts.uncalled.append(name)
        reader.current_uncalled = True
        reader.depth += 1
        before = len(reader.facts.effects)
        for arg in func.args.args:
            reader.names[arg.arg] = PyUnknown(f"the argument {arg.arg} of {name}()")
        reader.block(func.body)
        reader.depth -= 1
        reader.current_uncalled = False
        reader.facts.uncalled_lines.update(e.line for e in reader.facts.effects[before:])
    reader.facts.packages = list(reader.packages)
    return reader.facts


def printed(
    code: str, argv: list[str] | None = None, getenv: Callable[[str], str | None] | None = None
) -> str | None:
    """What the code prints, when it is a path or text the reader can follow (``/@site/...``
    for an install root), else None."""
    return printed_of(read_python(code, argv, getenv))


def printed_of(facts: PythonFacts) -> str | None:
    """:func:`printed` of facts already read."""
    value = facts.printed
    if isinstance(value, PyList) and value.items:
        value = value.items[0]
    if isinstance(value, PyModule):
        return None
    return _text_of(value)
