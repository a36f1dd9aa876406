"""Validating plain data (parsed YAML or TOML) into msgspec structs, with errors that name
the key: the one place that turns a :class:`msgspec.ValidationError` into ``(key path,
message)`` problems for the patchset, waiver front matter and audit configuration loaders.

msgspec stops at the first problem of a value, reports an unknown or missing key at the
object that has (or lacks) it, and writes a mapping's key as ``[...]``; :func:`problem_of`
puts the key back into the path (an unknown key is reported at that key, a missing one under
its parent, a mapping's key is found by validating its entries one by one) and words the
message for a YAML or TOML author. A check in a struct's ``__post_init__`` raises
:class:`FieldError` to be reported at one of its fields (a plain ``ValueError`` is reported at
the struct).
"""

from __future__ import annotations

import re
import types
import typing
from typing import Any, TypeVar

import msgspec

from ..patterns import pattern

T = TypeVar("T")

KeyPath = tuple[str | int, ...]


class FieldError(ValueError):
    """A check of a struct's field failed (raised in ``__post_init__``).

    Args:
        key: the field's key as written in the data, or a path below the struct
            (``("remove", 2)``).
        message: the reason, one sentence.
    """

    def __init__(self, key: str | KeyPath, message: str) -> None:
        super().__init__(message)
        self.key: KeyPath = (key,) if isinstance(key, str) else tuple(key)


def check_field(key: str | KeyPath, check: typing.Callable[[Any], T], value: Any) -> T:
    """``check(value)``, its ``ValueError`` re-raised as a :class:`FieldError` at ``key``."""
    try:
        return check(value)
    except FieldError:
        raise
    except ValueError as exc:
        raise FieldError(key, str(exc)) from None


def convert(data: Any, type_: type[T]) -> T:
    """``data`` validated as ``type_`` (strict: ``strip: true`` or ``count: "2"`` are
    mistakes, not values to coerce; an ISO date string still reads as a ``date``).

    Raises:
        msgspec.ValidationError: the first problem; :func:`problem_of` words it.
    """
    return msgspec.convert(data, type_, strict=True)


_AT = pattern(r"^(?P<msg>.*?)(?: - at `(?P<key>key` in `)?(?P<path>\$[^`]*)`)?$", re.S)
_SEGMENT = pattern(r"\.([^.\[]+)|\[(\d+)\]|(\[\.\.\.\])")
_WORDS = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean",
    "null": "null",
    "array": "a list",
    "object": "a mapping",
}


def problem_of(exc: msgspec.ValidationError, type_: Any, data: Any) -> tuple[KeyPath, str]:
    """Where in ``data`` (validated as ``type_``) the problem of ``exc`` is, and what it is.

    Returns:
        ``(key path, message)``: ``(("patches", 0, "strip"), "expected an integer, got a
        boolean")``; ``"unknown key"`` and ``"required key is missing"`` for those two.
    """
    m = _AT.match(str(exc))
    assert m is not None  # the pattern matches any text
    msg, path = m.group("msg"), m.group("path") or "$"
    segments = [s.group(0) for s in _SEGMENT.finditer(path[1:])]
    loc, tp, _ = _walk(type_, data, segments)
    if m.group("key"):
        return loc, f"a key: {_worded(msg)}"
    cause = exc.__cause__
    if isinstance(cause, FieldError):
        return (*loc, *cause.key), _first_line(str(cause))
    if isinstance(cause, ValueError | TypeError):
        return loc, _first_line(str(cause))
    if found := re.fullmatch(r"Object contains unknown field `(.*)`", msg):
        return (*loc, found.group(1)), "unknown key"
    if found := re.fullmatch(r"Object missing required field `(.*)`", msg):
        return (*loc, found.group(1)), "required key is missing"
    if found := re.fullmatch(r"Invalid (?:enum )?value (.*)", msg):
        allowed = _allowed(tp, loc)
        if allowed:
            return loc, f"must be {allowed}, not {found.group(1)}"
    return loc, _worded(msg)


