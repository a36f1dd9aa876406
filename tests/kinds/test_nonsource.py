"""Non-source patches: package pins, artifacts, commands, pinned upstream diffs, bundles.

Package pins run the engine's own pip against a real simple index served on 127.0.0.1 from
wheels made here; artifacts come from a download host on 127.0.0.1 that can fail on purpose;
vendor talks to a GitHub stand-in on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import (
    Engine,
    diff_patch,
    run_cli,
    snapshot,
    write_patchset,
)
from patchbay.carry.fetch import fetch_pinned
from patchbay.errors import ApplyFailed, RefusedError
from patchbay.options import RunOptions
from servers import Response, Server, make_wheel


@pytest.fixture(autouse=True)
def _isolated_pip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")  # no machine-wide index or find-links
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")


@pytest.fixture
def wheelhouse(tmp_path: Path) -> list[Path]:
    out = tmp_path / "wheelhouse"
    return [
        make_wheel(out, "tinypkg", "1.0"),
        make_wheel(out, "tinypkg", "2.0"),
        make_wheel(out, "guarded", "1.0"),
        make_wheel(out, "guarded", "2.0"),
        make_wheel(out, "dragger", "1.0", requires=["guarded>=2"]),
    ]


def _pip_install(engine: Engine, index: str, *reqs: str) -> None:
    subprocess.run(
        [str(engine.python), "-m", "pip", "install", "--quiet", "--index-url", index, *reqs],
        check=True,
    )


def _version(engine: Engine, name: str) -> str | None:
    proc = subprocess.run(
        [
            str(engine.python),
            "-c",
            f"import importlib.metadata as m\ntry: print(m.version({name!r}))\n"
            "except m.PackageNotFoundError: print('none')",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    out = proc.stdout.strip()
    return None if out == "none" else out


def _pin_patchset(tmp_path: Path, index: str, requirement: str, **extra: object) -> Path:
    patch = {"id": "pin", "kind": "pip", "requirement": requirement, "index_url": index, **extra}
    return write_patchset(tmp_path / "ps", [patch])


def test_pin_applies_once_and_revert_restores(
    tmp_path: Path, pengine: Engine, wheelhouse: list[Path]
) -> None:
    with Server() as server:
        index = server.serve_index(wheelhouse)
        _pip_install(pengine, index, "tinypkg==1.0")
        ps = _pin_patchset(tmp_path, index, "tinypkg==2.0")
        res = run_cli("apply", ps, "--python", pengine.python)
        assert res.code == 0, res.err
        assert _version(pengine, "tinypkg") == "2.0"
        ledger = json.loads((pengine.state_dir / "ledger.json").read_text())
        extra = ledger["patchsets"]["test"]["entries"][0]["extra"]
        assert (extra["before"], extra["after"]) == ("1.0", "2.0")
    # the index is gone: a re-run must not need pip at all
    res = run_cli("apply", ps, "--python", pengine.python)
    assert res.code == 0, res.err
    assert "nothing to do" in res.out
    with Server() as server:
        index2 = server.serve_index(wheelhouse)
        ledger_text = (pengine.state_dir / "ledger.json").read_text()
        (pengine.state_dir / "ledger.json").write_text(ledger_text.replace(index, index2))
        res = run_cli("revert", ps, "--python", pengine.python)
        assert res.code == 0, res.err
    assert _version(pengine, "tinypkg") == "1.0"


def test_pin_that_would_change_a_protected_distribution_is_refused(
    tmp_path: Path, pengine: Engine, wheelhouse: list[Path]
) -> None:
    with Server() as server:
        index = server.serve_index(wheelhouse)
        _pip_install(pengine, index, "guarded==1.0")
        ps = _pin_patchset(tmp_path, index, "dragger==1.0")
        text = (ps / "patchset.yaml").read_text()
        (ps / "patchset.yaml").write_text(text + "protect: [guarded]\n")
        res = run_cli("apply", ps, "--python", pengine.python)
        assert res.code == 1
        assert "protected distribution(s): guarded upgraded 1.0 -> 2.0" in res.err
        assert _version(pengine, "dragger") is None
        assert _version(pengine, "guarded") == "1.0"
        # allowed by name, the same pin goes through
        (ps / "patchset.yaml").write_text(
            text.replace(
                "requirement: dragger==1.0", "requirement: dragger==1.0\n  allow: [guarded]"
            )
            + "protect: [guarded]\n"
        )
        res = run_cli("apply", ps, "--python", pengine.python)
        assert res.code == 0, res.err
        assert (_version(pengine, "dragger"), _version(pengine, "guarded")) == ("1.0", "2.0")


IN_TREE_BACKEND = """
import base64, hashlib, os, zipfile

