"""Pinned source builds (``kind: pip`` with ``source``), the ordering key and home-folder targets.

A real git repository stands in for LMCache: a package whose in-tree build backend fails unless
``BUILD_WITH_HIP=1`` is set and imports a helper that only its ``requirements/build.txt``
installs (so the build works only without isolation, after the build requirements). ``vendor``
resolves its tag and branch through the GitHub stand-in on 127.0.0.1; pip clones it over
``git+file://``. Engines are real virtual environments with their own pip; wheels come from a
find-links folder, never from an index.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import Engine, write_patchset
from github_standin import GitHubStandIn, git
from inprocess import run_main
from servers import make_wheel

BACKEND = """
import base64, hashlib, os, zipfile

NAME = "hippkg"


def _version():
    with open("VERSION") as fh:
        return fh.read().strip()


def _metadata():
    requires = ""
    if os.path.exists("REQUIRES"):
        with open("REQUIRES") as fh:
            requires = "".join(f"Requires-Dist: {r}\\n" for r in fh.read().split())
    return f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {_version()}\\n{requires}"


def _hip_build():
    # what a HIP extension build needs: the variable, and a build requirement of the
    # environment itself (without build isolation)
    if os.environ.get("BUILD_WITH_HIP") != "1":
        raise RuntimeError("hipcc build refused: set BUILD_WITH_HIP=1")
    import hipbuild_helper  # noqa: F401


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(directory, config_settings=None):
    _hip_build()
    info = f"{NAME}-{_version()}.dist-info"
    os.makedirs(os.path.join(directory, info))
    with open(os.path.join(directory, info, "METADATA"), "w") as fh:
        fh.write(_metadata())
    return info


def build_wheel(directory, config_settings=None, metadata_directory=None):
    _hip_build()
    info = f"{NAME}-{_version()}.dist-info"
    files = {
        "hippkg/__init__.py": f"VERSION = {_version()!r}\\n".encode(),
        info + "/METADATA": _metadata().encode(),
        info + "/WHEEL": (
            b"Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
        ),
    }
    record = ""
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{path},sha256={digest},{len(data)}\\n"
    files[info + "/RECORD"] = (record + info + "/RECORD,,\\n").encode()
    name = f"{NAME}-{_version()}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return name
"""


@pytest.fixture(scope="module")
def lmsrc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A bare repository: tag ``v0.1``; branch ``dev`` one commit later (0.2); branch
    ``torchy`` whose build requirements need a protected ``torchx==2.0``; branch ``deps`` whose
    package depends on ``torchx==2.0``; ``main`` at ``v0.1``."""
    root = tmp_path_factory.mktemp("lmsrc")
    work = root / "work"
    (work / "requirements").mkdir(parents=True)
    (work / "hippkg").mkdir()
    (work / "hippkg" / "__init__.py").write_text("")
    (work / "backend.py").write_text(BACKEND)
    (work / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )
    (work / "VERSION").write_text("0.1\n")
    (work / "requirements" / "build.txt").write_text("hipbuild-helper==1.0\n")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "v0.1")
    git(work, "tag", "v0.1")
    shas = {"v0.1": git(work, "rev-parse", "HEAD").strip()}
    for branch, change in (
        ("dev", {"VERSION": "0.2\n"}),
        ("torchy", {"requirements/build.txt": "hipbuild-helper==1.0\ntorchx==2.0\n"}),
        ("deps", {"REQUIRES": "torchx==2.0\n"}),
    ):
        git(work, "checkout", "-q", "-b", branch, "v0.1")
        for rel, text in change.items():
            (work / rel).write_text(text)
        git(work, "add", "-A")
        git(work, "commit", "-qm", branch)
        shas[branch] = git(work, "rev-parse", "HEAD").strip()
    git(work, "checkout", "-q", "main")
    bare = root / "LMCache.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return {"bare": bare, "work": work, "shas": shas, "url": f"file://{bare}"}


