"""Writing a diff between two versions of some files, with git's own diff machinery.

``capture``, ``refresh`` and ``rebase`` turn file contents (before, after) into a patch file.
The diff is written by ``git diff-tree`` between two trees built in a scratch repository (see
:func:`patchbay.diff.gitapply.scratch_folder`), so new and deleted files, mode changes, files
without a final newline and binary files (``--binary``) come out exactly as git writes them, and
``git apply`` reads them back as patchbay's ``apply`` does. Renames are not detected: a
moved file is a deletion and a new file, which every tool reads the same way.

One exception: a binary file of 1 MiB or more that exists on both sides gets its binary patch
from :mod:`patchbay.diff.binary` (the same ``GIT binary patch`` format, forward and reverse
delta), because git's ``diff-delta`` and storing both versions as blobs cost minutes on an
engine's shared objects (a 1-byte edit of a 353 MB kernel: 63 s in ``git diff --binary``).
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from ..environment.paths import quote_c
from .binary import git_blob_id, is_binary, payload
from .gitapply import run_git, scratch_folder

_OWN_BINARY = 1 << 20  # from this size on, a modified binary file's patch is written here


class FileVersions(msgspec.Struct):
    """One file's content before and after a change (None: the file does not exist).

    Attributes:
        path: the path relative to the target root, with ``/`` separators.
        before, after: the bytes before and after.
        executable_before, executable_after: the executable bit (git records only that).
    """

    path: str
    before: bytes | None
    after: bytes | None
    executable_before: bool = False
    executable_after: bool = False

    @property
    def changed(self) -> bool:
        """Whether the content (or, for a file that exists before, the executable bit)
        differs."""
        return self.before != self.after or (
            self.before is not None and self.executable_before != self.executable_after
        )


def write_diff(
    files: list[FileVersions],
    *,
    src_prefix: str = "a/",
    dst_prefix: str = "b/",
    context: int = 3,
) -> bytes:
    """A git-style diff that turns every ``before`` into its ``after``.

    Args:
        files: the files; unchanged ones are left out.
        src_prefix, dst_prefix: what stands before each path on the ``---``/``+++`` and
            ``diff --git`` lines (``a/`` and ``b/``: read with strip level 1 against the root the
            paths are relative to).
        context: lines of context around each change (``-U``).

    Returns:
        The diff, empty when nothing changed.

    Raises:
        ApplyFailed: git failed (not installed, or refused a path).
    """
    changed = [f for f in files if f.changed]
    if not changed:
        return b""
    own = {
        f.path: f
        for f in changed
        if f.before and f.after and f.before != f.after and big_binary(f.before, f.after)
    }
    sections = [
        (f.path.encode("utf-8", "surrogateescape"), _binary_section(f, src_prefix, dst_prefix))
        for f in own.values()
    ]
    rest = sorted(
        (f for f in changed if f.path not in own),
        key=lambda f: f.path.encode("utf-8", "surrogateescape"),
    )
    if rest:
        out = _git_diff(rest, src_prefix, dst_prefix, context)
        if not sections:
            return out
        # each file's section whole (a binary one ends with its blank line)
        pieces = [p for p in re.split(rb"(?m)^(?=diff --git )", out) if p]
        if len(pieces) != len(rest):
            return b"".join(s for _, s in sorted(sections)) + out
        sections += [
            (f.path.encode("utf-8", "surrogateescape"), p)
            for f, p in zip(rest, pieces, strict=True)
        ]
    # git's order: a diff-tree lists paths in tree order, which is their byte order
    return b"".join(section for _, section in sorted(sections))


def big_binary(before: bytes, after: bytes) -> bool:
    """Whether a file changed from ``before`` to ``after`` gets its binary patch from
    :mod:`patchbay.diff.binary` rather than from git: binary (git's rule) and 1 MiB or more."""
    if max(len(before), len(after)) < _OWN_BINARY:
        return False
    return is_binary(before) or is_binary(after)


def _binary_section(f: FileVersions, src_prefix: str, dst_prefix: str) -> bytes:
    """The file patch git writes for a modified binary file, with the hunks of
    :func:`patchbay.diff.binary.payload`."""
    assert f.before is not None and f.after is not None
    old_mode = "100755" if f.executable_before else "100644"
    new_mode = "100755" if f.executable_after else "100644"
    a, b = quote_c(src_prefix + f.path), quote_c(dst_prefix + f.path)
    out = [f"diff --git {a} {b}\n"]
    index = f"index {git_blob_id(f.before)}..{git_blob_id(f.after)}"
    if old_mode != new_mode:
        out += [f"old mode {old_mode}\n", f"new mode {new_mode}\n", index + "\n"]
    else:
        out.append(f"{index} {old_mode}\n")
    out += ["GIT binary patch\n", *payload(f.before, f.after)]
    return "".join(out).encode("utf-8", "surrogateescape")


def _git_diff(changed: list[FileVersions], src_prefix: str, dst_prefix: str, context: int) -> bytes:
    """``git diff-tree -p --binary`` between trees of the ``before`` and ``after`` sides."""
    with scratch_folder(prefix="patchbay-diff-") as scratch:
        repo = scratch / "repo"
        repo.mkdir()
        run_git(["init", "--quiet"], repo)
        before_tree = _tree(repo, [(f.path, f.before, f.executable_before) for f in changed])
        after_tree = _tree(repo, [(f.path, f.after, f.executable_after) for f in changed])
        _, out = run_git(
            [
                "diff-tree",
                "-p",
                "--binary",
                "--no-renames",
                f"-U{context}",
                f"--src-prefix={src_prefix}",
                f"--dst-prefix={dst_prefix}",
                before_tree,
                after_tree,
            ],
            repo,
        )
    return out


def _tree(repo: Path, files: list[tuple[str, bytes | None, bool]]) -> str:
    """The id of a tree holding exactly ``files`` (absent ones left out), built in the index."""
    (repo / ".git" / "index").unlink(missing_ok=True)
    lines = []
    for path, data, executable in files:
        if data is None:
            continue
        _, oid = run_git(["hash-object", "-w", "--no-filters", "--stdin"], repo, stdin=data)
        mode = "100755" if executable else "100644"
        lines.append(f"{mode} {oid.decode().strip()}\t{path}\n")
    if lines:
        run_git(["update-index", "--add", "--index-info"], repo, stdin="".join(lines).encode())
    _, tree = run_git(["write-tree"], repo)
    return tree.decode().strip()
