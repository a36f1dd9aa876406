"""Running the engine's own pip for the ``pip`` kind: pip's index options and ``PIP_*``
variables, one logged pip run (:func:`run_pip`), what its output says (a failure's error block,
an index it could not reach), the listing of installed versions, and the scratch checkout a
source build's requirements are read from.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .. import progress
from ..errors import RefusedError, SourceUnreachable
from ..redaction import write_log

if TYPE_CHECKING:
    from ..environment.tree import Tree
    from ..patchset.model import PipPatch
    from .pins import PipPin

PIP_TIMEOUT_S = 3600
_LIST = "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"  # noqa: E501


@contextmanager
def checkout(url: str, commit: str, *, patch_id: str) -> Iterator[Path]:
    """A scratch working tree of ``url`` at ``commit`` (``git fetch --depth 1`` of that commit
    into a new temporary folder, removed afterwards, whatever happens).

    Raises:
        RefusedError: git cannot fetch the commit (unreachable, unknown commit).
    """
    with tempfile.TemporaryDirectory(prefix="patchbay-src-") as scratch:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
        steps = (
            ["init", "--quiet"],
            ["fetch", "--quiet", "--depth", "1", url, commit],
            ["-c", "advice.detachedHead=false", "checkout", "--quiet", "FETCH_HEAD"],
        )
        for step in steps:
            try:
                proc = subprocess.run(
                    ["git", "-C", scratch, *step],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    errors="replace",
                    env=env,
                    timeout=PIP_TIMEOUT_S,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise RefusedError(
                    f"cannot fetch {commit} from {url}: {exc}", patch_id=patch_id
                ) from None
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or [f"git exited {proc.returncode}"])[-1]
                message = f"cannot fetch {commit} from {url}: {last}"
                if any(m in proc.stderr for m in _GIT_UNREACHABLE):
                    place = f"git remote unreachable: {url} ({last})"
                    raise SourceUnreachable(message, place=place, patch_id=patch_id)
                raise RefusedError(message, patch_id=patch_id)
        yield Path(scratch)


# what git (and curl under it) says when the remote is not there at all, as opposed to a
# remote that answers "no such commit"
_GIT_UNREACHABLE = (
    "Could not resolve host",
    "Failed to connect",
    "Connection refused",
    "Connection timed out",
    "Operation timed out",
)

# urllib3's warning for every failed connection pip retries, e.g. ``Retrying (Retry(...))
# after connection broken by 'NewConnectionError("HTTPConnection(host='h', port=9): Failed
# to establish a new connection: [Errno 111] Connection refused")': /simple/x/``; pip says
# nothing of a connection it does not retry (``--retries 0``)
_BROKEN = re.compile(r"after connection broken by '(?P<error>\w+)\((?P<body>.*)\)': (?P<path>\S*)")
_HOST = re.compile(r"host='(?P<host>[^']+)', port=(?P<port>\d+)")


def unreachable(output: str) -> str | None:
    """The first place pip's output says it could not reach, as ``PLACE (ERROR: REASON)``,
    else None. The failures are urllib3's retry warnings (see ``_BROKEN``); the place is the
    index or find-links URL pip listed (``Looking in indexes:``) that the failed path is
    under, else the host and port the warning names (newer urllib3), else the path."""
    listed: list[str] = []
    for line in output.splitlines():
        for head in ("Looking in indexes:", "Looking in links:"):
            if line.startswith(head):
                listed += [u.strip() for u in line[len(head) :].split(",") if "://" in u]
        found = _BROKEN.search(line)
        if found is None:
            continue
        path = found["path"]
        under = [u for u in listed if path.startswith(urlsplit(u).path or "/")]
        host = _HOST.search(found["body"])
        if under:
            where = max(under, key=lambda u: len(urlsplit(u).path))
        else:
            where = f"{host['host']}:{host['port']}" if host else path or "an index"
        reason = found["body"].rsplit(": ", 1)[-1].strip().strip("\"'")
        return f"{where} ({found['error']}: {reason})"
    return None


def index_args(patch: PipPatch, tree: Tree) -> list[str]:
    """pip's index options for ``patch``; from a bundle, only the bundle's wheels. A relative
    ``find_links`` folder is relative to the patchset folder (made absolute here); a
    ``${NAME}`` reference is expanded from the environment (:mod:`patchbay.envrefs`).

    Raises:
        RefusedError: offline without a bundle, or a referenced variable is not set.
    """
    options = tree.options
    if options.bundle is not None:
        return ["--no-index", "--find-links", str(options.bundle.resolve() / "wheels")]
    if options.offline:
        raise RefusedError(f"offline without a bundle: cannot install {patch.requirement}")
    from ..envrefs import expand

    what = f"patch {patch.id}"
    args: list[str] = ["--no-index"] if patch.no_index else []
    if patch.index_url:
        args += ["--index-url", expand(patch.index_url, f"{what}: index_url")]
    for url in patch.extra_index_urls:
        args += ["--extra-index-url", expand(url, f"{what}: extra_index_urls")]
    for link in patch.find_links:
        if "://" not in link and tree.folder is not None:
            link = str((tree.folder / link).resolve())
        args += ["--find-links", expand(link, f"{what}: find_links")]
    return args


def pip_environment(tree: Tree, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Variables for pip: the patch's build environment; from a bundle, the machine's pip
    configuration, cache and find-links are switched off, so only the bundle is used."""
    env = dict(extra or {})
    if tree.options.bundle is not None or tree.options.offline:
        env.update(
            PIP_CONFIG_FILE=os.devnull,
            PIP_NO_CACHE_DIR="1",
            PIP_FIND_LINKS="",
            PIP_EXTRA_INDEX_URL="",
            PIP_INDEX_URL="",
        )
    return env


