"""``audit --fix``: the mechanical waiver fixes, as ``ruff check --fix`` makes its safe ones.

Mechanical means that the patchset alone decides the new text, so no judgement of a person is
replaced: a waiver's generated patch table and upstream list (the blocks ``patchbay waiver
new``/``sync`` wrote, :mod:`patchbay.waivers.sync`) written again from the patchset as it is
now (a description or a reason filled there since, a patch renamed or dropped), and a patch no
waiver covers added to the one waiver that covers the other patches of its patchset (PB101).
The hand-written lines of a waiver are never changed; a legacy waiver (no front matter) is left
to ``waiver new --id``, which a person runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..patchset.model import Patchset
from ..waivers.document import Waiver, read_waiver_text
from ..waivers.sync import synced_text
from .run import AuditResult


@dataclass
class Fix:
    """A waiver file's new text, and why (one line per change)."""

    path: Path
    before: str
    after: str
    why: list[str]


def waiver_fixes(result: AuditResult) -> list[Fix]:
    """The fixes of every waiver with generated blocks whose patchset is in ``result``.

    Raises:
        InputError: a waiver file that cannot be read again.
    """
    root = result.root.resolve()
    by_folder = {ps.folder.resolve(): ps for ps in result.patchsets}
    fixes = []
    for w in result.waivers:
        if w.legacy or not w.generated:
            continue
        text = before = read_waiver_text(w.path)
        why = []
        for source in dict.fromkeys(src for _, _, src in w.generated):
            ps = by_folder.get((root / source).resolve())
            if ps is None:
                continue
            shared = {
                p.id for other in result.patchsets if other is not ps for p in other.patches
            } & {p.id for p in ps.patches}
            ps = _as_named(ps, source)
            extra = _uncovered_for(w, ps, result.waivers)
            text, _ = synced_text(text, w, ps, extra, shared, source)
            if extra:
                why.append(f"adds {', '.join(extra)} of {ps.name} (PB101)")
        if text != before:
            why.append("its generated blocks written again from the patchset")
            fixes.append(Fix(w.path, before, text, why))
    return fixes


def _as_named(ps: Patchset, source: str) -> Patchset:
    """``ps`` loaded through the path its blocks name (relative to the current folder when
    that is where they say it is), so that the texts that name its folder read as
    ``waiver sync`` run from the repository's top writes them; ``ps`` itself otherwise."""
    from ..errors import PatchbayError
    from ..patchset.loading import load_patchset

    if Path(source).is_absolute() or (Path.cwd() / source).resolve() != ps.folder.resolve():
        return ps
    try:
        return load_patchset(Path(source))
    except PatchbayError:
        return ps


def _uncovered_for(w: Waiver, ps: Patchset, waivers: list[Waiver]) -> list[str]:
    """Patches of ``ps`` no waiver covers, when ``w`` is the one waiver covering its others."""
    covering = [
        x for x in waivers if not x.legacy and any(x.lists(ps.name, p.id) for p in ps.patches)
    ]
    if covering != [w]:
        return []
    return [
        p.id
        for p in ps.patches
        if p.waiver is None and not any(x.lists(ps.name, p.id) for x in waivers)
    ]
