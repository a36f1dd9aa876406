"""``patchbay waiver new``: a waiver document prefilled from a patchset."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Any

from ...audit.config import load_config
from ...errors import InputError, PatchbayError, RefusedError
from ...outputfiles import check_output_file, write_output_file
from ...patchset.describe import PatchSummary, patch_summaries
from ...patchset.inputfiles import PATCHSET_FILENAMES
from ...patchset.loading import load_patchset
from ...patchset.model import Patchset
from ...waivers import waiver_template
from ...waivers.document import Waiver, parse_waiver, read_waiver_text
from ...waivers.sync import synced_text
from ...waivers.template import (
    adopted_text,
)
from .common import load, say


def new(
    patchset_arg: str,
    patch_ids: list[str],
    *,
    waiver_id: str | None,
    output: Path | None,
    force: bool,
    today: date | None = None,
) -> int:
    """Write ``<waiver folder>/<id>.md`` (or ``output``) covering ``patch_ids`` (default:
    all). The id is the team's (``--id 2508``); a waiver of that id in a configured waiver folder
    is the file written. A legacy waiver there (no front matter) is adopted in place: its text
    is kept byte for byte, the front matter goes before it and the generated patch table after
    it (:func:`~patchbay.waivers.template.adopted_text`).

    Returns:
        0 when written.

    Raises:
        InputError: unknown patch id, invalid waiver id, a patchset that does not load, a
            malformed waiver in the way.
        RefusedError: the file exists with front matter and ``force`` is not set (``waiver
            sync`` refreshes it).
    """
    if output is not None:
        check_output_file(output, "-o/--output")
    patchset = load(patchset_arg)
    patch_ids = list(dict.fromkeys(patch_ids))  # `waiver new ps pad pad` covers pad once
    by_id = {p.id: (i, p) for i, p in enumerate(patchset.patches)}
    unknown = [pid for pid in patch_ids if pid not in by_id]
    if unknown:
        raise InputError(
            f"no patch {', '.join(unknown)} in patchset {patchset.name} "
            f"(patches: {', '.join(by_id) or 'none'})",
            file=patchset.path,
        )
    chosen = [by_id[pid] for pid in patch_ids] if patch_ids else list(by_id.values())
    if not chosen:
        raise InputError(f"patchset {patchset.name} has no patches to cover", file=patchset.path)
    wid = waiver_id or (chosen[0][1].id if len(chosen) == 1 else patchset.name)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", wid):
        raise InputError(f"waiver id {wid!r} must match [A-Za-z0-9][A-Za-z0-9._-]*")
    try:
        config = load_config(Path.cwd()).config
    except InputError:
        if output is None:
            raise
        config = None  # written where asked; the audit reports the configuration
    if output is None:
        assert config is not None
        output = _existing(config, wid) or Path(config.new_waiver_folder(Path.cwd())) / f"{wid}.md"
    shared = _shared_ids(patchset, Path.cwd(), config.patchsets) if config else set()
    legacy = None
    if output.exists() and not force:
        legacy = parse_waiver(output)  # (InputError: a malformed one, named)
        if not legacy.legacy:
            raise RefusedError(
                f"already exists with front matter: `patchbay waiver sync {patchset_arg} "
                f"{output}` refreshes its generated patch table and keeps your text (--force "
                "writes a new waiver over it)",
                file=output,
            )
    summaries = patch_summaries(patchset, chosen, shared)
    if legacy is not None:
        return _adopt(output, legacy, wid, patchset, summaries, today or date.today())
    image = patchset.spec.image.reference
    if patchset.spec.image.digest:
        image += f"@{patchset.spec.image.digest}"
    text = waiver_template(
        waiver_id=wid,
        patchset_name=patchset.name,
        patchset_path=str(patchset.path),
        source=_source(patchset),
        image=image,
        patches=summaries,
        today=today or date.today(),
    )
    try:
        write_output_file(output, text)
    except OSError as exc:
        raise InputError(f"cannot write the waiver: {exc.strerror or exc}", file=output) from None
    say(
        f"wrote {output}: waiver {wid} for {len(summaries)} patch(es); fill in every "
        "<TODO: ...> (`patchbay audit` lists the ones left)"
    )
    return 0


def _shared_ids(patchset: Patchset, root: Path, entries: list[str]) -> set[str]:
    """Ids of ``patchset`` that another patchset of the repository at ``root`` (its configured
    ``patchsets`` entries) has too: a waiver must name those as ``patchset/id``. Patchsets that
    do not load are skipped (the audit reports them)."""
    own = patchset.path.resolve()
    ids = {p.id for p in patchset.patches}
    shared: set[str] = set()
    for entry in entries:
        path = root / entry
        if not path.exists():
            continue
        folders = [path]
        if not (path.is_file() or any((path / n).is_file() for n in PATCHSET_FILENAMES)):
            folders = sorted(p for p in path.iterdir() if p.is_dir())
        for folder in folders:
            if folder.is_dir() and not any((folder / n).is_file() for n in PATCHSET_FILENAMES):
                continue
            try:
                other = load_patchset(folder)
            except PatchbayError:
                continue
            if other.path.resolve() != own:
                shared |= ids & {p.id for p in other.patches}
    return shared


def _source(patchset: Patchset) -> str:
    """The patchset's folder as the generated blocks name it: relative to the current folder
    (the repository's top, where the audit runs) when it is below it."""
    folder = patchset.folder.resolve()
    try:
        return str(folder.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(folder)


def _existing(config: Any, wid: str) -> Path | None:
    """The waiver file of id ``wid`` in a configured waiver folder, if there is one."""
    for folder in config.waivers:
        candidate = Path(folder) / f"{wid}.md"
        if candidate.is_file():
            return candidate
    return None


def _adopt(
    output: Path,
    legacy: Waiver,
    wid: str,
    patchset: Patchset,
    summaries: list[PatchSummary],
    today: date,
) -> int:
    found = {name for name, f in legacy.fields.items() if f.status != "missing"}
    original = read_waiver_text(output)
    owner = legacy.meta.get("owner", ("", 0))[0] or _label(original, "owner")
    approval = legacy.meta.get("approval", ("", 0))[0] or _label(original, "approved by")
    text = adopted_text(
        original,
        waiver_id=wid,
        patchset_name=patchset.name,
        patchset_path=_source(patchset),
        patches=summaries,
        found=found,
        today=today,
        owner=owner,
        status=legacy.status,
        approval=approval,
    )
    _write(output, text)
    say(
        f"adopted {output}: waiver {wid} for {len(summaries)} patch(es); its text is kept, with "
        "front matter before it and the patch table after it; fill in every <TODO: ...> "
        "(`patchbay audit` lists the ones left)"
    )
    return 0


def _label(text: str, label: str) -> str | None:
    """The value of a ``**Label:** value`` line anywhere in a legacy waiver's text (also one of
    several such lines in one paragraph, which the body parser reads as one), or None."""
    m = re.search(
        rf"(?im)^[ \t]*(?:[-*+][ \t]+)?\**{re.escape(label)}\**[ \t]*:[ \t]*\**[ \t]*(\S[^\n]*)$",
        text,
    )
    return m.group(1).strip().strip("*").strip() if m else None


def _write(output: Path, text: str) -> None:
    try:
        write_output_file(output, text)
    except OSError as exc:
        raise InputError(f"cannot write the waiver: {exc.strerror or exc}", file=output) from None


def sync(patchset_arg: str, waiver_path: Path, patch_ids: list[str]) -> int:
    """Refresh a waiver's generated parts from the patchset without touching its text: the
    front matter's ``patches`` list (the patches it lists, plus ``patch_ids``; all of the
    patchset's when it lists none of them) and the generated patch table and upstream list
    (between their ``patchbay:`` markers; a waiver without a patch table gets one at its end).

    Returns:
        0 when written (or nothing changed).

    Raises:
        InputError: the waiver is missing, malformed or has no front matter (``waiver new
            --id`` adopts that), a patch id the patchset does not have.
    """
    patchset = load(patchset_arg)
    waiver = parse_waiver(waiver_path)
    if waiver.legacy:
        raise InputError(
            f"waiver {waiver.id} has no front matter: `patchbay waiver new {patchset_arg} --id "
            f"{waiver.id} -o {waiver_path}` adopts it in place, keeping its text",
            file=waiver_path,
        )
    try:
        config = load_config(Path.cwd()).config
        shared = _shared_ids(patchset, Path.cwd(), config.patchsets)
    except InputError:
        shared = set()
    text, count = synced_text(
        read_waiver_text(waiver_path), waiver, patchset, patch_ids, shared, _source(patchset)
    )
    before = read_waiver_text(waiver_path)
    if text == before:
        say(f"{waiver_path}: up to date ({count} patch(es))")
        return 0
    _write(waiver_path, text)
    say(f"synced {waiver_path}: waiver {waiver.id} lists {count} patch(es) of "
        f"{patchset.name}")  # fmt: skip
    return 0
