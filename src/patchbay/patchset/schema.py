"""The JSON Schema of ``patchset.yaml`` (``patchbay schema``), for editors and CI: msgspec's
schema of the structs of :mod:`patchbay.patchset.model`, with the rules across fields of their
``__post_init__`` that JSON Schema can express."""

from __future__ import annotations

from typing import Any

import msgspec

from .model import (
    PATCH_KINDS,
    UPSTREAM_REF,
    ArtifactFile,
    CommandPatch,
    DiffPatch,
    FileGuard,
    PatchsetSpec,
    PipPatch,
    RemoteSource,
    ReplaceEdit,
    Target,
    TargetPath,
)


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``patchset.yaml``, for editors and CI.

    msgspec writes each struct's fields (:func:`msgspec.json.schema`); :func:`_cross_field_rules`
    adds what the structs' ``__post_init__`` checks across fields, where JSON Schema can say it.
    Only keywords draft 7 has too (``if``/``then``, ``const``, ``allOf``/``anyOf``/``oneOf``,
    ``$ref`` to a JSON pointer) are used, because the YAML language server validates with
    draft 7 semantics.
    """
    generated = msgspec.json.schema(PatchsetSpec)
    defs = generated["$defs"]
    schema = {**defs.pop(PatchsetSpec.__name__), "$defs": defs}
    _ecma_patterns(schema)
    _cross_field_rules(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://patchbay.invalid/schema/patchset-v1.json"
    schema["title"] = "patchbay patchset (schema 1)"
    return schema


def _ecma_patterns(node: Any) -> None:
    """The structs' patterns end with Python's ``\\Z`` (end of text); ECMA-262's ``$`` is that."""
    if isinstance(node, dict):
        pattern = node.get("pattern")
        if isinstance(pattern, str) and pattern.endswith("\\Z"):
            node["pattern"] = pattern[:-2] + "$"
        for value in node.values():
            _ecma_patterns(value)
    elif isinstance(node, list):
        for value in node:
            _ecma_patterns(value)


# JSON Schema patterns are ECMA-262 regexes matched anywhere in the string (not anchored)
_RELATIVE_PATH = r"^(?!/)(?![\s\S]*\\)(?!(?:[\s\S]*/)?\.\.(?:/|$))[\s\S]"
""":func:`~patchbay.patchset.model.relative_posix_path` as a pattern: not empty, not absolute, no
backslash, no ``..`` component."""


def _present(key: str, value: dict[str, Any]) -> dict[str, Any]:
    """The subschema "``key`` is given and its value matches ``value``" (``key: null`` is no
    value: the models read it as absent)."""
    return {"required": [key], "properties": {key: value}}


def _strings(prop: dict[str, Any]) -> dict[str, Any]:
    """The string schema of a property (the string branch of an optional one, or of a list's
    items, which may be a string or an object)."""
    if prop.get("type") == "array":
        prop = prop["items"]
    for branch in prop.get("anyOf", []):
        if branch.get("type") == "string":
            return branch
    return prop


