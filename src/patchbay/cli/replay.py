"""``status`` of an applied tree at the cost of the verified no-op: the output of a full
``status`` is kept, keyed by the applied identity that verified it, and printed again while
that identity verifies.

The applied identity (:mod:`patchbay.apply.noop`) names everything a judgement of the patchset
reads: its files, the environment, every file a patch, the ledger or the base guard looks at,
each re-checked by content (sha256), never by mtime. A ``status`` whose identity verifies with
the same digest therefore judges the same inputs and prints the same lines, so its output off
a terminal (plain text or JSON: no terminal width in it) and exit status are kept under
``$XDG_CACHE_HOME/patchbay/status/<key>.json`` the first time (:func:`store`) and printed from
there afterwards (:func:`replayed`). Only the plainest command line takes this path: PATCHSET,
``--python``/``--root``/``--state-dir`` and ``--format``; anything else, a terminal, an
identity that does not verify, or an unreadable kept file runs the full ``status``, which
decides without it. Nothing is kept for a run with warnings or a non-zero exit.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

_OPTIONS = {"--python": "python", "--root": "root", "--state-dir": "state_dir"}
_FORMATS = ("table", "concise", "json")
KEPT_FORMAT = 1


def plain_status(words: list[str]) -> tuple[str, dict[str, str], str | None] | None:
    """``(PATCHSET, environment options, --format value or None)`` of ``status WORDS...`` in
    its plainest form, or None for anything else (argparse then parses the whole line)."""
    from .plainline import plain_words

    options = {**_OPTIONS, "--format": "format", "-f": "format"}
    plain = plain_words(words, options, {"--json": "json"})
    if plain is None:
        return None
    patchset, found = plain
    as_json, output_format = found.pop("json", None), found.pop("format", None)
    if as_json is not None:
        if output_format is not None:
            return None  # both: argparse's usage error
        output_format = "json"
    if output_format is not None and output_format not in _FORMATS:
        return None
    return patchset, found, output_format


def key_of(digest: str, output_format: str | None) -> str:
    """The kept output's name: the identity's digest and the format asked for."""
    return hashlib.sha256(f"{KEPT_FORMAT}\0{digest}\0{output_format}".encode()).hexdigest()


def _kept(key: str) -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "patchbay", "status", f"{key}.json")


def replayed(words: list[str]) -> tuple[int | None, str | None]:
    """Answer ``patchbay status WORDS...`` from a kept output when the identity verifies.

    Returns:
        ``(exit status, None)`` when it printed the kept output; ``(None, key)`` when the
        identity verified but nothing is kept under ``key`` yet (the full status keeps its
        output there: :func:`store`); ``(None, None)`` when this path does not apply.
    """
    if sys.stdout.isatty():
        return None, None
    plain = plain_status(words)
    if plain is None:
        return None, None
    patchset, found, output_format = plain
    from ..apply import noop

    verified = noop.check(patchset, **found)
    if verified is None or not verified.digest:
        return None, None
    key = key_of(verified.digest, output_format)
    try:
        with open(_kept(key), encoding="utf-8") as fh:
            doc = json.load(fh)
        if doc.get("format") != KEPT_FORMAT or doc.get("key") != key:
            return None, key
        code, out = int(doc["code"]), str(doc["out"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, key
    sys.stdout.write(out)
    return code, None


def store(key: str, code: int, out: str, words: list[str]) -> None:
    """Keep the output ``out`` and exit status ``code`` of the full ``status WORDS...`` under
    ``key``, if its identity still verifies with the digest ``key`` was made from (nothing
    changed while it ran). A file that cannot be written is let go: the next status runs in
    full again."""
    plain = plain_status(words)
    if plain is None:
        return
    patchset, found, output_format = plain
    from ..apply import noop

    verified = noop.check(patchset, **found)
    if verified is None or key_of(verified.digest, output_format) != key:
        return
    from pathlib import Path

    from ..apply.journal import write_atomic

    path = _kept(key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        doc = {"format": KEPT_FORMAT, "key": key, "code": code, "out": out}
        write_atomic(Path(path), json.dumps(doc).encode())
    except OSError:
        pass
