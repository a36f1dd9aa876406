"""The real Kimi-K3 container script, imported by observation (issue 22's measure).

The scratch engine is built the way a real one looks: a virtual environment with real files of
vLLM 0.27.0 and aiter 044f906a8d (``../shared/mission/engine-files``, the files the script's
diffs change) packed into wheels and installed by pip, and a local wheel folder standing in for
the package indexes the script's ``pip install`` lines name (``PIP_NO_INDEX`` and
``PIP_FIND_LINKS``: pip's own settings; nothing reaches the network). The downloads of aiter
#4521 find no network and fail, as they would offline; the script goes on (it has no ``set
-e``). What the run changed is the measure: the imported patchset, applied to a fresh copy of
the engine, must give the same tree byte for byte, re-run as a no-op, and revert to pristine.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import build_wheel, run_cli
from real_labels import SHARED

MISSION = SHARED / "mission"
SCRIPT = MISSION / "apply_k3_container_patches.sh"
FILES = MISSION / "engine-files"
PINS = {"triton": "3.7.0", "tabulate": "0.9.0", "lm_eval": "0.4.12"}
# what pip itself writes differently on each install: not the engine's code
PIP_OWN = {"RECORD", "INSTALLER", "direct_url.json", "REQUESTED"}

pytestmark = pytest.mark.skipif(
    not SCRIPT.is_file() or not FILES.is_dir(), reason=f"{MISSION} is absent (CI has it)"
)


def _project(root: Path, name: str, version: str, source: Path | None) -> Path:
    project = root / f"{name}-project"
    (project / name).mkdir(parents=True)
    if source is not None:
        shutil.copytree(source, project / name, dirs_exist_ok=True)
        for folder, _dirs, _files in os.walk(project / name):
            Path(folder, "__init__.py").touch()  # every folder a package, as in the wheel
    else:
        (project / name / "__init__.py").write_text(f"__version__ = {version!r}\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\n'
        f'[tool.setuptools.packages.find]\ninclude = ["{name}*"]\n'
        '[tool.setuptools.package-data]\n"*" = ["*"]\n'
    )
    return project


@pytest.fixture(scope="module")
def k3(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The engine template (a venv with pip, vllm and aiter), and the local wheel folder."""
    root = tmp_path_factory.mktemp("k3")
    wheels, index = root / "wheels", root / "index"
    build_wheel(_project(root, "vllm", "0.27.0", FILES / "vllm-0.27.0" / "vllm"), wheels)
    build_wheel(_project(root, "aiter", "0.1.5", FILES / "aiter-044f906a8d" / "aiter"), wheels)
    for name, version in PINS.items():
        build_wheel(_project(root, name, version, None), index)
    template = root / "engine"
    subprocess.run([sys.executable, "-m", "venv", str(template)], check=True)
    subprocess.run(
        [template / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-index",
         "--no-deps", *map(str, sorted(wheels.glob("*.whl")))],
        check=True,
    )  # fmt: skip
    return {"template": template, "index": index}


def _copy(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest, symlinks=True)
    return dest / "bin" / "python"


def _tree(prefix: Path) -> dict[str, str]:
    site = next((prefix / "lib").glob("python3*/site-packages"))
    out = {}
    for folder, dirs, files in os.walk(site):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name in PIP_OWN or name.endswith(".pyc"):
                continue
            path = Path(folder, name)
            out[path.relative_to(site).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_the_observed_k3_patchset_reproduces_the_scripts_tree(
    k3: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(k3["index"]))
    monkeypatch.setenv("WS", str(tmp_path / "ws"))
    scratch = _copy(k3["template"], tmp_path / "scratch")
    pristine = _tree(tmp_path / "scratch")
    script = tmp_path / SCRIPT.name
    shutil.copy(SCRIPT, script)  # read from ../shared, run in a folder of the test
    out = tmp_path / "k3"
    res = run_cli("import", script, "--out", out, "--observe", "--python", scratch)
    assert res.code in (0, 1), res.out + res.err
    after_script = _tree(tmp_path / "scratch")
    doc = yaml.safe_load((out / "patchset.yaml").read_text())
    ids = [p["id"] for p in doc["patches"]]
    # one patch per embedded diff that applied, named after its here-document
    for name in ("mla-gluon", "gemm-a16w16", "rocm-aiter-mla", "vllm-envs", "model-runner"):
        assert f"diff-{name}" in ids, ids
    pins = {p["requirement"] for p in doc["patches"] if p["kind"] == "pip"}
    assert pins == {f"{n}=={v}" for n, v in PINS.items()}
    (triton,) = [p for p in doc["patches"] if p.get("requirement") == "triton==3.7.0"]
    # the script's extra index becomes the pin's only one (no dependency confusion with PyPI)
    assert triton["index_url"] == "https://pypi.amd.com/triton/release/rocm-7.2.0/simple/"
    assert "extra_index_urls" not in triton
    # per diff, the references of its own part of the header, never one list for all
    refs = {p["id"]: p.get("upstream", []) for p in doc["patches"]}
    assert refs["diff-gemm-a16w16"] != refs["diff-rocm-aiter-mla"]

    fresh_prefix = tmp_path / "fresh"
    fresh = _copy(k3["template"], fresh_prefix)
    applied = run_cli("apply", out, "--python", fresh)
    assert applied.code == 0, applied.out + applied.err
    assert _tree(fresh_prefix) == after_script
    again = run_cli("apply", out, "--python", fresh)
    assert again.code == 0 and "nothing to do" in again.out, again.out + again.err
    back = run_cli("revert", out, "--python", fresh)
    assert back.code == 0, back.out + back.err
    assert _tree(fresh_prefix) == pristine
