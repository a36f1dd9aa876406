"""A run that was killed or interrupted: whether its journal is still in the state folder, and
the recovery (with the state lock held) that restores what it changed before any command reads
the tree again; a journaled package install is undone by the kind that journaled it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from ..environment.targets import Environment
from ..errors import RefusedError
from ..kinds import KINDS
from ..patchset.inputfiles import patchset_side
from ..patchset.model import Patchset
from .journal import MANIFEST
from .recovery import recover
from .statelock import not_entered, unwritable


def interrupted(env: Environment) -> bool:
    """Whether a run was killed mid-write and left its journal (the next apply or revert rolls
    it back before doing anything else).

    Raises:
        RefusedError: something else sits where the journal goes (see :func:`journal_place`),
            or the state folder cannot be entered.
    """
    try:
        os.stat(env.state_dir / "journal" / MANIFEST)
    except (FileNotFoundError, NotADirectoryError):
        journal_place(env.state_dir)
        return False
    except PermissionError:  # the state folder (or its journal) cannot be entered
        raise not_entered(env.state_dir) from None
    journal_place(env.state_dir)
    return True


def journal_place(state_dir: Path) -> None:
    """Refuse a ``journal`` in the state folder that is not a folder (a file, a link): no run
    could keep its journal there, and it is not one to roll back.

    Raises:
        RefusedError: naming it; nothing was changed.
    """
    journal = state_dir / "journal"
    if os.path.lexists(journal) and (os.path.islink(journal) or not journal.is_dir()):
        what = "a link" if os.path.islink(journal) else "not a folder"
        raise RefusedError(
            f"{journal} is {what}: patchbay keeps a run's journal there; move it away and run "
            "again (nothing was changed)",
            file=journal,
        )


def journal_roots(env: Environment, patchset: Patchset) -> list[Path]:
    """Every folder a run in ``env`` may change: the target roots, the state folder, and the
    patchset's folder (``capture`` and ``refresh`` journal patch files there)."""
    return [*env.roots.values(), env.state_dir, patchset.folder]


def recover_interrupted(env: Environment, patchset: Patchset) -> list[Path]:
    """Finish a journal a killed run left (call with the lock held); returns the restored
    paths.

    Raises:
        RefusedError: some file could not be restored, or the journal names paths outside
            the environment or is damaged; nothing else was done, and the journal stays. The
            first problem is the message (with the journal's line, for a refused entry), the
            others are details. Also when it was recovered but cannot be removed (a journal
            folder this user cannot write), which the next run would take for an open one.
    """
    return finish_journal(env.state_dir, journal_roots(env, patchset), python=env.python)


