"""Regular expressions compiled at their first use, not at import.

A command imports many modules whose patterns it never uses (``apply`` of plain diffs needs the
hunk header's, not the upstream reference's or the redaction's), and :func:`re.compile` of a
pattern costs tens of microseconds to a millisecond each at start-up. ``pattern(...)`` returns a
stand-in that compiles on the first attribute asked of it (``match``, ``fullmatch``, ``sub``,
``pattern``...) and from then on hands out the compiled pattern's own bound methods, so a hot
loop pays one attribute lookup, as with the compiled pattern.
"""

from __future__ import annotations

import re
from typing import Any


class LazyPattern:
    """A :class:`re.Pattern` compiled on first use (see the module docstring).

    Args:
        regex: the pattern, ``str`` or ``bytes``, as for :func:`re.compile`.
        flags: :mod:`re` flags.

    Raises:
        re.error: at first use, for a pattern that does not compile (a test that uses each
            pattern finds it; nothing is checked at import).
    """

    def __init__(self, regex: str | bytes, flags: int = 0) -> None:
        self._regex = regex
        self._flags = flags

    def compiled(self) -> re.Pattern[Any]:
        """The compiled pattern (compiled now if it was not yet)."""
        return re.compile(self._regex, self._flags)

    def __getattr__(self, name: str) -> Any:
        # called only for what the instance does not hold yet: compile, then keep every
        # public attribute of the compiled pattern on the instance
        if name.startswith("_"):
            raise AttributeError(name)
        compiled = self.compiled()
        for attr in dir(compiled):
            if not attr.startswith("_"):
                self.__dict__[attr] = getattr(compiled, attr)
        return self.__dict__[name] if name in self.__dict__ else getattr(compiled, name)


def pattern(regex: str | bytes, flags: int = 0) -> Any:
    """``re.compile(regex, flags)``, compiled at first use (:class:`LazyPattern`); typed as a
    pattern for its users."""
    return LazyPattern(regex, flags)
