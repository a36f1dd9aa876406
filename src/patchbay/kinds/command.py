"""The ``command`` kind: rebuild and post steps (e.g. a JIT kernel module after its sources
were patched; its cache is keyed on the module name, so a stale build would keep the old code).

A command is pending when a patch it names in ``after`` is applied in this run, or when its
declared ``output`` is missing; otherwise it is up to date and does not run. It runs with an
argv list (``/bin/sh -c`` only with ``shell: true``), ``{python}`` standing for the engine
interpreter, in ``cwd`` under its target; ``remove`` paths (stale builds, under its target or
``{target, path}`` under another one, such as a per-user JIT folder) are deleted first, through
the run's journal. A non-zero exit fails the run, which is rolled back like any other
failure (files restored; what the command itself wrote beyond its declared output cannot be
tracked, and the failure says so). The command runs in a process group of its own
(:mod:`patchbay.apply.childgroup`): on a timeout, an interrupt or a failure, and when it exits,
every process it started is killed and waited for before the rollback begins.

The environment is patchbay's own with every credential removed (the rule of
:func:`patchbay.redaction.is_credential`: ``GITHUB_TOKEN``, ``*_TOKEN``, ``*_SECRET``,
``*_PASSWORD``, ``*_KEY``, URLs with a password...), then the patch's ``env``: a string sets a
variable, and a name with no value (``HF_TOKEN:`` or ``HF_TOKEN: null``) passes that variable
through from patchbay's environment, credential or not (as a Compose file's ``environment``
does). Output goes to ``<state>/logs/<id>.log``, mode 0600, with secrets redacted.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

import msgspec

from .. import progress
from ..apply.childgroup import run_in_group
from ..apply.journal import write_atomic
from ..apply.ledger import blob_dir_of, keep_blob, read_blob, sha256_bytes
from ..diff.hunks import HunkResult, HunkState
from ..environment.paths import PathRejected, resolve_under
from ..errors import ApplyFailed, RefusedError
from ..patchset.model import CommandPatch
from ..redaction import is_credential, redact, write_log
from .base import ContentState, Inspection, LoadedPatch, PendingPatch

if TYPE_CHECKING:
    from ..apply.ledger import LedgerEntry
    from ..apply.transaction import Transaction
    from ..environment.tree import Tree
    from ..patchset.model import Patchset


class CommandKind:
    """Implements :class:`~patchbay.kinds.base.PatchKind` for ``kind: command``."""

    name = "command"

    def load(self, patch: CommandPatch, patchset: Patchset, index: int) -> LoadedPatch:
        keys = ("argv", "shell", "cwd", "env", "remove", "output", "after")
        spec = {k: v for k, v in msgspec.to_builtins(patch).items() if k in keys}
        canonical = json.dumps(spec, sort_keys=True)
        return LoadedPatch(sha256=sha256_bytes(canonical.encode()), source=None, data=None)

    def describe(self, patch: CommandPatch, loaded: LoadedPatch) -> str:
        return f"run {' '.join(patch.argv)}" + (
            f" (after {', '.join(patch.after)})" if patch.after else ""
        )

    def inspect(self, patch: CommandPatch, loaded: LoadedPatch, tree: Tree) -> Inspection:
        for target, rel in patch.removals():  # an unsafe path refuses the plan, not the write
            tree.resolve(target, rel)
        reasons = [f"{dep} changes in this run" for dep in patch.after if dep in tree.changed]
        if patch.output is not None and not os.path.exists(
            tree.resolve(patch.target, patch.output)
        ):
            reasons.append(f"its output {patch.output} is missing")
        if not patch.after and patch.output is None:  # a clean-up: due while its paths are there
            there = [rel for t, rel in patch.removals() if os.path.lexists(tree.resolve(t, rel))]
            if there:
                reasons.append(f"{there[0]}, which it removes, is there")
        unit = HunkResult(
            file=patch.output or patch.argv[0],
            index=1,
            declared_line=0,
            state=HunkState.PENDING if reasons else HunkState.APPLIED,
            detail="; ".join(reasons) or "up to date",
        )
        state = ContentState.PENDING if reasons else ContentState.APPLIED
        return Inspection(state=state, hunks=[unit])

    def preflight(self, item: PendingPatch, tree: Tree) -> None:
        """A command that names ``{python}`` needs the engine interpreter: with ``--root``, the
        one under the tree (:mod:`patchbay.environment.rootpython`).

        Raises:
            RefusedError: ``--root`` is given and no interpreter is found under it.
        """
        _interpreter(item.patch, tree)

    def apply(self, batch: list[PendingPatch], tree: Tree, txn: Transaction) -> None:
        state_dir = _state_dir(tree)
        for item in batch:
            patch: CommandPatch = item.patch
            root = tree.roots[patch.target]
            # every path through the gate first: a link among them removes nothing
            removals = [tree.resolve(target, rel) for target, rel in patch.removals()]
            output = tree.resolve(patch.target, patch.output) if patch.output else None
            kept: str | None = None
            mode: int | None = None
            # the output as it was, kept before a `remove` takes it: revert puts it back
            if output is not None and output.is_file() and not output.is_symlink():
                mode = stat.S_IMODE(output.stat().st_mode)
                kept = keep_blob(blob_dir_of(state_dir), output.read_bytes(), txn)
            for path in removals:
                _remove(path, txn)
            if output is not None and not output.is_dir():
                txn.save(output, copy=True)  # a build may write it in place: no hard link
            python = _interpreter(patch, tree) or sys.executable
            argv = [arg.replace("{python}", python) for arg in patch.argv]
            if patch.shell:
                argv = ["/bin/sh", "-c", argv[0]]
            log = state_dir / "logs" / f"{patch.id}.log"
            cwd = root if patch.cwd == "." else tree.resolve(patch.target, patch.cwd)
            if not cwd.is_dir():
                raise ApplyFailed(f"working folder {cwd} does not exist", patch_id=patch.id)
            # the raw output lives in an unlinked file: only its redacted copy reaches the disk
            txn.note_untracked(
                f"what command {patch.id} wrote outside its declared output (its remove paths "
                "come back as they were, but with anything it added in them)"
            )
            with tempfile.TemporaryFile() as raw:
                try:
                    try:  # a progress step: elapsed, the log, the last line of output
                        returncode = _run_step(
                            argv,
                            title=f"{patch.id}: {' '.join(patch.argv)}"[:120],
                            log=log,
                            sink=raw,
                            cwd=cwd,
                            env=command_environment(patch.env),
                            timeout=patch.timeout,
                        )
                    finally:
                        _write_command_log(log, argv, cwd, raw)
                except FileNotFoundError:
                    raise ApplyFailed(f"command not found: {argv[0]}", patch_id=patch.id) from None
                except PermissionError:
                    raise ApplyFailed(
                        f"cannot execute {argv[0]}: permission denied", patch_id=patch.id
                    ) from None
                except subprocess.TimeoutExpired:
                    raise ApplyFailed(
                        f"command timed out after {patch.timeout:g} s; its process group was "
                        f"killed (log: {log})",
                        patch_id=patch.id,
                    ) from None
                finally:
                    tree.forget_folders()  # it may have made or removed folders and links
            if returncode != 0:
                raise ApplyFailed(f"command {_status(returncode)} (log: {log})", patch_id=patch.id)
            if output is not None and not output.exists():
                raise ApplyFailed(
                    f"command did not produce its declared output {patch.output} (log: {log})",
                    patch_id=patch.id,
                )
            if output is not None:
                try:  # the command may have made it a link out of the target
                    resolve_under(root, patch.output)  # type: ignore[arg-type]
                except PathRejected as exc:
                    raise ApplyFailed(
                        f"declared output refused after the command ran: {exc}",
                        file=output,
                        patch_id=patch.id,
                    ) from None
            item.inspection.record = {  # a credential on the command line never reaches the ledger
                "argv": [redact(arg) for arg in argv],
                "log": str(log),
                "output": patch.output,
                "target": patch.target,
                "output_before": kept,
                "output_mode": mode,
            }

    def revert(self, entry: LedgerEntry, tree: Tree, txn: Transaction) -> bool:
        """Put the command's output back as it was before the command ran (its bytes were kept
        in the state folder's blobs: a shipped kernel the command rebuilt), or remove it when
        there was none, so that it is rebuilt from whatever sources are there now."""
        output, target = entry.extra.get("output"), entry.extra.get("target")
        if not output or target not in tree.roots:
            return True
        path = tree.resolve(target, output)
        before = entry.extra.get("output_before")
        data = read_blob(blob_dir_of(_state_dir(tree)), before) if before else None
        if data is None:
            _remove(path, txn)
            return True
        txn.save(path)
        write_atomic(path, data, mode=entry.extra.get("output_mode"))
        return True


def _interpreter(patch: CommandPatch, tree: Tree) -> str | None:
    """What ``{python}`` stands for in ``patch``: the engine interpreter (``--python``), or
    with ``--root`` the one under the tree; None when the command does not name it.

    Raises:
        RefusedError: ``--root`` and no interpreter under it, for a command that names it.
    """
    if not any("{python}" in arg for arg in patch.argv):
        return None
    env = tree.env
    if env is not None and env.python:
        return env.python
    root = None if env is None else env.tree_root
    if root is None:
        return sys.executable  # roots given directly (a library caller): its own choice
    from ..environment.rootpython import candidates, engine_python

    found = engine_python(root)
    if found is None:
        looked = ", ".join(str(p) for p in candidates(root)) or (
            "none: the tree is not shaped <prefix>/lib/python3.X/site-packages"
        )
        raise RefusedError(
            f"command {patch.id} runs {{python}}, the engine interpreter, and with --root "
            f"{root} there is none under the tree (looked at: {looked}); give --python, or "
            "write the interpreter's path instead of {python}",
            patch_id=patch.id,
        )
    return str(found)


def _state_dir(tree: Tree) -> Path:
    """The state folder of the tree's environment (``.patchbay`` of the working folder when
    the tree has none: a library caller's bare tree)."""
    return tree.env.state_dir if tree.env is not None else Path(".patchbay")