def run_pip(
    python: str,
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    log: Path | None = None,
    fresh: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pip ARGS`` (stderr into stdout, as a terminal shows them); its whole
    output is appended to ``log`` (a new log when ``fresh``), redacted, mode 0600."""
    # a dry run installs nothing (and is all a read-only `status` runs): its progress line
    # must not announce an install
    title = f"pip's dry run of {args[-1]}" if "--dry-run" in args else f"pip {args[0]} {args[-1]}"
    try:  # a progress step: elapsed time, the log, pip's last line (patchbay.progress)
        proc = progress.run(
            [python, "-m", "pip", "--no-input", "--disable-pip-version-check", *args],
            title=title,
            log=log,
            text=True,
            timeout=PIP_TIMEOUT_S,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.output or ""
        out = out.decode("utf-8", "replace") if isinstance(out, bytes) else out
        proc = subprocess.CompletedProcess(
            exc.cmd, -1, out + f"\n(timed out after {exc.timeout} s)"
        )
    if log is not None:
        try:
            write_log(
                log,
                f"$ pip {' '.join(args)}\n{proc.stdout}\n(exit {proc.returncode})\n",
                append=not fresh,
            )
        except OSError as exc:
            raise RefusedError(f"cannot write pip's log: {exc.strerror or exc}", file=log) from None
    return proc


@dataclass
class DryRun:
    """What ``pip install --dry-run --report`` found.

    Attributes:
        changes: every distribution it would add or change, as (name, installed version or
            None, version).
        unreachable: a place pip could not reach on the way (see :func:`unreachable`): the
            answer may differ from one with the network.
    """

    changes: list[tuple[str, str | None, str]]
    unreachable: str | None = None


@dataclass
class PipFailure:
    """pip's own account of a failure (see :func:`pip_failure`).

    Attributes:
        headline: the line that says most: pip's last ``ERROR:`` line, else the last line a
            failed build printed, else pip's first error line.
        lines: the quoted block, stripped, at most a screenful.
    """

    headline: str
    lines: list[str]


_OUTPUT_START = re.compile(r"\[\d+ lines? of output\]$")


def pip_failure(
    output: str, returncode: int, *, keep_output: int = 6, limit: int = 16
) -> PipFailure:
    """Read pip's failure from its whole output: the block from its first ``ERROR:`` or
    ``error:`` line on. pip writes resolver and install errors as ``ERROR: ...``, and a failed
    build step as ``error: <code>``, summary lines and the build's own output between
    ``[N lines of output]`` and ``[end of output]``; of that output only the last
    ``keep_output`` lines are kept (a traceback's tail names the problem). pip's pointers
    elsewhere (``note:``, ``hint:``, "See above") and repeated lines are dropped.

    Args:
        output: pip's stdout and stderr, interleaved.
        returncode: pip's exit status (named when pip printed nothing).
    """
    lines = [ln.strip() for ln in output.splitlines()]
    first = next((i for i, ln in enumerate(lines) if ln.startswith(("ERROR:", "error:"))), None)
    if first is None:
        tail = [ln for ln in lines if ln][-3:]
        return PipFailure(tail[-1] if tail else f"pip exited with status {returncode}", tail)
    out: list[str] = []
    seen: set[str] = set()
    built: str | None = None  # the last line of the first failed build's output
    captured: list[str] | None = None
    for text in lines[first:]:
        if captured is not None:
            if text != "[end of output]":
                if text:
                    captured.append(text)
                continue
            if captured and built is None:
                built = captured[-1]
            out.extend((["..."] if len(captured) > keep_output else []) + captured[-keep_output:])
            captured = None
            continue
        if not text or text.startswith(("note:", "hint:")) or "See above for" in text:
            continue
        if _OUTPUT_START.search(text):
            captured = []
        elif text in seen:
            continue
        seen.add(text)
        out.append(text)
    if captured:  # cut off before its end marker
        out.extend(captured[-keep_output:])
        built = built or captured[-1]
    errors = [ln for ln in out if ln.startswith("ERROR:")]
    headline = errors[-1] if errors else built or out[0]
    return PipFailure(headline, out[:limit])


def build_requirements_file(patch: PipPatch, checkout_dir: Path, pin: PipPin) -> Path:
    """``patch.build_requirements`` inside a checkout, through the same rule as every patch
    path: no ``..`` (the model refused it), no link, nothing outside the checkout.

    Raises:
        RefusedError: the file is missing at the locked commit, or is a link or leaves the
            checkout.
    """
    assert patch.build_requirements is not None and pin.source is not None
    path = checkout_dir / patch.build_requirements
    real, root = os.path.realpath(path), os.path.realpath(checkout_dir)
    if path.is_symlink() or not real.startswith(root + os.sep):
        raise RefusedError(
            f"{patch.build_requirements} in {pin.source.label} is a link; refusing to read it",
            patch_id=patch.id,
        )
    if not path.is_file():
        raise RefusedError(
            f"{pin.source.label} has no file {patch.build_requirements} at commit {pin.commit}",
            patch_id=patch.id,
        )
    return path


def pip_log(state_dir: Path, patch_id: str) -> Path:
    """Where the pip output of ``patch_id``'s dry run and install is kept."""
    return state_dir / "logs" / f"{patch_id}.log"


def installed_versions(python: str) -> dict[str, str]:
    """Every distribution installed for ``python``, as name -> version (read by that
    interpreter's ``importlib.metadata``).

    Raises:
        RefusedError: the interpreter could not list them.
    """
    proc = subprocess.run([python, "-c", _LIST], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RefusedError(f"cannot list installed distributions: {proc.stderr.strip()[-200:]}")
    return json.loads(proc.stdout)
