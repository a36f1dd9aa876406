"""What the Python snippets of a patch script do, read with :mod:`ast`, never run.

Two questions are answered here:

- where does ``python -c '...print(...)'`` point (the way scripts find their install root:
  ``find_spec("pkg")``, ``pkg.__file__``, ``sysconfig.get_paths()["purelib"]``); and
- which exact-text edits does a Python here-document make (``text.replace(old, new)`` on a file
  it reads and writes back), and does it do anything else.

Paths are strings in which :data:`SITE` stands for the folder that holds the engine packages
(site-packages), so a path the snippet computes can be placed under a target later. Anything the
reader cannot follow makes the snippet *not understood*, with a reason; it never guesses.
"""

from __future__ import annotations

import ast
import posixpath
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .memo import by_code

SITE = "/@site"
"""Stands for the engine's site-packages folder in computed paths."""

_PURELIB = ("purelib", "platlib")

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"importlib", "os", "sys"}
_WRITE_CALLS = frozenset(
    {
        "write",
        "write_text",
        "write_bytes",
        "writelines",
        "unlink",
        "remove",
        "rmtree",
        "rename",
        "makedirs",
        "mkdir",
        "rmdir",
        "copy",
        "copy2",
        "copyfile",
        "copytree",
        "move",
        "symlink",
        "symlink_to",
        "touch",
        "chmod",
        "system",
        "run",
        "call",
        "check_call",
        "check_output",
        "Popen",
        "exec",
        "eval",
        "truncate",
        "sub",
        "subn",
    }
)


ENGINE_DIR = "/@engine"
"""Stands for a folder a package's own helper returns (:data:`.model.ENGINE_DIR`)."""
_FOLDER_HELPER = re.compile(r"\.\w*(?:dir|path|folder|root|cache_home)$", re.IGNORECASE)
"""A package function that names a folder (``aiter.jit.core.get_user_jit_dir``)."""

_SEQUENCE = frozenset({"list", "tuple", "sorted", "iter", "next"})
"""Builtins that hand a list through (see :meth:`_Reader.sequence`)."""


@dataclass(frozen=True)
class PyPath:
    """A path value (``str`` or ``pathlib.Path`` alike)."""

    path: str


@dataclass(frozen=True)
class PyStr:
    """A string the reader knows exactly."""

    text: str


@dataclass(frozen=True)
class PyModule:
    """A module or a dotted attribute of one (``os.path``, ``importlib.util.find_spec``)."""

    name: str


@dataclass(frozen=True)
class PySpec:
    """``find_spec(name)``."""

    package: str


@dataclass(frozen=True)
class PyList:
    """A list or tuple of known values."""

    items: tuple[Any, ...]


@dataclass(frozen=True)
class PyText:
    """The text of a file, read by the snippet, with the edits made to it so far."""

    file: str
    edits: tuple[tuple[str, str, int | None], ...] = ()


@dataclass(frozen=True)
class PyHandle:
    """An open file object."""

    file: str
    mode: str


@dataclass(frozen=True)
class PyUnknown:
    """A value the reader cannot follow (why, for the notes)."""

    why: str