@pytest.fixture(scope="module")
def links(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("links")
    make_wheel(out, "hipbuild-helper", "1.0")
    make_wheel(out, "torchx", "1.0")
    make_wheel(out, "torchx", "2.0")
    return out


@pytest.fixture(autouse=True)
def _isolated_pip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # wheels come from the find-links folder only
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def _versions(engine: Engine) -> dict[str, str]:
    script = "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"  # noqa: E501
    proc = subprocess.run(
        [str(engine.python), "-c", script], capture_output=True, text=True, check=True
    )
    wanted = ("hippkg", "hipbuild-helper", "torchx")
    return {k: v for k, v in json.loads(proc.stdout).items() if k in wanted}


def _build_patchset(
    tmp_path: Path, src: dict[str, object], links: Path, ref: str | None, **extra: object
) -> Path:
    source: dict[str, object] = {"repo": "LMCache/LMCache", "url": src["url"]}
    if ref is not None:
        source["ref"] = ref
    patch = {
        "id": "lmcache",
        "kind": "pip",
        "requirement": "hippkg",
        "source": source,
        "build_requirements": "requirements/build.txt",
        "no_build_isolation": True,
        "build_env": {"CXX": "hipcc", "BUILD_WITH_HIP": "1"},
        "find_links": [str(links)],
        "no_index": True,  # the links only: no second source for pip to pick from
        **extra,
    }
    ps = write_patchset(tmp_path / "ps", [patch])
    with (ps / "patchset.yaml").open("a") as fh:
        fh.write("protect: [torchx, demo-engine]\n")
    return ps


def _commit_of(engine: Engine, dist: str) -> str:
    info = next(engine.site.glob(f"{dist}-*.dist-info"))
    return json.loads((info / "direct_url.json").read_text())["vcs_info"]["commit_id"]


def _install(engine: Engine, links: Path, req: str) -> None:
    subprocess.run(
        [str(engine.python), "-m", "pip", "install", "-q", "--no-index", "-f", str(links), req],
        check=True,
    )


# -- the whole life of a source build ----------------------------------------------------------


def test_source_build_refused_until_vendored_then_a_failed_build_a_retry_a_rerun_a_revert(
    tmp_path: Path, pengine: Engine, lmsrc: dict[str, object], links: Path
) -> None:
    shas: dict[str, str] = lmsrc["shas"]  # type: ignore[assignment]
    _install(pengine, links, "torchx==1.0")
    # the build environment lacks BUILD_WITH_HIP at first
    ps = _build_patchset(tmp_path, lmsrc, links, "v0.1", build_env={"CXX": "hipcc"})
    res = run_main("validate", ps)
    assert res.code == 0, res.err
    assert "NOT LOCKED: lmcache: source build LMCache/LMCache@v0.1" in res.out
    res = run_main("apply", ps, "--python", pengine.python)
    assert res.code == 1
    assert "unlocked" in res.err and "patchbay vendor" in res.err
    res = run_main("status", ps, "--python", pengine.python, "--json")
    assert json.loads(res.out)["patches"][0]["status"] == "unlocked"

    with GitHubStandIn() as gh:
        gh.add_repo("LMCache/LMCache", str(lmsrc["bare"]))
        res = run_main("vendor", ps, "--api-url", gh.url)
        assert res.code == 0, res.err
        assert gh.count("GET", "/repos/LMCache/LMCache/commits/v0.1") == 1
    lock = json.loads((ps / "patchbay.lock").read_text())["revisions"]["lmcache"]
    assert (lock["ref"], lock["commit"]) == ("v0.1", shas["v0.1"])
    assert f"locked lmcache: LMCache/LMCache@v0.1 -> {shas['v0.1']}" in res.out

    res = run_main("apply", ps, "--python", pengine.python)
    assert res.code == 1
    assert "hipcc build refused: set BUILD_WITH_HIP=1" in res.err
    assert _versions(pengine) == {"torchx": "1.0"}  # the build requirements are gone again

    # the retried run (the variable set) builds: pip clones into a fresh folder every time
    patchset = yaml.safe_load((ps / "patchset.yaml").read_text())
    patchset["patches"][0]["build_env"]["BUILD_WITH_HIP"] = "1"
    (ps / "patchset.yaml").write_text(yaml.safe_dump(patchset, sort_keys=False))
    res = run_main("apply", ps, "--python", pengine.python)
    assert res.code == 0, res.err
    assert _versions(pengine) == {"hippkg": "0.1", "hipbuild-helper": "1.0", "torchx": "1.0"}
    assert _commit_of(pengine, "hippkg") == shas["v0.1"]
    entry = json.loads((pengine.state_dir / "ledger.json").read_text())["patchsets"]["test"]
    extra = entry["entries"][0]["extra"]
    assert extra["source"]["commit"] == shas["v0.1"]
    assert sorted(c["name"] for c in extra["changes"]) == ["hipbuild-helper", "hippkg"]

    res = run_main("apply", ps, "--python", pengine.python)
    assert res.code == 0, res.err
    assert "nothing to do" in res.out

    res = run_main("revert", ps, "--python", pengine.python)
    assert res.code == 0, res.err
    assert _versions(pengine) == {"torchx": "1.0"}


def test_build_requirements_that_move_a_protected_distribution_are_refused(
    tmp_path: Path, pengine: Engine, lmsrc: dict[str, object], links: Path
) -> None:
    shas: dict[str, str] = lmsrc["shas"]  # type: ignore[assignment]
    _install(pengine, links, "torchx==1.0")
    ps = _build_patchset(tmp_path, lmsrc, links, shas["torchy"])
    res = run_main("apply", ps, "--python", pengine.python)
    assert res.code == 1
    assert "the build requirements requirements/build.txt of LMCache/LMCache@" in res.err
    assert "would change protected distribution(s): torchx upgraded 1.0 -> 2.0" in res.err
    assert _versions(pengine) == {"torchx": "1.0"}


def test_a_package_that_would_move_a_protected_distribution_undoes_its_build_requirements(
    tmp_path: Path, pengine: Engine, lmsrc: dict[str, object], links: Path
) -> None:
    shas: dict[str, str] = lmsrc["shas"]  # type: ignore[assignment]
    _install(pengine, links, "torchx==1.0")
    ps = _build_patchset(tmp_path, lmsrc, links, shas["deps"])
    res = run_main("apply", ps, "--python", pengine.python)
    assert res.code == 1
    assert "would change protected distribution(s): torchx upgraded 1.0 -> 2.0" in res.err
    # the dry run could only run once the build requirements were in: they are undone
    assert _versions(pengine) == {"torchx": "1.0"}


def test_vendor_locks_a_branch_and_the_default_branch_and_never_moves_them_silently(
    tmp_path: Path, lmsrc: dict[str, object], links: Path
) -> None:
    shas: dict[str, str] = lmsrc["shas"]  # type: ignore[assignment]
    ps = _build_patchset(tmp_path / "branch", lmsrc, links, "dev")
    default = _build_patchset(tmp_path / "default", lmsrc, links, None)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(lmsrc["bare"]), str(clone)], check=True)
    with GitHubStandIn() as gh:
        gh.add_repo("LMCache/LMCache", str(lmsrc["bare"]))
        assert run_main("vendor", ps, "--api-url", gh.url).code == 0
        res = run_main("vendor", default, "--api-url", gh.url)
        assert res.code == 0, res.err
        lock = json.loads((default / "patchbay.lock").read_text())["revisions"]["lmcache"]
        assert (lock["ref"], lock["branch"], lock["commit"]) == (None, "main", shas["v0.1"])
        # the branch moves upstream
        git(clone, "checkout", "-q", "dev")
        (clone / "VERSION").write_text("0.3\n")
        git(clone, "commit", "-qam", "0.3")
        git(clone, "push", "-q", "origin", "dev")
        moved = git(clone, "rev-parse", "HEAD").strip()
        before = (ps / "patchbay.lock").read_bytes()
        res = run_main("vendor", ps, "--api-url", gh.url)
        assert res.code == 1
        assert f"now points at {moved}, not the locked {shas['dev']}" in res.err
        assert (ps / "patchbay.lock").read_bytes() == before
        res = run_main("vendor", ps, "--api-url", gh.url, "--update")
        assert res.code == 0, res.err
        unknown = _build_patchset(tmp_path / "unknown", lmsrc, links, "no-such-tag")
        res = run_main("vendor", unknown, "--api-url", gh.url)
        assert res.code == 1
        assert "/repos/LMCache/LMCache/commits/no-such-tag" in res.err
        assert not (unknown / "patchbay.lock").exists()
    assert json.loads((ps / "patchbay.lock").read_text())["revisions"]["lmcache"]["commit"] == (
        moved
    )


