"""``patchbay import``: a draft patchset from an existing shell patch script."""

from __future__ import annotations

from pathlib import Path

from ...errors import InputError, PatchbayError
from ...importer import import_script, parse_projects
from ...importer.observed import BY_RUNNING, NOT_OBSERVED
from ...outputfiles import check_output_folder
from . import status, validate
from .common import hint, say


def run(
    script: Path,
    *,
    out: Path,
    python: str | None,
    projects: list[str],
    force: bool,
    observe: bool = False,
    scope: list[str] | None = None,
    root: Path | None = None,
) -> int:
    """Import ``script`` into ``out``, validate the result and, with ``python``, show its status.
    With ``observe``, the script is run against the engine of ``python`` first and what it
    changed becomes the patches (:func:`patchbay.importer.import_script`).

    Returns:
        0 when every part of the script was converted (or needs nothing), 1 when some part was
        not (listed in ``IMPORT-NOTES.md``).

    Raises:
        InputError: a bad script, ``--project`` or ``--out`` (exit 2).
    """
    mapping = parse_projects(projects)
    if root is not None and not observe:
        raise InputError("--root is for --observe: the tree the script is run against")
    if root is not None and not root.is_dir():
        raise InputError("--root: not a folder", file=root)
    if observe and python is None and root is None:
        raise InputError(
            "--observe needs --python (the engine the script is run against) or --root"
        )
    if scope and not observe:
        raise InputError("--scope is for --observe: it names packages watched during the run")
    if python is not None:  # a bad interpreter is bad input: say so before writing anything
        from ...environment.targets import _interpreter_path, probe

        probe(_interpreter_path(python), [], [])
    check_output_folder(out, "--out")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out cannot be created: {exc.strerror or exc}", file=out) from None
    engine = None
    if observe:
        from ...environment.targets import _interpreter_path, default_python

        engine = _interpreter_path(python or default_python())
    result = import_script(
        script,
        out,
        projects=mapping,
        force=force,
        observe=engine,
        scope=scope or [],
        root=root.resolve() if root is not None else None,
    )
    kinds: dict[str, int] = {}
    for draft in result.patches:
        kinds[draft.kind] = kinds.get(draft.kind, 0) + 1
    summary = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    say(
        f"imported {script} into {out}: {len(result.patches)} patch(es)"
        + (f" ({summary})" if summary else "")
    )
    if result.unconverted:
        say(
            f"NOT CONVERTED: {len(result.unconverted)} part(s) of the script; the patchset does "
            f"not do them (details in {result.notes}):"
        )
        for o in result.unconverted:
            where = f"line {o.start}" if o.start == o.end else f"lines {o.start}-{o.end}"
            say(f"  {script}:{where}: {o.text}")
    if observe:
        only = [t for _, t in result.review if t.startswith(BY_RUNNING)]
        unseen = [(w, t) for w, t in result.review if t.startswith(NOT_OBSERVED)]
        say(
            f"observed: {len(result.patches)} change(s) made by the run, {len(only)} of them "
            f"found only by running; {len(unseen)} change(s) the static reading predicted that "
            "the run did not make"
        )
        for where, text in unseen:
            say(f"  {script}:{where.removeprefix('lines ')}: {text}")
    if result.review or result.todo:
        say(
            f"to check: {len(result.review)} point(s), to fill: {len(result.todo)} TODO blank(s) "
            f"(see {result.notes})"
        )
    validate.run(str(out))
    if observe:
        reproduce = (
            "reproduces it"
            if not result.partial
            else "reproduces what was converted (see what was not, above)"
        )
        where = f"the tree {root}" if root is not None else f"the engine of {python}"
        say(
            f"{where} now holds what the script changed; "
            f"`{hint('apply', out)}` on a fresh copy of the engine {reproduce}"
        )
    elif python is not None:
        try:
            status.run(
                str(out), python=python, root=None, state_dir=None, as_json=False, record=None
            )
        except PatchbayError as exc:
            # the draft is written and valid; the status is extra information
            say(f"patchbay: status of the draft: {exc}", err=True)
    return 1 if result.partial else 0