class NotUnderstood(Exception):
    """The snippet does something the reader does not follow; the reason says what."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


@dataclass
class FileEdits:
    """Exact-text edits a snippet makes to one file: ``(old, new, count)``, in order (``count``
    is the third argument of ``str.replace`` when given)."""

    file: str
    edits: list[tuple[str, str, int | None]]
    line: int


@dataclass
class Analysis:
    """What a Python snippet does.

    Attributes:
        edits: files rewritten with literal ``replace`` edits.
        packages: engine packages the snippet locates or imports.
        unwritten: files whose edited text was never written back.
    """

    edits: list[FileEdits] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)
    unwritten: list[str] = field(default_factory=list)

    @property
    def read_only(self) -> bool:
        return not self.edits


class _Reader:
    def __init__(self, argv: list[str], getenv: Callable[[str], str | None]) -> None:
        self.names: dict[str, Any] = {}
        self.argv = argv
        self.getenv = getenv
        self.packages: list[str] = []
        self.result = Analysis()
        self.serial = 0  # replace() calls followed so far

    # -- values

    def package(self, name: str) -> None:
        top = name.split(".")[0]
        if top and top not in _STDLIB and top not in self.packages:
            self.packages.append(top)

    def dotted(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            value = self.names.get(node.id)
            return value.name if isinstance(value, PyModule) else None
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return PyStr(node.value) if isinstance(node.value, str) else PyUnknown("a constant")
        if isinstance(node, ast.JoinedStr):
            out = []
            for part in node.values:
                v = self.value(part.value if isinstance(part, ast.FormattedValue) else part)
                text = _text(v)
                if text is None:
                    return PyUnknown("an f-string with a computed part")
                out.append(text)
            return PyStr("".join(out))
        if isinstance(node, ast.Name):
            return self.names.get(node.id, PyUnknown(f"the name {node.id}"))
        if isinstance(node, (ast.List, ast.Tuple)):
            return PyList(tuple(self.value(e) for e in node.elts))
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(node.op, ast.Div) and isinstance(left, PyPath):
                rt = _text(right)
                if rt is not None:
                    return PyPath(posixpath.join(left.path, rt))
            if isinstance(node.op, ast.Add):
                lt, rt = _text(left), _text(right)
                if lt is not None and rt is not None:
                    kind = PyPath if isinstance(left, PyPath) else PyStr
                    return kind(lt + rt)
            return PyUnknown("an expression")
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            # `args.target or os.path.join(locate(), REL)`: an override, else the default;
            # the default is the path the code computes itself
            values = [self.value(v) for v in node.values]
            known = [v for v in values if isinstance(v, (PyPath, PyStr))]
            return known[-1] if known else values[-1]
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        return PyUnknown(type(node).__name__)

    def attribute(self, node: ast.Attribute) -> Any:
        base = self.value(node.value)
        if isinstance(base, PyModule):
            if node.attr == "__file__" and base.name.split(".")[0] not in _STDLIB:
                self.package(base.name)
                where = base.name.replace(".", "/")  # a submodule's file, or a package's
                return PyPath(
                    f"{SITE}/{where}.py" if "." in base.name else f"{SITE}/{where}/__init__.py"
                )
            if node.attr == "__path__" and base.name.split(".")[0] not in _STDLIB:
                self.package(base.name)
                return PyList((PyPath(f"{SITE}/{base.name.replace('.', '/')}"),))
            return PyModule(f"{base.name}.{node.attr}")
        if isinstance(base, PySpec):
            where = f"{SITE}/{base.package.replace('.', '/')}"
            if node.attr == "origin":  # a module's file, or a package's __init__.py
                dotted = "." in base.package
                return PyPath(f"{where}.py" if dotted else f"{where}/__init__.py")
            if node.attr == "submodule_search_locations":
                return PyList((PyPath(where),))
        if isinstance(base, PyPath) and node.attr == "parent":
            return PyPath(posixpath.dirname(base.path))
        if isinstance(base, PyPath) and node.attr == "name":
            return PyStr(posixpath.basename(base.path))
        return PyUnknown(f"the attribute .{node.attr}")

    def subscript(self, node: ast.Subscript) -> Any:
        base = self.value(node.value)
        index = node.slice
        constant = index.value if isinstance(index, ast.Constant) else None
        if isinstance(base, PyModule) and base.name == "sys.argv" and isinstance(constant, int):
            if 0 <= constant < len(self.argv):
                return PyPath(self.argv[constant])
            return PyUnknown(f"sys.argv[{constant}], which the script does not pass")
        if isinstance(base, PyModule) and base.name == "os.environ" and isinstance(constant, str):
            return self.environ(constant, None)
        items = base.items if isinstance(base, PyList) else ()
        if isinstance(constant, int) and -len(items) <= constant < len(items):
            return items[constant]
        if isinstance(base, PyModule) and base.name == "<paths>" and constant in _PURELIB:
            return PyPath(SITE)
        return PyUnknown("a subscript")

    def environ(self, name: str, default: Any) -> Any:
        value = self.getenv(name)
        if value is not None:
            return PyPath(value)
        if default is not None:
            return default
        return PyUnknown(f"the environment variable {name}")

    def call(self, node: ast.Call) -> Any:
        func = node.func
        args = [self.value(a) for a in node.args]
        name = self.dotted(func)
        if name is None and isinstance(func, ast.Name):
            if func.id in _SEQUENCE and func.id not in self.names and args:
                return self.sequence(func.id, args[0])
            name = {"open": "open", "str": "str", "print": "print"}.get(func.id)
        if name in ("importlib.util.find_spec", "pkgutil.find_loader"):
            pkg = _text(args[0]) if args else None
            if pkg is None:
                return PyUnknown("find_spec of a computed name")
            self.package(pkg)
            return PySpec(pkg)
        if name in ("importlib.resources.files", "importlib_resources.files"):
            pkg = _text(args[0]) if args else None
            if pkg is None:
                return PyUnknown("importlib.resources.files of a computed name")
            self.package(pkg)
            return PyPath(f"{SITE}/{pkg.replace('.', '/')}")
        if name in ("pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath") and len(args) > 1:
            name = "os.path.join"  # `Path(site, "vllm", "envs.py")` joins its parts
        if name in ("pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "str", "os.fspath"):
            text = _text(args[0]) if args else None
            return PyPath(text) if text is not None else PyUnknown("a path")
        if name in ("os.path.join",):
            texts = [_text(a) for a in args]
            if texts and all(t is not None for t in texts):
                return PyPath(posixpath.join(*texts))  # type: ignore[arg-type]
            if texts and isinstance(args[0], PyPath):
                # below a known folder, a computed name (`os.path.join(pyc_dir, name)` in a
                # loop over `os.listdir(pyc_dir)`): any entry of that folder
                return PyPath(posixpath.join(*(t if t is not None else "*" for t in texts)))
            return PyUnknown("a joined path")
        if name in ("os.path.dirname",):
            text = _text(args[0]) if args else None
            return PyPath(posixpath.dirname(text)) if text is not None else PyUnknown("dirname")
        if name in ("os.path.abspath", "os.path.realpath", "os.path.normpath"):
            text = _text(args[0]) if args else None
            return PyPath(posixpath.normpath(text)) if text is not None else PyUnknown("a path")
        if name in ("os.getenv", "os.environ.get"):
            key = _text(args[0]) if args else None
            if key is None:
                return PyUnknown("a computed environment variable")
            return self.environ(key, args[1] if len(args) > 1 else None)
        if name == "sysconfig.get_paths":
            return PyModule("<paths>")
        if name in ("sysconfig.get_path",):
            key = _text(args[0]) if args else None
            return PyPath(SITE) if key in ("purelib", "platlib") else PyUnknown("a sysconfig path")
        if name in ("site.getsitepackages",):
            return PyList((PyPath(SITE),))
        if name in ("distutils.sysconfig.get_python_lib", "site.getusersitepackages"):
            return PyPath(SITE) if name.startswith("distutils") else PyUnknown("the user site")
        if name and name.split(".")[0] not in _STDLIB and _FOLDER_HELPER.search(name):
            # `from aiter.jit.core import get_user_jit_dir as g; print(g())`: a folder the
            # package itself names (its JIT cache), known only when it runs
            self.package(name)
            return PyPath(f"{ENGINE_DIR}/{name}()")
        if isinstance(func, ast.Attribute):
            owner = self.value(func.value)
            if isinstance(owner, PyPath) and func.attr in ("resolve", "absolute", "expanduser"):
                return owner
            if isinstance(owner, PyPath) and func.attr == "joinpath":
                texts = [_text(a) for a in args]
                if all(t is not None for t in texts):
                    return PyPath(posixpath.join(owner.path, *texts))  # type: ignore[arg-type]
        return PyUnknown(f"a call of {ast.unparse(func)}")

    @staticmethod
    def sequence(builtin: str, value: Any) -> Any:
        """``list(x)``, ``tuple(x)``, ``sorted(x)``, ``iter(x)`` of a known list are that list
        (``list(spec.submodule_search_locations)[0]``); ``next(iter(x))`` is its first item."""
        if not isinstance(value, PyList):
            return PyUnknown(f"{builtin}() of a computed value")
        if builtin == "next":
            return value.items[0] if value.items else PyUnknown("next() of an empty list")
        return value

    # -- statements

    def run(self, tree: ast.Module) -> None:
        self.block(tree.body)

    def block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                self.package(alias.name)
                if alias.asname:
                    self.names[alias.asname] = PyModule(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self.names[top] = PyModule(top)
        elif isinstance(stmt, ast.ImportFrom):
            mod = stmt.module or ""
            self.package(mod)
            for alias in stmt.names:
                self.names[alias.asname or alias.name] = PyModule(f"{mod}.{alias.name}")
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if stmt.value is None:
                return
            value = self.rvalue(stmt.value)
            for target in targets:
                self.bind(target, value, stmt)
        elif isinstance(stmt, ast.Expr):
            self.effect(stmt.value, stmt)
        elif isinstance(stmt, ast.If):
            self.pure(stmt.test, stmt)
            before = self.serial
            self.block(stmt.body)
            after_body = self.serial
            self.block(stmt.orelse)
            if after_body > before and self.serial > after_body:
                raise NotUnderstood(
                    "an if/else that makes different edits in each branch", stmt.lineno
                )
        elif isinstance(stmt, ast.With):
            for item in stmt.items:
                value = self.rvalue(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, value, stmt)
            self.block(stmt.body)
        elif isinstance(stmt, ast.For):
            items = self.value(stmt.iter)
            if not isinstance(items, PyList) or stmt.orelse:
                raise NotUnderstood("a loop over values computed at run time", stmt.lineno)
            for item in items.items:
                self.bind(stmt.target, item, stmt)
                self.block(stmt.body)
        elif isinstance(stmt, (ast.Assert,)):
            self.pure(stmt.test, stmt)
        elif isinstance(stmt, (ast.Raise, ast.Pass)):
            pass
        else:
            raise NotUnderstood(f"a {type(stmt).__name__} statement", stmt.lineno)

    def bind(self, target: ast.expr, value: Any, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.names[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, PyList):
            if len(target.elts) != len(value.items):
                raise NotUnderstood("an unpacking of the wrong length", stmt.lineno)
            for t, v in zip(target.elts, value.items, strict=True):
                self.bind(t, v, stmt)
        else:
            raise NotUnderstood(f"an assignment to {ast.unparse(target)}", stmt.lineno)

    def rvalue(self, node: ast.expr) -> Any:
        """The value of an assignment's right side, where reads and edits are followed."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            owner_node = node.func.value
            if attr in ("read_text", "read"):
                owner = self.rvalue(owner_node)
                if isinstance(owner, PyPath) and attr == "read_text":
                    return PyText(owner.path)
                if isinstance(owner, PyHandle) and attr == "read" and "r" in owner.mode:
                    return PyText(owner.file)
            if attr == "replace":
                owner = self.rvalue(owner_node)
                if isinstance(owner, PyText):
                    args = [self.value(a) for a in node.args]
                    if len(args) not in (2, 3) or not all(isinstance(a, PyStr) for a in args[:2]):
                        raise NotUnderstood(
                            "a replace() whose old or new text is computed", node.lineno
                        )
                    count = None
                    if len(args) == 3:
                        c = node.args[2]
                        if not (isinstance(c, ast.Constant) and isinstance(c.value, int)):
                            raise NotUnderstood("a replace() with a computed count", node.lineno)
                        count = c.value
                    old, new = args[0].text, args[1].text  # type: ignore[union-attr]
                    self.serial += 1
                    if not old:
                        raise NotUnderstood("a replace() of the empty string", node.lineno)
                    return PyText(owner.file, (*owner.edits, (old, new, count)))
            if attr in _WRITE_CALLS:
                raise NotUnderstood(f"a call of .{attr}()", node.lineno)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "open"
        ):
            args = [self.value(a) for a in node.args]
            path = _text(args[0]) if args else None
            mode = "r"
            if len(args) > 1:
                mode = _text(args[1]) or "?"
            for kw in node.keywords:
                if kw.arg == "mode":
                    mode = _text(self.value(kw.value)) or "?"
            if path is None:
                raise NotUnderstood("an open() of a computed path", node.lineno)
            return PyHandle(path, mode)
        if isinstance(node, ast.Name):
            return self.names.get(node.id, PyUnknown(node.id))
        if isinstance(node, ast.Call) and self.calls_writer(node):
            raise NotUnderstood(f"a call of {ast.unparse(node.func)}", node.lineno)
        return self.value(node)

    def calls_writer(self, node: ast.AST) -> bool:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                name = sub.func.attr if isinstance(sub.func, ast.Attribute) else None
                if isinstance(sub.func, ast.Name):
                    name = sub.func.id
                if name in _WRITE_CALLS:
                    owner = sub.func.value if isinstance(sub.func, ast.Attribute) else None
                    # str.replace / re.sub on text are computations, but a write is a write
                    text = owner is not None and isinstance(self.value(owner), (PyStr, PyText))
                    if text and name != "write":
                        continue
                    return True
                if name == "open" and len(sub.args) > 1:
                    mode = self.value(sub.args[1])
                    if not (isinstance(mode, PyStr) and set(mode.text) <= set("rbt")):
                        return True
        return False

    def pure(self, node: ast.expr, stmt: ast.stmt) -> None:
        if self.calls_writer(node):
            raise NotUnderstood("a condition that writes", stmt.lineno)

    def effect(self, node: ast.expr, stmt: ast.stmt) -> None:
        if isinstance(node, ast.Constant):
            return  # a docstring
        if not isinstance(node, ast.Call):
            self.pure(node, stmt)
            return
        func = node.func
        name = self.dotted(func) or (func.id if isinstance(func, ast.Name) else None)
        if name in ("print", "sys.exit", "exit", "quit", "os._exit"):
            self.pure(node, stmt)
            return
        if isinstance(func, ast.Attribute) and func.attr in ("write_text", "write"):
            owner = self.rvalue(func.value)
            text = self.rvalue(node.args[0]) if node.args else None
            if func.attr == "write_text" and isinstance(owner, PyPath):
                self.written(owner.path, text, stmt)
                return
            if func.attr == "write" and isinstance(owner, PyHandle) and set(owner.mode) & set("wa"):
                if "a" in owner.mode:
                    raise NotUnderstood("a file opened for appending", stmt.lineno)
                self.written(owner.file, text, stmt)
                return
        raise NotUnderstood(f"a call of {ast.unparse(func)}", stmt.lineno)

    def written(self, path: str, text: Any, stmt: ast.stmt) -> None:
        if not isinstance(text, PyText):
            raise NotUnderstood("a write of text the reader cannot follow", stmt.lineno)
        if posixpath.normpath(text.file) != posixpath.normpath(path):
            raise NotUnderstood("a write of one file's text into another file", stmt.lineno)
        if text.edits:
            self.result.edits.append(FileEdits(path, list(text.edits), stmt.lineno))
        for name, value in list(self.names.items()):
            if isinstance(value, PyText) and value.file == text.file:
                self.names[name] = PyText(value.file)  # written: later edits start afresh


