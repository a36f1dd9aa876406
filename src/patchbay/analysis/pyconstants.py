"""The string constants of a Python program, read with :mod:`ast`, never run: what a patch
script's edit program names ``OLD1``/``NEW1`` before it calls ``src.replace(OLD1, NEW1)``.

A constant is a module-level assignment ``NAME = <expression>`` whose expression is built only
of string literals, earlier constants, ``+`` and parentheses (implicit concatenation of literals
included). Anything else assigned to a name is not a constant (and a name assigned twice is not
one either): it is left out, never guessed.
"""

from __future__ import annotations

import ast

from ..errors import InputError


def _value(node: ast.expr, known: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _value(node.left, known), _value(node.right, known)
        return None if left is None or right is None else left + right
    return None


def string_constants(code: str, path: str) -> dict[str, str]:
    """Name -> value of every string constant of ``code`` (see the module docstring).

    Raises:
        InputError: the program does not parse (``path`` and the line named).
    """
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise InputError(
            f"the Python program does not parse: {exc.msg}", file=path, line=exc.lineno
        ) from None
    known: dict[str, str] = {}
    assigned: set[str] = set()
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign):
            continue
        for target in stmt.targets:
            if not isinstance(target, ast.Name):
                continue
            if target.id in assigned:
                known.pop(target.id, None)  # assigned twice: which value counts is a run's
                continue
            assigned.add(target.id)
            value = _value(stmt.value, known)
            if value is not None:
                known[target.id] = value
    return known
