"""``patchbay waiver new``: a waiver document prefilled from a patchset."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

from ...audit.config import load_config
from ...errors import InputError, PatchbayError, RefusedError
from ...kinds import KINDS
from ...outputfiles import check_output_file, write_output_file
from ...patchset.coverage import coverage_lines
from ...patchset.inputfiles import PATCHSET_FILENAMES
from ...patchset.loading import load_patchset
from ...patchset.model import Patchset
from ...waivers import PatchSummary, waiver_template
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
    """Write ``waivers/<id>.md`` (or ``output``) covering ``patch_ids`` (default: all).

    Returns:
        0 when written.

    Raises:
        InputError: unknown patch id, invalid waiver id, a patchset that does not load.
        RefusedError: the file exists and ``force`` is not set.
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
        output = Path(config.new_waiver_folder(Path.cwd())) / f"{wid}.md"
    shared = _shared_ids(patchset, Path.cwd(), config.patchsets) if config else set()
    if output.exists() and not force:
        raise RefusedError("already exists (use --force to overwrite)", file=output)
    summaries = []
    for index, patch in chosen:
        files = None  # the diff's (path, hunk count), for what `covers` leaves local
        try:
            loaded = KINDS[patch.kind].load(patch, patchset, index)
            unlocked = getattr(loaded, "unlocked", None)
            content = unlocked or KINDS[patch.kind].describe(patch, loaded)
            if patch.kind == "diff" and not unlocked:
                from ...kinds.diff import hunk_files  # its kind is loaded by now

                files = hunk_files(loaded.data)
        except (PatchbayError, KeyError) as exc:
            content = f"(content not readable: {getattr(exc, 'reason', exc)})"
        status = patch.upstream_status
        summaries.append(
            PatchSummary(
                id=patch.id,
                kind=patch.kind,
                target=getattr(patch, "target", None),
                description=patch.description,
                content=content,
                upstream=patch.upstream_refs,
                coverage=coverage_lines(patch, files),
                upstream_status=f"{status.status}: {status.reason}" if status else None,
                # an id another patchset of the repository has too is named patchset/id
                ref=f"{patchset.name}/{patch.id}" if patch.id in shared else None,
            )
        )
    image = patchset.spec.image.reference
    if patchset.spec.image.digest:
        image += f"@{patchset.spec.image.digest}"
    text = waiver_template(
        waiver_id=wid,
        patchset_name=patchset.name,
        patchset_path=str(patchset.path),
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
