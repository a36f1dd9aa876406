"""The verified no-op: ``apply`` of a patchset that is applied answers "nothing to do" without
loading the patchset's models, the patch kinds or the engine probe, from content alone.

At the end of a successful apply that wrote something, the engine records in the ledger (in the
same transaction, so the ledger and the record are committed together) the **identity** of what
it left (:func:`identity`):

- the inputs: ``patchset.yaml``, ``patchbay.lock`` (or its absence) and every patch file read,
  each by the path the engine reads it through (the patchset's folder as given, links kept),
  the real file that path reached and its sha256 (as patch-package keeps a hash of each
  applied patch): a link pointed elsewhere is a change;
- the environment: ``--root``, or the interpreter (its path as given, its real path and sha256,
  ``sys.prefix``), the state folder, the variables that change the interpreter's ``sys.path``
  (``PYTHONPATH``, ``PYTHONHOME``, ``HOME``, ...) or a ``home`` target's root (its ``env``),
  every ``sys.path`` folder with a digest of its listing (an install, an uninstall or a version
  change renames a ``.dist-info``), the per-user site-packages folder CPython adds once it
  exists, and the sha256 of what runs at start-up or points imports elsewhere
  (``pyvenv.cfg``, ``*.pth``, ``__editable__*`` finders, ``sitecustomize``); with ``--root``,
  the listing of the tree's top folder (where its ``.dist-info`` are); in both, the sha256 of
  the metadata (``METADATA``, ``PKG-INFO``, ``direct_url.json``) of every distribution the
  patchset names (pins, guard, components);
- the files: every file a patch, the ledger or the base guard looks at, with its real path,
  sha256 (or absence) and permission bits; a command's output by existence;
- what a no-op prints (its ``note:`` lines, the redundant patches, the count of present ones).

An apply that writes patches with notes records no identity: its notes ("applies at line 3")
are not the ones a re-run prints ("applied at line 3"); the first re-run, through the engine,
records the identity with its own (``engine._refresh_identity``).

:func:`check` (``apply`` before anything else) finds the ledger without the probe (``--state-dir``;
``<root>/.patchbay`` with ``--root``; else ``<sys.prefix>/share/patchbay`` where ``sys.prefix`` is
derived as CPython does: the folder of a ``pyvenv.cfg`` beside or above the interpreter, else
the parent of the real executable's folder), and re-checks every item of the identity: content
hashed, never trusted by mtime. Any difference, anything it cannot check (no identity, an
identity of another patchbay version, a journal of an interrupted run, a state folder it
cannot write, ``--record``) returns None and the full engine
decides.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat

from .. import __version__
from ..environment.statefolder import find_own

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from typing import Any

IDENTITY_VERSION = 2
IDENTITY_KEY = "applied_identity"  # in ledger.json, beside a patchset's "entries"
# ledger.json's "format" (kept here, where the no-op reads it before ledger.py is imported).
# 2: entries may carry ``distributions`` (what their files were written against), which a
# patchbay that knows only format 1 could not read; a format-1 ledger is read as it is and
# written back as format 2
LEDGER_FORMAT = 2
READABLE_FORMATS = (1, 2)
# what changes the interpreter's sys.path or start-up (CPython's documented variables)
VARIABLES = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONNOUSERSITE",
    "PYTHONUSERBASE",
    "PYTHONSAFEPATH",
    "PYTHONPLATLIBDIR",
    "PYTHONSTARTUP",
    "HOME",
)
_STARTUP_NAMES = ("sitecustomize.py", "usercustomize.py")


def sha256_of_file(path: str) -> str | None:
    """sha256 of a regular file (not through a final link), None when absent or not one."""
    state = file_state(path)
    return state[1] if state[1] != NOT_A_FILE else None


def listing(folder: str) -> str | None:
    """Digest of the sorted names in ``folder`` (None: not a readable folder)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    return hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()


