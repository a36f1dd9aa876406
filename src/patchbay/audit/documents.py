"""The audit's cache of parsed documents: a patchset's YAML and a waiver, read once, are not
parsed again until their text (or the code that parses them) changes.

Parsing is a pure function of a document's text: the YAML of ``patchset.yaml`` becomes its
plain data and the line of every key (:class:`~patchbay.patchset.yamlfile.YamlDocument`), a waiver
becomes a :class:`~patchbay.waivers.Waiver` (given its file name and the project names that
resolve ``project #N``). An entry is keyed by those inputs (the text's SHA-256) and a digest of
the parsing code (:data:`_SOURCES`, PyYAML's version, patchbay's and Python's), so it gives
what parsing would. What is not parsing is never cached: every patchset is validated by its
msgspec schema (:func:`~patchbay.patchset.loading.patchset_from_document`), every check runs, every
file a document names is looked at, on every run.

An entry is only written when it reads back equal to what was parsed (a YAML date or a mapping
with number keys has no JSON form here, so that document is simply parsed every time), and it
is read back with its seal and shape checked: a file that does not parse, an entry of the wrong
shape or one whose seal does not check (edited by hand) is ignored and replaced, never
trusted. Bad input raises before anything is cached. The file lives next to the script
findings' (:mod:`.cache`), in the same checked folder, sealed the same way (:mod:`.store`):
one per parsing code, ``documents-<digest>.json``, shared by every tree audited (nothing in a
key says where a document is), written atomically and only when an entry was added or
dropped.
"""

from __future__ import annotations

import hashlib
import json
import operator
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields
from functools import cache
from itertools import product
from pathlib import Path
from typing import Any

import msgspec

from ..patchset.validation import convert
from ..patchset.yamlfile import YamlDocument, parse_yaml
from ..waivers import (
    FieldResult,
    FrontMatter,
    NamedPath,
    Placeholder,
    Reference,
    Waiver,
    parse_waiver,
)
from .store import CacheFolder, SealedStore

__all__ = ["DocumentCache"]

FORMAT = 2
"""The layout of an entry; a digest over another layout's code names another file."""

_PACKAGE = Path(__file__).resolve().parent.parent
_SOURCES = (
    "patchset/yamlfile.py",
    "environment/projects.py",
    "waivers",
    "patchset/placeholders.py",
    "patchset/validation.py",
    "audit/documents.py",
)
"""The code a parsed document depends on: its source is in the digest."""


@cache
def _code_digest() -> str:
    import yaml

    from .. import __version__

    h = hashlib.sha256(
        f"format {FORMAT} patchbay {__version__} {sys.version_info[:2]} "
        f"pyyaml {yaml.__version__} {hasattr(yaml, 'CSafeLoader')}".encode()
    )
    for entry in _SOURCES:
        path = _PACKAGE / entry
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(file.relative_to(_PACKAGE).as_posix().encode() + b"\0")
            h.update(file.read_bytes())
    return h.hexdigest()


