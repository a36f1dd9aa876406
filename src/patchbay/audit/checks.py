"""The audit's checks of patchsets and waivers (rules PB1xx, PB2xx, PB3xx).

Each function takes what was loaded and returns findings with the rules' default severities;
:func:`~patchbay.audit.run.run_audit` applies the configured severities and ignores.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import date
from pathlib import Path
from typing import Any

import msgspec

from ..patchset.lockfile import LOCK_NAME, Lock
from ..patchset.model import ArtifactPatch, DiffPatch, Patchset, PipPatch, ReplacePatch
from ..waivers import FIELD_TITLES, Waiver, placeholder_in
from .rules import Finding, relative
from .waived import ScriptLink

PATCH_SUFFIXES = (".patch", ".diff")
"""Files in a patchset folder that are patch files (PB303 looks for unreferenced ones)."""


def _patch_file(patch: Any) -> str | None:
    """The patch file a diff patch reads from its patchset folder, if it names one."""
    return getattr(patch, "file", None) if getattr(patch, "kind", None) == "diff" else None


def check_patchsets(patchsets: Iterable[Patchset], root: Path) -> list[Finding]:
    """PB301 (no upstream and no real reason), PB302 (missing patch file), PB303 (patch file
    that no patch references), PB304 (remote content not pinned by a hash yet)."""
    out: list[Finding] = []
    for ps in patchsets:
        yaml_rel = relative(ps.path, root)
        referenced: list[Path] = []
        out.extend(_unlocked(ps, yaml_rel))
        for i, patch in enumerate(ps.patches):
            status = patch.upstream_status
            reason = status.reason if status is not None else ""
            if not patch.upstream and (status is None or placeholder_in(reason)):
                what = f"reason {reason!r} is a placeholder" if status else "no upstream_status"
                out.append(
                    Finding.of(
                        "PB301",
                        yaml_rel,
                        ps.patch_line(i, "upstream_status", "reason") or ps.patch_line(i),
                        f"patch {patch.id}: no upstream reference, and {what}; give the "
                        "upstream PR/issue or a real reason",
                    )
                )
            content = getattr(patch, "content_path", None) or _patch_file(patch)
            if content:
                referenced.append(ps.folder / content)
            file = _patch_file(patch)
            if file and not (ps.folder / file).is_file():
                out.append(
                    Finding.of(
                        "PB302",
                        yaml_rel,
                        ps.patch_line(i, "file"),
                        f"patch {patch.id}: patch file {file} does not exist",
                    )
                )
        # a file named as referenced is referenced; others are compared resolved (symbolic
        # links, `..`), which costs a system call per path component
        named = {str(path) for path in referenced}
        resolved: set[Path] | None = None
        for path in _patch_files(ps.folder):
            if str(path) in named or not path.is_file():
                continue
            if resolved is None:
                resolved = {ref.resolve() for ref in referenced}
            if path.resolve() not in resolved:
                out.append(
                    Finding.of(
                        "PB303",
                        relative(path, root),
                        None,
                        f"patch file not referenced by patchset {ps.name} "
                        f"({yaml_rel}): remove it, or add the patch it belongs to",
                    )
                )
    return out


def _patch_files(folder: Path) -> list[Path]:
    """``sorted(p for p in folder.rglob("*") if p.suffix in PATCH_SUFFIXES)``, with a
    :class:`Path` made only for those: folders walked as ``rglob`` walks them (symbolic links
    to folders not followed, unreadable ones skipped)."""
    found: list[Path] = []
    pending = [os.fspath(folder)]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(PATCH_SUFFIXES) and Path(entry.name).suffix in PATCH_SUFFIXES:
                found.append(Path(entry.path))
            try:
                is_dir = entry.is_dir() and not entry.is_symlink()
            except OSError:
                is_dir = False
            if is_dir:
                pending.append(entry.path)
    return sorted(found)


def _unlocked(ps: Patchset, yaml_rel: str) -> list[Finding]:
    """PB304: diff sources without a lock entry that matches them, artifacts without a hash
    (in the patchset or the lock), source builds at a tag or branch without a locked commit.
    Such content is fetched by ``patchbay vendor``, never by ``apply``, which refuses it until
    then."""
    lock = Lock.load(ps.folder)
    out = []
    for i, patch in enumerate(ps.patches):
        if isinstance(patch, (DiffPatch, ReplacePatch)) and patch.source is not None:
            locked = lock.sources.get(patch.id)
            if (
                locked is None
                or locked.ref != patch.source.ref
                or locked.paths != patch.source.paths
            ):
                out.append(
                    Finding.of(
                        "PB304",
                        yaml_rel,
                        ps.patch_line(i, "source"),
                        f"patch {patch.id}: upstream source {patch.source.ref} has no hash in "
                        f"{LOCK_NAME} yet; run `patchbay vendor`",
                    )
                )
        elif isinstance(patch, PipPatch) and patch.source is not None:
            if lock.source_commit(patch) is None:
                out.append(
                    Finding.of(
                        "PB304",
                        yaml_rel,
                        ps.patch_line(i, "source"),
                        f"patch {patch.id}: source build {patch.source.label} has no commit "
                        f"in {LOCK_NAME} yet; run `patchbay vendor`",
                    )
                )
        elif isinstance(patch, ArtifactPatch):
            for n, f in enumerate(patch.files):
                if f.sha256 is None and f.url not in lock.artifacts:
                    out.append(
                        Finding.of(
                            "PB304",
                            yaml_rel,
                            ps.patch_line(i, "files", n, "sha256"),
                            f"patch {patch.id}: {f.url} has no sha256 yet; run `patchbay vendor`",
                        )
                    )
    return out


def check_coverage(
    patchsets: Iterable[Patchset],
    waivers: Iterable[Waiver],
    root: Path,
    *,
    scripts: Mapping[str, list[ScriptLink]] | None = None,
) -> list[Finding]:
    """PB101-PB106, PB108 and PB208: every patch covered by a waiver, every waiver by a
    patch; patchset names and waiver ids each used once.

    A waiver covers a patch when the patch names it (``waiver: <id>``) or its front matter
    lists the patch (``patches: [<id> | <patchset>/<id>]``). A waiver that links a script of
    the repository (``scripts``: waiver id -> links, see :mod:`.waived`) covers that script
    and is no orphan (PB103) even when it covers no patch.
    """
    scripts = scripts or {}
    out: list[Finding] = []
    by_id: dict[str, Waiver] = {}
    dropped: list[Waiver] = []  # a waiver whose id an earlier one has (PB208): it covers nothing
    for w in waivers:
        if w.id in by_id:
            dropped.append(w)
            out.append(
                Finding.of(
                    "PB208",
                    relative(w.path, root),
                    w.line_of("id"),
                    f"waiver id {w.id} is also used by {relative(by_id[w.id].path, root)}",
                )
            )
            continue
        by_id[w.id] = w
    first_of: dict[str, Patchset] = {}
    for ps in patchsets:
        other = first_of.setdefault(ps.name, ps)
        if other is not ps:
            out.append(
                Finding.of(
                    "PB108",
                    relative(ps.path, root),
                    ps.document.line_of(("name",)),
                    f"patchset name {ps.name} is also used by {relative(other.path, root)}; "
                    "give each patchset a name of its own",
                )
            )
    patches: dict[str, list[tuple[Patchset, str]]] = {}
    for ps in patchsets:
        for patch in ps.patches:
            patches.setdefault(patch.id, []).append((ps, patch.id))
            patches.setdefault(f"{ps.name}/{patch.id}", []).append((ps, patch.id))
    covered: dict[tuple[str, str], set[str]] = {}
    for w in by_id.values():
        for n, ref in enumerate(w.patches):
            found = patches.get(ref, [])
            if "/" not in ref and len(found) > 1:
                # a bare id several patchsets have covers none of them: which one is meant?
                names = list(dict.fromkeys(ps.name for ps, _ in found))
                if len(names) > 1:
                    fix = f"write {' or '.join(f'{name}/{ref}' for name in names)}"
                    which = f"patchsets {', '.join(names)} all have"
                else:  # the same name twice: no qualified reference tells them apart
                    fix = "rename one of the patchsets (PB108)"
                    which = f"{len(found)} patchsets named {names[0]} have"
                out.append(
                    Finding.of(
                        "PB106",
                        relative(w.path, root),
                        w.line_of(("patches", n), w.line_of("patches")),
                        f"waiver {w.id} lists patch {ref}, which {which}; it covers none of "
                        f"them: {fix}",
                    )
                )
                continue
            for ps, pid in found:
                covered.setdefault((ps.name, pid), set()).add(w.id)
    named: set[str] = set()
    for ps in patchsets:
        yaml_rel = relative(ps.path, root)
        for i, patch in enumerate(ps.patches):
            key = (ps.name, patch.id)
            if patch.waiver is not None:
                w = by_id.get(patch.waiver)
                if w is None:
                    out.append(
                        Finding.of(
                            "PB102",
                            yaml_rel,
                            ps.patch_line(i, "waiver"),
                            f"patch {patch.id}: waiver {patch.waiver} does not exist "
                            "(no waiver document has this id)",
                        )
                    )
                else:
                    named.add(w.id)
                    covered.setdefault(key, set()).add(w.id)
                    if w.patches and not ({patch.id, f"{ps.name}/{patch.id}"} & set(w.patches)):
                        out.append(
                            Finding.of(
                                "PB105",
                                yaml_rel,
                                ps.patch_line(i, "waiver"),
                                f"patch {patch.id} names waiver {w.id}, whose `patches` list "
                                f"({relative(w.path, root)}) does not include it",
                            )
                        )
            if not covered.get(key) and patch.waiver is None:
                out.append(
                    Finding.of(
                        "PB101",
                        yaml_rel,
                        ps.patch_line(i, "id"),
                        f"patch {patch.id} has no waiver: "
                        + (
                            _clash_hint(ps, patch.id, dropped, by_id, root)
                            or _waiver_hint(ps, patch.id, covered, by_id, root)
                        ),
                    )
                )
    set_names = sorted({ps.name for ps in patchsets})
    for w in by_id.values():
        rel = relative(w.path, root)
        unknown = [(n, ref) for n, ref in enumerate(w.patches) if ref not in patches]
        if w.id not in named and len(unknown) == len(w.patches) and not scripts.get(w.id):
            listed = f" (it lists {', '.join(w.patches)})" if w.patches else ""
            listed += "".join(_unknown_patchset(ref, set_names) for _, ref in unknown[:1])
            out.append(
                Finding.of(
                    "PB103",
                    rel,
                    w.line_of("patches", w.line_of("id")),
                    f"waiver {w.id} covers no existing patch{listed} and names no script of "
                    "the repository: the patches or scripts were removed or renamed; delete "
                    "the waiver or fix it",
                )
            )
            continue
        for n, ref in unknown:
            out.append(
                Finding.of(
                    "PB104",
                    rel,
                    w.line_of(("patches", n), w.line_of("patches")),
                    f"waiver {w.id} lists patch {ref}, which no patchset has"
                    + _unknown_patchset(ref, set_names),
                )
            )
    return out


def _clash_hint(
    ps: Patchset, patch_id: str, dropped: list[Waiver], by_id: dict[str, Waiver], root: Path
) -> str | None:
    """When a waiver that lists ``patch_id`` covers nothing because another waiver has its id
    (PB208): that clash is what to fix, not a new waiver."""
    for w in dropped:
        if w.lists(ps.name, patch_id):
            return (
                f"{relative(w.path, root)} lists it, but its id {w.id} is also the id of "
                f"{relative(by_id[w.id].path, root)} (PB208), so it covers nothing: remove or "
                "rename one of the two"
            )
    return None


def _waiver_hint(
    ps: Patchset,
    patch_id: str,
    covered: dict[tuple[str, str], set[str]],
    by_id: dict[str, Waiver],
    root: Path,
) -> str:
    """How to cover ``patch_id`` of ``ps``, as a command that works as printed: add it to the
    waiver that covers other patches of its patchset already (``waiver sync``), else write one
    waiver for the whole patchset (``waiver new PATCHSET``: teams write one per recipe or pull
    request, not one per patch), naming a legacy waiver it could adopt instead (``--id``)."""
    folder = relative(ps.folder, root)
    others = sorted(
        {w for (name, _), ids in covered.items() if name == ps.name for w in ids if w in by_id}
    )
    if len(others) == 1:
        w = by_id[others[0]]
        return (
            f"add it to waiver {w.id}, which covers other patches of {ps.name}: `patchbay "
            f"waiver sync {folder} {relative(w.path, root)} {patch_id}`"
        )
    hint = (
        f"one waiver can cover the whole patchset: `patchbay waiver new {folder}` (or "
        f"`patchbay waiver new {folder} {patch_id}` for this patch alone)"
    )
    legacy = [w for w in by_id.values() if w.legacy]
    if len(legacy) == 1:
        w = legacy[0]
        hint += (
            f"; to keep the team's waiver {relative(w.path, root)}, `patchbay waiver new "
            f"{folder} --id {w.id}` adopts it in place, its text kept"
        )
    return hint


def adoption_hint(patchsets: list[Patchset], waivers: list[Waiver], root: Path) -> str:
    """The PATCHSET a legacy waiver's PB206 hint names: the one patchset with a patch that no
    waiver lists and that names no waiver, else the only patchset, else the literal
    ``PATCHSET``."""

    def open_patch(ps: Patchset, patch: Any) -> bool:
        return patch.waiver is None and not any(w.lists(ps.name, patch.id) for w in waivers)

    open_sets = [ps for ps in patchsets if any(open_patch(ps, p) for p in ps.patches)]
    pick = open_sets if len(open_sets) == 1 else patchsets if len(patchsets) == 1 else []
    return relative(pick[0].folder, root) if pick else "PATCHSET"


def _unknown_patchset(ref: str, names: list[str]) -> str:
    """For a ``patchset/id`` reference whose patchset does not exist: the ones that do."""
    if "/" not in ref or ref.split("/", 1)[0] in names:
        return ""
    listed = ", ".join(names) if names else "none"
    return f"; there is no patchset {ref.split('/', 1)[0]} (patchsets: {listed})"


_REQUIRED_KEYS = ("id", "patches", "owner", "filed", "status")


def check_waivers(
    waivers: Iterable[Waiver],
    root: Path,
    *,
    today: date,
    warning_days: int,
    patchset_hint: str = "PATCHSET",
) -> list[Finding]:
    """PB201-PB207: required fields, placeholders, review dates, status, references.
    ``patchset_hint``: the patchset a legacy waiver's hint names (:func:`adoption_hint`)."""
    out: list[Finding] = []
    for w in waivers:
        rel = relative(w.path, root)
        fm = w.front_matter
        if fm is None:
            out.append(
                Finding.of(
                    "PB206",
                    rel,
                    1,
                    f"waiver {w.id} has no front matter: its owner, dates, status and patches "
                    f"are unknown; `patchbay waiver new {patchset_hint} --id {w.id}` adds them "
                    "in place, its text kept",
                )
            )
        else:
            blank_keys = {p.field for p in w.placeholders}
            values = msgspec.structs.asdict(fm)
            missing = [k for k in _REQUIRED_KEYS if not values.get(k) and k not in blank_keys]
            if (
                fm.review_by is None
                and fm.expires is None
                and not blank_keys
                & {
                    "review_by",
                    "expires",
                }
            ):
                missing.append("review_by (or expires)")
            if fm.status == "approved" and not fm.approval and "approval" not in blank_keys:
                missing.append("approval (the link to the approving review)")
            for key in missing:
                out.append(
                    Finding.of(
                        "PB201",
                        rel,
                        w.line_of(key.split()[0], 1),
                        f"waiver {w.id}: front matter has no {key}",
                    )
                )
        for blank in w.placeholders:
            out.append(
                Finding.of(
                    "PB202",
                    rel,
                    blank.line,
                    f"waiver {w.id}: {blank.field} is a placeholder ({blank.text})",
                )
            )
        for name, result in w.fields.items():
            title = FIELD_TITLES[name]
            if result.status == "missing":
                where = f" ({result.where})" if result.where else ""
                out.append(
                    Finding.of(
                        "PB201",
                        rel,
                        result.line or 1,
                        f"waiver {w.id}: no '{title}'{where}",
                    )
                )
            for blank in result.placeholders:
                row = f" in row {blank.row!r}" if blank.row else ""
                source = w.generated_from(blank.line)
                where = (
                    f"; this block is written from the patchset: fill it in {source}, then "
                    f"`patchbay waiver sync {source} {rel}`"
                    if source
                    else ""
                )
                out.append(
                    Finding.of(
                        "PB202",
                        rel,
                        blank.line,
                        f"waiver {w.id}: '{title}' has a placeholder{row}: {blank.text}{where}",
                    )
                )
        if fm is not None:
            dates = [(d, k) for k, d in (("review_by", fm.review_by), ("expires", fm.expires)) if d]
            if dates:
                when, key = min(dates)
                days = (when - today).days
                if days < 0:
                    out.append(
                        Finding.of(
                            "PB203",
                            rel,
                            w.line_of(key),
                            f"waiver {w.id}: {key} {when.isoformat()} has passed "
                            f"({-days} day(s) ago); review it or remove the patches",
                        )
                    )
                elif days <= warning_days:
                    out.append(
                        Finding.of(
                            "PB204",
                            rel,
                            w.line_of(key),
                            f"waiver {w.id}: {key} {when.isoformat()} is in {days} day(s)",
                        )
                    )
        if w.status == "requested":
            line = w.line_of("status") if fm is not None else w.meta.get("status", ("", 1))[1]
            out.append(
                Finding.of(
                    "PB205",
                    rel,
                    line,
                    f"waiver {w.id} is requested, not approved",
                )
            )
        for ref in w.references:
            if not ref.resolved and ref.project:
                out.append(
                    Finding.of(
                        "PB207",
                        rel,
                        ref.line,
                        f"waiver {w.id}: {ref.text!r} names no repository; map "
                        f"{ref.project!r} to owner/repo in upstream-names",
                    )
                )
    return out
