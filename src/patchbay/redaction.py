"""Secrets: which environment variables are credentials, and the one redaction of every string
that may carry one (forge answers, user URLs, command and pip output) before it is printed or
written.

The rule for credential names (:func:`is_credential_name`), upper-cased and split on ``_``:

- a word that ends with ``TOKEN``, ``SECRET``, ``PASSWORD``, ``PASSWD`` or ``CREDENTIALS``
  (``GITHUB_TOKEN``, ``GH_TOKEN``, ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``PGPASSWORD``,
  ``AWS_SESSION_TOKEN``);
- a last word ``KEY`` or ``APIKEY``, or last words ``KEY_ID`` (``OPENAI_API_KEY``,
  ``AWS_ACCESS_KEY_ID``);
- a value holding a URL with credentials (``https://user:pass@host``, ``https://TOKEN@host``).

:func:`redact` replaces, in any text: the values of such variables in the environment (and any
value registered with :func:`register`), GitHub token shapes (``ghp_...``, ``github_pat_...``,
GitHub's documented prefixes), and the user information of URLs (``https://user:***@host``,
``https://***@host``; ``git@`` of ssh URLs is kept, it names no one).
"""

from __future__ import annotations

import functools
import io
import os
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from .patterns import pattern

MASK = "***"
MIN_SECRET_LEN = 6  # shorter values are too likely to occur in text by chance

_NAME_WORD = pattern(r"(TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS)$")
# GitHub token formats: ghp_ (classic), gho_ (OAuth), ghu_/ghs_ (app user/server), ghr_
# (refresh), github_pat_ (fine-grained); see GitHub's "About authentication" documentation
_TOKEN_SHAPES = pattern(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")
# scheme://userinfo@ ; userinfo never holds '/', '@' or whitespace (RFC 3986 section 3.2.1)
_URL_USERINFO = pattern(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/@\s'\"<>]+)@")

_registered: set[str] = set()
_lock = threading.Lock()


@functools.lru_cache(maxsize=4096)  # asked for every variable at every write of the CLI
def is_credential_name(name: str) -> bool:
    """True when an environment variable named ``name`` holds a credential by the module's
    rule (``GITHUB_TOKEN``, ``*_TOKEN``, ``*_SECRET*``, ``*_PASSWORD``, ``*_KEY``, ...)."""
    words = [w for w in name.upper().split("_") if w]
    if not words:
        return False
    if any(_NAME_WORD.search(w) for w in words):
        return True
    return words[-1] in ("KEY", "APIKEY") or words[-2:] == ["KEY", "ID"]


def has_url_credentials(value: str) -> bool:
    """True when ``value`` holds a URL with user information other than ssh's ``git@``."""
    return any(m.group("info") != "git" for m in _URL_USERINFO.finditer(value))


def is_credential(name: str, value: str) -> bool:
    """True when the variable ``name=value`` is a credential (by name, or a URL with one)."""
    return is_credential_name(name) or has_url_credentials(value)


def register(secret: str | None) -> None:
    """Have :func:`redact` hide ``secret`` from now on (e.g. a token read from a file)."""
    if secret and len(secret) >= MIN_SECRET_LEN:
        with _lock:
            _registered.add(secret)


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the credential variables of ``environ`` (default ``os.environ``) and the
    registered secrets, longest first (so a secret containing another is hidden whole)."""
    env = os.environ if environ is None else environ
    found = {v for k, v in env.items() if is_credential_name(k) and len(v) >= MIN_SECRET_LEN}
    with _lock:
        found |= _registered
    return sorted(found, key=len, reverse=True)


def _mask_userinfo(match: re.Match[str]) -> str:
    info = match.group("info")
    if info == "git":
        return match.group(0)
    user, sep, _password = info.partition(":")
    shown = f"{user}:{MASK}" if sep else MASK
    return f"{match.group('scheme')}{shown}@"


def redact(
    text: str, *, extra: Iterable[str | None] = (), environ: Mapping[str, str] | None = None
) -> str:
    """``text`` with every secret replaced by ``***``.

    Args:
        text: anything about to be printed or written.
        extra: further secret values (e.g. a client's token); None and short values are ignored.
        environ: where credential variables are read (default ``os.environ``).
    """
    if not text:
        return text
    return _redact_with(text, _secrets(extra, environ))


def _secrets(extra: Iterable[str | None], environ: Mapping[str, str] | None) -> list[str]:
    more = {s for s in extra if s and len(s) >= MIN_SECRET_LEN}
    return sorted({*secret_values(environ), *more}, key=len, reverse=True)


def _redact_with(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    text = _TOKEN_SHAPES.sub(MASK, text)
    return _URL_USERINFO.sub(_mask_userinfo, text)


def redact_data(data: object, **kwargs: object) -> object:
    """:func:`redact` applied to every string of a JSON-like value (dicts, lists, strings)."""
    if isinstance(data, str):
        return redact(data, **kwargs)  # type: ignore[arg-type]
    if isinstance(data, dict):
        return {k: redact_data(v, **kwargs) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [redact_data(v, **kwargs) for v in data]
    return data


def write_log(
    path: os.PathLike[str] | str, text: str | Iterable[str], *, append: bool = False
) -> None:
    """Write ``text`` (a string, or lines), redacted, to the log file ``path``, readable by its
    owner only (0600, also when the file existed with wider permissions); its folder is created
    (0700) when missing.

    Raises:
        OSError: the file cannot be written.
    """
    folder = os.path.dirname(os.fspath(path))
    if folder:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o600)
    secrets = _secrets((), None)
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as fh:
        os.fchmod(fh.fileno(), 0o600)
        for chunk in [text] if isinstance(text, str) else text:
            fh.write(_redact_with(chunk, secrets))


class RedactedStream(io.TextIOBase):
    """A text stream that redacts what is written and passes it on to ``sys.<name>``, looked
    up at each write (so a test's captured stdout, or a redirected one, still gets it), or to
    a fixed ``target``.

    Args:
        name: ``"stdout"`` or ``"stderr"``.
        target: the stream to write to instead of the one ``sys`` has at each write (a live
            progress display that redirects ``sys.stderr`` to itself writes to the stream
            that was there before it, not to its own redirection).
    """

    def __init__(self, name: str, target: Any = None) -> None:
        super().__init__()
        self._name = name
        self._fixed = target

    @property
    def _target(self) -> Any:
        return self._fixed if self._fixed is not None else getattr(sys, self._name)

    def write(self, text: str) -> int:
        self._target.write(redact(text))
        return len(text)

    def flush(self) -> None:
        self._target.flush()

    def isatty(self) -> bool:
        return bool(getattr(self._target, "isatty", lambda: False)())

    def fileno(self) -> int:
        return int(self._target.fileno())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self._target, "encoding", None) or "utf-8")
