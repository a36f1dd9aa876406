"""How text read from the file system is shown: a file name (or a file's text) may be bytes
that are not UTF-8. Python gives such a name as a ``str`` with lone surrogates
(``surrogateescape``, :pep:`383`: byte ``0xE9`` becomes ``"\\udce9"``), which patchbay keeps
inside, so that the file can still be opened by its name; but no output may carry one (a
UTF-8 stream cannot encode it, and a strict JSON parser rejects ``"\\udce9"``).

The rule, the same in every output (tables, ``concise``, ``github``, JSON, SARIF, Markdown,
HTML, messages on stderr, files written with ``-o``): each byte that is not part of valid
UTF-8 is written ``\\xNN`` (two lowercase hex digits; ``q\\xe9.sh`` for the Latin-1 name
``qé.sh``), as Python's ``backslashreplace`` writes it; valid text is unchanged. A URI (SARIF's
``artifactLocation``) percent-encodes the name's bytes instead (``q%E9.sh``), as RFC 3986 does
for every byte, so it still names the file.
"""

from __future__ import annotations

import os
from typing import Any


def printable(text: str) -> str:
    """``text`` with each undecodable byte (a lone surrogate of ``surrogateescape``) written
    ``\\xNN``; valid text is returned as it is (the usual case costs one encode)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate that is no escaped byte (JSON's "\ud800")
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")
    return text


def printable_json(value: Any) -> Any:
    """``value`` (JSON-shaped: dicts, lists, strings, numbers) with :func:`printable` applied
    to every string, keys included; what is already printable is returned as it is."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {
            printable(k) if isinstance(k, str) else k: printable_json(v) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [printable_json(v) for v in value]
    return value


def uri_path(path: str) -> str:
    """``path`` (relative, ``/``-separated) as a URI reference: its bytes (the undecodable
    ones as they are on disk) percent-encoded as RFC 3986 requires, ``/`` kept."""
    from urllib.parse import quote

    return quote(os.fsencode(path))


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` of :func:`printable_json` ``(value)``: a JSON document
    that every strict parser reads (no lone surrogate, escaped or not)."""
    import json

    return json.dumps(printable_json(value), **options)
