"""Getting patchbay where it runs: an isolated install from a wheel, and an air-gapped container
through a bundle that carries patchbay itself.

The package index is a real HTTP server on 127.0.0.1 serving wheels packed from this test
session's own environment (patchbay and every dependency it declares), so nothing reaches the
internet and the machine's pip configuration is switched off.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from conftest import REPO, Engine, make_engine
from patchbay import selfcarry
from patchbay.bundle import MANIFEST
from servers import Server

DEMO = REPO / "patchsets" / "demo"


def _runtime_closure(name: str) -> list[str]:
    """``name`` and every distribution it requires at run time (markers evaluated here)."""
    seen: dict[str, str] = {}
    todo = [name]
    while todo:
        dist = metadata.distribution(todo.pop())
        key = canonicalize_name(dist.metadata["Name"])
        if key in seen:
            continue
        seen[key] = dist.metadata["Name"]
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return sorted(seen.values())


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """patchbay's wheel and the wheels of its whole run-time closure, packed from this
    environment (the index a user's pip would reach)."""
    out = tmp_path_factory.mktemp("wheelhouse")
    wheels = [selfcarry.own_wheel(out)]
    for name in _runtime_closure(selfcarry.DIST):
        if canonicalize_name(name) != canonicalize_name(selfcarry.DIST):
            wheels.append(selfcarry.wheel_from_installed(name, out))
    return wheels


@pytest.fixture
def pip_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """pip sees no machine-wide configuration (index, find-links, constraints) and no cache."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")


def _run(*args: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        check=False,
        **kwargs,  # type: ignore[arg-type]
    )


def _finds(python: Path, module: str) -> bool:
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return _run(python, "-c", probe).returncode == 0


def test_the_wheel_of_the_running_patchbay_installs_into_a_fresh_environment(
    tmp_path: Path, wheelhouse: list[Path], pip_env: None
) -> None:
    own = wheelhouse[0]
    assert re.fullmatch(r"engine_patchbay-[^-]+-py3-none-any\.whl", own.name), own.name
    assert selfcarry.own_wheel(tmp_path).read_bytes() == own.read_bytes()  # reproducible
    env = tmp_path / "tool-env"
    subprocess.run([sys.executable, "-m", "venv", env], check=True)
    with Server() as server:
        index = server.serve_index(wheelhouse)
        res = _run(env / "bin" / "python", "-m", "pip", "install", "-q", "-i", index, own)
    assert res.returncode == 0, res.stderr
    res = _run(env / "bin" / "patchbay", "validate", DEMO)
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_bundle_carries_patchbay_into_a_container_with_no_network(
    tmp_path: Path, demo_wheel: Path, wheelhouse: list[Path], pip_env: None
) -> None:
    engine: Engine = make_engine(tmp_path / "engine", demo_wheel, with_pip=True)
    out = tmp_path / "bundle"
    with Server() as server:
        env = {**os.environ, "PIP_INDEX_URL": server.serve_index(wheelhouse)}
        res = _run(sys.executable, "-m", "patchbay", "bundle", DEMO, out, "--python",
                   engine.python, env=env)  # fmt: skip
        assert res.returncode == 0, res.stdout + res.stderr
    assert "install-patchbay.sh" in res.stdout
    carried = {w.name.split("-")[0] for w in (out / "patchbay" / "wheels").glob("*.whl")}
    assert {"engine_patchbay", "typer", "pydantic_core"} <= carried
    assert f"patchbay/wheels/{wheelhouse[0].name}" in (out / MANIFEST).read_text()

    # inside the container: the servers are gone, the installer makes a private environment
    res = _run("sh", out / "install-patchbay.sh")
    assert res.returncode == 0, res.stdout + res.stderr
    patchbay = Path(res.stdout.strip().splitlines()[-1])
    assert patchbay == out / "patchbay-env" / "bin" / "patchbay"
    res = _run(patchbay, "apply", out / "patchset", "--python", engine.python, "--bundle", out,
               "--offline")  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    res = _run(patchbay, "status", out / "patchset", "--python", engine.python)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "pending" not in res.stdout
    # patchbay and its dependencies stayed out of the engine's environment
    assert not _finds(engine.python, "patchbay")
    assert not _finds(engine.python, "typer")
    # and the engine stays out of patchbay's
    assert not _finds(out / "patchbay-env" / "bin" / "python", "demo_engine")
    # the carried wheels are under the bundle's manifest like everything else
    carried = out / "patchbay" / "wheels" / wheelhouse[0].name
    carried.write_bytes(carried.read_bytes() + b"\0")
    res = _run(patchbay, "apply", out / "patchset", "--python", engine.python, "--bundle", out,
               "--offline")  # fmt: skip
    assert res.returncode == 2
    assert f"bundle file patchbay/wheels/{carried.name} does not match the manifest" in res.stderr


def test_a_bundle_whose_dependencies_cannot_be_downloaded_quotes_pip(
    tmp_path: Path, demo_wheel: Path, pip_env: None
) -> None:
    engine = make_engine(tmp_path / "engine", demo_wheel, with_pip=True)
    with Server() as server:  # an index that has none of patchbay's dependencies
        env = {**os.environ, "PIP_INDEX_URL": server.serve_index([])}
        res = _run(sys.executable, "-m", "patchbay", "bundle", DEMO, tmp_path / "b", "--python",
                   engine.python, env=env)  # fmt: skip
    assert res.returncode == 1
    assert "patchbay's own dependencies" in res.stderr
    assert "No matching distribution" in res.stderr
    assert not (tmp_path / "b").exists()
