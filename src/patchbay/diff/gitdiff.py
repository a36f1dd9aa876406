"""Writing a diff between two versions of some files, with git's own diff machinery.

``capture``, ``refresh`` and ``rebase`` turn file contents (before, after) into a patch file.
The diff is written by ``git diff-tree`` between two trees built in a scratch repository (see
:func:`patchbay.diff.gitapply.scratch_folder`), so new and deleted files, mode changes, files
without a final newline and binary files (``--binary``) come out exactly as git writes them, and
``git apply`` reads them back as patchbay's ``apply`` does. Renames are not detected: a
moved file is a deletion and a new file, which every tool reads the same way.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from .gitapply import run_git, scratch_folder


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
