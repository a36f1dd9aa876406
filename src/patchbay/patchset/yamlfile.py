"""YAML loading that keeps line numbers, so every error can name ``file:line``.

PyYAML's composer gives nodes with marks; we build plain Python values from them and keep a map
from key path (``("patches", 2, "file")``) to the 1-based line where that key or item starts.
Duplicate mapping keys are an error (PyYAML would silently keep the last one, hiding a typo).

Aliases are limited: an alias (``*name``) stands for a copy of its anchored value, so a few
lines of nested aliases can stand for billions of values ("billion laughs"). A document may use
at most :data:`MAX_ALIASES` aliases, build at most :data:`MAX_VALUES` values once they are
expanded, and nest at most :data:`MAX_DEPTH` levels; past a limit it is refused at the line
where the limit was reached, before anything is expanded.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from .inputfiles import MAX_YAML_BYTES, read_input_text

KeyPath = tuple[str | int, ...]

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"

MAX_ALIASES = 1000
MAX_VALUES = 500_000
MAX_DEPTH = 64


class YamlDocument:
    """A loaded YAML document: its plain data and the line of every key path.

    A plain class (not a Struct): the audit cache's documents subclass it with a line map
    decoded on first use.

    Attributes:
        path: the file it was read from (for messages).
        data: the document as plain Python data (dicts, lists, str, int, float, bool, None).
        lines: 1-based line of every key path (a tuple of keys and list indexes): a dict,
            or for a loaded patchset a compact :class:`LineTable`.
    """

    def __init__(self, path: Path, data: Any, lines: Mapping[KeyPath, int] | None = None) -> None:
        self.path = path
        self.data = data
        self.lines = {} if lines is None else lines

    def line_of(self, key_path: KeyPath) -> int | None:
        """Line of the longest prefix of ``key_path`` that exists in the document."""
        for n in range(len(key_path), -1, -1):
            line = self.lines.get(tuple(key_path[:n]))
            if line is not None:
                return line
        return None


class LineTable(Mapping[KeyPath, int]):
    """The lines of a document's key paths, held compactly: the items of a top-level list
    (the patches of a patchset) mostly share one set of keys, so each item keeps that set
    (shared, as positions) and its own lines in an array, instead of a key-path tuple and an
    int object per key (10,000 patches: ~2 MB instead of ~15 MB). Read-only.

    Args:
        lines: key path -> 1-based line, as :attr:`YamlDocument.lines` of a parsed document.
    """

    def __init__(self, lines: Mapping[KeyPath, int]) -> None:
        self._flat: dict[KeyPath, int] = {}
        grouped: dict[str, dict[int, tuple[list[KeyPath], list[int]]]] = {}
        for key, line in lines.items():
            if self._in_item(key):
                rests, got = grouped.setdefault(key[0], {}).setdefault(key[1], ([], []))
                rests.append(key[2:])
                got.append(line)
            else:
                self._flat[key] = line
        shapes: dict[tuple[KeyPath, ...], dict[KeyPath, int]] = {}
        self._items: dict[str, dict[int, tuple[dict[KeyPath, int], array[int]]]] = {}
        for name, items in grouped.items():
            table = self._items[name] = {}
            for index, (rests, got) in items.items():
                shape = tuple(rests)
                positions = shapes.get(shape)
                if positions is None:
                    positions = shapes[shape] = {rest: n for n, rest in enumerate(shape)}
                table[index] = (positions, array("I", got))

    @staticmethod
    def _in_item(key: KeyPath) -> bool:
        return len(key) >= 2 and isinstance(key[0], str) and isinstance(key[1], int)

    def __getitem__(self, key: KeyPath) -> int:
        if self._in_item(key):
            item = self._items.get(key[0], {}).get(key[1])
            if item is not None:
                n = item[0].get(key[2:])
                if n is not None:
                    return item[1][n]
        return self._flat[key]

    def __iter__(self) -> Iterator[KeyPath]:
        # the top level first, then each list item's keys (not the document's order)
        yield from self._flat
        for name, items in self._items.items():
            for index, (positions, _) in items.items():
                for rest in positions:
                    yield (name, index, *rest)

    def __len__(self) -> int:
        items = (item for table in self._items.values() for item in table.values())
        return len(self._flat) + sum(len(positions) for positions, _ in items)


def lines_only(doc: YamlDocument) -> YamlDocument:
    """``doc`` without its data, its lines in a :class:`LineTable`: what the errors of later
    steps need from a document once it was validated (a patchset keeps this for its life)."""
    return YamlDocument(path=doc.path, data=None, lines=LineTable(doc.lines))


def load_yaml(path: Path) -> YamlDocument:
    """Read a YAML file into a :class:`YamlDocument`.

    Args:
        path: the YAML file.

    Raises:
        InputError: the file is missing, unreadable, not a regular file or too large (see
            :func:`~patchbay.patchset.inputfiles.read_input`), is not valid YAML, has a duplicate
            key, uses a YAML feature patchbay does not accept (merge keys, tags), or aliases past
            the limits; the error names the line.
    """
    return parse_yaml(read_input_text(path, limit=MAX_YAML_BYTES), path)


def parse_yaml(text: str, path: Path, first_line: int = 1) -> YamlDocument:
    """Parse YAML text that sits in ``path`` from line ``first_line`` on (e.g. the front
    matter of a Markdown file), with the same checks and line numbers as :func:`load_yaml`.

    Raises:
        InputError: as :func:`load_yaml`, naming ``path`` and the line in it.
    """
    try:
        # leading newlines put every mark on its line in the surrounding file
        source = "\n" * (first_line - 1) + text
        node = yaml.compose(source, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = (exc.problem or exc.context or "invalid YAML").splitlines()[0]
        raise InputError(f"invalid YAML: {problem}", file=path, line=line) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (NUL, BEL...)
        line = source.count("\n", 0, exc.position) + 1
        what = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
        raise InputError(
            f"invalid YAML: character {what} is not allowed ({exc.reason})", file=path, line=line
        ) from None
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"invalid YAML: {first}", file=path) from None
    except RecursionError:
        raise InputError(
            f"invalid YAML: nested deeper than {MAX_DEPTH} levels", file=path
        ) from None
    doc = YamlDocument(path=path, data=None)
    if node is None:
        return doc
    met_again = _check_expansion(node, path)
    constructor = yaml.SafeLoader("")
    doc.data = _build(node, (), doc, constructor, met_again)
    return doc


_PLAIN_TAGS = {
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp")
}


def _check_expansion(root: yaml.Node, path: Path) -> set[int]:
    """Refuse a document whose aliases expand past the limits, from the composed node graph
    (in which an alias is the anchored node met again), before building anything: the size of
    each node is computed once, so a bomb costs what its text costs. Returns the ``id`` of
    every collection node met again (the anchored ones that an alias names).

    Raises:
        InputError: too many aliases, too many values once expanded, an alias inside its own
            anchor, or nesting past :data:`MAX_DEPTH`; at the line of the node concerned.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()
    met_again: set[int] = set()
    aliases = 0

    def refuse(node: yaml.Node, problem: str) -> InputError:
        return InputError(f"{problem}; refused", file=path, line=node.start_mark.line + 1)

    def size(node: yaml.Node, depth: int) -> int:
        nonlocal aliases
        key = id(node)
        if key in sizes:
            if not isinstance(node, yaml.ScalarNode):
                met_again.add(key)
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise refuse(node, f"more than {MAX_ALIASES} YAML aliases (an alias bomb?)")
            return sizes[key]
        if key in active:
            raise refuse(node, "a YAML alias inside its own anchor (an endless value)")
        if depth > MAX_DEPTH:
            raise refuse(node, f"YAML nested deeper than {MAX_DEPTH} levels")
        total = 1
        if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            active.add(key)
            for item in node.value:  # nodes, or (key, value) pairs of a mapping
                for child in item if isinstance(item, tuple) else (item,):
                    total += size(child, depth + 1)
            active.discard(key)
            if total > MAX_VALUES:
                raise refuse(node, f"YAML aliases expand past {MAX_VALUES} values (an alias bomb?)")
        sizes[key] = total
        return total

    size(root, 0)
    return met_again


