"""Shared fixtures: a real demo-engine wheel, real virtual environments, the real CLI."""

from __future__ import annotations

import fcntl
import hashlib
import os
import pty
import select
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
CASES = Path(__file__).resolve().parent / "cases"
PATCHBAY = Path(sys.executable).with_name("patchbay")


@dataclass
class Engine:
    """A real virtual environment with the demo engine pip-installed."""

    prefix: Path
    python: Path
    site: Path

    @property
    def pkg(self) -> Path:
        return self.site / "demo_engine"

    @property
    def state_dir(self) -> Path:
        return self.prefix / "share" / "patchbay"


def _site_packages(prefix: Path) -> Path:
    return next((prefix / "lib").glob("python3*/site-packages"))


# the folder where wheels and environment templates are built once for the whole run: shared by
# the pytest-xdist workers (each has a base temp folder of its own under the run's), set by
# :func:`_shared_builds`; unset (outside pytest), every build is made where it is asked for
_SHARED: list[Path] = []
_NOT_SOURCE = {"build", "dist", "__pycache__"}


def _tree_key(source: Path) -> str:
    """A hash of every file under ``source`` (its relative path and bytes), leaving out what a
    build writes into the folder (``build/``, ``*.egg-info``, ``__pycache__``)."""
    digest = hashlib.sha256()
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if any(part in _NOT_SOURCE or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path.is_file():
            digest.update(f"{rel.as_posix()}\0{path.stat().st_size}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:24]


def shared_build(key: str, make: Callable[[Path], None]) -> Path:
    """The folder ``key`` of the run's shared builds, made by ``make(folder)`` the first time any
    worker asks for it (under an exclusive ``flock``: the others wait, then read it)."""
    if not _SHARED:
        folder = Path(tempfile.mkdtemp(prefix=f"{key}-"))
        make(folder)
        return folder
    folder = _SHARED[0] / key
    with open(_SHARED[0] / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".done").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed half-way
            folder.mkdir()
            make(folder)
            (folder / ".done").touch()
    return folder


def shared_wheel(source: Path) -> Path:
    """Build a project folder into a wheel with pip (no isolation: setuptools is in .venv), once
    per run for the same source files (:func:`shared_build`): every worker gets the same path,
    so that environments installed from it record the same ``direct_url.json``."""

    def make(folder: Path) -> None:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "--no-build-isolation",
                "--wheel-dir",
                str(folder),
                str(source),
            ],
            check=True,
        )

    (built,) = shared_build(f"wheel-{_tree_key(source)}", make).glob("*.whl")
    return built


def build_wheel(source: Path, out: Path) -> Path:
    """:func:`shared_wheel` of ``source``, copied into ``out`` (a folder of wheels to install or
    serve)."""
    built = shared_wheel(source)
    out.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(built, out / built.name))


def make_engine(prefix: Path, wheel: Path, *, with_pip: bool = False) -> Engine:
    """A real virtual environment at ``prefix`` with ``wheel`` installed by pip; with its own
    pip (and setuptools) when ``with_pip``."""
    venv = [sys.executable, "-m", "venv", str(prefix)]
    subprocess.run(venv if with_pip else [*venv, "--without-pip"], check=True)
    python = prefix / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            str(wheel),
        ],
        check=True,
    )
    return Engine(prefix=prefix, python=python, site=_site_packages(prefix))


def copy_engine(template: Path, prefix: Path) -> Engine:
    """A copy of a template environment (venvs keep working when copied with their links)."""
    shutil.copytree(template, prefix, symlinks=True)
    return Engine(prefix=prefix, python=prefix / "bin" / "python", site=_site_packages(prefix))


@pytest.fixture(scope="session", autouse=True)
def _own_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The suite's audits cache into a folder of the run, never the user's ``~/.cache``."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))