class DocumentCache:
    """The parsed documents, for the audit of one root.

    Args:
        folder: the cache folder (``~/.cache/patchbay/audit``), or the run's
            :class:`~.store.CacheFolder`; created when first written.
        root: the audited root (kept for the callers; nothing in an entry depends on it).

    Attributes:
        path: the store file of this parsing code.
        hits, misses: documents that were, were not taken from the cache.
    """

    def __init__(self, folder: Path | CacheFolder, root: Path) -> None:
        self.folder = folder if isinstance(folder, CacheFolder) else CacheFolder(folder)
        self.root = root
        self.code = _code_digest()
        self.store = SealedStore(self.folder, "documents", self.code)
        self.path = self.store.path
        self.hits = 0
        self.misses = 0
        self._contexts: dict[tuple[tuple[tuple[str, str], ...], tuple[str, ...]], str] = {}

    @property
    def entries(self) -> dict[str, object]:
        """The entries held, key -> parsed document as JSON (their seals are not checked)."""
        return {key: self.store.peek(key) for key in self.store}

    def yaml_document(self, path: Path, text: str) -> YamlDocument:
        """The YAML document of ``text`` (the content of ``path``), as
        :func:`~patchbay.patchset.yamlfile.parse_yaml` gives it.

        Raises:
            InputError: as :func:`~patchbay.patchset.yamlfile.parse_yaml` (nothing is cached).
        """
        key = _key("yaml", text)
        return self._lookup(
            key,
            lambda raw: _yaml_of(raw, path, text),
            lambda: parse_yaml(text, path),
            _yaml_json,
            lambda a, b: (a.path, a.data, a.lines) == (b.path, b.data, b.lines),
        )

    def waiver(
        self, path: Path, text: str, *, names: Mapping[str, str], projects: Iterable[str]
    ) -> Waiver:
        """The waiver ``path`` holding ``text``, as :func:`~patchbay.waivers.parse_waiver`
        gives it with these ``names`` and ``projects``.

        Raises:
            InputError: as :func:`~patchbay.waivers.parse_waiver` (nothing is cached).
        """
        projects = sorted(set(projects))
        given = (tuple(names.items()), tuple(projects))
        context = self._contexts.get(given)
        if context is None:
            context = self._contexts[given] = json.dumps(given)
        key = _key("waiver", f"{path.name}\0{context}\0{text}")
        return self._lookup(
            key,
            lambda raw: _waiver_of(raw, path),
            lambda: parse_waiver(path, names=names, projects=projects, text=text),
            _waiver_json,
        )

    def _lookup(
        self,
        key: str,
        decode: Callable[[object], Any],
        parse: Callable[[], Any],
        encode: Callable[[Any], object],
        same: Callable[[Any, Any], bool] = operator.eq,
    ) -> Any:
        raw = self.store.get(key)
        if raw is not None:
            try:
                value = decode(raw)
            except (ValueError, TypeError, KeyError, IndexError):
                self.store.drop(key)
            else:
                self.hits += 1
                return value
        self.misses += 1
        value = parse()
        try:
            raw = json.loads(json.dumps(encode(value)))
            faithful = same(decode(raw), value)
        except (ValueError, TypeError, KeyError, IndexError):
            faithful = False
        if faithful:
            self.store.put(key, raw)
        return value

    def save(self) -> None:
        """Write the entries, when anything changed (see :meth:`.store.SealedStore.save`)."""
        self.store.save()


