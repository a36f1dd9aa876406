"""The undo of a pin's install: putting an environment's distributions back at the versions a
ledger entry or a snapshot recorded (:func:`restore_versions`), and the journaled form of that
undo that the next run's recovery carries out after a killed run (:func:`undo_journaled`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import RefusedError
from .pins import listed_version, version_changes
from .pipcall import PipFailure, installed_versions, pip_failure, run_pip


class RestoreError(Exception):
    """Distributions pip could not put back; the message names each, with what stays.

    Attributes:
        details: pip's own error lines.
    """

    def __init__(self, message: str, details: list[str]) -> None:
        super().__init__(message)
        self.details = details

    def __str__(self) -> str:
        return "\n".join([self.args[0], *("  " + d for d in self.details)])


def recorded_changes(extra: dict[str, Any]) -> dict[str, str | None]:
    """The versions to put back for a ledger entry: ``changes`` (every distribution the
    install changed), or, for entries written before it was kept, the pinned one."""
    changes = extra.get("changes")
    if isinstance(changes, list) and changes:
        return {str(c["name"]): c.get("from") for c in changes if isinstance(c, dict)}
    return {str(extra["distribution"]): extra.get("before")}


_VALUED_OPTIONS = ("--index-url", "--extra-index-url", "--find-links")
_FLAG_OPTIONS = ("--no-index", "--no-deps", "--no-build-isolation")


def journaled_undo(
    python: str, snapshot: dict[str, str], options: list[str], pip_env: dict[str, str]
) -> tuple[str, dict[str, Any]]:
    """The ``(kind, data)`` a transaction journals for the undo of an install (see
    :meth:`patchbay.apply.transaction.Transaction.on_rollback`): a run killed outright during or
    after the install is undone by the next run's recovery through :func:`undo_journaled`.

    Args:
        python: the engine interpreter; snapshot: distribution name -> version, listed
            before the install; options: pip's index options
            (:meth:`patchbay.kinds.pip.PipKind._install_options`); pip_env: the ``PIP_*``
            variables of the install (:func:`patchbay.kinds.pipcall.pip_environment`).
    """
    return "pip", {"python": python, "snapshot": snapshot, "options": options, "env": pip_env}


def undo_journaled(data: dict[str, Any], python: str | None, log: Path) -> None:
    """Undo an install a killed run journaled (:func:`journaled_undo`): put back every
    distribution whose version differs from its snapshot (:func:`restore_snapshot`).

    The journal is not trusted to choose what runs: the undo runs only in the interpreter
    of this run, only with pip's index options and ``PIP_*`` variables.

    Args:
        data: the journaled data; python: this run's engine interpreter (``--python``), or
            None; log: pip's output is appended here.

    Raises:
        RefusedError: the data is malformed, or names another interpreter (or this run has
            none): run again with that ``--python``.
        RestoreError: pip could not put everything back.
    """
    wanted = data.get("python")
    snapshot, options, env = data.get("snapshot"), data.get("options"), data.get("env")
    if not (
        isinstance(wanted, str)
        and isinstance(snapshot, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in snapshot.items())
        and isinstance(env, dict)
        and all(isinstance(k, str) and k.startswith("PIP_") and isinstance(v, str)
                for k, v in env.items())
        and _index_options_only(options)
    ):  # fmt: skip
        raise RefusedError("the journaled undo of a package install is malformed")
    if python is None or os.path.abspath(python) != os.path.abspath(wanted):
        raise RefusedError(
            f"the killed run installed packages with {wanted}: run again with --python "
            f"{wanted} to undo that install"
        )
    restore_snapshot(python, snapshot, options, log, env)


def _index_options_only(options: object) -> bool:
    """Whether ``options`` is a list of pip's index options (and their values) alone."""
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        return False
    i = 0
    while i < len(options):
        if options[i] in _VALUED_OPTIONS and i + 1 < len(options):
            i += 2
        elif options[i] in _FLAG_OPTIONS:
            i += 1
        else:
            return False
    return True


def restore_snapshot(
    python: str,
    snapshot: dict[str, str],
    options: list[str],
    log: Path,
    pip_env: dict[str, str] | None = None,
) -> None:
    """Put back every distribution whose version differs from ``snapshot`` (a listing taken
    before an install). Raises :class:`RestoreError` as :func:`restore_versions`."""
    moved = version_changes(snapshot, installed_versions(python))
    if moved:
        restore_versions(python, {n: was for n, was, _ in moved}, options, log, pip_env)


def restore_versions(
    python: str,
    wanted: dict[str, str | None],
    options: list[str],
    log: Path,
    pip_env: dict[str, str] | None = None,
) -> None:
    """Install ``name==version`` for every entry of ``wanted`` in one ``pip install
    --no-deps`` (the set was consistent before, so no dependency is resolved), and remove
    the ones whose version is None in one ``pip uninstall``; then check the result.

    Args:
        wanted: distribution name -> the version to have, or None for absent.
        options: pip's index options (those of the install being undone).
        log: pip's output is appended here (0600, redacted).

    Raises:
        RestoreError: a distribution is not at its wanted version afterwards; the message
            names each one and what stays installed, and quotes pip's error lines.
    """
    current = installed_versions(python)
    todo = {n: v for n, v in wanted.items() if listed_version(current, n) != v}
    failures: list[PipFailure] = []
    install = [f"{n}=={v}" for n, v in todo.items() if v is not None]
    remove = [n for n, v in todo.items() if v is None]
    if install:
        proc = run_pip(python, ["install", "--no-deps", *options, *install], env=pip_env, log=log)
        if proc.returncode != 0:
            failures.append(pip_failure(proc.stdout, proc.returncode))
    if remove:
        proc = run_pip(python, ["uninstall", "--yes", *remove], env=pip_env, log=log)
        if proc.returncode != 0:
            failures.append(pip_failure(proc.stdout, proc.returncode))
    now = installed_versions(python)
    left = [(n, v, listed_version(now, n)) for n, v in todo.items() if listed_version(now, n) != v]
    if not left:
        return
    what = ", ".join(
        f"{n}=={v} ({n} {got or 'absent'} stays installed)"
        if v is not None
        else f"the removal of {n} ({n} {got} stays installed)"
        for n, v, got in left
    )
    why = f": {failures[0].headline}" if failures else ""
    raise RestoreError(
        f"could not restore {what}{why} (log: {log})",
        [line for f in failures for line in f.lines],
    )
