"""Running ``git apply`` (a plain ``subprocess`` argument list) so that its surroundings cannot
fool it.

The engine's site-packages may sit inside some unrelated git work tree (a source checkout, a
home directory under version control), or be one itself (an editable install). ``git apply``
run there follows that repository's configuration and attributes (``core.autocrlf``, ``eol``,
filters) and may skip files outside the current folder. So git runs in an empty scratch folder
that is no repository (discovery stops at its parent through ``GIT_CEILING_DIRECTORIES``), with
system and user configuration off, and reaches the target root through ``--directory`` (an
absolute path, hence ``--unsafe-paths``: patchbay has already refused every path that leaves the
root, see tree.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..errors import ApplyFailed


def git_environment(cwd: Path) -> dict[str, str]:
    """Environment overrides for a git command run in ``cwd``, a folder that is no repository."""
    return {
        "GIT_CEILING_DIRECTORIES": str(cwd.resolve().parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
    }


def _exit_description(status: object) -> str:
    if isinstance(status, int) and status < 0:
        try:
            return f"signal {signal.Signals(-status).name}"
        except ValueError:
            return f"signal {-status}"
    return f"exit status {status}"


def git_apply(
    patch_text: bytes, root: Path, *, strip: int = 1, check: bool = False, reverse: bool = False
) -> None:
    """Apply (or with ``check`` only test) a patch under ``root`` with zero fuzz.

    Args:
        patch_text: the diff; its paths are relative to ``root`` after ``strip`` components.
        root: the folder the paths are relative to (a target root).
        strip: ``-p`` strip level.
        check: only check that it applies (``--check``).
        reverse: apply it backwards (``-R``; a binary patch needs its reverse hunk, which
            ``git diff --binary`` writes).

    Raises:
        ApplyFailed: git refused the patch; the message carries git's first error line.
    """
    root = root.resolve()
    with tempfile.TemporaryDirectory(prefix="patchbay-git-") as scratch:
        patch_file = os.path.join(scratch, "run.patch")
        with open(patch_file, "wb") as fh:
            fh.write(patch_text)
        work = Path(scratch) / "cwd"
        work.mkdir()
        args = ["git", "apply", f"-p{strip}", "--whitespace=nowarn", "--unsafe-paths"]
        args.append(f"--directory={root}")
        if check:
            args.append("--check")
        if reverse:
            args.append("--reverse")
        _run_git([*args, patch_file], work)


def _run_git(args: list[str], work: Path) -> None:
    """Run ``args`` (``git apply ...``) in ``work`` with :func:`git_environment`, stdin closed.

    Raises:
        ApplyFailed: git is missing or refused; the message carries git's first error line
            (else its first line), and ``file`` the file that line names in quotes (or None).
    """
    try:
        proc = subprocess.run(
            args,
            cwd=work,
            env={**os.environ, **git_environment(work)},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        raise ApplyFailed("git apply: git is not installed") from None
    if proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", "replace").strip()
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        # git warns before it fails ("warning: unable to unlink", then "error: unable to
        # write file"): the cause is its first error line
        errors = [ln for ln in lines if ln.startswith(("error:", "fatal:"))]
        first = (errors or lines or [None])[0]
        if first is None:
            first = f"git apply failed with {_exit_description(proc.returncode)}"
        named = re.search(r"'([^']+)'", first)  # the file git could not write, in quotes
        raise ApplyFailed(f"git apply: {first}", file=named.group(1) if named else None)


@contextlib.contextmanager
def scratch_folder(prefix: str = "patchbay-git-") -> Iterator[Path]:
    """A temporary folder for git to work in (removed afterwards); git commands run in it, or
    in a repository made inside it, never see the surrounding folders' repositories or
    configuration when run with :func:`git_environment`."""
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        yield Path(scratch)


def run_git(
    args: list[str],
    cwd: Path,
    *,
    ok: tuple[int, ...] = (0,),
    what: str | None = None,
    stdin: bytes = b"",
) -> tuple[int, bytes]:
    """Run ``git ARGS`` in ``cwd`` with :func:`git_environment`; return (exit status, stdout).

    Args:
        args: git's arguments (an argument list, never a shell string).
        cwd: a scratch folder (or a repository made in one, or one the user named).
        ok: exit statuses that are answers rather than failures (``git merge-file`` exits
            with the number of conflicts).
        what: how to name the command in an error (default ``git <first argument>``).
        stdin: bytes fed to git's standard input.

    Raises:
        ApplyFailed: git is missing, or exited with a status not in ``ok``; the message carries
            git's first error line.
    """
    name = what or f"git {args[0]}"
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env={**os.environ, **git_environment(cwd)},
            input=stdin,
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        raise ApplyFailed(f"{name}: git is not installed") from None
    if proc.returncode not in ok:
        text = proc.stderr.decode("utf-8", "replace").strip()
        first = next((ln for ln in text.splitlines() if ln.strip()), None)
        raise ApplyFailed(f"{name}: {first or _exit_description(proc.returncode)}")
    return proc.returncode, proc.stdout