def test_source_build_declarations_are_checked(tmp_path: Path) -> None:
    def validate(**fields: object) -> str:
        patch = {"id": "p", "kind": "pip", "requirement": "lmcache", **fields}
        res = run_main("validate", write_patchset(tmp_path / "bad", [patch]))
        assert res.code == 2, res.out
        return res.err

    src = {"repo": "LMCache/LMCache", "ref": "v0.3.x"}
    assert "name the distribution only" in validate(requirement="lmcache==0.3.9", source=src)
    assert "is not a git tag, branch or commit name" in validate(
        source={"repo": "LMCache/LMCache", "ref": "dev..main"}
    )
    assert "give `source`" in validate(
        requirement="lmcache==1.0", build_requirements="requirements/build.txt"
    )
    assert "escapes its folder ('..')" in validate(source=src, build_requirements="../build.txt")
    # a moving ref in a plain requirement points at the locked alternative
    assert "let `patchbay vendor` lock the ref" in validate(
        requirement="lmcache @ git+https://github.com/LMCache/LMCache@dev"
    )


def test_a_source_build_is_not_bundled(
    tmp_path: Path, engine: Engine, lmsrc: dict[str, object], links: Path
) -> None:
    shas: dict[str, str] = lmsrc["shas"]  # type: ignore[assignment]
    ps = _build_patchset(tmp_path, lmsrc, links, shas["v0.1"])
    out = tmp_path / "bundle"
    res = run_main("bundle", ps, out, "--python", engine.python, "--without-patchbay")
    assert res.code == 1
    assert "source builds are not bundled" in res.err


def test_a_lock_whose_revision_is_not_a_commit_is_refused(
    tmp_path: Path, lmsrc: dict[str, object], links: Path
) -> None:
    ps = _build_patchset(tmp_path, lmsrc, links, "v0.1")
    revision = {"repo": "LMCache/LMCache", "ref": "v0.1", "commit": "v0.1", "url": "x"}
    lock = {"format": 1, "sources": {}, "artifacts": {}, "revisions": {"lmcache": revision}}
    (ps / "patchbay.lock").write_text(json.dumps(lock))
    res = run_main("validate", ps)
    assert res.code == 2
    assert "patchbay.lock" in res.err and "is not a 40-hex commit id" in res.err