def _cross_field_rules(schema: dict[str, Any]) -> None:
    """Add the models' validator rules that JSON Schema can express to ``schema`` (in place).

    - a patch is one of the kinds, chosen by ``kind`` (``if``/``then``, so an editor reports
      the errors of that kind only, not of all five);
    - every patch: ``upstream`` references (their form as a pattern), or ``upstream_status``
      (:meth:`~patchbay.patchset.model.PatchBase.__post_init__`);
    - diff: exactly one of ``file`` or ``source``; a source: ``pr``, ``commit`` or both;
    - target: ``package`` or ``home``; ``path`` only with ``package``, ``env`` only with
      ``home``;
    - pip: ``build_requirements`` only with ``source``;
    - command: ``after`` or ``output``; with ``shell: true``, one ``argv`` string;
    - artifact file: a plain ``http://`` URL needs ``insecure_http: true``;
    - every path below a root: relative, ``/``-separated, no ``..``
      (:func:`~patchbay.patchset.model.relative_posix_path`).

    Left to the loader (``patchbay validate``): a patch's ``target`` naming an entry of
    ``targets``, unique ids, ``after`` naming earlier patches, PEP 440/508 syntax, ``old`` !=
    ``new``.
    """
    defs = schema["$defs"]
    # kind -> model name, from the union itself (a new kind needs no edit here)
    kinds = {model.kind: model.__name__ for model in PATCH_KINDS}
    schema["properties"]["patches"]["items"] = {
        "type": "object",
        "required": ["kind"],
        "properties": {"kind": {"enum": list(kinds)}},
        "allOf": [
            {
                "if": {"required": ["kind"], "properties": {"kind": {"const": kind}}},
                "then": {"$ref": f"#/$defs/{name}"},
            }
            for kind, name in kinds.items()
        ],
    }
    for name in kinds.values():
        patch = defs[name]
        _strings(patch["properties"]["upstream"])["pattern"] = UPSTREAM_REF.pattern
        patch["allOf"] = [
            {
                "anyOf": [
                    _present("upstream", {"minItems": 1}),
                    _present("upstream_status", {"type": "object"}),
                ]
            }
        ]
    defs[DiffPatch.__name__]["allOf"].append(
        {"oneOf": [_present("file", {"type": "string"}), _present("source", {"type": "object"})]}
    )
    defs[RemoteSource.__name__]["allOf"] = [
        {"anyOf": [_present("pr", {"type": "integer"}), _present("commit", {"type": "string"})]},
        {
            "if": _present("file", {"type": "string"}),
            "then": {
                "allOf": [
                    _present("heredoc", {"type": "string"}),
                    _present("commit", {"type": "string"}),
                    {"not": {"anyOf": [{"required": ["pr"]}, {"required": ["paths"]}]}},
                ]
            },
        },
        {
            "if": _present("heredoc", {"type": "string"}),
            "then": _present("file", {"type": "string"}),
        },
    ]
    defs[ReplaceEdit.__name__]["oneOf"] = [
        {
            "required": ["old", "new"],
            "not": {"anyOf": [{"required": ["old_from"]}, {"required": ["new_from"]}]},
        },
        {
            "required": ["old_from", "new_from"],
            "not": {"anyOf": [{"required": ["old"]}, {"required": ["new"]}]},
        },
    ]
    defs[Target.__name__]["allOf"] = [
        {"oneOf": [_present("package", {"type": "string"}), _present("home", {"type": "string"})]},
        {
            "if": _present("path", {"type": "string"}),
            "then": _present("package", {"type": "string"}),
        },
        {"if": _present("env", {"type": "string"}), "then": _present("home", {"type": "string"})},
    ]
    defs[PipPatch.__name__]["allOf"].append(
        {
            "if": _present("build_requirements", {"type": "string"}),
            "then": _present("source", {"type": "object"}),
        }
    )
    defs[CommandPatch.__name__]["allOf"] += [
        {
            "anyOf": [
                _present("after", {"minItems": 1}),
                _present("output", {"type": "string"}),
                _present("remove", {"minItems": 1}),
            ]
        },
        {
            "if": _present("shell", {"const": True}),
            "then": {"properties": {"argv": {"maxItems": 1}}},
        },
    ]
    defs[ArtifactFile.__name__]["allOf"] = [
        {
            "if": _present("url", {"pattern": "^http://"}),
            "then": _present("insecure_http", {"const": True}),
        }
    ]
    paths = {
        Target: ("path", "home"),
        TargetPath: ("path",),
        PipPatch: ("build_requirements",),
        FileGuard: ("path",),
        DiffPatch: ("file",),
        ReplaceEdit: ("file",),
        ArtifactFile: ("dest",),
        CommandPatch: ("cwd", "output", "remove"),
    }
    for model, keys in paths.items():
        for key in keys:
            _strings(defs[model.__name__]["properties"][key])["pattern"] = _RELATIVE_PATH
