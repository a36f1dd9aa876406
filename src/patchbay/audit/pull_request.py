"""Auditing a change, as ruff and pre-commit are run on a pull request: ``patchbay audit
--changed-since REF`` (what the change is: :mod:`.changes`).

With a change in scope the audit differs in two ways:

- script findings (PB401-PB410) are reported for the files the change adds or modifies, and
  for scripts that such a file runs (a finding whose ``chain`` holds a changed file); the
  other rules still judge the whole repository (an expired waiver or a patch without one
  fails every pull request, as it does on the main branch);
- **PB107**: the patching the change adds needs a waiver that the same change adds or
  modifies. Patching added is a patch whose id the patchset did not have at the merge base,
  and a script finding of engine patching (PB401-PB409, neither annotated nor ignored) on a
  line the change adds or rewrites (every line of a new file; a renamed file is compared with
  its old path, so a pure rename adds nothing). With ``change-waiver`` configured
  (``docs/waiver/{pr}.md``) and the pull request's number known, only the waiver at that path
  counts. Covering means what it means for the whole audit: the waiver names the script (or a
  script that runs it), or covers the patch (``waiver:``, or its ``patches`` list).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path

import yaml

from ..patchset.model import Patchset
from ..waivers import Waiver
from .changes import Change
from .config import AuditConfig
from .rules import SCANNER_RULES, Finding, relative
from .waived import WAIVABLE, ScriptLinks, waive


def limit_to_change(findings: Iterable[Finding], change: Change) -> list[Finding]:
    """``findings`` without the script findings (PB4xx) of files the change does not touch
    (neither the finding's file nor a script of its ``chain``)."""
    return [
        f
        for f in findings
        if f.code not in SCANNER_RULES
        or change.touches(f.path)
        or any(change.touches(script) for script in f.chain)
    ]


def check_change(
    change: Change,
    findings: list[Finding],
    patchsets: list[Patchset],
    waivers: list[Waiver],
    links: ScriptLinks,
    root: Path,
    config: AuditConfig,
) -> list[Finding]:
    """PB107: the patching ``change`` adds that no waiver of the change covers.

    Args:
        change: the change under audit.
        findings: the audit's findings so far, waived ones marked (script findings are read).
        patchsets: the repository's patchsets (as in the work tree).
        waivers: the repository's waivers.
        links: the scripts each waiver names (:func:`.waived.script_links`).
        root: the audited root.
        config: the audit configuration (``change-waiver``).

    Returns:
        One finding per script with patching added and per patch added, at the first added
        line of patching (the patch's ``id``), with the rule's default severity.

    Raises:
        InputError: git fails while reading a file's added lines or its merge-base version.
    """
    expected = None
    if change.pull_request is not None:
        expected = config.change_waiver_path(change.pull_request)
    filed = [w for w in waivers if change.touches(relative(w.path, root))]
    if expected is not None:
        filed = [w for w in filed if relative(w.path, root) == expected]
    missing = _missing(expected, filed, config, change)
    return [
        *_scripts(change, findings, links, filed, missing),
        *_patches(change, patchsets, filed, root, missing),
    ]


def _missing(
    expected: str | None, filed: list[Waiver], config: AuditConfig, change: Change
) -> Callable[[str, str], str]:
    """The end of a PB107 message, which waiver the change should file, as a function of how
    that waiver would cover the patching (``("name", "this script")``)."""

    def end(verb: str, what: str) -> str:
        pr = change.pull_request
        if expected is not None and filed:
            return f"{expected}, the waiver of pull request #{pr}, does not {verb} {what}"
        if expected is not None:
            return f"pull request #{pr} files no waiver {expected} that {verb}s {what}"
        hint = ""
        if config.change_waiver is not None:
            hint = f" (a pull request's waiver is {config.change_waiver}; --pr N checks that one)"
        return f"no waiver added or changed in this change {verb}s {what}{hint}"

    return end


def _scripts(
    change: Change,
    findings: list[Finding],
    links: ScriptLinks,
    filed: list[Waiver],
    missing: Callable[[str, str], str],
) -> list[Finding]:
    patching = [f for f in findings if f.code in WAIVABLE and f.suppression is None]
    added: dict[str, list[Finding]] = {}
    for f in patching:
        lines = change.added_lines(f.path) if change.touches(f.path) else frozenset()
        span = range(f.line or 1, (f.end_line or f.line or 1) + 1)
        if lines is None or any(n in lines for n in span):
            added.setdefault(f.path, []).append(f)
    if not added:
        return []
    # the coverage of the whole audit (waive), by the waivers of this change only
    ids = {w.id for w in filed if links.waivers.get(w.id) is w}
    own = ScriptLinks(
        {i: s for i, s in links.by_waiver.items() if i in ids},
        {i: w for i, w in links.waivers.items() if i in ids},
    )
    copies = {id(f): dataclasses.replace(f, waived_by=None) for f in patching}
    waive(copies.values(), own, change.root)
    out = []
    for path, found in added.items():
        bare = [f for f in found if copies[id(f)].waived_by is None]
        if not bare:
            continue
        where = ", ".join(f"{f.code} at line {f.line}" for f in bare[:3])
        where += f" and {len(bare) - 3} more" if len(bare) > 3 else ""
        older = next((f.waived_by for f in bare if f.waived_by is not None), None)
        note = ""
        if older is not None and change.touches(older.path):
            note = f" (waiver {older.id} covers the script, but it is not the pull request's)"
        elif older is not None:
            note = (
                f" (waiver {older.id} covers the script, but this change does not touch "
                f"{older.path})"
            )
        message = (
            f"engine patching added in this change ({where}), and {missing('name', 'this script')}"
            f"{note}"
        )
        out.append(Finding.of("PB107", path, bare[0].line, message, bare[0].end_line))
    return out


def _patches(
    change: Change,
    patchsets: list[Patchset],
    filed: list[Waiver],
    root: Path,
    missing: Callable[[str, str], str],
) -> list[Finding]:
    counts: dict[str, int] = {}
    for ps in patchsets:
        for pid in {p.id for p in ps.patches}:
            counts[pid] = counts.get(pid, 0) + 1
    out = []
    for ps in patchsets:
        yaml_rel = relative(ps.path, root)
        if not change.touches(yaml_rel):
            continue
        before = _patch_ids(change.base_text(yaml_rel))
        for i, patch in enumerate(ps.patches):
            if patch.id in before:
                continue
            qualified = f"{ps.name}/{patch.id}"
            if any(
                patch.waiver == w.id
                or qualified in w.patches
                or (patch.id in w.patches and counts[patch.id] == 1)
                for w in filed
            ):
                continue
            message = f"patch {patch.id} is added in this change, and {missing('cover', 'it')}"
            out.append(Finding.of("PB107", yaml_rel, ps.patch_line(i, "id"), message))
    return out


def _patch_ids(text: str | None) -> set[str]:
    """The patch ids of a patchset's YAML as it was at the merge base (none when it did not
    exist or does not parse: every patch is then new)."""
    if text is None:
        return set()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return set()
    patches = data.get("patches") if isinstance(data, dict) else None
    if not isinstance(patches, list):
        return set()
    return {p["id"] for p in patches if isinstance(p, dict) and isinstance(p.get("id"), str)}