_DRAIN_S = 5.0  # seconds the output is still read once the group is gone


def command_environment(
    declared: Mapping[str, str | None], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a command patch: ``environ`` (default ``os.environ``) without its
    credentials (:func:`patchbay.redaction.is_credential`), then the patch's ``env``: a string
    sets a variable, None passes the variable of ``environ`` through (absent stays absent)."""
    env = os.environ if environ is None else environ
    out = {k: v for k, v in env.items() if not is_credential(k, v)}
    for name, value in declared.items():
        if value is not None:
            out[name] = value
        elif name in env:
            out[name] = env[name]
    return out


def _run_step(
    argv: list[str],
    *,
    title: str,
    log: Path,
    sink: IO[bytes],
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None,
) -> int:
    """Run ``argv`` in its own process group (:func:`~patchbay.apply.childgroup.run_in_group`) as a
    progress step: its output (stderr joined) goes to ``sink`` line by line and its last line
    is shown while it runs. Returns its exit status; raises as ``run_in_group`` does."""
    read_fd, write_fd = os.pipe()
    with progress.step(title, log=log) as s, os.fdopen(write_fd, "wb") as pipe:
        reader = progress.follow(os.fdopen(read_fd, "rb"), s, sink.write)
        try:
            returncode = run_in_group(argv, cwd=cwd, env=env, stdout=pipe, timeout=timeout)
        finally:
            pipe.close()  # the group is gone: the reader sees the end of its output
            reader.join(_DRAIN_S)
        s.exit_code = returncode
    return returncode


def _write_command_log(log: Path, argv: list[str], cwd: Path, raw: IO[bytes]) -> None:
    raw.flush()
    raw.seek(0)
    lines = (line.decode("utf-8", "replace") for line in raw)
    write_log(log, itertools.chain([f"$ {' '.join(argv)}  (cwd {cwd})\n"], lines))


def _remove(path: Path, txn: Transaction) -> None:
    """Delete a file or folder, every file and folder of it journaled first (a rollback
    makes the folders again as they were, empty ones too, and restores the files)."""
    if path.is_dir() and not path.is_symlink():
        walked = list(os.walk(path))
        for folder, _dirs, files in walked:
            for name in files:  # files and links (os.walk does not follow links)
                txn.save(Path(folder) / name)
            for name in _dirs:
                if os.path.islink(os.path.join(folder, name)):
                    txn.save(Path(folder) / name)
        for folder, _dirs, _files in reversed(walked):  # deepest first: made again outermost first
            txn.save_folder(Path(folder))
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        txn.save(path)
        path.unlink()


def _status(returncode: int) -> str:
    """``exited with status N`` or ``was killed by SIGNAME``."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"was killed by {name}"
