"""What the draft-making functions of :mod:`.patches` see of a script's conversion:
:class:`Context` (where a statement sits) and :class:`Conversion`, the part of
:class:`~patchbay.importer.convert.Converter` they record drafts and outcomes through (the
converter passes itself in, so :mod:`.patches` needs no import of :mod:`.convert`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..analysis import Modification
from .drafts import Draft, OutcomeKind, Row


@dataclass
class Context:
    """Where a statement sits: the comments above it and the function call it runs in."""

    comments: list[str] = field(default_factory=list)
    via: int | None = None


class Conversion(Protocol):
    """The converter of one script, as a draft-making function uses it.

    Attributes:
        root: the script's folder (checked-in patch files are found below it).
        packages: top-level packages the script changes (grows as diffs name new ones).
        applied: draft of each diff or edit already converted, by its identity.
        pins: ``pip`` draft of each requirement already pinned, by its package.
        removal: removals of engine files waiting for the rebuild that follows them.
    """

    root: Path
    packages: list[str]
    applied: dict[object, Draft]
    pins: dict[object, Draft]
    removal: list[tuple[Modification, Context, Row | None]]

    def record(
        self,
        mod: Modification | tuple[int, int],
        ctx: Context,
        kind: OutcomeKind,
        text: str,
        *,
        draft: Draft | None = None,
        hint: str | None = None,
        row: Row | None = None,
    ) -> None:
        """Give a modification (or a span of lines) an outcome."""
        ...

    def consumed(self, what: Modification | tuple[int, int], ctx: Context, text: str) -> None:
        """A ``consumed`` outcome: nothing to import."""
        ...

    def unconverted(
        self, what: Modification | tuple[int, int], ctx: Context, text: str, hint: str | None = None
    ) -> None:
        """An ``unconverted`` outcome, with what to do."""
        ...

    def remark(self, text: str) -> None:
        """A remark for the import notes (once)."""
        ...

    def add(
        self, draft: Draft, mod: Modification, ctx: Context, what: str, extra: str = ""
    ) -> None:
        """Keep a draft and the ``converted`` outcome that made it."""
        ...

    def comments_of_line(self, line: int) -> list[str]:
        """The comments of the top-level statement that holds ``line``."""
        ...
