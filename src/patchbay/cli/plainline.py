"""The plainest command lines, read before the parser is imported: the fast paths of ``apply``
(the verified no-op) and ``status`` (its kept output) take only these, and leave anything else
to argparse, which then reads the whole line as usual (so every usage error keeps its words)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Mapping


def plain_words(
    words: list[str], options: Mapping[str, str], flags: Mapping[str, str]
) -> tuple[str, dict[str, str]] | None:
    """``(PATCHSET, values)`` of a command line of one PATCHSET, ``options`` (option as spelled
    in full -> key; ``--opt VALUE`` or ``--opt=VALUE``) and ``flags`` (word -> key, value
    ``""``); None for any other word (an abbreviation, ``-h``, ``--``, a second PATCHSET, an
    option without its value or with one that starts with ``-``)."""
    found: dict[str, str] = {}
    patchset = None
    i = 0
    while i < len(words):
        word = words[i]
        name, eq, value = word.partition("=")
        if name in options:
            if not eq:
                if i + 1 == len(words):
                    return None
                i += 1
                value = words[i]
            if not value or value.startswith("-"):
                return None  # argparse's business: its message, not ours
            found[options[name]] = value
        elif word in flags:
            found[flags[word]] = ""
        elif word.startswith("-") or patchset is not None or not word:
            return None
        else:
            patchset = word
        i += 1
    return None if patchset is None else (patchset, found)
