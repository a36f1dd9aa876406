"""Environment references in a patchset's URLs: ``${NAME}`` stands for a secret the patchset
must never hold (a private index's token, a download host's password).

A patch may write ``index_url: https://ci:${PRIVATE_INDEX_TOKEN}@pypi.example.com/simple``: the
file, the lock, the ledger and every message keep the reference as written; only the command
or request that needs the URL gets it expanded, and the value is registered with
:mod:`patchbay.redaction` so that no log or error shows it. The form is the one pip itself
expands in requirements files (``${NAME}``, upper-case letters, digits and ``_``); ``$NAME``
without braces is not a reference (URLs hold ``$`` rarely, and never for this).

``patchbay import`` writes such references in place of the credentials a script spelled out
(:func:`reference_for`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from .errors import RefusedError
from .patterns import pattern
from .redaction import register

_REFERENCE = pattern(r"\$\{([A-Z_][A-Z0-9_]*)\}")
_USERINFO = pattern(r"^(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<info>[^@/\s]+)@", re.I)


def references(text: str) -> list[str]:
    """The names ``text`` refers to (``${NAME}``), in order, each once."""
    return list(dict.fromkeys(_REFERENCE.findall(text)))


def expand(text: str, what: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with each ``${NAME}`` replaced by the variable's value (registered as a secret
    with :func:`patchbay.redaction.register`).

    Args:
        text: a URL of a patch, as written.
        what: what it is, for the message (``patch triton: index_url``).
        environ: where the values are read (default ``os.environ``).

    Raises:
        RefusedError: a variable it names is not set (the patch cannot be applied here).
    """
    if "${" not in text:
        return text
    env = os.environ if environ is None else environ
    missing = [name for name in references(text) if name not in env]
    if missing:
        names = ", ".join(f"${{{n}}}" for n in missing)
        raise RefusedError(f"{what} names {names}, which is not set in this environment")

    def value(match: re.Match[str]) -> str:
        found = env[match.group(1)]
        register(found)
        return found

    return _REFERENCE.sub(value, text)


def reference_for(url: str) -> tuple[str, str | None]:
    """``url`` with the password (or token) of its user information replaced by a reference,
    and the variable's name: ``https://ci:s3cret@pypi.example.com/simple`` ->
    ``(https://ci:${PYPI_EXAMPLE_COM_TOKEN}@pypi.example.com/simple, PYPI_EXAMPLE_COM_TOKEN)``.
    A user without a password is a token too (``https://ghp_x@host``). A URL without user
    information, or whose secret is already a reference, comes back as it is, with None."""
    m = _USERINFO.match(url)
    if m is None or m.group("info") == "git":
        return url, None
    user, sep, secret = m.group("info").partition(":")
    if _REFERENCE.fullmatch(secret if sep else user):
        return url, None
    host = urlsplit(url).hostname or "host"
    name = re.sub(r"[^A-Z0-9]+", "_", host.upper()).strip("_") + "_TOKEN"
    info = f"{user}:${{{name}}}" if sep else f"${{{name}}}"
    return f"{m.group('scheme')}{info}@{url[m.end() :]}", name


__all__ = ["expand", "reference_for", "references"]
