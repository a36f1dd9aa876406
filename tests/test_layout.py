"""The package's layout holds: no import cycle between two modules of ``src/patchbay`` (every
import counts, also one inside a function or under ``TYPE_CHECKING``: a cycle there is still two
concepts that need each other), nothing outside ``patchbay.cli`` imports it (the library never
imports its command line), each wing imports only the wings its ``__init__`` docstring names
(:data:`WINGS`), and no module is longer than 800 lines. The imports are read from the source
with :mod:`ast`, nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "patchbay"
MAX_LINES = 800


def _name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__.py``)."""
    return {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of the package that module ``name`` imports: ``from .x import y`` is an
    arrow to ``x.y`` when that is a module, else to ``x``."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    root = package[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == root)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != root:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
    return {m for m in found if m in known and m != name}


def graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    mods = modules()
    known = set(mods)
    return {name: imports(name, path, known) for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_reader_sees_a_cycle_and_a_relative_import(tmp_path: Path) -> None:
    """The checker itself: a two-module cycle through a function-level relative import."""
    a = tmp_path / "pkg" / "a.py"
    a.parent.mkdir()
    a.write_text("from .b import f\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    from . import a\n")
    known = {"pkg.a", "pkg.b"}
    edges = {
        "pkg.a": imports("pkg.a", a, known),
        "pkg.b": imports("pkg.b", tmp_path / "pkg" / "b.py", known),
    }
    assert edges == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}}
    assert cycles(edges) == [["pkg.a", "pkg.b"]]


def test_no_import_cycle_between_modules() -> None:
    edges = graph()
    assert len(edges) > 50  # the package was found and read
    assert cycles(edges) == []


def test_nothing_outside_the_cli_imports_it() -> None:
    offenders = {
        name: sorted(m for m in targets if m == "patchbay.cli" or m.startswith("patchbay.cli."))
        for name, targets in graph().items()
        if not (name == "patchbay.cli" or name.startswith("patchbay.cli."))
        and name != "patchbay.__main__"
    }
    assert {k: v for k, v in offenders.items() if v} == {}


# what each wing may import besides the shared top-level modules (errors, options, redaction,
# envrefs, progress, printable, outputfiles and the package's __version__), as its __init__
# says; the CLI may import every wing. A new arrow between wings is a change of the
# architecture: it goes here and into the wing's docstring together.
SHARED = {
    "patchbay", "errors", "options", "redaction", "envrefs", "progress", "printable",
    "outputfiles", "digests", "patterns", "summaries",
}  # fmt: skip
WINGS = {
    "analysis": set(),
    "waivers": {"patchset"},
    "diff": {"environment"},  # the path gate
    "patchset": {"environment", "kinds", "apply"},  # the path gate, the registry, write_atomic
    "environment": {"patchset", "diff", "apply"},  # the ledger's originals, the state lock
    "kinds": {"patchset", "diff", "environment", "apply", "carry"},  # the core's plug-ins; fetch
    "apply": {"patchset", "diff", "environment", "kinds"},
    "authoring": {"patchset", "diff", "environment", "kinds", "apply"},
    "carry": {"patchset", "diff", "environment", "kinds", "apply", "upstream", "analysis"},
    "upstream": {"patchset", "diff", "environment", "apply", "authoring", "waivers"},
    "importer": {"analysis", "patchset", "diff", "environment"},
    "audit": {"analysis", "patchset", "environment", "upstream", "waivers"},
    "outputfiles": {"apply"},  # write_atomic
    "progress": set(),
}


def _wing(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "patchbay"


def test_every_wing_imports_only_what_its_docstring_says() -> None:
    extra = {}
    for name, targets in graph().items():
        wing = _wing(name)
        if wing in ("cli", "__main__") or wing in SHARED - {"outputfiles", "progress"}:
            continue
        allowed = WINGS[wing] | SHARED | {wing}
        if wing in ("outputfiles", "progress"):
            allowed = WINGS[wing] | {"patchbay", "errors", "printable", "redaction", wing}
        beyond = sorted(t for t in targets if _wing(t) not in allowed)
        if beyond:
            extra[name] = beyond
    assert extra == {}


def test_no_module_over_800_lines() -> None:
    long = {
        name: n
        for name, path in modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_every_wing_says_what_it_owns() -> None:
    """Each sub-package's ``__init__.py`` opens with a docstring (what it owns, what it may
    import)."""
    silent = [
        name
        for name, path in modules().items()
        if path.name == "__init__.py" and ast.get_docstring(ast.parse(path.read_text())) is None
    ]
    assert silent == []
