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
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from observe_corpus import FILES, PINS, SCRIPT, build_k3_engine

# what pip itself writes differently on each install: not the engine's code
PIP_OWN = {"RECORD", "INSTALLER", "direct_url.json", "REQUESTED"}

pytestmark = pytest.mark.skipif(
    not SCRIPT.is_file() or not FILES.is_dir(), reason=f"{SCRIPT.parent} is absent (CI has it)"
)


@pytest.fixture(scope="module")
def k3(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The engine template (a venv with pip, vllm and aiter), and the local wheel folder."""
    return build_k3_engine(tmp_path_factory.mktemp("k3"))


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