def parse_cached(code: str) -> ast.Module:
    """:func:`ast.parse`, once per distinct code (scripts repeat their snippets; the readers
    never change a tree). Snippets are kept many (a library every script sources repeats
    them); a whole file's tree only while its readers take turns on it: hundreds of kept
    trees of Python files each read once would only weigh on every pass of the collector.
    A UTF-8 byte-order mark at the start is not code (Python's own reader skips it in a file).

    Raises:
        SyntaxError: the code does not parse with this interpreter's grammar (a newer
            Python's syntax, such as 3.12's nested f-string quotes, included).
    """
    code = code.removeprefix("\ufeff")
    if len(code) <= _SNIPPET:
        return _parse_snippet(code)
    return _parse_file(code)


_SNIPPET = 8192
"""Code up to this many characters is a snippet (a here-document, a ``-c`` string)."""
_parse_snippet = lru_cache(maxsize=512)(ast.parse)
_parse_file = lru_cache(maxsize=4)(ast.parse)


def _text(value: Any) -> str | None:
    if isinstance(value, PyStr):
        return value.text
    if isinstance(value, PyPath):
        return value.path
    return None


def _parse(code: str) -> ast.Module:
    try:
        return parse_cached(code)
    except SyntaxError as exc:
        raise NotUnderstood(f"Python that does not parse ({exc.msg})", exc.lineno) from None


