"""What a patch *is*: its identity, decided in one place (as git's ``patch-id`` is one function
every caller uses).

A diff's identity is a sha256 over a canonical form of the parsed diff: for each file patch,
in order, its old and new path, its old and new mode, its binary payload, and its hunks' lines
(tag and text, line endings included). Nothing else counts: not the hunk headers' line numbers
or section text (git's ``patch-id`` and ``git cherry`` ignore line numbers too), not the
``index`` line (7 or 12 hex digits of abbreviation), not text around the diff (``From``,
``Subject`` and other mail headers, a DEP-3 header, a ``-- `` signature), and not CRLF endings
of the file as a whole (read as LF by :func:`patchbay.diff.parse.parse_diff`). Unlike
``patch-id``, whitespace is kept: patchbay matches with zero fuzz, so a whitespace change is
another patch.

Other kinds already hash a canonical form of their content: their identity is that hash.

The raw sha256 of a patch file stays the integrity check (the lock pins the bytes vendored);
the identity is what "the same patch" means: ``status`` calls a patch ``outdated`` and
``vendor`` calls a pin moved only when the identity differs.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .parse import ParsedDiff


class _Recorded(Protocol):
    patch_sha256: str
    patch_identity: str | None


class _Content(Protocol):
    sha256: str
    identity: str


def diff_identity(parsed: ParsedDiff) -> str:
    """The identity of a parsed diff (hex sha256 of its canonical form, see the module
    docstring)."""
    canonical = [
        [
            fp.old_path,
            fp.new_path,
            fp.old_mode,
            fp.new_mode,
            fp.binary,
            [[tag + text for tag, text in hunk.lines] for hunk in fp.hunks],
        ]
        for fp in parsed.files
    ]
    text = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def same_patch(recorded: _Recorded, loaded: _Content) -> bool:
    """Whether a ledger entry (or lock entry) recorded this very patch.

    Args:
        recorded: has ``patch_sha256`` (the raw sha256 when it was recorded) and
            ``patch_identity`` (None in a ledger an older patchbay wrote).
        loaded: the patch as loaded now (``sha256`` raw, ``identity``).

    An entry with an identity is compared by identity; one without it (written before
    identities existed) by the raw sha256 it has, so that no patch turns ``outdated`` merely
    because an older patchbay recorded it.
    """
    if recorded.patch_identity:
        return recorded.patch_identity == loaded.identity
    return recorded.patch_sha256 == loaded.sha256