def finish_journal(state_dir: Path, roots: list[Path], *, python: str | None = None) -> list[Path]:
    """Recover the journal of ``state_dir`` (see :func:`patchbay.apply.recovery.recover`)
    with the lock held; returns the restored paths.

    Args:
        state_dir: the environment's state folder.
        roots: every folder its runs may change (target roots, the state folder; the patchset
            folder for a run that writes patch files).
        python: the engine interpreter of this run (``--python``), or None. The package
            installs a killed run journaled are undone only in that same interpreter
            (:func:`patchbay.kinds.piprestore.undo_journaled`): the journal never decides which
            program recovery runs.

    Raises:
        RefusedError: as :func:`recover_interrupted`; also when a journaled package install
            could not be undone (the journal stays, so the next run tries again).
    """
    journal_place(state_dir)
    journal = state_dir / "journal"

    def undo(kind: str, data: dict[str, Any]) -> None:  # the kind that journaled it
        handler = getattr(KINDS.get(kind), "undo_journaled", None)
        if handler is None:
            raise RefusedError(f"this patchbay does not know how to undo {kind!r}")
        handler(data, python, state_dir / "logs" / "recovery.log")

    outcome = recover(journal, roots, undo)
    if outcome.complete and outcome.undo_problems:
        first, *rest = outcome.undo_problems
        raise RefusedError(
            f"{first}; an earlier run (failed or killed) was rolled back but for that: fix it "
            "and run again (the journal stays, and the next apply or revert tries again); "
            "nothing else was done",
            file=journal / MANIFEST,
            details=rest,
        )
    if not outcome.complete:
        first, *rest = outcome.problems()
        line = outcome.refused[0][0] if outcome.refused and not outcome.failed else None
        if line is not None:
            first = outcome.refused[0][1]
            rest = outcome.problems()[1:]
        how = (
            "once the files are as you want them, remove the journal by hand"
            if outcome.refused
            else "fix that and run again (the journal keeps the originals)"
        )
        raise RefusedError(
            f"{first}; an earlier run (failed or killed) could not be rolled back completely: "
            f"{how}; nothing else was done",
            file=journal / MANIFEST,
            line=line,
            details=rest,
        )
    if (journal / MANIFEST).exists():  # recovered, not removed: it would stay "still open"
        raise RefusedError(
            "the journal of an earlier run (failed or killed) was recovered, but cannot be "
            f"removed ({unwritable(journal) or 'removing it failed'}): make the journal folder "
            "writable for this user (or run as its owner) and run again; nothing else was done",
            file=journal,
        )
    return outcome.restored


def recover_patchset_files(folder: Path, lock_timeout: float = 0.0) -> list[Path]:
    """Finish the journal a killed write of the patchset in ``folder`` left (in its side
    folder: :func:`patchbay.patchset.inputfiles.patchset_side`) before anything reads the
    patchset; returns the restored paths (none when there is no such journal).

    Raises:
        RefusedError: the lock is held by a write under way, or the journal cannot be
            recovered (as :func:`finish_journal`); the journal stays.
    """
    side = Path(patchset_side(folder))
    if not os.path.lexists(side / "journal" / MANIFEST):
        return []
    from .statelock import state_lock  # only when a write was interrupted

    with state_lock(side, lock_timeout):
        restored = finish_journal(side, [folder])
    tidy_side(side)
    return restored


def tidy_side(side: Path) -> None:
    """Remove the side folder of a patchset write once its journal is gone (the lock file
    and the folder itself; anything else there stays)."""
    if os.path.lexists(side / "journal"):
        return
    with contextlib.suppress(OSError):
        os.unlink(side / "lock")
    with contextlib.suppress(OSError):
        os.rmdir(side)


def reread_patchset(
    patchset: Patchset, loaded: list[Any], restored: list[Path]
) -> tuple[Patchset, list[Any]]:
    """``patchset`` and its loaded patches read again when a recovery ``restored`` one of its
    files (a killed ``capture`` or ``refresh`` writes ``patchset.yaml`` and patch files in the
    environment's journal): a plan is never made from what the recovery put back. Else as
    given.

    Raises:
        InputError: the restored patchset does not load (file and line named).
    """
    folder = os.path.realpath(patchset.folder)
    if not any(os.path.realpath(p).startswith(folder + os.sep) for p in restored):
        return patchset, loaded
    from ..patchset.loading import load_patchset
    from .plan import load_patches

    again = load_patchset(patchset.path)
    return again, load_patches(again)


def recovered_first(patchset: Patchset, env: Environment, lock_timeout: float = 0.0) -> Patchset:
    """Before an authoring command (``capture``, ``edit``, ``refresh``) plans anything: finish
    a journal a killed run left in the environment's state folder, and return the patchset as
    it is after that (read again when the recovery put its files back).

    Raises:
        RefusedError: as :func:`recover_interrupted`, or the lock is held.
    """
    if not interrupted(env):
        return patchset
    from .statelock import state_lock

    with state_lock(env.state_dir, lock_timeout):
        restored = recover_interrupted(env, patchset)
    return reread_patchset(patchset, [], restored)[0]