@pytest.fixture(scope="session", autouse=True)
def _shared_builds(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Wheels and environment templates are built once per run (:func:`shared_build`), in a
    folder beside the base temp folders of the pytest-xdist workers (or in the run's own)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    shared = root / "shared-builds"
    shared.mkdir(exist_ok=True)
    _SHARED[:] = [shared]


@pytest.fixture(scope="session")
def demo_wheel() -> Path:
    """demo/engine built into a wheel, once per run (the same path for every worker)."""
    return shared_wheel(REPO / "demo" / "engine")


@pytest.fixture(scope="session")
def engine_template(demo_wheel: Path) -> Path:
    """A virtual environment with the demo wheel installed by pip, copied for each test (made
    once per run: :func:`shared_build`)."""
    folder = shared_build(
        f"template-{demo_wheel.name}", lambda out: make_engine(out / "engine", demo_wheel)
    )
    return folder / "engine"


@pytest.fixture
def engine(tmp_path: Path, engine_template: Path) -> Engine:
    """A fresh engine environment for one test."""
    return copy_engine(engine_template, tmp_path / "engine")


@pytest.fixture(scope="session")
def pip_template(demo_wheel: Path) -> Path:
    """An engine environment with its own pip (and setuptools), and the demo engine (made once
    per run: :func:`shared_build`)."""
    folder = shared_build(
        f"pip-template-{demo_wheel.name}",
        lambda out: make_engine(out / "engine", demo_wheel, with_pip=True),
    )
    return folder / "engine"


@pytest.fixture
def pengine(tmp_path: Path, pip_template: Path) -> Engine:
    """A fresh engine environment with its own pip, for package pins."""
    return copy_engine(pip_template, tmp_path / "engine")


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_cli(*args: str | Path, cwd: Path | None = None, **kwargs: object) -> Result:
    """Run the installed ``patchbay`` console script (``env=``: its whole environment,
    instead of this process's)."""
    base = kwargs.pop("env", None)
    proc = subprocess.run(
        [str(PATCHBAY), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**(os.environ if base is None else base), "COLUMNS": "200"},  # type: ignore[dict-item]
        **kwargs,  # type: ignore[arg-type]
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli() -> object:
    return run_cli


@pytest.fixture
def other_fs(tmp_path: Path) -> Iterator[Path]:
    """A state folder on another filesystem than the tree (/dev/shm is a tmpfs here)."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem at /dev/shm")
    folder = Path(tempfile.mkdtemp(prefix="patchbay-state-", dir=shm))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def write_patchset(
    folder: Path,
    patches: list[dict[str, object]],
    *,
    name: str = "test",
    targets: dict[str, object] | None = None,
    base: dict[str, object] | None = None,
    files: dict[str, bytes | str] | None = None,
) -> Path:
    """Write ``folder/patchset.yaml`` (and patch files) and return the folder.

    Every patch gets defaults for ``target`` (engine), ``description`` and ``upstream``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for rel, content in (files or {}).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    full = []
    for i, p in enumerate(patches, start=1):
        full.append(
            {
                "target": "engine",
                "description": f"test patch {i}",
                "upstream": [f"demo-org/demo-engine#{100 + i}"],
                **p,
            }
        )
    doc: dict[str, object] = {
        "schema": 1,
        "name": name,
        "image": {"reference": "example.invalid/demo-engine:test"},
        "targets": targets or {"engine": {"package": "demo_engine"}},
        "patches": full,
    }
    if base:
        doc["base"] = base
    (folder / "patchset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder


def diff_patch(path: str, before: str, after: str) -> str:
    """A unified diff of one file (difflib, with ``a/`` and ``b/`` prefixes)."""
    import difflib

    from patchbay.diff.parse import split_lines

    lines = difflib.unified_diff(
        split_lines(before),
        split_lines(after),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(lines)


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` (but patchbay's state) with its bytes and mtime in ns."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".patchbay" not in path.parts and "patchbay" not in path.parts:
            out[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return out


def count_inspections(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count, by patch id, the diff kind's real inspections from now on (the plan's work)."""
    from patchbay.kinds import KINDS

    calls: Counter[str] = Counter()
    kind = KINDS["diff"]
    real = kind.inspect

    def counting(patch, loaded, tree):  # type: ignore[no-untyped-def]
        calls[patch.id] += 1
        return real(patch, loaded, tree)

    monkeypatch.setattr(kind, "inspect", counting)
    return calls


def run_in_pty(args: list[str], env: dict[str, str], timeout: float = 120.0) -> tuple[int, str]:
    """Run ``args`` with stdin, stdout and stderr on a new pseudo-terminal; what it drew."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec the real console script
        os.execve(args[0], args, env)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


def patchset_with_notes(tmp_path: Path) -> tuple[Path, Path]:
    """A tree and a patchset whose apply prints two notes: a hunk one line off its declared
    line, and a file with CRLF line endings."""
    root = tmp_path / "tree"
    (root / "demo_engine").mkdir(parents=True)
    (root / "demo_engine" / "worker.py").write_text(
        "A = 1\nB = 2\nC = 3\ndef work():\n    return 1\n"
    )
    (root / "demo_engine" / "crlf.py").write_bytes(b"x = 1\r\ny = 2\r\n")
    offset = (
        "--- a/demo_engine/worker.py\n+++ b/demo_engine/worker.py\n@@ -2,3 +2,3 @@\n"
        " C = 3\n-def work():\n+def work():  # patched\n     return 1\n"
    )
    crlf = diff_patch("demo_engine/crlf.py", "x = 1\ny = 2\n", "x = 1\ny = 3\n")
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "worker", "kind": "diff", "file": "worker.patch"},
         {"id": "crlf", "kind": "diff", "file": "crlf.patch"}],
        files={"worker.patch": offset, "crlf.patch": crlf},
    )  # fmt: skip
    return root, ps
