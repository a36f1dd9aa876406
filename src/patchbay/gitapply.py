"""Running ``git apply`` (through GitPython) so that its surroundings cannot fool it.

The engine's site-packages may sit inside some unrelated git work tree (a source checkout, a
home directory under version control). ``git apply`` run there treats paths as relative to that
repository and may skip files outside the current folder. We stop repository discovery at the
target root with ``GIT_CEILING_DIRECTORIES`` and isolate git from system and user configuration
(an ``apply.whitespace=fix`` there would rewrite the patch).
"""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

from .errors import ApplyFailed


def git_environment(cwd: Path) -> dict[str, str]:
    """Environment overrides for a git command that must act on ``cwd`` as a plain folder."""
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


def git_apply(patch_text: bytes, cwd: Path, *, strip: int = 1, check: bool = False) -> None:
    """Apply (or with ``check`` only test) a patch in ``cwd`` with zero fuzz.

    Args:
        patch_text: the diff; its paths are relative to ``cwd`` after ``strip`` components.
        cwd: the folder to apply in (a target root).
        strip: ``-p`` strip level.
        check: only check that it applies (``--check``).

    Raises:
        ApplyFailed: git refused the patch; the message carries git's first error line.
    """
    import git  # GitPython; imported here because it is slow to import and only writes need it

    with tempfile.NamedTemporaryFile(prefix="patchbay-", suffix=".patch", delete=False) as fh:
        fh.write(patch_text)
        patch_file = fh.name
    args = ["git", "apply", f"-p{strip}", "--whitespace=nowarn"]
    if check:
        args.append("--check")
    try:
        git.Git(str(cwd)).execute(
            [*args, patch_file], env=git_environment(cwd), with_extended_output=False
        )
    except git.GitCommandError as exc:
        stderr = (exc.stderr or "").strip().removeprefix("stderr:").strip().strip("'")
        first = next((ln for ln in stderr.splitlines() if ln.strip()), None)
        if first is None:
            first = f"git apply failed with {_exit_description(exc.status)}"
        raise ApplyFailed(f"git apply: {first}", file=cwd) from None
    finally:
        os.unlink(patch_file)