def _key(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()


def _check(ok: bool) -> None:
    if not ok:
        raise ValueError("not the shape this cache writes")


def _is_line(value: object) -> bool:
    return type(value) is int and value >= 1


def _yaml_json(doc: YamlDocument) -> object:
    # the line map as one string, decoded when a line is first asked for: most audits ask for
    # none, and its thousands of small lists would be most of the file's decoding
    lines = json.dumps([[list(k), line] for k, line in doc.lines.items()], separators=(",", ":"))
    return {"data": doc.data, "lines": lines}


def _yaml_of(raw: object, path: Path, text: str) -> YamlDocument:
    _check(isinstance(raw, dict) and isinstance(raw.get("lines"), str) and "data" in raw)
    assert isinstance(raw, dict)
    return _CachedDocument(path, raw["data"], raw["lines"], text)


class _CachedDocument(YamlDocument):
    """A YAML document from the cache: its line map is decoded on first use (and, should it
    not have the shape this cache writes, taken from a fresh parse of the text instead)."""

    def __init__(self, path: Path, data: Any, encoded: str, text: str) -> None:
        self.path = path
        self.data = data
        self._encoded: str | None = encoded
        self._text = text
        self._lines: dict[tuple[str | int, ...], int] = {}

    @property  # type: ignore[override]
    def lines(self) -> dict[tuple[str | int, ...], int]:
        if self._encoded is not None:
            encoded, self._encoded = self._encoded, None
            try:
                self._lines = _lines_of(json.loads(encoded))
            except (ValueError, TypeError):
                self._lines = parse_yaml(self._text, self.path).lines
        return self._lines

    @lines.setter
    def lines(self, value: dict[tuple[str | int, ...], int]) -> None:
        self._encoded = None
        self._lines = value


def _lines_of(raw: object) -> dict[tuple[str | int, ...], int]:
    _check(isinstance(raw, list))
    assert isinstance(raw, list)
    lines = {tuple(key): line for key, line in raw}
    # checked in bulk: a document has a line for every key and item
    _check({type(e) for key in lines for e in key} <= _KEY_TYPES)
    _check({type(n) for n in lines.values()} <= _INT and (not lines or min(lines.values()) >= 1))
    return lines


_KEY_TYPES = frozenset((str, int))
_INT = frozenset((int,))


# the fields of each dataclass a waiver holds, in order, with the JSON types of their values
_OPT_STR = (str, type(None))
_OPT_INT = (int, type(None))
_SHAPES: dict[type, tuple[tuple[type, ...], ...]] = {
    Placeholder: ((int,), (str,), (str,), _OPT_STR),
    Reference: ((str,), (int,), (str,), _OPT_STR, _OPT_INT, _OPT_STR, _OPT_STR, _OPT_STR),
    NamedPath: ((str,), (int,), (bool,)),
}
for _cls, _shape in _SHAPES.items():  # a field added to one of them must be added here
    assert len(fields(_cls)) == len(_shape), _cls
_TYPES = {cls: frozenset(product(*shape)) for cls, shape in _SHAPES.items()}
"""The tuples of value types each record may hold (checked in one look-up)."""


def _flat(value: object) -> list[object]:
    return [getattr(value, f.name) for f in fields(value)]  # type: ignore[arg-type]


def _record(cls: type, item: object) -> Any:
    _check(isinstance(item, list) and tuple(map(type, item)) in _TYPES[cls])
    assert isinstance(item, list)
    return cls(*item)


def _field_json(result: FieldResult) -> object:
    return [
        result.name,
        result.status,
        result.line,
        result.where,
        [_flat(p) for p in result.placeholders],
    ]


def _field_of(item: object) -> FieldResult:
    _check(isinstance(item, list) and len(item) == 5)
    assert isinstance(item, list)
    name, status, line, where, placeholders = item
    _check(isinstance(name, str) and status in ("found", "missing", "placeholder"))
    _check((line is None or _is_line(line)) and type(where) in _OPT_STR)
    _check(isinstance(placeholders, list))
    return FieldResult(name, status, line, where, [_record(Placeholder, p) for p in placeholders])


def _set_fields(fm: FrontMatter) -> dict[str, Any]:
    """The front matter's keys that hold a value (every field defaults to None), as JSON."""
    return {k: v for k, v in msgspec.to_builtins(fm).items() if v is not None}


def _waiver_json(waiver: Waiver) -> object:
    fm = waiver.front_matter
    return {
        "id": waiver.id,
        "front_matter": None if fm is None else _set_fields(fm),
        "key_lines": [
            [list(k) if isinstance(k, tuple) else k, n] for k, n in waiver.key_lines.items()
        ],
        "fields": [[name, _field_json(r)] for name, r in waiver.fields.items()],
        "references": [_flat(r) for r in waiver.references],
        "placeholders": [_flat(p) for p in waiver.placeholders],
        "meta": [[k, v[0], v[1]] for k, v in waiver.meta.items()],
        "paths": [_flat(p) for p in waiver.paths],
    }


def _waiver_of(raw: object, path: Path) -> Waiver:
    _check(isinstance(raw, dict) and isinstance(raw.get("id"), str))
    assert isinstance(raw, dict)
    fm = raw["front_matter"]
    _check(fm is None or isinstance(fm, dict))
    try:
        front = None if fm is None else convert(fm, FrontMatter)
    except msgspec.ValidationError:
        raise ValueError("not the shape this cache writes") from None
    waiver = Waiver(path=path, id=raw["id"], front_matter=front)
    for key, line in raw["key_lines"]:
        _check(isinstance(key, str | list) and _is_line(line))
        waiver.key_lines[tuple(key) if isinstance(key, list) else key] = line
    for name, result in raw["fields"]:
        _check(isinstance(name, str))
        waiver.fields[name] = _field_of(result)
    waiver.references = [_record(Reference, r) for r in raw["references"]]
    waiver.placeholders = [_record(Placeholder, p) for p in raw["placeholders"]]
    for key, value, line in raw["meta"]:
        _check(isinstance(key, str) and isinstance(value, str) and type(line) is int)
        waiver.meta[key] = (value, line)
    waiver.paths = [_record(NamedPath, p) for p in raw["paths"]]
    return waiver
