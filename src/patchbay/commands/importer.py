"""``patchbay import``: a draft patchset from an existing shell patch script."""

from __future__ import annotations

from pathlib import Path

from ..errors import PatchbayError
from ..importer import import_script, parse_projects
from . import status, validate
from .common import console, err_console


def run(
    script: Path,
    *,
    out: Path,
    python: str | None,
    projects: list[str],
    force: bool,
) -> int:
    """Import ``script`` into ``out``, validate the result and, with ``python``, show its status.

    Returns:
        0 when every part of the script was converted (or needs nothing), 1 when some part was
        not (listed in ``IMPORT-NOTES.md``).

    Raises:
        InputError: a bad script, ``--project`` or ``--out`` (exit 2).
    """
    mapping = parse_projects(projects)
    result = import_script(script, out, projects=mapping, force=force)
    kinds: dict[str, int] = {}
    for draft in result.patches:
        kinds[draft.kind] = kinds.get(draft.kind, 0) + 1
    summary = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    console.print(
        f"imported {script} into {out}: {len(result.patches)} patch(es)"
        + (f" ({summary})" if summary else ""),
        markup=False,
    )
    if result.unconverted:
        console.print(
            f"NOT CONVERTED: {len(result.unconverted)} part(s) of the script; the patchset does "
            f"not do them (details in {result.notes}):",
            markup=False,
        )
        for o in result.unconverted:
            where = f"line {o.start}" if o.start == o.end else f"lines {o.start}-{o.end}"
            console.print(f"  {script}:{where}: {o.text}", markup=False)
    if result.review or result.todo:
        console.print(
            f"to check: {len(result.review)} point(s), to fill: {len(result.todo)} TODO blank(s) "
            f"(see {result.notes})",
            markup=False,
        )
    validate.run(str(out))
    if python is not None:
        try:
            status.run(
                str(out), python=python, root=None, state_dir=None, as_json=False, record=None
            )
        except PatchbayError as exc:
            err_console.print(f"patchbay: error: status: {exc}", markup=False)
            if exc.exit_code == 2:
                return 2
    return 1 if result.partial else 0
