"""Bad and unusual input for the non-source kinds, found by trying them as a new user would."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from conftest import Engine, run_cli, snapshot, write_patchset
from servers import Response, Server

KERNEL = b"kernel bytes\n" * 32
KERNEL_SHA = hashlib.sha256(KERNEL).hexdigest()
META = {
    "meta": {"package": "demo_engine", "path": "demo_engine_meta"},
    "engine": {"package": "demo_engine"},
}


def _artifact(pid: str, dest: str, url: str = "https://example.invalid/k.co") -> dict:
    return {
        "id": pid,
        "kind": "artifact",
        "target": "engine",
        "files": [{"url": url, "dest": dest, "sha256": KERNEL_SHA}],
    }


@pytest.mark.parametrize(
    "second",
    [
        _artifact("a2", "demo_engine/scheduler.py"),
        {
            "id": "r",
            "kind": "replace",
            "target": "engine",
            "edits": [{"file": "demo_engine/scheduler.py", "old": "a", "new": "b"}],
        },
    ],
)
def test_a_file_written_whole_by_an_artifact_belongs_to_one_patch(
    tmp_path: Path, second: dict
) -> None:
    ps = write_patchset(
        tmp_path / "ps", [_artifact("a1", "demo_engine/scheduler.py"), second], targets=META
    )
    res = run_cli("validate", ps)
    assert res.code == 2
    assert "demo_engine/scheduler.py is also written by patch a1" in res.err


def test_a_path_under_a_regular_file_is_refused_cleanly(tmp_path: Path, engine: Engine) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "r",
                "kind": "replace",
                "edits": [{"file": "demo_engine/envs.py/x", "old": "a", "new": "b"}],
            }
        ],
    )
    for command in ("status", "apply", "check"):
        res = run_cli(command, ps, "--python", engine.python)
        assert res.code == 1, (command, res.err)
        assert "demo_engine/envs.py is a file, not a folder" in res.err
        assert "Traceback" not in res.err


def test_invalid_date_in_yaml_is_bad_input(tmp_path: Path) -> None:
    ps = write_patchset(tmp_path / "ps", [_artifact("a", "k.co")], targets=META)
    text = (
        (ps / "patchset.yaml")
        .read_text()
        .replace("description: test patch 1", "description: 2026-13-01")
    )
    (ps / "patchset.yaml").write_text(text)
    res = run_cli("validate", ps)
    assert res.code == 2
    assert "invalid value '2026-13-01'" in res.err
    assert "Traceback" not in res.err


def test_false_environment_marker_is_nothing_to_install(tmp_path: Path, engine: Engine) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "pin", "kind": "pip", "requirement": 'tinypkg==2.0; python_version < "3"'}],
    )
    res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 0, res.err
    assert "nothing to do" in res.out


def test_command_with_a_missing_working_folder(tmp_path: Path, engine: Engine) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "c",
                "kind": "command",
                "argv": ["true"],
                "cwd": "demo_engine/nowhere",
                "output": "demo_engine/out.so",
            }
        ],
    )
    res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 1
    assert "working folder" in res.err and "does not exist" in res.err


def test_no_orphan_warning_after_a_full_revert(engine: Engine) -> None:
    demo = Path(__file__).resolve().parents[2] / "patchsets" / "demo"
    assert run_cli("apply", demo, "--python", engine.python).code == 0
    assert run_cli("revert", demo, "--python", engine.python).code == 0
    res = run_cli("status", demo, "--python", engine.python)
    assert "saved originals but no ledger" not in res.err
    assert not list((engine.state_dir / "blobs").iterdir())


DIFF_V1 = (
    "diff --git a/demo_engine/envs.py b/demo_engine/envs.py\n"
    "--- a/demo_engine/envs.py\n+++ b/demo_engine/envs.py\n@@ -1 +1 @@\n-import os\n"
    "+import os  # v1\n"
)


def _forge(server: Server, diff: str) -> None:
    server.add("/repos/o/r/commits/" + "c" * 40, Response(body=diff.encode()))


def test_vendor_never_moves_a_pin_silently(tmp_path: Path) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "d", "kind": "diff", "source": {"repo": "o/r", "commit": "c" * 40}}],
    )
    with Server() as server:
        _forge(server, DIFF_V1)
        assert run_cli("vendor", ps, "--api-url", server.url).code == 0
        locked = json.loads((ps / "patchbay.lock").read_text())
        _forge(server, DIFF_V1.replace("v1", "v2"))
        res = run_cli("vendor", ps, "--api-url", server.url)
        assert res.code == 1
        assert "now serves other content" in res.err and "--update" in res.err
        assert json.loads((ps / "patchbay.lock").read_text()) == locked
        res = run_cli("vendor", ps, "--api-url", server.url, "--update")
        assert res.code == 0, res.err
        assert "v2" in (ps / "vendor" / "d.patch").read_text()
        _forge(server, "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n")  # corrupt
        before = snapshot(ps)
        res = run_cli("vendor", ps, "--api-url", server.url, "--update")
        assert res.code == 2
        assert "corrupt diff" in res.err
        assert snapshot(ps) == before


def test_vendor_rejects_an_api_url_that_is_not_one(tmp_path: Path) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "d", "kind": "diff", "source": {"repo": "o/r", "commit": "c" * 40}}],
    )
    res = run_cli("vendor", ps, "--api-url", "not a url")
    assert res.code == 2
    assert "is not an http(s) URL" in res.err
