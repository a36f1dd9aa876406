"""apply, status, revert and verify against a real engine environment.

Each test gets a virtual environment with the demo engine wheel really installed by pip, and
runs the real ``patchbay`` console script against its interpreter.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, Engine, diff_patch, run_cli, snapshot, write_patchset
from patchbay.apply.statelock import state_lock

DEMO = REPO / "patchsets" / "demo"


def _statuses(ps: Path, engine: Engine) -> dict[str, str]:
    res = run_cli("status", ps, "--python", engine.python, "--json")
    return {p["id"]: p["status"] for p in json.loads(res.out)["patches"]}


def test_engine_package_cannot_be_imported_but_patchbay_works(engine: Engine) -> None:
    """The demo engine aborts on import (like engines probing a GPU); patchbay never imports it."""
    proc = subprocess.run([engine.python, "-c", "import demo_engine"], capture_output=True)
    assert proc.returncode != 0
    res = run_cli("status", DEMO, "--python", engine.python)
    assert res.code == 0, res.err
    assert "pending" in res.out


def test_fresh_apply_then_rerun_is_a_noop(engine: Engine) -> None:
    before = snapshot(engine.site)
    res = run_cli("apply", DEMO, "--python", engine.python)
    assert res.code == 0, res.err
    assert "5 applied" in res.out
    after = snapshot(engine.site)
    changed = {k for k in after if after[k] != before.get(k)}
    assert changed == {
        "demo_engine/envs.py",
        "demo_engine/scheduler.py",
        "demo_engine/attention/mla.py",
        "demo_engine_meta/kernels/mla_asm.csv",
    }
    assert set(_statuses(DEMO, engine).values()) == {"applied"}

    ledger = json.loads((engine.state_dir / "ledger.json").read_text())
    entries = ledger["patchsets"]["demo"]["entries"]
    assert [e["patch_id"] for e in entries] == [
        "envs-asm-padding",
        "scheduler-padding",
        "mla-large-cache",
        "mla-full-graph",
        "mla-fp8-kernel-row",
    ]
    envs = entries[0]["files"][0]
    import hashlib

    assert envs["after"] == hashlib.sha256((engine.pkg / "envs.py").read_bytes()).hexdigest()
    assert (
        envs["before"]
        == hashlib.sha256((REPO / "demo/engine/src/demo_engine/envs.py").read_bytes()).hexdigest()
    )

    ledger_mtime = (engine.state_dir / "ledger.json").stat().st_mtime_ns
    res = run_cli("apply", DEMO, "--python", engine.python)
    assert res.code == 0
    assert "nothing to do" in res.out
    assert snapshot(engine.site) == after  # bytes and mtimes
    assert (engine.state_dir / "ledger.json").stat().st_mtime_ns == ledger_mtime


def test_conflict_leaves_every_file_unchanged(engine: Engine) -> None:
    sched = engine.pkg / "scheduler.py"
    sched.write_text(sched.read_text().replace("limit = envs.MAX_BATCH", "limit = 64"))
    before = snapshot(engine.site)
    res = run_cli("apply", DEMO, "--python", engine.python)
    assert res.code == 1
    assert "scheduler-padding" in res.err
    assert "demo_engine/scheduler.py hunk 1: conflict" in res.err
    assert "closest match at line" in res.err
    assert snapshot(engine.site) == before
    assert not (engine.state_dir / "ledger.json").exists()


def _five_patches(tmp_path: Path, engine: Engine) -> Path:
    """Five patches; the third rewrites a 300 KB module."""
    big = engine.pkg / "kernel_table.py"
    big.write_text("".join(f"ENTRY_{i} = {i}\n" for i in range(25000)))
    files, patches = {}, []
    for n, (rel, old, new) in enumerate(
        [
            ("demo_engine/envs.py", "MAX_BATCH = int(", "MAX_BATCH = 2 * int("),
            ("demo_engine/worker.py", "r * 2 for r", "r * 3 for r"),
            ("demo_engine/kernel_table.py", "ENTRY_7 = 7\n", "ENTRY_7 = 70\n"),
            ("demo_engine/ops/decode.py", "out = []", "out = list()"),
            ("demo_engine/attention/mla.py", "WITHIN_2GB = True", "WITHIN_2GB = False"),
        ],
        start=1,
    ):
        text = (engine.site / rel).read_text()
        files[f"{n}.patch"] = diff_patch(rel, text, text.replace(old, new))
        patches.append({"id": f"p{n}", "kind": "diff", "file": f"{n}.patch"})
    return write_patchset(tmp_path / "ps", patches, files=files)


def test_write_failure_in_third_of_five_patches_restores_everything(
    tmp_path: Path, engine: Engine
) -> None:
    ps = _five_patches(tmp_path, engine)
    before = snapshot(engine.site)
    limit = 128 * 1024  # git cannot write the 300 KB file: a real write error (EFBIG/SIGXFSZ)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    res = run_cli("apply", ps, "--python", engine.python, preexec_fn=small_files)
    assert res.code == 1, res.out
    # p1 and p2 were written, git died on p3's big file; the message says where
    assert "patch p3" in res.err and "kernel_table.py" in res.err
    assert "restored" in res.err
    assert snapshot(engine.site) == before  # p1 and p2 were written, then restored exactly
    assert not (engine.state_dir / "journal").exists()
    assert not (engine.state_dir / "ledger.json").exists()
    # and without the limit the same patchset applies
    assert run_cli("apply", ps, "--python", engine.python).code == 0
    assert "ENTRY_7 = 70\n" in (engine.pkg / "kernel_table.py").read_text()


def _sources(engine: Engine) -> dict[str, bytes]:
    # bytecode of changed modules is dropped on purpose (it is rebuilt on import)
    return {k: v[0] for k, v in snapshot(engine.site).items() if "__pycache__" not in k}


def test_revert_restores_pristine_files(engine: Engine) -> None:
    pristine = _sources(engine)
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    res = run_cli("revert", DEMO, "--python", engine.python)
    assert res.code == 0, res.err
    assert res.out.splitlines()[0] == "reverted mla-fp8-kernel-row"  # newest first
    assert _sources(engine) == pristine
    assert set(_statuses(DEMO, engine).values()) == {"pending"}
    assert "nothing to revert" in run_cli("revert", DEMO, "--python", engine.python).out


def test_revert_refuses_when_a_file_changed_since_apply(engine: Engine) -> None:
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    mla = engine.pkg / "attention" / "mla.py"
    mla.write_text(mla.read_text() + "# local edit\n")
    before = snapshot(engine.site)
    res = run_cli("revert", DEMO, "--python", engine.python)
    assert res.code == 1
    assert "demo_engine/attention/mla.py changed since patchbay wrote it" in res.err
    assert snapshot(engine.site) == before


@pytest.mark.parametrize(
    ("spec", "ok"),
    [
        ("==0.4.1+g1a2b3c4", True),
        ("==0.4.1", True),  # PEP 440: a public specifier ignores the local label
        (">=0.4,<0.5", True),
        ("==0.4.1+gdeadbee", False),
        ("==0.5.0", False),
    ],
)
def test_base_guard_on_distribution_version(
    tmp_path: Path, engine: Engine, spec: str, ok: bool
) -> None:
    text = (engine.pkg / "envs.py").read_text()
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "p1", "kind": "diff", "file": "1.patch"}],
        base={"distributions": {"demo-engine": spec}},
        files={"1.patch": diff_patch("demo_engine/envs.py", text, text + "X = 1\n")},
    )
    before = snapshot(engine.site)
    res = run_cli("apply", ps, "--python", engine.python)
    if ok:
        assert res.code == 0, res.err
    else:
        assert res.code == 1
        assert "base guard failed" in res.err
        assert f"does not satisfy {spec}" in res.err
        assert snapshot(engine.site) == before


def test_base_guard_on_pristine_file_hash(tmp_path: Path, engine: Engine) -> None:
    text = (engine.pkg / "envs.py").read_text()
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "p1", "kind": "diff", "file": "1.patch"}],
        base={"files": [{"target": "engine", "path": "demo_engine/worker.py", "sha256": "0" * 64}]},
        files={"1.patch": diff_patch("demo_engine/envs.py", text, text + "X = 1\n")},
    )
    res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 1
    assert "demo_engine/worker.py has sha256" in res.err
    assert (engine.pkg / "envs.py").read_text() == text


def test_missing_target_package_fails_closed(tmp_path: Path, engine: Engine) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "p1", "kind": "replace", "edits": [{"file": "x.py", "old": "a", "new": "b"}]}],
        targets={"engine": {"package": "vllm"}},
    )
    res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 1
    assert "package 'vllm' is not installed" in res.err


def test_provenance_record(tmp_path: Path, engine: Engine) -> None:
    record = tmp_path / "results" / "patches.json"
    assert run_cli("apply", DEMO, "--python", engine.python, "--record", record).code == 0
    doc = json.loads(record.read_text())
    assert doc["image"]["reference"] == "example.invalid/demo-engine:0.4.1-g1a2b3c4"
    assert doc["environment"]["distributions"] == {"demo-engine": "0.4.1+g1a2b3c4"}
    assert next((p["id"], p["status"], p["outcome"]) for p in doc["patches"]) == (
        "envs-asm-padding",
        "applied",
        "applied",
    )
    import hashlib

    first = DEMO / "patches" / "01-envs-asm-padding.patch"
    assert doc["patches"][0]["sha256"] == hashlib.sha256(first.read_bytes()).hexdigest()
    status_record = tmp_path / "status.json"
    assert run_cli("status", DEMO, "--python", engine.python, "--record", status_record).code == 0
    assert {p["outcome"] for p in json.loads(status_record.read_text())["patches"]} == {"unchanged"}


def test_stale_bytecode_of_changed_modules_is_removed(engine: Engine) -> None:
    subprocess.run(
        [
            engine.python,
            "-m",
            "compileall",
            "-q",
            "--invalidation-mode",
            "unchecked-hash",
            str(engine.pkg),
        ],
        check=True,
    )
    cache = engine.pkg / "__pycache__"
    assert list(cache.glob("envs.*.pyc")) and list(cache.glob("worker.*.pyc"))
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    assert not list(cache.glob("envs.*.pyc"))
    assert not list(cache.glob("scheduler.*.pyc"))
    assert list(cache.glob("worker.*.pyc"))  # untouched module keeps its bytecode


def test_verify(tmp_path: Path, engine: Engine) -> None:
    res = run_cli("verify", DEMO, "--python", engine.python)
    assert res.code == 1
    assert "envs-asm-padding: pending, not applied" in res.err
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    res = run_cli("verify", DEMO, "--python", engine.python)
    assert res.code == 0, res.err
    assert "3 Python file(s) compile" in res.out

    text = (engine.pkg / "worker.py").read_text()
    ps = write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "broken",
                "kind": "replace",
                "edits": [
                    {
                        "file": "demo_engine/worker.py",
                        "old": "    def step(self, requests):\n",
                        "new": "    def step(self, requests)\n",
                    }
                ],
            }
        ],
    )
    assert "def step(self, requests):" in text
    assert run_cli("apply", ps, "--python", engine.python).code == 0
    res = run_cli("verify", ps, "--python", engine.python)
    assert res.code == 1
    assert "worker.py: does not compile: SyntaxError" in res.err


def test_lock_held_by_another_run(engine: Engine) -> None:
    engine.state_dir.mkdir(parents=True)
    before = snapshot(engine.site)
    with state_lock(engine.state_dir, 0):  # another run holds it
        res = run_cli("apply", DEMO, "--python", engine.python)
    assert res.code == 1
    assert "another patchbay run holds the lock" in res.err
    assert snapshot(engine.site) == before


def test_two_concurrent_applies_apply_once(engine: Engine) -> None:
    cmd = [
        str(Path(sys.executable).with_name("patchbay")),
        "apply",
        str(DEMO),
        "--python",
        str(engine.python),
        "--lock-timeout",
        "60",
    ]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sorted("nothing to do" in out for out, _ in outs) == [False, True]
    mla = (engine.pkg / "attention" / "mla.py").read_text()
    assert mla.count("stride_kv, stride_pe = int(stride_kv), int(stride_pe)") == 1
    assert set(_statuses(DEMO, engine).values()) == {"applied"}


def test_site_packages_inside_an_unrelated_git_work_tree(engine: Engine) -> None:
    """The engine environment lives inside someone's repository, with hostile settings."""
    git = ["git", "-C", str(engine.prefix)]
    subprocess.run([*git, "init", "-q"], check=True)
    (engine.prefix / ".gitattributes").write_text("* text eol=crlf\n")
    subprocess.run([*git, "config", "core.autocrlf", "true"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run(
        [*git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "env"], check=True
    )
    res = run_cli("apply", DEMO, "--python", engine.python)
    assert res.code == 0, res.err
    assert set(_statuses(DEMO, engine).values()) == {"applied"}
    assert b"\r\n" not in (engine.pkg / "envs.py").read_bytes()


def test_symlink_out_of_the_root_is_refused(tmp_path: Path, engine: Engine) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("A = 1\n")
    (engine.pkg / "linked").symlink_to(outside)
    (engine.pkg / "alias.py").symlink_to(outside / "secret.py")
    for n, rel in enumerate(["demo_engine/linked/secret.py", "demo_engine/alias.py"]):
        ps = write_patchset(
            tmp_path / f"ps{n}",
            [{"id": "p1", "kind": "diff", "file": "1.patch"}],
            files={"1.patch": diff_patch(rel, "A = 1\n", "A = 2\n")},
        )
        res = run_cli("apply", ps, "--python", engine.python)
        assert res.code == 1, res.err
        assert "link" in res.err or "outside target" in res.err
        assert (outside / "secret.py").read_text() == "A = 1\n"


def test_default_interpreter_is_python3_on_path(engine: Engine, tmp_path: Path) -> None:
    import os

    env = {**os.environ, "PATH": f"{engine.prefix / 'bin'}:{os.environ['PATH']}"}
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("patchbay")), "status", str(DEMO), "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["environment"]["prefix"] == str(engine.prefix)


def test_demo_engine_template_is_not_modified(engine_template: Path) -> None:
    """Guard for the fixtures themselves: tests work on copies."""
    assert not (engine_template / "share" / "patchbay").exists()
    assert shutil.which("git")
