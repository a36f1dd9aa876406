"""Loading a patchset file into the structs of :mod:`patchbay.patchset.model`: finding the
YAML file of a PATCHSET argument, validating the top level and each patch apart, and the checks
across patches (unique ids, known targets, ``after`` naming earlier patches), every problem an
:class:`~patchbay.errors.InputError` naming ``file:line``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from ..errors import InputError
from .inputfiles import PATCHSET_FILENAMES
from .model import CommandPatch, Patchset, PatchsetSpec, PatchSpec, TargetPath
from .validation import convert, problem_of
from .yamlfile import YamlDocument, lines_only, load_yaml


def find_patchset_file(path: Path) -> Path:
    """Resolve a PATCHSET argument: a YAML file, or a folder holding ``patchset.yaml``.

    Raises:
        InputError: nothing usable at ``path``.
    """
    if path.is_dir():
        for name in PATCHSET_FILENAMES:
            candidate = path / name
            if candidate.exists() or candidate.is_symlink():  # reading says what is wrong
                return candidate
        raise InputError(f"no {PATCHSET_FILENAMES[0]} in this folder", file=path)
    if path.exists() or path.is_symlink():
        return path
    raise InputError("no such patchset file or folder", file=path)


def load_patchset(path: Path) -> Patchset:
    """Load and validate a patchset (schema and consistency, not patch contents).

    Args:
        path: a patchset folder or its YAML file.

    Returns:
        The :class:`~patchbay.patchset.model.Patchset`.

    Raises:
        InputError: malformed YAML, schema violations (the first of the top level and the
            first of each patch, one detail line each, with ``file:line``), duplicate patch
            ids, a patch naming an unknown target.
    """
    yaml_path = find_patchset_file(path)
    patchset = patchset_from_document(load_yaml(yaml_path))
    # the document's data is the spec now: keep only its lines, for later messages
    patchset.document = lines_only(patchset.document)
    return patchset


def patchset_from_document(doc: YamlDocument) -> Patchset:
    """Validate a patchset already read from its YAML file (``doc.path``), as
    :func:`load_patchset` does: the audit reads the document through its cache of parsed
    documents (:mod:`patchbay.audit.documents`) and validates it here every time.

    Raises:
        InputError: as :func:`load_patchset`, past reading the file.
    """
    yaml_path = doc.path
    if not isinstance(doc.data, dict):
        raise InputError("a patchset must be a YAML mapping", file=yaml_path, line=1)
    spec = _validated(doc)
    problems: list[tuple[int | None, str]] = []
    seen: dict[str, int] = {}
    for i, patch in enumerate(spec.patches):
        if patch.id in seen:
            problems.append((doc.line_of(("patches", i, "id")), f"duplicate patch id {patch.id!r}"))
        seen.setdefault(patch.id, i)
        if patch.target is not None and patch.target not in spec.targets:
            problems.append(
                (
                    doc.line_of(("patches", i, "target")),
                    f"patch {patch.id}: unknown target {patch.target!r} ({_declared(spec)})",
                )
            )
    for i, guard in enumerate(spec.base.files):
        if guard.target not in spec.targets:
            problems.append(
                (doc.line_of(("base", "files", i, "target")), f"unknown target {guard.target!r}")
            )
    problems += _order_problems(spec, seen, doc)
    for i, patch in enumerate(spec.patches):
        if isinstance(patch, CommandPatch):
            for n, item in enumerate(patch.remove):
                if isinstance(item, TargetPath) and item.target not in spec.targets:
                    problems.append(
                        (
                            doc.line_of(("patches", i, "remove", n, "target")),
                            f"patch {patch.id}: `remove` names unknown target {item.target!r} "
                            f"({_declared(spec)})",
                        )
                    )
    if problems:
        raise _problems_error(yaml_path, problems)
    return Patchset(spec=spec, path=yaml_path, folder=yaml_path.parent, document=doc)


def _declared(spec: PatchsetSpec) -> str:
    """``targets: a, b``, or that none is declared."""
    return f"targets: {', '.join(spec.targets)}" if spec.targets else "no target is declared"


def _order_problems(
    spec: PatchsetSpec, first: dict[str, int], doc: YamlDocument
) -> list[tuple[int | None, str]]:
    """The ordering key: every id a patch names in ``after`` must be a patch listed before it.

    Patches apply in list order, each judged on the tree the earlier ones leave (as quilt's
    series file); ``after`` says that order matters (the patch was made on top of those) so a
    reordering, or a patch inserted before what it depends on, is refused here, for every kind
    and every command, instead of turning into a conflict on some machine later.
    """
    problems: list[tuple[int | None, str]] = []
    for i, patch in enumerate(spec.patches):
        for n, dep in enumerate(patch.after):
            where = doc.line_of(("patches", i, "after", n)) or doc.line_of(("patches", i, "after"))
            if dep == patch.id:
                problems.append((where, f"patch {patch.id}: `after` names the patch itself"))
            elif dep not in first:
                problems.append(
                    (where, f"patch {patch.id}: `after` names {dep!r}, which is not a patch here")
                )
            elif first[dep] >= i:
                problems.append(
                    (
                        where,
                        f"patch {patch.id}: `after` names {dep!r}, which is listed after it "
                        f"(at patches[{first[dep]}]); move {patch.id} below {dep}, the order "
                        "the patches apply in",
                    )
                )
    return problems


def _problems_error(path: Path, problems: list[tuple[int | None, str]]) -> InputError:
    first_line, first = problems[0]
    details = [f"{path}:{line}: {msg}" if line else f"{path}: {msg}" for line, msg in problems[1:]]
    return InputError(first, file=path, line=first_line, details=details)


def _validated(doc: YamlDocument) -> PatchsetSpec:
    """The document as a :class:`~patchbay.patchset.model.PatchsetSpec`; the top level and each
    patch are validated apart, so that one run names the first problem of each (msgspec stops at
    a value's first).

    Raises:
        InputError: the problems, one line each, with ``file:line``.
    """
    problems: list[tuple[int | None, str]] = []

    def problem(
        exc: msgspec.ValidationError, type_: Any, data: Any, prefix: tuple[Any, ...]
    ) -> None:
        loc, msg = problem_of(exc, type_, data)
        loc = (*prefix, *loc)
        where = ".".join(str(p) for p in loc) or "(top level)"
        problems.append((doc.line_of(loc), f"{where}: {msg}"))

    top = dict(doc.data)
    items = top.pop("patches", [])
    spec = None
    try:
        spec = convert(top, PatchsetSpec)
    except msgspec.ValidationError as exc:
        problem(exc, PatchsetSpec, top, ())
    patches: list[Any] = []
    if not isinstance(items, list):
        try:
            convert(items, list[Any])
        except msgspec.ValidationError as exc:
            problem(exc, list[Any], items, ("patches",))
        items = []
    for i, item in enumerate(items):
        try:
            patches.append(convert(item, PatchSpec))
        except msgspec.ValidationError as exc:
            problem(exc, PatchSpec, item, ("patches", i))
    if problems or spec is None:
        raise _problems_error(doc.path, problems)
    spec.patches = patches
    return spec
