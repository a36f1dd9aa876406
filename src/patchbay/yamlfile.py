"""YAML loading that keeps line numbers, so every error can name ``file:line``.

PyYAML's composer gives nodes with marks; we build plain Python values from them and keep a map
from key path (``("patches", 2, "file")``) to the 1-based line where that key or item starts.
Duplicate mapping keys are an error (PyYAML would silently keep the last one, hiding a typo).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError

KeyPath = tuple[str | int, ...]

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class YamlDocument:
    """A loaded YAML document: its plain data and the line of every key path."""

    path: Path
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line_of(self, key_path: KeyPath) -> int | None:
        """Line of the longest prefix of ``key_path`` that exists in the document."""
        for n in range(len(key_path), -1, -1):
            line = self.lines.get(tuple(key_path[:n]))
            if line is not None:
                return line
        return None


def load_yaml(path: Path) -> YamlDocument:
    """Read a YAML file into a :class:`YamlDocument`.

    Args:
        path: the YAML file.

    Raises:
        InputError: the file is missing or unreadable, is not valid YAML, has a duplicate key or
            uses a YAML feature patchbay does not accept (merge keys); the error names the line.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", file=path) from None
    return parse_yaml(text, path)


def parse_yaml(text: str, path: Path, first_line: int = 1) -> YamlDocument:
    """Parse YAML text that sits in ``path`` from line ``first_line`` on (e.g. the front
    matter of a Markdown file), with the same checks and line numbers as :func:`load_yaml`.

    Raises:
        InputError: as :func:`load_yaml`, naming ``path`` and the line in it.
    """
    try:
        # leading newlines put every mark on its line in the surrounding file
        node = yaml.compose("\n" * (first_line - 1) + text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"invalid YAML: {problem}", file=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", file=path) from None
    doc = YamlDocument(path=path, data=None)
    if node is None:
        return doc
    constructor = yaml.SafeLoader("")
    doc.data = _build(node, (), doc, constructor)
    return doc


_PLAIN_TAGS = {
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp")
}


def _build(node: yaml.Node, key_path: KeyPath, doc: YamlDocument, constructor: Any) -> Any:
    doc.lines.setdefault(key_path, node.start_mark.line + 1)
    if node.tag not in _PLAIN_TAGS:
        raise InputError(
            f"YAML tag {node.tag!r} is not allowed (plain YAML only)",
            file=doc.path,
            line=node.start_mark.line + 1,
        )
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                raise InputError("mapping keys must be plain scalars", file=doc.path, line=line)
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise InputError("YAML merge keys (<<) are not supported", file=doc.path, line=line)
            key = constructor.construct_object(key_node)
            if key in out:
                raise InputError(f"duplicate key {key!r}", file=doc.path, line=line)
            child = (*key_path, key)
            doc.lines[child] = line
            out[key] = _build(value_node, child, doc, constructor)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*key_path, i), doc, constructor) for i, item in enumerate(node.value)]
    try:
        return constructor.construct_object(node)
    except (ValueError, yaml.YAMLError) as exc:  # e.g. a date like 2026-02-30
        raise InputError(
            f"invalid value {node.value!r}: {exc}", file=doc.path, line=node.start_mark.line + 1
        ) from None