def startup_files(folders: list[str]) -> list[str]:
    """Files in ``folders`` that run at start-up or redirect imports."""
    out = []
    for folder in folders:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.endswith(".pth") or name.startswith("__editable__") or name in _STARTUP_NAMES:
                out.append(os.path.join(folder, name))
    return out


NOT_A_FILE = "not-a-file"
_PROC_FD = os.path.isdir("/proc/self/fd")


def file_state(path: str) -> list[Any]:
    """``[real path, sha256, permission bits]`` of a file: opened without following a final
    link, its real path read from the open descriptor (Linux ``/proc/self/fd``, one call for
    the whole chain of folders; elsewhere :func:`os.path.realpath`). ``[real path, None,
    None]`` when absent, a sha256 of ``"not-a-file"`` for anything but a regular file."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return [os.path.realpath(path), None, None]
    except OSError:  # a final link (ELOOP), a folder we may not read, no permission
        return [os.path.realpath(path), NOT_A_FILE, None]
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return [os.path.realpath(path), NOT_A_FILE, None]
        real = os.readlink(f"/proc/self/fd/{fd}") if _PROC_FD else os.path.realpath(path)
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return [real, h.hexdigest(), stat.S_IMODE(st.st_mode)]
    finally:
        os.close(fd)


def venv_prefix(python: str) -> str | None:
    """``sys.prefix`` of the interpreter at ``python`` as CPython derives it for a virtual
    environment: the folder holding a ``pyvenv.cfg`` beside the executable or one folder up
    (PEP 405; the executable's own path, links not followed); None when there is none."""
    here = os.path.dirname(python)
    for folder in (here, os.path.dirname(here)):
        if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
            return folder
    return None


def candidate_prefix(python: str) -> str:
    """Where ``sys.prefix`` of ``python`` is expected: :func:`venv_prefix`, else the parent of
    the real executable's folder (``/usr/bin/python3`` -> ``/usr``). A guess the recorded
    identity must confirm: a wrong one finds no ledger, or one whose identity differs."""
    return venv_prefix(python) or os.path.dirname(os.path.dirname(os.path.realpath(python)))


def interpreter_path(python: str | None) -> str | None:
    """``--python`` as the engine resolves it: a path made absolute, a name looked up on PATH;
    the default is ``python3`` on PATH (None when there is none)."""
    if python is not None and os.sep in python:
        return os.path.abspath(python)
    import shutil  # only to look a name up on PATH (its import costs more than the check)

    if python is None:
        return shutil.which("python3")
    return shutil.which(python) or python


# -- checking (before anything is loaded) ------------------------------------------------------


class NoOp:
    """A verified no-op: what ``apply`` prints for it (the ``note:`` lines the engine's no-op
    printed, the redundant patches' ids, and how many patches are present), and ``digest``,
    the sha256 of the identity record that verified it (the same digest means the same
    patchset, environment and files, every one re-checked by content)."""

    def __init__(
        self,
        redundant: list[str],
        present: int,
        notes: list[str] | None = None,
        identity: dict[str, Any] | None = None,
    ) -> None:
        self.redundant = redundant
        self.present = present
        self.notes = notes or []
        self._identity = identity

    @property
    def digest(self) -> str:
        """The sha256 of the identity record (computed when asked: ``status``'s kept output
        wants it, a no-op ``apply`` does not); empty without one."""
        if self._identity is None:
            return ""
        return hashlib.sha256(json.dumps(self._identity, sort_keys=True).encode()).hexdigest()


def _yaml_path(patchset_arg: str) -> str | None:
    """The absolute path (links kept) of the YAML the PATCHSET argument names, as the loader
    finds it: the key of the identity, whose inputs are read through it."""
    from ..patchset.inputfiles import PATCHSET_FILENAMES, patchset_location

    path = patchset_location(patchset_arg)
    if os.path.isdir(path):
        for name in PATCHSET_FILENAMES:
            candidate = os.path.join(path, name)
            if os.path.lexists(candidate):
                return os.path.abspath(candidate)
        return None
    return os.path.abspath(path) if os.path.isfile(path) else None


def check(
    patchset_arg: str,
    *,
    python: str | None = None,
    root: os.PathLike[str] | str | None = None,
    state_dir: os.PathLike[str] | str | None = None,
) -> NoOp | None:
    """The verified no-op of ``apply PATCHSET`` with these options, or None to run the full
    engine (see the module docstring); never raises for what it cannot read (it falls
    through, and the engine reports it)."""
    try:
        return _check(patchset_arg, python, root, state_dir)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None


def _check(
    patchset_arg: str,
    python: str | None,
    root: os.PathLike[str] | str | None,
    state_dir: os.PathLike[str] | str | None,
) -> NoOp | None:
    if python is not None and root is not None:
        return None  # bad usage: the engine says so
    yaml = _yaml_path(patchset_arg)
    if yaml is None:
        return None
    executable = None
    if root is not None:
        tree_root = os.path.realpath(root)
        folder = os.path.realpath(state_dir or os.path.join(tree_root, ".patchbay"))
        if state_dir is not None:
            own = find_own(folder, root=tree_root)
            if own is None:
                return None
            folder = os.path.realpath(own)
    else:
        executable = interpreter_path(python)
        if executable is None:
            return None
        prefix = candidate_prefix(executable)
        folder = os.path.realpath(state_dir or os.path.join(prefix, "share", "patchbay"))
        if state_dir is not None:
            own = find_own(folder, prefix=prefix)
            if own is None:
                return None
            folder = os.path.realpath(own)
    if os.path.lexists(os.path.join(folder, "journal")):
        return None  # a run is under way, or was interrupted: the engine rolls it back
    if not os.access(folder, os.W_OK | os.X_OK):
        return None  # apply refuses a state folder it cannot write: the engine says so
    with open(os.path.join(folder, "ledger.json"), encoding="utf-8") as fh:
        ledger = json.load(fh)
    if ledger.get("format") not in READABLE_FORMATS:
        return None
    found = None
    for bucket in ledger["patchsets"].values():
        ident = bucket.get(IDENTITY_KEY)
        if ident and ident["inputs"] and ident["inputs"][0][0] == yaml:
            found = ident
            break
    if found is None or found.get("version") != IDENTITY_VERSION:
        return None
    if found.get("tool_version") != __version__:
        return None
    env = found["environment"]
    if os.path.realpath(env["state_dir"]) != folder:
        return None
    if root is not None:
        if env.get("root") is None or os.path.realpath(env["root"]) != tree_root:
            return None
    else:
        if env.get("python") != executable or env.get("root") is not None:
            return None
        if os.path.realpath(env["prefix"]) != os.path.realpath(prefix):
            return None
        real = os.path.realpath(executable)
        if env["executable"] != real or env["executable_sha256"] != sha256_of_file(real):
            return None
        names = env["variables"]
        if not set(VARIABLES) <= set(names):
            return None
        if names != {k: os.environ.get(k) for k in names}:
            return None
        if env["user_site"] is not None and listing(env["user_site"][0]) != env["user_site"][1]:
            return None
        # a new or removed .pth or finder changes its folder's listing, checked above
        if any(sha256_of_file(p) != sha for p, sha in env["startup"]):
            return None
    if any(listing(p) != digest for p, digest in env["sys_path"]):
        return None  # with --root: the tree's top folder, where its .dist-info are
    if any(sha256_of_file(p) != sha for p, sha in env["metadata"]):
        return None
    for given, real, sha in found["inputs"]:
        if os.path.realpath(given) != real or sha256_of_file(real) != sha:
            return None
    for path, real, sha, mode in found["files"]:
        if file_state(path) != [real, sha, mode]:
            return None
    if not all(os.path.exists(p) for p in found["outputs"]):
        return None
    notes = found.get("notes", [])  # an identity recorded before notes were: none
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        return None
    return NoOp(
        redundant=list(found["redundant"]),
        present=int(found["present"]),
        notes=notes,
        identity=found,
    )