def _first_line(text: str) -> str:
    # one line per problem: some messages (packaging's) draw a caret under the input
    return (text.splitlines() or [""])[0]


def _worded(msg: str) -> str:
    """msgspec's ``Expected `int`, got `str``` as ``expected an integer, got a string``."""

    def words(m: re.Match[str]) -> str:
        return " or ".join(_WORDS.get(part, part) for part in m.group(1).split(" | "))

    text = re.sub(r"`([^`]*)`", words, msg)
    # patterns end with `\Z` (see patchbay.patchset.model); shown as the `$` of the JSON Schema
    text = text.replace(" matching regex ", " matching ").replace("\\\\Z'", "$'")
    return text[:1].lower() + text[1:]


def _walk(type_: Any, data: Any, segments: list[str]) -> tuple[KeyPath, Any, Any]:
    """Follow msgspec's path ``segments`` through ``data`` and ``type_``: the key path (a
    mapping's ``[...]`` replaced by the key whose value fails), the type and the value there."""
    loc: list[str | int] = []
    tp, node = type_, data
    for seg in segments:
        tp = _unwrap(tp, node)
        if seg == "[...]":
            value_type = typing.get_args(tp)[1] if typing.get_origin(tp) is dict else Any
            for key, value in node.items() if isinstance(node, dict) else ():
                try:
                    convert(value, value_type)
                except msgspec.ValidationError:
                    loc.append(key)
                    tp, node = value_type, value
                    break
            else:
                return tuple(loc), tp, node  # not found again: report at the mapping
        elif seg.startswith("["):
            index = int(seg[1:-1])
            loc.append(index)
            args = typing.get_args(tp)
            tp = args[0] if args else Any
            node = node[index] if isinstance(node, list) and index < len(node) else None
        else:
            name = seg[1:]
            loc.append(name)
            tp = _field_type(tp, name)
            node = node.get(name) if isinstance(node, dict) else None
    return tuple(loc), _unwrap(tp, node), node


def _unwrap(tp: Any, node: Any) -> Any:
    """``tp`` without ``Annotated``, and the member of a union that fits ``node`` (a struct
    or a mapping for a mapping, chosen by its tag among tagged structs)."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [_unwrap(m, node) for m in typing.get_args(tp)]
        if isinstance(node, dict):
            structs = [m for m in members if _is_struct(m)]
            for m in structs:
                cfg = m.__struct_config__
                if cfg.tag_field is not None and node.get(cfg.tag_field) == cfg.tag:
                    return m
            if len(structs) == 1:
                return structs[0]
            dicts = [m for m in members if typing.get_origin(m) is dict]
            return dicts[0] if dicts else tp
        if isinstance(node, list):
            lists = [m for m in members if typing.get_origin(m) is list]
            return lists[0] if lists else tp
    return tp


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _field_type(tp: Any, name: str) -> Any:
    """The type of key ``name`` of struct ``tp``; at the tag key of a union of tagged
    structs (no tag matched), the union itself, for :func:`_allowed`."""
    if _is_struct(tp):
        for f in msgspec.structs.fields(tp):
            if f.encode_name == name:
                return f.type
    elif any(_is_struct(m) and m.__struct_config__.tag_field == name for m in _members(tp)):
        return tp
    return Any


def _members(tp: Any) -> tuple[Any, ...]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return (tp,)


def _allowed(tp: Any, loc: KeyPath) -> str | None:
    """The values a ``Literal`` (or a union's tags, at its tag key) allows, as ``'a' or
    'b'``; None when ``tp`` is neither."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    values: list[Any] = []
    for member in _members(tp):
        if typing.get_origin(member) is typing.Literal:
            values += typing.get_args(member)
        elif _is_struct(member) and loc and loc[-1] == member.__struct_config__.tag_field:
            values.append(member.__struct_config__.tag)
    if not values:
        return None
    shown = [repr(v) for v in values]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
