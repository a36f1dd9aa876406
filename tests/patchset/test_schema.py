"""The JSON Schema of ``patchset.yaml`` (``patchbay schema``, ``docs/patchset.schema.json``)
and the pydantic loader agree: every patchset of the repository (and every full example in the
docs) is accepted by both, and each deliberately wrong patchset is refused by both, at the same
place. Validated with draft 2020-12 (what the schema declares) and draft 7 (what the YAML
language server implements)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from conftest import REPO
from patchbay.errors import InputError
from patchbay.patchset.loading import load_patchset
from patchbay.patchset.schema import json_schema
from patchbay.patchset.yamlfile import load_yaml

SHA = "0" * 64
COMMIT = "1" * 40
GOOD: dict[str, Any] = {
    "schema": 1,
    "name": "every-kind",
    "image": {"reference": "example.invalid/engine:1", "digest": f"sha256:{SHA}"},
    "components": [{"distribution": "engine", "repository": "o/engine", "commit": COMMIT}],
    "targets": {
        "engine": {"package": "engine"},
        "meta": {"package": "engine", "path": "meta"},
        "user_jit": {"env": "ENGINE_JIT_DIR", "home": ".engine/jit"},
    },
    "base": {
        "distributions": {"engine": "==1.0"},
        "files": [{"target": "engine", "path": "engine/a.py", "sha256": SHA}],
    },
    "patches": [
        {
            "id": "d-file",
            "kind": "diff",
            "target": "engine",
            "description": "a diff kept here",
            "file": "patches/a.patch",
            "upstream": ["o/engine#1", "https://example.invalid/pr/2", f"o/engine@{COMMIT}"],
        },
        {
            "id": "d-source",
            "kind": "diff",
            "target": "engine",
            "description": "a diff from upstream",
            "source": {"repo": "o/engine", "pr": 3, "paths": ["engine/"]},
            "upstream_status": {"status": "Backport", "reason": "merged after the pin"},
            "after": ["d-file"],
        },
        {
            "id": "d-pr-at-commit",
            "kind": "diff",
            "target": "meta",
            "description": "the other half of a PR, at a head commit",
            "source": {"repo": "o/engine", "pr": 3, "commit": COMMIT, "paths": ["csrc"]},
            "upstream": ["o/engine#3"],
        },
        {
            "id": "r",
            "kind": "replace",
            "target": "engine",
            "description": "an edit",
            "upstream_status": {"status": "Inappropriate", "reason": "benchmark-only knob"},
            "edits": [{"file": "engine/b.py", "old": "a = 1\n", "new": "a = 2\n", "count": 2}],
        },
        {
            "id": "p",
            "kind": "pip",
            "description": "a pin",
            "upstream": ["o/engine#4"],
            "requirement": "helper==2.0",
            "no_deps": True,
        },
        {
            "id": "p-src",
            "kind": "pip",
            "description": "a source build",
            "upstream": ["o/engine#7"],
            "requirement": "helper",
            "source": {"repo": "o/helper", "ref": "v1.2"},
            "build_requirements": "requirements/build.txt",
            "no_build_isolation": True,
            "build_env": {"BUILD_WITH_HIP": "1"},
        },
        {
            "id": "a",
            "kind": "artifact",
            "target": "meta",
            "description": "kernels",
            "upstream": ["o/engine#5"],
            "files": [
                {"url": "https://example.invalid/k.co", "dest": "hsa/k.co", "sha256": SHA},
                {"url": "https://example.invalid/u.co", "dest": "hsa/u.co", "sha256": None},
                {
                    "url": "http://mirror.invalid/m.co",
                    "dest": "hsa/m.co",
                    "sha256": SHA,
                    "insecure_http": True,
                },
            ],
        },
        {
            "id": "c",
            "kind": "command",
            "target": "engine",
            "description": "a rebuild",
            "upstream": ["o/engine#6"],
            "argv": ["make -C build"],
            "shell": True,
            "cwd": ".",
            "remove": ["build/cache", {"target": "user_jit", "path": "build/mod"}],
            "after": ["r"],
        },
    ],
}
INDEX = {p["id"]: n for n, p in enumerate(GOOD["patches"])}


def _patch(pid: str, **changes: Any) -> Callable[[dict[str, Any]], tuple[str | int, ...]]:
    """A mutation of GOOD: set (or, with None as the value ``...``, delete) keys of one
    patch; returns where the error must be reported."""

    def mutate(data: dict[str, Any]) -> tuple[str | int, ...]:
        patch = data["patches"][INDEX[pid]]
        for key, value in changes.items():
            if value is ...:
                patch.pop(key, None)
            else:
                patch[key] = value
        return ("patches", INDEX[pid])

    return mutate


def _at(path: tuple[str | int, ...], value: Any) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """A mutation of GOOD: set the value at ``path`` (``...`` deletes the key)."""

    def mutate(data: dict[str, Any]) -> tuple[str | int, ...]:
        node: Any = data
        for part in path[:-1]:
            node = node[part]
        if value is ...:
            del node[path[-1]]
        else:
            node[path[-1]] = value
        return path[:-1] if value is ... else path

    return mutate


def _source(**changes: Any) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    return _patch("d-source", source={"repo": "o/engine", **changes})


def _target(name: str, **changes: Any) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """Set keys of one target; a rule across its keys is reported at the target."""

    def mutate(data: dict[str, Any]) -> tuple[str | int, ...]:
        data["targets"][name].update(changes)
        return ("targets", name)

    return mutate


def _remove(entry: dict[str, Any]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """A command whose ``remove`` holds ``entry`` (reported at ``remove``)."""
    return _patch("c", remove=["build/cache", entry])


A = INDEX["a"]
WRONG: dict[str, Callable[[dict[str, Any]], tuple[Any, ...]]] = {
    "diff with file and source": _patch("d-file", source={"repo": "o/engine", "pr": 1}),
    "diff with neither file nor source": _patch("d-file", file=...),
    "diff without target": _patch("d-file", target=...),
    "no upstream and no upstream_status": _patch("d-file", upstream=...),
    "empty upstream and no upstream_status": _patch("d-file", upstream=[]),
    "upstream that is no reference": _patch("r", upstream=["see the PR"]),
    "upstream status word that is not Yocto's": _patch(
        "r", upstream_status={"status": "Merged", "reason": "in 1.2"}
    ),
    "upstream status without a reason": _patch("r", upstream_status={"status": "Pending"}),
    "unknown kind": _patch("r", kind="sed"),
    "no kind": _patch("r", kind=...),
    "replace without edits": _patch("r", edits=...),
    "replace edit with an absolute path": _patch(
        "r", edits=[{"file": "/etc/passwd", "old": "a", "new": "b"}]
    ),
    "replace count as a string": _patch(
        "r", edits=[{"file": "engine/b.py", "old": "a", "new": "b", "count": "2"}]
    ),
    "diff file leaving the folder": _patch("d-file", file="../outside.patch"),
    "diff strip as a boolean": _patch("d-file", strip=True),
    "unknown patch key (a typo)": _patch("d-file", strp=1),
    "source with neither pr nor commit": _source(),
    "source commit not 40 hex": _source(commit="abc1234"),
    "pip without requirement": _patch("p", requirement=...),
    "artifact sha256 not 64 lower-case hex": _at(
        ("patches", A, "files", 0, "sha256"), "ABCDEF" + SHA[6:]
    ),
    "artifact sha256 too short": _at(("patches", A, "files", 0, "sha256"), SHA[:63]),
    "artifact file without sha256 key": _at(("patches", A, "files", 0, "sha256"), ...),
    "artifact over plain http": _at(("patches", A, "files", 2, "insecure_http"), ...),
    "artifact dest with a backslash": _at(("patches", A, "files", 0, "dest"), "hsa\\k.co"),
    "command with neither after, output nor remove": _patch("c", after=..., remove=...),
    "shell command with two argv strings": _patch("c", argv=["make", "install"]),
    "command removing outside its root": _patch("c", remove=["../lib"]),
    "schema version 2": _at(("schema",), 2),
    "schema version as a string": _at(("schema",), "1"),
    "image digest not sha256": _at(("image", "digest"), "md5:abc"),
    "target path with ..": _at(("targets", "meta", "path"), "meta/../.."),
    "target with package and home": _target("user_jit", package="engine"),
    "target with neither package nor home": _at(("targets", "user_jit", "home"), ...),
    "home target with a path": _target("user_jit", path="jit"),
    "home target leaving the home directory": _at(("targets", "user_jit", "home"), "../jit"),
    "package target with env": _target("meta", env="META_DIR"),
    "build requirements without a source": _patch("p", build_requirements="build.txt"),
    "build requirements leaving the source": _patch("p-src", build_requirements="../b.txt"),
    "remove under another target leaving it": _remove({"target": "user_jit", "path": "../m"}),
    "remove entry with a typo": _remove({"target": "user_jit", "pth": "mod"}),
    "base file guard sha256 not hex": _at(("base", "files", 0, "sha256"), "z" * 64),
    "unknown top-level key": _at(("patchs",), []),
}

LOADER_ONLY: dict[str, Callable[[dict[str, Any]], tuple[Any, ...]]] = {
    "a target that is not in targets": _patch("r", target="nowhere"),
    "two patches with one id": _patch("p", id="r"),
    "after naming a later patch": _patch("c", after=["later"]),
    "a pin that pins nothing": _patch("p", requirement="helper"),
    "a source build that names a version": _patch("p-src", requirement="helper==1.0"),
    "a source build at a ref that is no ref name": _patch(
        "p-src", source={"repo": "o/helper", "ref": "v1..2"}
    ),
    "after naming the patch itself": _patch("d-source", after=["d-source"]),
    "remove under an unknown target": _patch(
        "c", remove=[{"target": "nowhere", "path": "build/mod"}]
    ),
    "an edit that changes nothing": _patch(
        "r", edits=[{"file": "engine/b.py", "old": "a", "new": "a"}]
    ),
}


@pytest.fixture(scope="module")
def validators() -> list[jsonschema.protocols.Validator]:
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft7Validator.check_schema(schema)
    return [jsonschema.Draft202012Validator(schema), jsonschema.Draft7Validator(schema)]


def _schema_errors(validator: jsonschema.protocols.Validator, data: Any) -> list[tuple[Any, ...]]:
    """Where the schema refuses ``data``: the instance path of every error, nested ones of
    ``anyOf``/``oneOf`` included; an unknown key is reported at the key (JSON Schema reports
    it at the object that has it)."""
    out = []
    todo = list(validator.iter_errors(data))
    while todo:
        error = todo.pop()
        path = tuple(error.absolute_path)
        if error.validator == "additionalProperties":
            out += [(*path, key) for key in error.instance if key not in error.schema["properties"]]
        else:
            out.append(path)
        todo.extend(error.context or [])
    return out


def _loader_error(tmp_path: Path, data: dict[str, Any]) -> InputError | None:
    (tmp_path / "patchset.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    try:
        load_patchset(tmp_path)
    except InputError as exc:
        return exc
    return None


def _documented_patchsets() -> list[tuple[str, Any]]:
    """Every patchset of the repository, and every full patchset shown in the docs."""
    out = []
    for path in sorted(REPO.glob("patchsets/*/patchset.y*ml")):
        out.append((str(path.relative_to(REPO)), path))
    for doc in (REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))):
        blocks = re.findall(r"^```yaml\n(schema: .*?)^```", doc.read_text(), re.M | re.S)
        out += [(f"{doc.name} example {n}", text) for n, text in enumerate(blocks, 1)]
    return out


@pytest.mark.parametrize("name,source", _documented_patchsets(), ids=lambda v: str(v)[:40])
def test_every_patchset_of_the_repository_is_valid_for_both(
    name: str, source: Any, tmp_path: Path, validators: list[jsonschema.protocols.Validator]
) -> None:
    if isinstance(source, str):
        (tmp_path / "patchset.yaml").write_text(source)
        source = tmp_path / "patchset.yaml"
    load_patchset(source)
    data = load_yaml(source).data
    for validator in validators:
        assert _schema_errors(validator, data) == [], name


def test_the_good_patchset_of_every_kind_is_valid_for_both(
    tmp_path: Path, validators: list[jsonschema.protocols.Validator]
) -> None:
    assert _loader_error(tmp_path, GOOD) is None
    for validator in validators:
        assert _schema_errors(validator, GOOD) == []


@pytest.mark.parametrize("case", list(WRONG))
def test_a_wrong_patchset_is_refused_by_both_at_the_same_place(
    case: str, tmp_path: Path, validators: list[jsonschema.protocols.Validator]
) -> None:
    data = copy.deepcopy(GOOD)
    where = WRONG[case](data)
    error = _loader_error(tmp_path, data)
    assert error is not None, f"the loader accepts: {case}"
    dotted = ".".join(map(str, where))
    assert re.search(rf"(^|: ){re.escape(dotted)}[.:]", str(error)), str(error)
    for validator in validators:
        found = _schema_errors(validator, data)
        assert any(path[: len(where)] == where for path in found), (case, found)


@pytest.mark.parametrize("case", list(LOADER_ONLY))
def test_rules_json_schema_cannot_express_are_the_loaders(
    case: str, tmp_path: Path, validators: list[jsonschema.protocols.Validator]
) -> None:
    data = copy.deepcopy(GOOD)
    LOADER_ONLY[case](data)
    assert _loader_error(tmp_path, data) is not None
    for validator in validators:
        assert _schema_errors(validator, data) == [], case
