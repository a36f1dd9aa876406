"""Edits of ``patchset.yaml`` as text, so that the user's file keeps its comments, order and
layout: a new patch is inserted after the last item of ``patches``, a dropped one is cut out
line by line. Positions come from PyYAML's composer (the node marks), never from guessing at
indentation; the caller validates the result by loading it
(:func:`patchbay.patchset.loading.load_patchset`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _patches_node(text: str, path: Path) -> tuple[yaml.MappingNode, yaml.Node | None]:
    """The composed document and the value node of its top-level ``patches`` key."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", file=path) from None
    if not isinstance(root, yaml.MappingNode):
        raise InputError("a patchset must be a YAML mapping", file=path, line=1)
    for key, value in root.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "patches":
            return root, value
    return root, None


def _render_item(entry: dict[str, Any], indent: int) -> str:
    body = yaml.safe_dump([entry], sort_keys=False, default_flow_style=False, width=4096)
    pad = " " * indent
    return "".join(pad + line if line.strip() else line for line in body.splitlines(True))


def append_patch(text: str, entry: dict[str, Any], *, path: Path) -> str:
    """``text`` with ``entry`` added as the last item of ``patches`` (created when missing).

    The item is indented like the existing items; everything else is kept byte for byte.

    Raises:
        InputError: the text is not a YAML mapping, or ``patches`` is not a sequence.
    """
    _, node = _patches_node(text, path)
    lines = text.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    if node is None or (isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null")):
        if node is not None:  # `patches:` with no value: replace the key's line
            line = node.start_mark.line
            key_line = lines[line] if line < len(lines) else ""
            head = key_line.split("patches", 1)[0]
            lines[line : line + 1] = [f"{head}patches:\n"]
            insert_at = line + 1
        else:
            lines.append("patches:\n")
            insert_at = len(lines)
        lines[insert_at:insert_at] = [_render_item(entry, 2)]
        return "".join(lines)
    if not isinstance(node, yaml.SequenceNode):
        raise InputError("`patches` is not a list", file=path, line=node.start_mark.line + 1)
    if node.flow_style or not node.value:
        # `patches: []` (or a flow list): rewrite the value as a block list of the old items
        if node.value:
            raise InputError(
                "`patches` is written as a flow list [...]; write it as a block list to add to it",
                file=path,
                line=node.start_mark.line + 1,
            )
        start, end = node.start_mark, node.end_mark
        line = lines[start.line]
        rest = line[end.column :].strip()
        lines[start.line] = line[: start.column].rstrip() + "\n" + (f"{rest}\n" if rest else "")
        lines[start.line + 1 : start.line + 1] = [_render_item(entry, 2)]
        return "".join(lines)
    indent = node.value[0].start_mark.column - 2  # the column of the items' "- "
    end_line = _last_content_line(lines, node, len(node.value) - 1)
    lines[end_line + 1 : end_line + 1] = [_render_item(entry, max(indent, 0))]
    return "".join(lines)


def remove_patch(text: str, index: int, *, path: Path) -> str:
    """``text`` without item ``index`` of ``patches`` (its lines, up to its last line that holds
    content: comments between it and the next item stay with the next item).

    Raises:
        InputError: no such item, or ``patches`` is a flow list.
    """
    _, node = _patches_node(text, path)
    if not isinstance(node, yaml.SequenceNode) or not 0 <= index < len(node.value):
        raise InputError(f"patchset has no patch number {index + 1}", file=path)
    if node.flow_style:
        raise InputError(
            "`patches` is written as a flow list [...]; write it as a block list",
            file=path,
            line=node.start_mark.line + 1,
        )
    lines = text.splitlines(True)
    item = node.value[index]
    first = item.start_mark.line
    last = _last_content_line(lines, node, index)
    del lines[first : last + 1]
    if len(node.value) == 1:
        key_line = node.start_mark.line - 1
        while key_line >= 0 and not lines[key_line].lstrip().startswith("patches"):
            key_line -= 1
        if key_line >= 0:
            head = lines[key_line].split("patches", 1)[0]
            lines[key_line] = f"{head}patches: []\n"
    return "".join(lines)


def _last_content_line(lines: list[str], sequence: yaml.SequenceNode, index: int) -> int:
    """The last line (0-based) of item ``index`` holding YAML content, not a comment or blank."""
    item = sequence.value[index]
    end = item.end_mark.line
    if item.end_mark.column == 0:
        end -= 1  # a block node ends where the next token starts, often the next line
    if index + 1 < len(sequence.value):
        end = min(end, sequence.value[index + 1].start_mark.line - 1)
    end = min(end, len(lines) - 1)
    while end > item.start_mark.line:
        stripped = lines[end].strip()
        if stripped and not stripped.startswith("#"):
            break
        end -= 1
    return end


def set_scalar(text: str, key_path: tuple[str | int, ...], value: str, *, path: Path) -> str:
    """``text`` with the scalar at ``key_path`` (e.g. ``("base", "files", 0, "sha256")``)
    replaced by ``value``, quoted as YAML needs; the rest is kept byte for byte.

    Raises:
        InputError: the key path does not lead to a scalar.
    """
    node: yaml.Node | None = yaml.compose(text, Loader=_Loader)
    for key in key_path:
        if isinstance(node, yaml.MappingNode) and isinstance(key, str):
            node = next(
                (v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key),
                None,
            )
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
            node = node.value[key] if 0 <= key < len(node.value) else None
        else:
            node = None
        if node is None:
            break
    if not isinstance(node, yaml.ScalarNode):
        where = ".".join(str(k) for k in key_path)
        raise InputError(f"{where} is not a value in this patchset", file=path)
    rendered = yaml.safe_dump(value, default_style='"' if node.style == '"' else None)
    rendered = rendered.removesuffix("\n...\n").rstrip("\n")
    return text[: node.start_mark.index] + rendered + text[node.end_mark.index :]
