"""Getting patchbay where it runs: an isolated install from a wheel, and an air-gapped container
through a bundle that carries patchbay itself.

The package index is a real HTTP server on 127.0.0.1 serving wheels packed from this test
session's own environment (patchbay and every dependency it declares), so nothing reaches the
internet and the machine's pip configuration is switched off.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from conftest import REPO, Engine, copy_engine, snapshot, write_patchset
from inprocess import run_main
from patchbay.carry import selfcarry
from patchbay.carry.bundle import MANIFEST
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


@dataclass
class Carried:
    """A bundle of the demo patchset for an engine with pip, carrying patchbay."""

    engine: Engine
    bundle: Path
    stdout: str


@pytest.fixture(scope="module")
def carried(
    tmp_path_factory: pytest.TempPathFactory, pip_template: Path, wheelhouse: list[Path]
) -> Carried:
    """``patchbay bundle`` run once for the module, against the index of :func:`wheelhouse`
    (tests that change the bundle change a copy: :func:`_copy`)."""
    tmp = tmp_path_factory.mktemp("carried")
    engine = copy_engine(pip_template, tmp / "engine")
    out = tmp / "bundle"
    with Server() as server:
        env = {
            **os.environ,
            "PIP_CONFIG_FILE": os.devnull,
            "PIP_NO_CACHE_DIR": "1",
            "PIP_INDEX_URL": server.serve_index(wheelhouse),
        }
        res = _run(sys.executable, "-m", "patchbay", "bundle", DEMO, out, "--python",
                   engine.python, env=env)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    return Carried(engine, out, res.stdout)


def _copy(bundle: Path, dest: Path) -> Path:
    shutil.copytree(bundle, dest, symlinks=True)
    return dest


def _offline(home: Path, **extra: str) -> dict[str, str]:
    """The container's environment: no network (the index is a closed port), no pip mirror."""
    home.mkdir(parents=True, exist_ok=True)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home)}
    return {**env, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", **extra}


def _remanifest(bundle: Path) -> None:
    """Write the bundle's manifest again for its files as they are now (a bundle made so)."""
    files = {
        str(p.relative_to(bundle)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(bundle.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    (bundle / MANIFEST).write_text(json.dumps({"format": 1, "files": files}))


def test_a_bundle_carries_patchbay_into_a_container_with_no_network(
    tmp_path: Path, carried: Carried, wheelhouse: list[Path]
) -> None:
    engine, out = carried.engine, _copy(carried.bundle, tmp_path / "bundle")
    assert "install-patchbay.sh" in carried.stdout
    wheels = out / "patchbay" / "wheels"
    carried_names = {w.name.split("-")[0] for w in wheels.glob("*.whl")}
    assert {"engine_patchbay", "argcomplete", "msgspec"} <= carried_names  # msgspec: compiled
    assert f"patchbay/wheels/{wheelhouse[0].name}" in (out / MANIFEST).read_text()

    # inside the container: the servers are gone, the installer makes a private environment;
    # pip variables and PYTHONPATH that point at other packages (or environments) are not
    # followed
    evil = tmp_path / "evil"
    evil.mkdir()
    pwned = tmp_path / "pwned"
    info = "packaging-99.0.dist-info"
    selfcarry.write_wheel(
        evil / "packaging-99.0-py3-none-any.whl",
        {
            "packaging/__init__.py": f"open({str(pwned)!r}, 'w').close()\n".encode(),
            f"{info}/METADATA": b"Metadata-Version: 2.1\nName: packaging\nVersion: 99.0\n",
            f"{info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        },
        info,
    )
    (evil / "sitecustomize.py").write_text(f"open({str(pwned)!r}, 'w').close()\n")
    (evil / "more.txt").write_text(f"{evil / 'packaging-99.0-py3-none-any.whl'}\n")
    env = _offline(
        tmp_path / "home",
        PIP_FIND_LINKS=str(evil),
        PIP_PRE="1",
        PIP_REQUIREMENT=str(evil / "more.txt"),
        PYTHONPATH=str(evil),
        PIP_PYTHON=str(engine.python),
    )  # fmt: skip (not into the engine)
    res = _run("sh", out / "install-patchbay.sh", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    patchbay = Path(res.stdout.strip().splitlines()[-1])
    assert patchbay == out / "patchbay-env" / "bin" / "patchbay"
    tool_python = out / "patchbay-env" / "bin" / "python"
    res = _run(
        tool_python, "-c", "from importlib.metadata import version; print(version('packaging'))"
    )
    assert res.stdout.strip() == next(wheels.glob("packaging-*.whl")).name.split("-")[1]
    assert not pwned.exists()
    res = _run(patchbay, "apply", out / "patchset", "--python", engine.python, "--bundle", out,
               "--offline")  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    res = _run(patchbay, "status", out / "patchset", "--python", engine.python)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "pending" not in res.stdout
    # patchbay and its dependencies stayed out of the engine's environment
    assert not _finds(engine.python, "patchbay")
    assert not _finds(engine.python, "argcomplete")
    # and the engine stays out of patchbay's
    assert not _finds(tool_python, "demo_engine")
    # the carried wheels are under the bundle's manifest like everything else
    own = wheels / wheelhouse[0].name
    own.write_bytes(own.read_bytes() + b"\0")
    res = _run(patchbay, "apply", out / "patchset", "--python", engine.python, "--bundle", out,
               "--offline")  # fmt: skip
    assert res.returncode == 2
    assert f"bundle file patchbay/wheels/{own.name} does not match the manifest" in res.stderr


def test_the_installer_refuses_a_wheel_that_does_not_match_the_manifest(
    tmp_path: Path, carried: Carried
) -> None:
    out = _copy(carried.bundle, tmp_path / "bundle")
    own = next((out / "patchbay" / "wheels").glob("engine_patchbay-*.whl"))
    with zipfile.ZipFile(own) as zf:  # rezipped with a line more in patchbay/__init__.py
        files = {item: zf.read(item) for item in zf.namelist()}
    files["patchbay/__init__.py"] += b"print('tampered')\n"
    with zipfile.ZipFile(own, "w") as zf:
        for item, data in files.items():
            zf.writestr(item, data)
    dest = tmp_path / "env"
    res = _run("sh", out / "install-patchbay.sh", "", dest, env=_offline(tmp_path / "home"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr == (
        f"install-patchbay.sh: {own} does not match the bundle's manifest.json (sha256): "
        "refusing to install anything\n"
    )
    assert not dest.exists()


def test_the_installer_refuses_a_python_the_compiled_wheels_do_not_fit(
    tmp_path: Path, carried: Carried
) -> None:
    out = _copy(carried.bundle, tmp_path / "bundle")
    (compiled,) = (out / "patchbay" / "wheels").glob("msgspec-*.whl")
    mine = f"cp{sys.version_info.major}{sys.version_info.minor}"
    other = f"cp{sys.version_info.major}{sys.version_info.minor + 1}"
    assert f"-{mine}-{mine}-" in compiled.name
    moved = compiled.with_name(compiled.name.replace(f"-{mine}-{mine}-", f"-{other}-{other}-"))
    compiled.rename(moved)
    _remanifest(out)
    res = _run("sh", out / "install-patchbay.sh", env=_offline(tmp_path / "home"))
    assert res.returncode == 2, res.stdout + res.stderr
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert res.stderr == (
        f"install-patchbay.sh: the bundle holds wheels for {other} ({moved.name}) and PYTHON "
        f"{carried.engine.python} is cpython {version}: give the interpreter of the engine the "
        "bundle was made for\n"
    )
    assert not (out / "patchbay-env").exists()


def test_the_installer_refuses_a_folder_it_did_not_make(tmp_path: Path, carried: Carried) -> None:
    dest = tmp_path / "mine"
    (dest / "notes").mkdir(parents=True)
    (dest / "notes" / "todo.txt").write_text("keep me\n")
    (dest / ".hidden").write_bytes(b"\0\1")
    (dest / "link").symlink_to("notes/todo.txt")
    before = snapshot(dest)
    res = _run("sh", carried.bundle / "install-patchbay.sh", "", dest,
               env=_offline(tmp_path / "home"))  # fmt: skip
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr == (
        f"install-patchbay.sh: DEST {dest} exists, is not empty and is not an environment this "
        "installer made: refusing to touch it (give another DEST)\n"
    )
    assert snapshot(dest) == before
    assert os.readlink(dest / "link") == "notes/todo.txt"
    # nor a link to a folder, even an empty one (a venv cannot be made there)
    (tmp_path / "empty").mkdir()
    (tmp_path / "to-empty").symlink_to("empty")
    res = _run("sh", carried.bundle / "install-patchbay.sh", "", tmp_path / "to-empty",
               env=_offline(tmp_path / "home"))  # fmt: skip
    assert res.returncode == 2, res.stdout + res.stderr
    assert "is a link: give the folder itself" in res.stderr
    assert os.listdir(tmp_path / "empty") == []


def test_the_installer_refuses_a_python_that_is_not_there(tmp_path: Path, carried: Carried) -> None:
    dest = tmp_path / "env"
    missing = tmp_path / "typo" / "python"
    res = _run("sh", carried.bundle / "install-patchbay.sh", missing, dest,
               env=_offline(tmp_path / "home"))  # fmt: skip
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr == f"install-patchbay.sh: PYTHON {missing}: no such interpreter\n"
    assert not dest.exists()


# a Python whose venv cannot install pip (Debian's python3 without ensurepip): the environment
# is made, then venv fails
NO_ENSUREPIP = """\
#!/bin/sh
case " $* " in
*" --without-pip "*) ;;
*" -m venv "*) {real} "$@" --without-pip; echo "ensurepip is not available" >&2; exit 1 ;;
esac
exec {real} "$@"
"""


def test_a_failed_install_leaves_nothing_and_a_rerun_makes_the_environment(
    tmp_path: Path, carried: Carried
) -> None:
    out = _copy(carried.bundle, tmp_path / "bundle")
    (rich,) = (out / "patchbay" / "wheels").glob("rich-*.whl")
    kept = rich.rename(tmp_path / rich.name)
    _remanifest(out)  # a bundle made without one of patchbay's dependencies
    dest = out / "patchbay-env"
    res = _run("sh", out / "install-patchbay.sh", env=_offline(tmp_path / "home"))
    assert res.returncode == 1, res.stdout + res.stderr
    assert (
        f"install-patchbay.sh: the new environment {dest} is unusable: rich is not " in res.stderr
    )
    assert not dest.exists()

    # the bundle repaired; an environment of an interrupted run is left (its python gone), and
    # the interpreter given has no ensurepip
    kept.rename(rich)
    shutil.copyfile(carried.bundle / MANIFEST, out / MANIFEST)
    (dest / "bin").mkdir(parents=True)
    (dest / "bin" / "python3").symlink_to(tmp_path / "gone" / "python3.12")
    (dest / ".made-by-install-patchbay").write_text("made by install-patchbay.sh\n")
    python = tmp_path / "python3"
    python.write_text(NO_ENSUREPIP.format(real=shlex.quote(str(carried.engine.python))))
    python.chmod(0o755)
    res = _run("sh", out / "install-patchbay.sh", python, env=_offline(tmp_path / "home"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == str(dest / "bin" / "patchbay")
    assert not (dest / "bin" / "pip").exists()  # made by the fallback: the interpreter's pip
    res = _run(dest / "bin" / "patchbay", "validate", out / "patchset")
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_bundle_whose_dependencies_cannot_be_downloaded_quotes_pip(
    tmp_path: Path, pengine: Engine, pip_env: None
) -> None:
    engine = pengine
    with Server() as server:  # an index that has none of patchbay's dependencies
        env = {**os.environ, "PIP_INDEX_URL": server.serve_index([])}
        res = _run(sys.executable, "-m", "patchbay", "bundle", DEMO, tmp_path / "b", "--python",
                   engine.python, env=env)  # fmt: skip
    assert res.returncode == 1
    assert "patchbay's own dependencies" in res.stderr
    assert "No matching distribution" in res.stderr
    assert not (tmp_path / "b").exists()


def test_a_bundle_for_an_engine_without_pip_says_how_else_to_carry_patchbay(
    tmp_path: Path, engine: Engine
) -> None:
    out = tmp_path / "b"
    res = run_main("bundle", DEMO, out, "--python", engine.python)
    assert res.crash is None, res.crash
    assert res.code == 1, res.err
    assert res.err.startswith(
        f"patchbay: error: the engine interpreter {engine.python} has no pip (No module named "
        "pip): patchbay's own wheels are downloaded with it"
    ), res.err
    assert "bundle --without-patchbay" in res.err
    assert len(res.err.strip().splitlines()) == 1
    assert not out.exists()


def test_a_bundle_of_pins_for_an_engine_without_pip_says_it_needs_one(
    tmp_path: Path, engine: Engine
) -> None:
    ps = write_patchset(tmp_path / "ps", [{"id": "pin", "kind": "pip",
                                           "requirement": "tinypkg==2.0"}])  # fmt: skip
    res = run_main("bundle", ps, tmp_path / "b", "--python", engine.python, "--without-patchbay")
    assert res.crash is None, res.crash
    assert res.code == 1, res.err
    assert (
        f"pip download tinypkg==2.0: the engine interpreter {engine.python} has no pip (No module "
        "named pip)" in res.err
    ), res.err
    assert "give as --python an interpreter of the same version and platform that has pip" in (
        res.err
    )
    assert len(res.err.strip().splitlines()) == 1


# -- the CI examples, run as a GitHub runner runs them -------------------------------------------

EXAMPLES = REPO / "docs" / "examples"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
# the node24 majors of the actions the examples use (node20 actions are deprecated on runners)
CURRENT_ACTIONS = {
    "actions/checkout": "v7",
    "actions/setup-python": "v7",
    "actions/cache": "v6",
    "actions/upload-artifact": "v7",
    "github/codeql-action/upload-sarif": "v4",
}


def _substitute(text: str, context: dict[str, str]) -> str:
    """Replace ``${{ expr }}`` as the runner does; an expression the test does not know fails
    the test (the examples may only use these)."""
    return EXPRESSION.sub(lambda m: context[m.group(1)], text)


def run_workflow(
    path: Path,
    checkout: Path,
    context: dict[str, str],
    overrides: dict[str, str],
    *,
    runner_temp: Path | None = None,
    fails: str | None = None,
    logs: dict[str, str] | None = None,
) -> list[str]:
    """Run every ``run:`` step of ``path``'s one job in ``checkout`` with bash, as a GitHub
    runner does (``bash --noprofile --norc -eo pipefail``, ``$GITHUB_PATH`` added to ``PATH``
    for later steps, ``$RUNNER_TEMP``, ``$GITHUB_STEP_SUMMARY``); ``uses:`` steps are checked
    against :data:`CURRENT_ACTIONS` and skipped (the checkout and Python are already there).

    ``overrides`` replace workflow-level ``env`` values (the placeholder ``PATCHBAY_SPEC``) and
    the runner's variables (``GITHUB_REF``). ``runner_temp`` is ``$RUNNER_TEMP`` (default: a new
    folder; a shared one keeps what an earlier run installed there). Returns the names of the
    steps run. A failing step fails the test with its output, unless it is the step named
    ``fails``, which must exit 1 (findings, not bad input) and ends the run; ``logs`` receives
    each step's output."""
    import yaml

    workflow = yaml.safe_load(path.read_text())
    (job,) = workflow["jobs"].values()
    runner = checkout.parent / f"runner-{path.stem}"
    runner.mkdir(parents=True)
    if runner_temp is None:
        runner_temp = runner / "temp"
        runner_temp.mkdir()
    github_path = runner / "path"
    github_path.touch()
    base_env = {
        **os.environ,
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(checkout),
        "GITHUB_PATH": str(github_path),
        "GITHUB_STEP_SUMMARY": str(runner / "summary.md"),
        "RUNNER_TEMP": str(runner_temp),
    }
    # the variables of a run this test may itself be in, and those that name an event
    for key in ("GITHUB_TOKEN", "GH_TOKEN", "PATCHBAY_GITHUB_API", "GITHUB_REF", "GITHUB_BASE_REF",
                "GITHUB_HEAD_REF", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH"):  # fmt: skip
        base_env.pop(key, None)
    # the repository variable the examples read their install spec from
    context = {"vars.PATCHBAY_SPEC": overrides.get("PATCHBAY_SPEC", ""), **context}
    declared = {**workflow.get("env", {}), **job.get("env", {})}
    base_env.update({k: _substitute(str(v), context) for k, v in declared.items()})
    base_env.update(overrides)
    ran = []
    for step in job["steps"]:
        if "uses" in step:
            action, _, version = step["uses"].partition("@")
            assert CURRENT_ACTIONS.get(action) == version, f"{path.name}: {step['uses']}"
            continue
        env = dict(base_env)
        env.update({k: _substitute(str(v), context) for k, v in step.get("env", {}).items()})
        extra = [ln for ln in github_path.read_text().splitlines() if ln]
        env["PATH"] = os.pathsep.join([*reversed(extra), base_env["PATH"]])
        script = runner / "step.sh"
        script.write_text(_substitute(step["run"], context))
        res = _run("bash", "--noprofile", "--norc", "-eo", "pipefail", script, cwd=checkout,
                   env=env)  # fmt: skip
        name = step.get("name", step["run"].splitlines()[0])
        if logs is not None:
            logs[name] = res.stdout + res.stderr
        ran.append(name)
        if name == fails:
            assert res.returncode == 1, f"{path.name} step {name!r}:\n{res.stdout}\n{res.stderr}"
            return ran
        assert res.returncode == 0, f"{path.name} step {name!r}:\n{res.stdout}\n{res.stderr}"
    assert fails is None, f"{path.name}: no step {fails!r}"
    return ran


def _git(cwd: Path, *args: str) -> str:
    res = _run("git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args, cwd=cwd)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def _checkout(tmp: Path, files: dict[str, str | Path]) -> tuple[Path, Path]:
    """A benchmark repository holding ``files`` (relative path -> text, or a file or folder to
    copy), pushed to a bare remote and cloned as ``actions/checkout`` leaves it.

    Returns (the checkout, the bare remote)."""
    import shutil

    source = tmp / "source"
    for rel, content in files.items():
        dest = source / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            (shutil.copytree if content.is_dir() else shutil.copy)(content, dest)
        else:
            dest.write_text(content)
    _git(source, "init", "-q", "-b", "main")
    _git(source, "add", "-A")
    _git(source, "commit", "-q", "-m", "benchmarks")
    remote = tmp / "remote.git"
    _git(tmp, "init", "-q", "--bare", "-b", "main", str(remote))
    _git(source, "push", "-q", str(remote), "main")
    _git(tmp, "clone", "-q", str(remote), str(tmp / "bench"))
    return tmp / "bench", remote


@pytest.fixture(scope="module")
def audit_runner_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``$RUNNER_TEMP`` for the runs of the audit example: the first run installs patchbay
    there, later ones run the same install step and find it done."""
    return tmp_path_factory.mktemp("runner-temp")


def _pull_request(tmp: Path, remote: Path, files: dict[str, str], number: int) -> Path:
    """Pull request ``number`` on the benchmark repository at ``remote``: a branch adding
    ``files``, while main moves on (a patch script no waiver covers, which is main's business),
    and GitHub's merge ref ``refs/pull/N/merge``; checked out as ``actions/checkout`` with
    ``fetch-depth: 0`` leaves a pull request (every branch fetched, HEAD detached at the merge).

    Returns the checkout."""
    work = tmp / "contributor"
    _git(tmp, "clone", "-q", str(remote), str(work))
    _git(work, "checkout", "-q", "-b", "feature")
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "patch the engine")
    _git(work, "checkout", "-q", "main")
    (work / "scripts" / "hotfix.sh").write_text(f"#!/bin/bash\n{PATCHING}")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "a hotfix on main")
    _git(work, "push", "-q", "origin", "main")
    _git(work, "merge", "-q", "--no-ff", "-m", f"Merge {number}", "feature")
    _git(work, "push", "-q", "origin", f"HEAD:refs/pull/{number}/merge")
    checkout = tmp / "pull-request"
    _git(tmp, "clone", "-q", str(remote), str(checkout))
    _git(checkout, "fetch", "-q", "origin", f"refs/pull/{number}/merge")
    _git(checkout, "checkout", "-q", "--detach", "FETCH_HEAD")
    return checkout


PATCHING = 'sed -i "s/a/b/" /usr/lib/python3/site-packages/vllm/envs.py\n'
AUDIT_STEPS = [
    "Install patchbay (in an environment of its own)",
    "SARIF for code scanning",
    "Audit (annotations on the pull request)",
]


def _audit_repository() -> dict[str, str | Path]:
    """The demo patchset with its waivers, a harness script that patches nothing, and pull
    request waivers named after the pull request."""
    files: dict[str, str | Path] = {"patchsets/demo": DEMO}
    files.update({f"waivers/{w.name}": w for w in (REPO / "waivers").glob("demo-*.md")})
    files["scripts/bench.sh"] = "#!/bin/sh\npython3 -m demo_bench --out results\n"
    files["pyproject.toml"] = '[tool.patchbay]\nchange-waiver = "docs/waiver/{pr}.md"\n'
    return files


def _spec(server: Server, wheelhouse: list[Path]) -> dict[str, str]:
    return {
        "PATCHBAY_SPEC": f"{selfcarry.DIST}=={metadata.version(selfcarry.DIST)}",
        "PIP_INDEX_URL": server.serve_index(wheelhouse),
    }


def test_the_audit_workflow_example_runs(
    tmp_path: Path, wheelhouse: list[Path], pip_env: None, audit_runner_temp: Path
) -> None:
    checkout, _ = _checkout(tmp_path, _audit_repository())
    push = {"github.base_ref": ""}  # as on a push: no base branch
    with Server() as server:
        ran = run_workflow(
            EXAMPLES / "audit.yml",
            checkout,
            push,
            {**_spec(server, wheelhouse), "GITHUB_REF": "refs/heads/main"},
            runner_temp=audit_runner_temp,
        )
    assert ran == AUDIT_STEPS
    import json

    sarif = json.loads((checkout / "patchbay.sarif").read_text())
    assert sarif["runs"][0]["tool"]["driver"]["name"] == "patchbay"


@pytest.mark.parametrize("with_waiver", [True, False], ids=["with-its-waiver", "without"])
def test_the_audit_workflow_example_audits_a_pull_request(
    tmp_path: Path,
    wheelhouse: list[Path],
    pip_env: None,
    audit_runner_temp: Path,
    with_waiver: bool,
) -> None:
    _, remote = _checkout(tmp_path, _audit_repository())
    files = {"benchmarks/apply_k3.sh": f"#!/bin/bash\n{PATCHING}"}
    if with_waiver:
        files["docs/waiver/7.md"] = (
            "# Engine patch waiver — PR #7\n\n- **Status:** approved\n"
            "- **Patch script:** `benchmarks/apply_k3.sh`\n\n## What is patched\nenvs.py\n\n"
            "## Why the unmodified image cannot run the benchmark\nIt crashes.\n\n"
            "## Upstream\n- vllm-project/vllm#1\n\n## Removal plan\nAt the next image.\n"
        )
    checkout = _pull_request(tmp_path, remote, files, 7)
    context = {"github.base_ref": "main"}
    logs: dict[str, str] = {}
    with Server() as server:
        runner = {"GITHUB_REF": "refs/pull/7/merge", "GITHUB_EVENT_NAME": "pull_request"}
        ran = run_workflow(
            EXAMPLES / "audit.yml",
            checkout,
            context,
            {**_spec(server, wheelhouse), **runner},
            runner_temp=audit_runner_temp,
            fails=None if with_waiver else AUDIT_STEPS[-1],
            logs=logs,
        )
    assert ran == AUDIT_STEPS
    annotations = logs[AUDIT_STEPS[-1]]
    # main's own unwaived script is the whole audit's (SARIF), not the pull request's
    assert "scripts/hotfix.sh" in (checkout / "patchbay.sarif").read_text()
    assert "hotfix" not in annotations
    if with_waiver:
        assert (
            "::notice file=benchmarks/apply_k3.sh,line=2,title=PB402 undeclared-in-place-edit "
            "(waived by 7)::" in annotations
        )
        assert "PB107" not in annotations
    else:
        assert (
            "::error file=benchmarks/apply_k3.sh,line=2,title=PB107 patching-without-change-waiver"
            "::engine patching added in this change (PB402 at line 2), and pull request #7 files "
            "no waiver docs/waiver/7.md that names this script" in annotations
        )


def test_the_upstream_report_workflow_example_runs(
    tmp_path: Path, wheelhouse: list[Path], pip_env: None
) -> None:
    from github_standin import GitHubStandIn, build_engine_history, serve_engine

    ids = build_engine_history(tmp_path / "engine")
    patchset = (
        "schema: 1\nname: engine\nimage: {reference: example.invalid/engine:1.0}\n"
        f"components:\n  - {{distribution: engine, repository: acme/engine, commit: {ids['P']}}}\n"
        "targets:\n  engine: {package: engine}\npatches:\n"
        "  - id: late-fix\n    kind: replace\n    target: engine\n    description: late fix\n"
        "    upstream: [acme/engine#14]\n"
        "    edits: [{file: engine/late.py, old: 'L = 0', new: 'L = 1'}]\n"
    )
    checkout, remote = _checkout(tmp_path, {"patchsets/engine/patchset.yaml": patchset})
    token = "ghs_workflowTOKEN0123456789"
    with GitHubStandIn(token=token) as standin, Server() as index:
        serve_engine(standin, tmp_path / "engine", ids)
        standin.add_repo("acme/bench", str(remote))
        context = {
            "github.repository": "acme/bench",
            "github.run_id": "42",
            "github.api_url": standin.url,
            "secrets.GITHUB_TOKEN": token,
        }
        overrides = {
            "PATCHBAY_SPEC": f"{selfcarry.DIST}=={metadata.version(selfcarry.DIST)}",
            "PIP_INDEX_URL": index.serve_index(wheelhouse),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
        }
        ran = run_workflow(EXAMPLES / "upstream-report.yml", checkout, context, overrides)
        assert standin.count("POST", "/repos/acme/bench/issues") == 1  # the tracking issue
    assert ran[-1] == "Commit the history"
    summary = (checkout.parent / "runner-upstream-report" / "summary.md").read_text()
    assert "late-fix" in summary
    assert token not in summary
    log = _git(tmp_path, "--git-dir", str(remote), "log", "--format=%s", "main")
    assert log.splitlines()[0] == "upstream report: history of run 42"


# -- the README's install lines, as written -------------------------------------------------------


def _readme_install_lines() -> list[str]:
    """The shell block of the README's "Installing patchbay" section, one command per line."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Installing patchbay", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].rstrip() for line in block.splitlines() if line.strip()]


def test_the_readme_install_lines_work_as_written_in_a_fresh_clone(
    tmp_path: Path, wheelhouse: list[Path]
) -> None:
    lines = _readme_install_lines()
    assert not any("YOUR-ORG" in line or "<" in line for line in lines), lines
    clone = tmp_path / "patchbay"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    home = tmp_path / "home"
    home.mkdir()
    # the build backend a fresh machine's pip would fetch for `pip install .`, beside the
    # dependencies (the index is a real server on 127.0.0.1)
    house = tmp_path / "house"
    house.mkdir()
    for wheel in wheelhouse:
        shutil.copy(wheel, house)
    selfcarry.wheel_from_installed("setuptools", house)
    with Server() as server:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "PIP_CONFIG_FILE": os.devnull,
            "PIP_NO_CACHE_DIR": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_INDEX_URL": server.serve_index(sorted(house.iterdir())),
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        for line in lines:
            res = _run("bash", "-eo", "pipefail", "-c", line, cwd=clone, env=env)
            assert res.returncode == 0, f"{line}\n{res.stdout}{res.stderr}"
    version = metadata.version(selfcarry.DIST)
    assert (clone / "dist" / f"engine_patchbay-{version}-py3-none-any.whl").is_file()
    head = subprocess.run(
        ["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    for venv in (".patchbay", ".patchbay-wheel", ".patchbay-git"):
        res = _run(home / venv / "bin" / "patchbay", "validate", clone / "patchsets" / "demo")
        assert res.returncode == 0, venv + res.stdout + res.stderr
    recorded = next(
        (home / ".patchbay-git" / "lib").glob("python3*/site-packages/engine_patchbay-*.dist-info")
    )
    assert json.loads((recorded / "direct_url.json").read_text())["vcs_info"]["commit_id"] == head


def test_the_ci_examples_stop_with_a_clear_message_when_the_spec_is_not_set(
    tmp_path: Path,
) -> None:
    import yaml

    for name in ("audit.yml", "upstream-report.yml"):
        workflow = yaml.safe_load((EXAMPLES / name).read_text())
        assert workflow["env"]["PATCHBAY_SPEC"] == "${{ vars.PATCHBAY_SPEC }}"
        (job,) = workflow["jobs"].values()
        step = next(s for s in job["steps"] if s.get("name", "").startswith("Install patchbay"))
        script = step["run"].replace("${{ vars.PATCHBAY_SPEC }}", "")
        env = {"PATH": os.environ["PATH"], "PATCHBAY_SPEC": "", "RUNNER_TEMP": str(tmp_path)}
        res = _run("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script, env=env)
        assert res.returncode == 1
        assert "set the repository variable PATCHBAY_SPEC" in res.stdout
        assert not (tmp_path / "patchbay").exists()  # stopped before making anything
