"""Which files of a waiver folder are waivers: not documentation, not translated copies.

A folder of waivers holds ``*.md`` files. ``README.md`` and files starting with ``_`` are
documentation (``_template.md``). A translated copy of another document of the same folder
(``1234_zh.md`` next to ``1234.md``, ``README_zh.md``, ``2508.ja.md``, ``w-1-pt-BR.md``) is not a
waiver of its own: it is listed as a :class:`Translation` of the original, which the audit
judges once. The language part is a BCP 47 tag whose language is an ISO 639-1 code (``zh``,
``zh-CN``, ``pt_BR``, ``zh-Hans``), checked with ``langcodes``; the region codes people write
for a language (``_CN``, ``_JP``, ``_KR``, ``_TW``, upper case) count too. A file is a
translation only when the original it names exists, so ``fix-it.md`` alone is a waiver.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

_SEPARATOR = re.compile(r"[._-]")
_TAG = re.compile(r"[A-Za-z]{2}(?:[-_][A-Za-z0-9]{2,8})*")


@dataclass(frozen=True)
class Translation:
    """A translated copy of another document of a waiver folder.

    Attributes:
        path: the translated copy (``waivers/1234_zh.md``).
        original: the document it translates (``waivers/1234.md``, ``waivers/README.md``).
        language: the tag as written (``zh``, ``zh-CN``, ``pt_BR``).
    """

    path: Path
    original: Path
    language: str


@dataclass
class WaiverFiles:
    """The files of a waiver folder, sorted.

    Attributes:
        waivers: the waiver documents.
        translations: translated copies of waivers and of documentation (not audited).
    """

    waivers: list[Path] = field(default_factory=list)
    translations: list[Translation] = field(default_factory=list)


@lru_cache(maxsize=256)
def is_language_tag(tag: str) -> bool:
    """True for a language tag of a translated file name (see the module docstring)."""
    import langcodes  # imported only for a file name that looks like a translation

    parts = re.split(r"[-_]", tag)
    if len(parts) == 1 and tag.isupper() and langcodes.tag_is_valid(f"und-{tag}"):
        return True  # README_CN.md: a region code standing for the language
    return len(parts[0]) == 2 and langcodes.tag_is_valid("-".join(parts))


def translation_of(path: Path, names: set[str]) -> Translation | None:
    """The :class:`Translation` ``path`` is, or None.

    Every split of the stem at ``_``, ``.`` or ``-`` is tried, the longest original name
    first: ``w-1_zh-CN.md`` is a translation of ``w-1.md`` (tag ``zh-CN``) when ``w-1_zh.md``
    does not exist.

    Args:
        path: a ``*.md`` file.
        names: the names of the files in the same folder (``{"1234.md", "1234_zh.md"}``).
    """
    stem = path.stem
    for m in reversed(list(_SEPARATOR.finditer(stem))):
        base, tag = stem[: m.start()], stem[m.end() :]
        if not base or not _TAG.fullmatch(tag):
            continue
        original = f"{base}{path.suffix}"
        if original not in names and base.lower() != "readme":
            continue  # README_zh.md is documentation, whether or not README.md is there
        if is_language_tag(tag):
            if original not in names:
                original = next((n for n in names if n.lower() == "readme.md"), "README.md")
            return Translation(path, path.with_name(original), tag)
    return None


def is_documentation(name: str) -> bool:
    """``README.md`` (any case) and files starting with ``_`` are not waivers."""
    return name.lower() == "readme.md" or name.startswith("_")


def waiver_files(folder: Path) -> WaiverFiles:
    """The waivers (``*.md``, recursively) and translated copies in ``folder``.

    A missing folder holds none. A link whose target lies outside ``folder`` is no waiver of
    it (``ln -s /etc/shadow waivers/x.md`` is never read, nor quoted in a finding), as the
    engine's path gate never follows a link out of its root.
    """
    out = WaiverFiles()
    if not folder.is_dir():
        return out
    top = Path(os.path.realpath(folder))
    paths = sorted(
        p
        for p in folder.rglob("*.md")
        # realpath, not resolve: a link loop stays in, for the reader to name it
        if not p.is_symlink() or Path(os.path.realpath(p)).is_relative_to(top)
    )
    names: dict[Path, set[str]] = {}
    for path in paths:
        names.setdefault(path.parent, set()).add(path.name)
    for path in paths:
        if path.name.startswith("_"):
            continue
        translation = translation_of(path, names[path.parent])
        if translation is not None:
            out.translations.append(translation)
        elif not is_documentation(path.name):
            out.waivers.append(path)
    return out
