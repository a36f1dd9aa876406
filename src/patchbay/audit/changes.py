"""What a change touches, asked of git: the files of a pull request (``--changed-since REF``).

The change is the difference between the **merge base** of REF and HEAD and the **work tree**:
what ``git diff REF...HEAD`` shows (the three-dot form, the diff a pull request shows), plus
staged and unstaged changes and untracked files that are not ignored. In CI the work tree is
the checkout, so the change is exactly the pull request; on a developer's machine it also holds
what is not committed yet, because that is what the audit reads from disk.

File statuses are those of ``git diff --name-status -z`` with rename detection on (``-M``,
whatever ``diff.renames`` says): a renamed file is the same file under its new path (its lines
are compared with the old path's), a deleted file is not part of the change (nothing of it is
left to audit), a copy is a new file. Paths are relative to the audited root (``--relative``),
so a root below the repository's top sees only its own files.

Git runs with argument lists, in the root, with the repository found from there: the
``GIT_DIR``-like variables of the caller (a hook sets them) are dropped, messages are in the C
locale, and ``GIT_OPTIONAL_LOCKS=0`` keeps ``git diff`` from refreshing the index, so the audit
writes nothing. The system and user configuration stay on (unlike
:func:`patchbay.diff.gitapply.git_environment`, which runs git outside any repository): they hold
``safe.directory`` entries that a CI container needs to read the checkout at all, and every
option that shapes the output here is given on the command line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

_REPOSITORY_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)
"""Variables that would point git at another repository than the root's (git sets several of
them for hooks)."""

_DIFF = ["--no-ext-diff", "--no-textconv", "--no-color", "--relative", "--find-renames"]
_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.M)


@dataclass(frozen=True)
class ChangedFile:
    """A file the change adds or modifies.

    Attributes:
        path: relative to the audited root, with ``/``.
        status: ``A`` added (also an untracked file, or a copy), ``M`` modified, ``R`` renamed,
            ``T`` type changed (a file became a symbolic link, or back).
        old_path: for ``R``, the path at the merge base.
    """

    path: str
    status: str
    old_path: str | None = None

    @property
    def is_new(self) -> bool:
        """True when the merge base has no version of this file (every line is added)."""
        return self.status == "A"


@dataclass
class Change:
    """The files changed since the merge base of a ref and HEAD, work tree included.

    Attributes:
        root: the audited root (inside the work tree).
        ref: the ref as given (``origin/main``).
        base: the merge base commit (40 hex digits).
        files: path -> :class:`ChangedFile`, deleted files left out.
        pull_request: the pull request's number, when known (``--pr`` or the GitHub Actions
            environment, see :func:`pull_request_number`); git does not know it.
    """

    root: Path
    ref: str
    base: str
    files: dict[str, ChangedFile]
    pull_request: int | None = None
    _added: dict[str, frozenset[int] | None] = field(default_factory=dict, repr=False)

    def touches(self, path: str) -> bool:
        """True when the file at ``path`` (relative to the root) is added or modified."""
        return path in self.files

    def added_lines(self, path: str) -> frozenset[int] | None:
        """The 1-based lines of ``path`` that the change adds or rewrites (hunks of ``git diff
        -U0`` against the merge base, the old path for a rename); None when the whole file is
        new; empty for a file the change does not touch, or touches without adding lines (a
        pure rename, a deletion of lines).

        Raises:
            InputError: git fails.
        """
        changed = self.files.get(path)
        if changed is None:
            return frozenset()
        if changed.is_new:
            return None
        if path not in self._added:
            specs = [path] if changed.old_path is None else [changed.old_path, path]
            out = _git(self.root, "diff", "-U0", "--text", *_DIFF, self.base, "--", *specs)
            lines: set[int] = set()
            for m in _HUNK.finditer(out):
                start, count = int(m.group(1)), int(m.group(2) or 1)
                lines.update(range(start, start + count))
            self._added[path] = frozenset(lines)
        return self._added[path]

    def base_text(self, path: str) -> str | None:
        """The content of ``path`` at the merge base (its old path for a rename), or None when
        the change adds it or does not touch it.

        Raises:
            InputError: git fails.
        """
        changed = self.files.get(path)
        if changed is None or changed.is_new:
            return None
        blob = f"{self.base}:./{changed.old_path or path}"
        return _git(self.root, "cat-file", "blob", blob).decode("utf-8", "replace")

    def to_json(self) -> dict[str, object]:
        """The ``change`` object of ``audit --format json``."""
        return {
            "since": self.ref,
            "base": self.base,
            "pull_request": self.pull_request,
            "files": [
                {"path": f.path, "status": f.status, "old_path": f.old_path}
                for f in sorted(self.files.values(), key=lambda f: f.path)
            ],
        }


def read_change(root: Path, ref: str, *, pull_request: int | None = None) -> Change:
    """The files changed in the work tree at ``root`` since the merge base of ``ref`` and HEAD.

    Args:
        root: the audited folder, in a git work tree (its top or a folder below it).
        ref: a branch, tag, remote-tracking branch or commit (``origin/main``).
        pull_request: the pull request's number, kept on the result.

    Raises:
        InputError: ``root`` is in no git repository; ``ref`` names no commit; ``ref`` and HEAD
            have no common ancestor (a shallow clone); git is missing or fails. One line,
            exit 2.
    """
    _git(root, "rev-parse", "--show-toplevel")  # "not a git repository" before anything else
    try:
        if ref.startswith("-") or not ref:
            raise InputError("an option, not a ref")  # never an option of git rev-parse
        commit = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except InputError:
        raise InputError(
            f"--changed-since {ref}: no such commit in the repository (a pull request's base "
            "must be fetched: actions/checkout with fetch-depth: 0, or git fetch origin BASE)",
            file=root,
        ) from None
    try:
        base = _git(root, "merge-base", commit.decode().strip(), "HEAD").decode().strip()
    except InputError:
        raise InputError(
            f"--changed-since {ref}: it has no common ancestor with HEAD (a shallow clone? "
            "fetch the history: fetch-depth: 0)",
            file=root,
        ) from None
    files: dict[str, ChangedFile] = {}
    fields = _git(root, "diff", "--name-status", "-z", *_DIFF, base, "--").split(b"\0")
    i = 0
    while i < len(fields) - 1:
        status = fields[i].decode()[:1]
        if status in "RC":
            old, new = _path(fields[i + 1]), _path(fields[i + 2])
            i += 3
            if status == "R":
                files[new] = ChangedFile(new, "R", old)
            else:
                files[new] = ChangedFile(new, "A")
            continue
        path = _path(fields[i + 1])
        i += 2
        if status != "D":  # U (unmerged) and X (unknown) are modified files too
            files[path] = ChangedFile(path, status if status in "AMT" else "M")
    untracked = _git(root, "ls-files", "-z", "--others", "--exclude-standard")
    for raw in untracked.split(b"\0"):
        if raw:
            path = _path(raw)
            files.setdefault(path, ChangedFile(path, "A"))
    return Change(root, ref, base, files, pull_request)


def _path(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_VARIABLES}
    env.update({"LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"})
    return env


def _git(root: Path, *args: str) -> bytes:
    """Run ``git ARGS`` in ``root``; its standard output.

    Raises:
        InputError: git is missing or exits non-zero (its first message line).
    """
    try:
        proc = subprocess.run(
            ["git", *args], cwd=root, env=_environment(), capture_output=True, check=False
        )
    except OSError as exc:
        raise InputError(f"--changed-since needs git: {exc}", file=root) from None
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        first = next((ln for ln in message if ln.strip()), f"git {args[0]} failed")
        raise InputError(f"--changed-since: {first.removeprefix('fatal: ')}", file=root)
    return proc.stdout


_PULL_REF = re.compile(r"refs/pull/(\d+)/(?:merge|head)")


def pull_request_number(environ: Mapping[str, str]) -> int | None:
    """The pull request a GitHub Actions run is for, or None (a push, or not on Actions).

    ``GITHUB_REF`` is ``refs/pull/<N>/merge`` on ``pull_request`` events; on others
    (``pull_request_target``, ``pull_request_review``) it is the base branch, and the number
    is the event payload's ``pull_request.number`` (the JSON file ``GITHUB_EVENT_PATH``).

    Raises:
        InputError: ``GITHUB_EVENT_PATH`` names a file that is not JSON.
    """
    m = _PULL_REF.fullmatch(environ.get("GITHUB_REF", ""))
    if m:
        return int(m.group(1))
    event_path = environ.get("GITHUB_EVENT_PATH")
    if not event_path:
        return None
    try:
        with open(event_path, encoding="utf-8") as fh:
            event = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"GITHUB_EVENT_PATH: not a JSON event: {exc}", file=event_path) from None
    number = (event.get("pull_request") or {}).get("number") if isinstance(event, dict) else None
    return number if isinstance(number, int) and not isinstance(number, bool) else None
