"""Upstream coverage per hunk: which part of a diff patch an ``upstream`` reference covers.

An ``upstream`` entry is a reference (``owner/repo#N``, a URL, ``owner/repo@<commit>``), or
``{ref: ..., covers: [...]}`` when the reference covers only part of the patch: hunk numbers
(1-based, counted over the whole patch in diff order, as ``status`` and ``check`` number them)
and file paths (every hunk of that file). The hunks no reference covers are local, and the
patch's ``upstream_status`` gives the reason. A reference that covers only some hunks never
makes a patch removable by itself (:mod:`patchbay.upstream.status`).
"""

# No ``from __future__ import annotations``, as in :mod:`.model`: msgspec reads the annotations.
from collections.abc import Sequence
from typing import Annotated, Union

from msgspec import Meta

from ..environment.paths import check_relative
from .sources import Strict
from .validation import FieldError

Covered = Union[Annotated[int, Meta(ge=1)], str]  # noqa: UP007


class UpstreamEntry(Strict, kw_only=True):
    """A reference that covers only part of a diff patch (``covers``: hunks or files)."""

    ref: Annotated[
        str, Meta(description="PR, issue or commit URL, owner/repo#N or owner/repo@<commit>")
    ]
    covers: Annotated[
        list[Covered],
        Meta(
            min_length=1,
            description="Hunk numbers (1-based over the whole patch) or file paths this "
            "reference covers; the rest of the patch is local",
        ),
    ]

    def __post_init__(self) -> None:
        for n, item in enumerate(self.covers):
            if isinstance(item, str):
                try:
                    self.covers[n] = check_relative(item)
                except ValueError as exc:
                    raise FieldError(("covers", n), str(exc)) from None


def ref_text(entry: "str | UpstreamEntry") -> str:
    """The reference of an ``upstream`` entry."""
    return entry if isinstance(entry, str) else entry.ref


def covered_hunks(covers: Sequence[Covered], files: Sequence[tuple[str, int]]) -> set[int]:
    """The 1-based hunk numbers ``covers`` names, over a patch whose files are ``files``
    (``(path, hunk count)`` in diff order).

    Raises:
        ValueError: a hunk number past the last hunk, or a path that is no file of the patch.
    """
    total = sum(n for _, n in files)
    out: set[int] = set()
    for item in covers:
        if isinstance(item, int):
            if item > total:
                raise ValueError(f"covers hunk {item}, but the patch has {total} hunk(s)")
            out.add(item)
            continue
        first = 1
        for path, count in files:
            if path == item:
                out.update(range(first, first + count))
                break
            first += count
        else:
            raise ValueError(f"covers {item!r}, which is no file of the patch")
    return out


def hunk_ranges(values: "Sequence[int] | set[int]") -> str:
    """``hunk 2``, ``hunks 2-3``, ``hunks 1, 3-4``: hunk numbers as ranges."""
    runs: list[list[int]] = []
    for n in sorted(values):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    text = ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)
    return f"hunk{'s' if len(values) != 1 else ''} {text}"


def local_hunks(
    coverage: dict[str, list[Covered]], files: Sequence[tuple[str, int]] | None
) -> set[int] | None:
    """The hunks no partial reference covers (None: the patch's hunks are not known here),
    for a patch whose every reference has ``covers`` (a plain reference covers it all)."""
    if files is None:
        return None
    total = sum(n for _, n in files)
    covered: set[int] = set()
    for covers in coverage.values():
        try:
            covered |= covered_hunks(covers, files)
        except ValueError:
            return None
    return set(range(1, total + 1)) - covered


def coverage_lines(patch: object, files: Sequence[tuple[str, int]] | None) -> list[str]:
    """One line per partial reference (``ROCm/aiter#4474 covers hunk 1``) and one for the
    local rest with its reason (``hunks 2-3 are local: <upstream_status reason>``), for the
    waiver and the report; empty for a patch without ``covers``.

    Args:
        patch: a patch spec (its ``coverage``, ``upstream_refs`` and ``upstream_status``).
        files: ``(path, hunk count)`` of the patch's diff, or None when it is not readable.
    """
    coverage: dict[str, list[Covered]] = getattr(patch, "coverage", {})
    if not coverage:
        return []
    out = []
    for ref, covers in coverage.items():
        numbers = [c for c in covers if isinstance(c, int)]
        paths = [c for c in covers if isinstance(c, str)]
        parts = ([hunk_ranges(numbers)] if numbers else []) + paths
        out.append(f"{ref} covers {', '.join(parts)}")
    whole = [r for r in getattr(patch, "upstream_refs", []) if r not in coverage]
    status = getattr(patch, "upstream_status", None)
    reason = f": {status.reason}" if status is not None else ""
    if not whole:
        rest = local_hunks(coverage, files)
        if rest is None:
            out.append(f"the rest is local{reason}")
        elif rest:
            out.append(f"{hunk_ranges(rest)} {'are' if len(rest) > 1 else 'is'} local{reason}")
    return out


def check_coverage(
    patch: object, files: Sequence[tuple[str, int]], patchset: object, index: int
) -> None:
    """Every ``covers`` of ``patch``'s references names hunks and files its diff has
    (``files``: ``(path, hunk count)`` in diff order); called when the diff is loaded.

    Raises:
        InputError: at the entry's line in the patchset (``patchset.patch_line``).
    """
    from ..errors import InputError

    for n, entry in enumerate(getattr(patch, "upstream", [])):
        if isinstance(entry, str):
            continue
        try:
            covered_hunks(entry.covers, files)
        except ValueError as exc:
            raise InputError(
                f"upstream {entry.ref} {exc}",
                file=getattr(patchset, "path", None),
                line=patchset.patch_line(index, "upstream", n),  # type: ignore[attr-defined]
                patch_id=getattr(patch, "id", None),
            ) from None