def _build(
    node: yaml.Node,
    key_path: KeyPath,
    doc: YamlDocument,
    constructor: Any,
    met_again: set[int],
    once: bool = True,
) -> Any:
    """The plain value of ``node``; its lines go to ``doc.lines``.

    A collection built ``once`` (neither it nor a collection around it is named by an alias,
    see :func:`_check_expansion`) lets go of each child node once that is built, so that the
    node tree of a large document shrinks while its values grow, instead of both being held
    whole at the peak of loading.
    """
    once = once and id(node) not in met_again
    doc.lines.setdefault(key_path, node.start_mark.line + 1)
    if node.tag not in _PLAIN_TAGS:
        raise InputError(
            f"YAML tag {node.tag!r} is not allowed (plain YAML only)",
            file=doc.path,
            line=node.start_mark.line + 1,
        )
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for n, (key_node, value_node) in enumerate(node.value):
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                raise InputError("mapping keys must be plain scalars", file=doc.path, line=line)
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise InputError("YAML merge keys (<<) are not supported", file=doc.path, line=line)
            key = _scalar(key_node, doc, constructor)
            if key in out:
                raise InputError(f"duplicate key {key!r}", file=doc.path, line=line)
            child = (*key_path, key)
            doc.lines[child] = line
            out[key] = _build(value_node, child, doc, constructor, met_again, once)
            if once:
                node.value[n] = None
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            items.append(_build(item, (*key_path, i), doc, constructor, met_again, once))
            if once:
                node.value[i] = None
        return items
    return _scalar(node, doc, constructor)


def _scalar(node: yaml.Node, doc: YamlDocument, constructor: Any) -> Any:
    # what the safe constructor gives for these two tags, without its bookkeeping
    if node.tag == _STR_TAG:
        return node.value
    if node.tag == _NULL_TAG:
        return None
    try:
        return constructor.construct_object(node)
    except (ValueError, TypeError, yaml.YAMLError) as exc:  # e.g. a date like 2026-02-30
        raise InputError(
            f"invalid value {node.value!r}: {exc}", file=doc.path, line=node.start_mark.line + 1
        ) from None