NAME, VERSION = "vcspkg", "0.1"
INFO = f"{NAME}-{VERSION}.dist-info"
METADATA = f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n"


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(directory, config_settings=None):
    os.makedirs(os.path.join(directory, INFO))
    with open(os.path.join(directory, INFO, "METADATA"), "w") as fh:
        fh.write(METADATA)
    return INFO


def build_wheel(directory, config_settings=None, metadata_directory=None):
    files = {
        "vcspkg/__init__.py": open("vcspkg/__init__.py", "rb").read(),
        INFO + "/METADATA": METADATA.encode(),
        INFO + "/WHEEL": (
            b"Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
        ),
    }
    record = ""
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{path},sha256={digest},{len(data)}\\n"
    files[INFO + "/RECORD"] = (record + INFO + "/RECORD,,\\n").encode()
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return name
"""


def _git_package(tmp_path: Path) -> tuple[Path, str]:
    """A package in a real git repository, built by pip through a small in-tree backend."""
    repo = tmp_path / "vcspkg-src"
    (repo / "vcspkg").mkdir(parents=True)
    (repo / "vcspkg" / "__init__.py").write_text('VERSION = "0.1"\n')
    (repo / "backend.py").write_text(IN_TREE_BACKEND)
    (repo / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "v0.1"], check=True)
    sha = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return repo, sha


def test_vcs_pin_installs_at_the_commit_and_reruns_do_nothing(
    tmp_path: Path, pengine: Engine
) -> None:
    repo, sha = _git_package(tmp_path)
    req = f"vcspkg @ git+file://localhost{repo}@{sha}"
    ps = write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "pin",
                "kind": "pip",
                "requirement": req,
                "no_build_isolation": True,
                "no_deps": True,
                "build_env": {"BUILD_WITH_HIP": "1"},
            }
        ],
    )
    res = run_cli("apply", ps, "--python", pengine.python)
    assert res.code == 0, res.err
    direct = next(pengine.site.glob("vcspkg-*.dist-info")) / "direct_url.json"
    assert json.loads(direct.read_text())["vcs_info"]["commit_id"] == sha
    shutil.rmtree(repo)  # a re-run must not need the repository: the commit is installed
    res = run_cli("apply", ps, "--python", pengine.python)
    assert res.code == 0, res.err
    assert "nothing to do" in res.out


def test_vcs_pin_at_a_branch_is_refused(tmp_path: Path) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "pin",
                "kind": "pip",
                "requirement": "vcspkg @ git+https://example.invalid/o/r@main",
            }
        ],
    )
    res = run_cli("validate", ps)
    assert res.code == 2
    assert "a branch or tag moves" in res.err


# -- artifacts ------------------------------------------------------------------------------

KERNEL = b"\x7fELF fake kernel for gfx950\n" * 64
KERNEL_SHA = hashlib.sha256(KERNEL).hexdigest()


def _artifact_patchset(
    tmp_path: Path, url: str, sha: str | None = KERNEL_SHA, **extra: object
) -> Path:
    files = [
        {
            "url": url,
            "dest": "kernels/gfx950/mla_fp8.co",
            "sha256": sha,
            "insecure_http": True,
            **extra,
        }
    ]
    return write_patchset(
        tmp_path / "ps",
        [{"id": "kernels", "kind": "artifact", "target": "meta", "files": files}],
        targets={"meta": {"package": "demo_engine", "path": "demo_engine_meta"}},
    )


def test_artifact_is_fetched_verified_and_idempotent(tmp_path: Path, engine: Engine) -> None:
    dest = engine.site / "demo_engine_meta/kernels/gfx950/mla_fp8.co"
    with Server() as server:
        server.add("/k.co", Response(body=KERNEL))
        ps = _artifact_patchset(tmp_path, f"{server.url}/k.co")
        res = run_cli("apply", ps, "--python", engine.python)
        assert res.code == 0, res.err
        assert dest.read_bytes() == KERNEL
        res = run_cli("apply", ps, "--python", engine.python)
        assert "nothing to do" in res.out
        assert server.requests_for("/k.co") == 1
    assert run_cli("revert", ps, "--python", engine.python).code == 0
    assert not dest.exists()


def test_an_artifact_that_replaces_a_file_keeps_its_mode(tmp_path: Path, engine: Engine) -> None:
    """An artifact is new as 0644; one that replaces a shipped kernel of mode 0750 keeps it
    (an executable kernel stays executable, a private one private), and revert gives back
    the shipped bytes with it."""
    dest = engine.site / "demo_engine_meta/kernels/gfx950/mla_fp8.co"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(b"the shipped kernel\n")
    dest.chmod(0o750)
    with Server() as server:
        server.add("/k.co", Response(body=KERNEL))
        ps = _artifact_patchset(tmp_path, f"{server.url}/k.co")
        res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 0, res.err
    assert dest.read_bytes() == KERNEL and stat.S_IMODE(dest.stat().st_mode) == 0o750
    assert run_cli("revert", ps, "--python", engine.python).code == 0
    assert dest.read_bytes() == b"the shipped kernel\n"
    assert stat.S_IMODE(dest.stat().st_mode) == 0o750


def test_artifact_with_wrong_bytes_leaves_nothing_behind(tmp_path: Path, engine: Engine) -> None:
    with Server() as server:
        server.add("/k.co", Response(body=KERNEL[:-1] + b"!"))
        ps = _artifact_patchset(tmp_path, f"{server.url}/k.co")
        before = snapshot(engine.site)
        res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 1
    assert "does not match the pinned" in res.err
    assert snapshot(engine.site) == before
    cache = tmp_path / "xdg-cache" / "patchbay" / "sha256"
    assert not cache.exists() or list(cache.iterdir()) == []


def test_artifact_server_error_then_success_and_timeout(tmp_path: Path) -> None:
    options = RunOptions(cache_dir=tmp_path / "cache", http_timeout=0.5, retries=3)
    with Server() as server:
        server.add("/flaky", Response(status=500), Response(status=503), Response(body=KERNEL))
        path, sha = fetch_pinned(f"{server.url}/flaky", KERNEL_SHA, options)
        assert path.read_bytes() == KERNEL and sha == KERNEL_SHA
        assert server.requests_for("/flaky") == 3
        server.add("/slow", Response(body=b"late", delay=3))
        options.retries = 1
        with pytest.raises(ApplyFailed, match="failed"):
            fetch_pinned(f"{server.url}/slow", "0" * 64, options)
        server.add("/down", Response(status=500))
        with pytest.raises(ApplyFailed, match="HTTP 500"):
            fetch_pinned(f"{server.url}/down", "0" * 64, options)


def test_plain_http_is_refused_unless_marked(tmp_path: Path) -> None:
    ps = _artifact_patchset(tmp_path, "http://example.invalid/k.co", insecure_http=False)
    res = run_cli("validate", ps)
    assert res.code == 2
    assert "plain http" in res.err


# -- commands ---------------------------------------------------------------------------------


def _command_patchset(
    tmp_path: Path,
    engine: Engine,
    script: str,
    *,
    remove: tuple[str, ...] = ("demo_engine/build",),
    output: str = "demo_engine/build/module_decode.so",
) -> Path:
    """A diff of ``ops/decode.py`` and a shell command run after it (``remove``, ``output``)."""
    text = (engine.pkg / "ops/decode.py").read_text()
    return write_patchset(
        tmp_path / "ps",
        [
            {"id": "decode", "kind": "diff", "file": "d.patch"},
            {
                "id": "rebuild",
                "kind": "command",
                "after": ["decode"],
                "shell": True,
                "argv": [script],
                "remove": list(remove),
                "output": output,
            },
        ],
        files={
            "d.patch": diff_patch(
                "demo_engine/ops/decode.py", text, text.replace("out = []", "out = list()")
            )
        },
    )


def test_command_runs_only_when_its_input_changed(tmp_path: Path, engine: Engine) -> None:
    build = engine.pkg / "build"
    build.mkdir()
    (build / "module_decode.so").write_text("stale build\n")
    counter = tmp_path / "runs"
    script = (
        "mkdir -p demo_engine/build && echo fresh > demo_engine/build/module_decode.so"
        f" && echo run >> {counter}"
    )
    ps = _command_patchset(tmp_path, engine, script)
    res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 0, res.err
    assert (build / "module_decode.so").read_text() == "fresh\n"
    assert counter.read_text() == "run\n"
    res = run_cli("apply", ps, "--python", engine.python)
    assert "nothing to do" in res.out
    assert counter.read_text() == "run\n"  # input unchanged, output there: not run again
    (build / "module_decode.so").unlink()
    assert run_cli("apply", ps, "--python", engine.python).code == 0  # output missing: runs
    assert counter.read_text() == "run\nrun\n"


def test_revert_of_a_rebuild_puts_back_the_shipped_output(tmp_path: Path, engine: Engine) -> None:
    """A command that rebuilds a file the engine shipped (``remove`` then build) keeps the
    shipped bytes in the state folder; revert puts them back, with their mode, instead of
    deleting the file."""
    kernel = engine.site / "demo_engine_meta" / "kernels" / "gfx950" / "mla_a16w16_qh128.co"
    shipped = kernel.read_bytes()
    kernel.chmod(0o640)
    build = "printf 'rebuilt' > demo_engine_meta/kernels/gfx950/mla_a16w16_qh128.co"
    rel = "demo_engine_meta/kernels/gfx950/mla_a16w16_qh128.co"
    ps = _command_patchset(tmp_path, engine, build, remove=(rel,), output=rel)
    assert run_cli("apply", ps, "--python", engine.python).code == 0
    assert kernel.read_bytes() == b"rebuilt"
    res = run_cli("revert", ps, "--python", engine.python)
    assert res.code == 0, res.out + res.err
    assert kernel.read_bytes() == shipped
    assert stat.S_IMODE(kernel.stat().st_mode) == 0o640


def test_a_clean_up_command_runs_while_what_it_removes_is_there(
    tmp_path: Path, engine: Engine
) -> None:
    """A command with neither ``after`` nor ``output`` is due while one of its ``remove``
    paths exists: it runs once, and a re-run is a no-op."""
    cache = engine.pkg / "jit_cache"
    cache.mkdir()
    (cache / "module.so").write_bytes(b"\x7fELF stale")
    counter = tmp_path / "runs"
    ps = write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "drop-stale-jit",
                "kind": "command",
                "remove": ["demo_engine/jit_cache"],
                "argv": [f"echo run >> {counter}"],
                "shell": True,
            }
        ],
    )
    res = run_cli("status", ps, "--python", engine.python)
    assert "pending" in res.out, res.out
    assert run_cli("apply", ps, "--python", engine.python).code == 0
    assert not cache.exists() and counter.read_text() == "run\n"
    again = run_cli("apply", ps, "--python", engine.python)
    assert again.code == 0 and "nothing to do" in again.out, again.out + again.err
    assert counter.read_text() == "run\n"


def _folders(root: Path) -> dict[str, tuple[int, int, int]]:
    return {
        str(p.relative_to(root)): (p.lstat().st_mode & 0o7777, p.lstat().st_uid, p.lstat().st_gid)
        for p in [root, *root.rglob("*")]
        if p.is_dir() and not p.is_symlink()
    }


def test_failing_command_rolls_the_run_back(tmp_path: Path, engine: Engine) -> None:
    """The command's ``remove`` takes a build folder with a nested folder of its own mode
    (and, run as root, owner) and an empty one; the command fails, and the rollback gives back
    every file and every folder as it was, the empty one too."""
    build = engine.pkg / "build"
    build.mkdir()
    (build / "module_decode.so").write_text("stale build\n")
    (build / "m").mkdir(mode=0o700)
    (build / "m" / "x.so").write_bytes(b"\x7fELF")
    (build / "empty").mkdir()
    os.chmod(build, 0o2770)
    if os.geteuid() == 0:
        os.chown(build / "m", 4321, 99)
        os.chown(build, 1234, 2345)
        os.chmod(build, 0o2770)
    before, folders = snapshot(engine.site), _folders(build)
    ps = _command_patchset(tmp_path, engine, "echo compiling; exit 3")
    res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 1
    assert "command exited with status 3" in res.err
    assert snapshot(engine.site) == before  # the diff and the removed stale build are back
    assert _folders(build) == folders
    log = engine.state_dir / "logs" / "rebuild.log"
    assert "compiling" in log.read_text()


# -- pinned upstream content ------------------------------------------------------------------

UPSTREAM_DIFF = (
    "diff --git a/demo_engine/envs.py b/demo_engine/envs.py\n"
    "--- a/demo_engine/envs.py\n+++ b/demo_engine/envs.py\n"
    "@@ -3,3 +3,4 @@ import os\n"
    ' USE_FAST_DECODE = os.environ.get("DEMO_USE_FAST_DECODE", "0") == "1"\n'
    ' MAX_BATCH = int(os.environ.get("DEMO_MAX_BATCH", "256"))\n'
    ' KV_CACHE_DTYPE = os.environ.get("DEMO_KV_CACHE_DTYPE", "auto")\n'
    '+ASM_PADDING = os.environ.get("DEMO_ASM_PADDING", "none")\n'
    "diff --git a/csrc/kernel.cu b/csrc/kernel.cu\n"
    "--- a/csrc/kernel.cu\n+++ b/csrc/kernel.cu\n@@ -1 +1 @@\n-old\n+new\n"
)
HEAD, BASE = "a" * 40, "b" * 40


def _forge(server: Server) -> None:
    pr = {"number": 51682, "head": {"sha": HEAD}, "base": {"sha": BASE}, "state": "open"}
    server.add(
        "/repos/demo-org/demo-engine/pulls/51682",
        Response(body=json.dumps(pr).encode(), headers={"Content-Type": "application/json"}),
    )
    server.add(
        f"/repos/demo-org/demo-engine/compare/{BASE}...{HEAD}",
        Response(body=UPSTREAM_DIFF.encode()),
    )


def _source_patchset(tmp_path: Path) -> Path:
    return write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "asm-padding",
                "kind": "diff",
                "source": {"repo": "demo-org/demo-engine", "pr": 51682, "paths": ["demo_engine"]},
            }
        ],
    )


def test_unlocked_source_is_refused_then_vendored_and_applied(
    tmp_path: Path, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    ps = _source_patchset(tmp_path)
    res = run_cli("validate", ps)
    assert res.code == 0 and "NOT LOCKED: asm-padding" in res.out
    res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 1
    assert "not locked yet" in res.err
    monkeypatch.setenv("GITHUB_TOKEN", "secret-token-value")
    with Server() as server:
        _forge(server)
        res = run_cli("vendor", ps, "--api-url", server.url)
        assert res.code == 0, res.err
        assert server.log[0][1].get("Authorization") == "Bearer secret-token-value"
    assert "secret-token-value" not in res.out + res.err
    lock = json.loads((ps / "patchbay.lock").read_text())["sources"]["asm-padding"]
    assert (lock["commit"], lock["base"]) == (HEAD, BASE)
    vendored = (ps / "vendor" / "asm-padding.patch").read_text()
    assert "csrc/kernel.cu" not in vendored  # filtered to the demo_engine install root
    assert lock["sha256"] == hashlib.sha256(vendored.encode()).hexdigest()
    res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 0, res.err
    assert "ASM_PADDING" in (engine.pkg / "envs.py").read_text()
    # tampering with the vendored file is caught
    (ps / "vendor" / "asm-padding.patch").write_text(vendored.replace("none", "asm"))
    res = run_cli("status", ps, "--python", engine.python)
    assert res.code == 2
    assert "does not match the lock" in res.err


def test_vendor_reports_a_forge_error_and_writes_nothing(tmp_path: Path) -> None:
    ps = _source_patchset(tmp_path)
    with Server() as server:
        server.add("/repos/demo-org/demo-engine/pulls/51682", Response(status=502))
        res = run_cli("vendor", ps, "--api-url", server.url)
    assert res.code == 1
    assert "HTTP 502" in res.err
    assert not (ps / "patchbay.lock").exists()


# -- offline bundle -----------------------------------------------------------------------------


def test_bundle_then_apply_offline_with_the_servers_stopped(
    tmp_path: Path, pengine: Engine, wheelhouse: list[Path]
) -> None:
    with Server() as server:
        index = server.serve_index(wheelhouse)
        _pip_install(pengine, index, "tinypkg==1.0")
        server.add("/k.co", Response(body=KERNEL))
        ps = write_patchset(
            tmp_path / "ps",
            [
                {"id": "pin", "kind": "pip", "requirement": "tinypkg==2.0", "index_url": index},
                {
                    "id": "kernels",
                    "kind": "artifact",
                    "target": "meta",
                    "files": [
                        {
                            "url": f"{server.url}/k.co",
                            "dest": "kernels/k.co",
                            "sha256": KERNEL_SHA,
                            "insecure_http": True,
                        }
                    ],
                },
            ],
            targets={
                "meta": {"package": "demo_engine", "path": "demo_engine_meta"},
                "engine": {"package": "demo_engine"},
            },
        )
        out = tmp_path / "bundle"
        res = run_cli("bundle", ps, out, "--python", pengine.python, "--without-patchbay")
        assert res.code == 0, res.err
    assert (out / "artifacts" / KERNEL_SHA).read_bytes() == KERNEL
    wheels = {w.name.split("-py3")[0] for w in (out / "wheels").iterdir()}
    assert wheels == {"tinypkg-2.0", "tinypkg-1.0"}  # the pin, and what it replaces (revert)
    shutil.rmtree(tmp_path / "xdg-cache", ignore_errors=True)  # nothing from the cache either
    res = run_cli(
        "apply", out / "patchset", "--python", pengine.python, "--bundle", out, "--offline"
    )
    assert res.code == 0, res.err
    assert _version(pengine, "tinypkg") == "2.0"
    assert (pengine.site / "demo_engine_meta/kernels/k.co").read_bytes() == KERNEL
    res = run_cli(
        "revert", out / "patchset", "--python", pengine.python, "--bundle", out, "--offline"
    )
    assert res.code == 0, res.err
    assert _version(pengine, "tinypkg") == "1.0"


def test_a_failed_bundle_leaves_no_folder_behind(tmp_path: Path, pengine: Engine) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "pin",
                "kind": "pip",
                "requirement": "tinypkg==2.0",
                "index_url": "http://127.0.0.1:9/simple/",
            }
        ],
    )
    res = run_cli("bundle", ps, tmp_path / "bundle", "--python", pengine.python)
    assert res.code == 1
    assert not (tmp_path / "bundle").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".bundle")] == []


def test_offline_without_the_file_says_what_is_missing(tmp_path: Path, engine: Engine) -> None:
    ps = _artifact_patchset(tmp_path, "https://example.invalid/k.co")
    res = run_cli("apply", ps, "--python", engine.python, "--offline")
    assert res.code == 1
    assert "offline, and https://example.invalid/k.co" in res.err


def test_refusal_messages_are_library_errors(tmp_path: Path) -> None:
    options = RunOptions(cache_dir=tmp_path / "c", offline=True)
    with pytest.raises(RefusedError):
        fetch_pinned("https://example.invalid/x", KERNEL_SHA, options)


def test_revert_says_exactly_what_it_could_not_restore(
    tmp_path: Path, pengine: Engine, wheelhouse: list[Path]
) -> None:
    with Server() as server:
        index = server.serve_index(wheelhouse)
        _pip_install(pengine, index, "tinypkg==1.0")
        ps = _pin_patchset(tmp_path, index, "tinypkg==2.0")
        assert run_cli("apply", ps, "--python", pengine.python).code == 0
    res = run_cli("revert", ps, "--python", pengine.python)  # the index is gone
    assert res.code == 1
    assert "could not restore tinypkg==1.0" in res.err
    assert "tinypkg 2.0 stays installed" in res.err
    assert _version(pengine, "tinypkg") == "2.0"
    assert run_cli("status", ps, "--python", pengine.python).code == 0  # still recorded


def test_check_says_a_candidate_already_satisfies_a_pin(
    tmp_path: Path, pengine: Engine, wheelhouse: list[Path]
) -> None:
    with Server() as server:
        index = server.serve_index(wheelhouse)
        _pip_install(pengine, index, "tinypkg==2.0")
    ps = _pin_patchset(tmp_path, index, "tinypkg==2.0")
    doc = json.loads(run_cli("check", ps, "--python", pengine.python, "--json").out)
    assert doc["patches"][0]["verdict"] == "upstream"
    assert doc["droppable"] == ["pin"]


def test_mirror_rewrites_the_download_url(tmp_path: Path) -> None:
    with Server() as server:
        server.add("/mirror/k.co", Response(body=KERNEL))
        options = RunOptions(
            cache_dir=tmp_path / "cache",
            mirrors=[("https://downloads.example.invalid/", f"{server.url}/mirror/")],
        )
        path, _ = fetch_pinned("https://downloads.example.invalid/k.co", KERNEL_SHA, options)
        assert path.read_bytes() == KERNEL
        assert server.requests_for("/mirror/k.co") == 1


def test_a_reference_in_an_artifact_url_is_expanded_only_for_the_request(
    tmp_path: Path, engine: Engine
) -> None:
    """``${NAME}`` in a URL is the secret's place: the request gets the value, the patchset,
    the ledger and the messages keep the reference; an unset variable refuses the apply."""
    with Server() as server:
        server.add("/private-s3cr3t-path/k.co", Response(body=KERNEL))
        ps = _artifact_patchset(tmp_path, f"{server.url}/${{KERNEL_PATH}}/k.co")
        env = {**os.environ}
        env.pop("KERNEL_PATH", None)
        res = run_cli("apply", ps, "--python", engine.python, env=env)
        assert res.code != 0 and "${KERNEL_PATH}" in res.err and "not set" in res.err, res.err
        env["KERNEL_PATH"] = "private-s3cr3t-path"
        res = run_cli("apply", ps, "--python", engine.python, env=env)
        assert res.code == 0, res.err
        assert server.requests_for("/private-s3cr3t-path/k.co") == 1
    state = engine.state_dir
    for path in state.rglob("*"):
        if path.is_file():
            assert b"private-s3cr3t-path" not in path.read_bytes(), path
