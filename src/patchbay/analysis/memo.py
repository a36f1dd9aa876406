"""Answers the walk asks again and again, given once per distinct question.

Scripts repeat themselves: a helper function holding a Python here-document is expanded at
every call, every benchmark script sources the same library. Reading the same Python code
with the same ``sys.argv`` gives the same facts as long as the environment variables the
reading looked at hold the same values, so :func:`by_code` keeps each answer with the
variables it read (and their values) and gives it back only while they still match, as a
build tool reuses an output while its recorded inputs are unchanged.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

T = TypeVar("T")

Getenv = Callable[[str], "str | None"]
Reader = Callable[[str, "list[str] | None", "Getenv | None"], T]

_SIZE = 512
"""Distinct (code, argv) questions kept per reader (least recently used dropped)."""
_PER_QUESTION = 8
"""Answers kept per question (one per set of environment values met)."""


def by_code(reader: Reader[T]) -> Reader[T]:
    """Memoise ``reader(code, argv, getenv)`` (a result, or the exception it raised) by
    ``(code, argv)`` and the values of the environment variables it asked ``getenv`` for.
    The results are shared: callers must not change them."""
    memo: OrderedDict[tuple[str, tuple[str, ...]], list[tuple[dict, object, bool]]] = OrderedDict()

    @wraps(reader)
    def cached(code: str, argv: list[str] | None = None, getenv: Getenv | None = None) -> T:
        key = (code, tuple(argv or ()))
        ask = getenv or (lambda _name: None)
        answers = memo.get(key)
        if answers is not None:
            memo.move_to_end(key)
            for seen, value, raised in answers:
                if all(ask(name) == old for name, old in seen.items()):
                    if raised:
                        raise _fresh(value)  # type: ignore[arg-type]
                    return value  # type: ignore[return-value]
        else:
            answers = memo[key] = []
            if len(memo) > _SIZE:
                memo.popitem(last=False)
        seen: dict[str, str | None] = {}

        def recording(name: str) -> str | None:
            value = ask(name)
            seen[name] = value
            return value

        if len(answers) >= _PER_QUESTION:
            answers.pop(0)
        try:
            result = reader(code, argv, recording)
        except Exception as exc:
            answers.append((seen, _fresh(exc), True))
            raise
        answers.append((seen, result, False))
        return result

    return cached


def _fresh(exc: Exception) -> Exception:
    """A copy of ``exc`` without its traceback. An exception kept in the memo must hold no
    traceback: its frames would keep the walk that raised it alive (its whole state), and a
    kept exception raised again would grow its traceback at every reuse; so the memo keeps a
    bare copy and raises a fresh copy of it each time."""
    try:
        out = copy.copy(exc)
    except Exception:  # an exception that cannot be copied: raised as it is
        return exc
    out.__traceback__ = None
    return out