def printed_path(
    code: str, argv: list[str], getenv: Callable[[str], str | None]
) -> tuple[str | None, list[str]]:
    """What ``python -c CODE`` prints, when it prints one path the reader can follow.

    Args:
        code: the Python source.
        argv: ``sys.argv`` of the run.
        getenv: the value of an environment variable the script exported, or None.

    Returns:
        The printed path (with :data:`SITE` for site-packages) or None, and the engine
        packages the code names.
    """
    try:
        tree = _parse(code)
    except NotUnderstood:
        return None, []
    reader = _Reader(argv, getenv)
    printed: Any = None
    for stmt in tree.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        is_call = isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
        if is_call and call.func.id == "print" and call.args:  # type: ignore[union-attr]
            printed = reader.value(call.args[0])  # type: ignore[union-attr]
            continue
        try:
            reader.statement(stmt)
        except NotUnderstood:
            continue
    return _text(printed) if isinstance(printed, PyPath) else None, reader.packages


@by_code
def analyse(code: str, argv: list[str], getenv: Callable[[str], str | None]) -> Analysis:
    """Follow a Python snippet's reads, literal ``replace`` edits and writes.

    Args:
        code: the Python source (a here-document's body, or ``-c`` text).
        argv: ``sys.argv`` of the run (paths with :data:`SITE` where the script computed them).
        getenv: the value of an environment variable the script exported, or None.

    Returns:
        The :class:`Analysis`: the edits per file, the packages named.

    Raises:
        NotUnderstood: any statement the reader does not follow (loops over computed values,
            regular expressions, writes of computed text, functions, try blocks, ...).
    """
    tree = _parse(code)
    reader = _Reader(argv, getenv)
    reader.run(tree)
    reader.result.packages = reader.packages
    for value in reader.names.values():
        if isinstance(value, PyText) and value.edits and value.file not in reader.result.unwritten:
            reader.result.unwritten.append(value.file)
    return reader.result


def writes_anything(code: str) -> bool:
    """Whether Python code may write (a call of a writing function, an open() for writing);
    True when it does not parse."""
    try:
        tree = _parse(code)
    except NotUnderstood:
        return True
    reader = _Reader([], lambda _name: None)
    return reader.calls_writer(tree)
