"""``patchbay init`` (issue 24, part 10): a new patchset read from an engine environment, with
the components' versions, repositories and commits as the environment records them."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import Engine, run_cli


def _git(*args: str | Path, cwd: Path) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *map(str, args)],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def _kernels_repo(dest: Path) -> tuple[Path, str]:
    """A git repository of a small distribution ``kernels``; returns it and its HEAD."""
    (dest / "kernels").mkdir(parents=True)
    (dest / "kernels" / "__init__.py").write_text("ROWS = 1\n")
    (dest / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "kernels"\nversion = "2.1"\n'
        '[project.urls]\nSource = "https://github.com/example-org/kernels"\n'
        '[tool.setuptools]\npackages = ["kernels"]\n'
    )
    _git("init", "-q", cwd=dest)
    _git("add", ".", cwd=dest)
    _git("commit", "-qm", "first", cwd=dest)
    return dest, _git("rev-parse", "HEAD", cwd=dest)


def test_init_reads_components_from_a_real_environment(tmp_path: Path, engine: Engine) -> None:
    """pip's direct_url.json of a git install gives the full commit; the demo engine's version
    (0.4.1+g1a2b3c4) names an abbreviated one, which is said, not pinned; the result loads,
    and status runs on it."""
    repo, head = _kernels_repo(tmp_path / "kernels-src")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--prefix", str(engine.prefix), f"git+file://{repo}@{head}"],
        check=True, capture_output=True,
    )  # fmt: skip
    folder = tmp_path / "bring-up"
    res = run_cli(
        "init", folder, "--package", "demo_engine", "--package", "kernels",
        "--python", engine.python, "--image", "registry.example/engine:1",
    )  # fmt: skip
    assert res.code == 0, res.err
    doc = yaml.safe_load((folder / "patchset.yaml").read_text())
    components = {c["distribution"]: c for c in doc["components"]}
    assert components["kernels"]["commit"] == head
    assert components["kernels"]["repository"] == "example-org/kernels"
    assert "commit" not in components["demo-engine"]
    assert "names 1a2b3c4, abbreviated" in res.out
    assert doc["base"]["distributions"] == {"demo-engine": "==0.4.1+g1a2b3c4", "kernels": "==2.1"}
    assert doc["targets"] == {
        "demo-engine": {"package": "demo_engine"},
        "kernels": {"package": "kernels"},
    }
    assert doc["image"]["reference"] == "registry.example/engine:1" and doc["name"] == "bring-up"
    status = run_cli("status", folder, "--python", engine.python)
    assert status.code == 0, status.out + status.err
    blanks = run_cli("validate", folder)
    assert "description" in blanks.out + blanks.err  # the blank validate lists


def test_init_expands_an_abbreviated_commit_from_a_clone(tmp_path: Path) -> None:
    """A --root tree whose version names g<7 hex> of a commit: --from-git expands it, and
    the repository comes from METADATA's Project-URL."""
    repo, head = _kernels_repo(tmp_path / "src")
    tree = tmp_path / "tree"
    (tree / "kernels").mkdir(parents=True)
    (tree / "kernels" / "__init__.py").write_text("ROWS = 1\n")
    info = tree / f"kernels-2.1+g{head[:7]}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: kernels\nVersion: 2.1+g{head[:7]}.rocm642\n"
        "Project-URL: Source, https://github.com/example-org/kernels\n"
    )
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"ROWS = 1\n").digest()).rstrip(b"=")
    record = f"kernels/__init__.py,sha256={digest.decode()},9\n{info.name}/RECORD,,\n"
    (info / "RECORD").write_text(record)
    res = run_cli("init", tmp_path / "a", "--package", "kernels", "--root", tree)
    assert res.code == 0, res.err
    assert (
        "commit"
        not in yaml.safe_load((tmp_path / "a" / "patchset.yaml").read_text())["components"][0]
    )
    res = run_cli(
        "init", tmp_path / "b", "--package", "kernels", "--root", tree, "--from-git", repo
    )
    assert res.code == 0, res.err
    (component,) = yaml.safe_load((tmp_path / "b" / "patchset.yaml").read_text())["components"]
    assert component == {
        "distribution": "kernels",
        "repository": "example-org/kernels",
        "commit": head,
    }


def test_init_refuses_what_it_cannot_do_and_writes_nothing(tmp_path: Path, engine: Engine) -> None:
    folder = tmp_path / "ps"
    missing = run_cli("init", folder, "--package", "no_such_pkg", "--python", engine.python)
    assert missing.code != 0 and "no_such_pkg" in missing.err and "Traceback" not in missing.err
    assert not (folder / "patchset.yaml").exists()
    bad = run_cli("init", folder, "--package", "not-a-name", "--python", engine.python)
    assert bad.code == 2 and "not an import name" in bad.err
    folder.mkdir()
    (folder / "patchset.yaml").write_text("schema: 1\n")
    again = run_cli("init", folder, "--package", "demo_engine", "--python", engine.python)
    assert again.code == 2 and "a patchset is here already" in again.err
    assert (folder / "patchset.yaml").read_text() == "schema: 1\n"
