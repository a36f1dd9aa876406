"""Secrets stay out of commands' environments, logs, reports and messages.

A ``command`` patch runs without patchbay's credentials unless it names them in ``env``; its
log is 0600 and redacted; ``report`` prints and writes nothing that holds the token, a token a
forge answer echoes back, or a password in ``--api-url``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from conftest import REPO, write_patchset
from inprocess import run_main
from patchbay.kinds.command import command_environment
from patchbay.redaction import is_credential_name, redact, write_log
from servers import Response, Server

GH = "ghp_" + "S3cretTokenValue0123456789ab"
PASSED = "hf_passthroughvalue4242"
PASSWORD = "pw-9f8e7d6c"


@pytest.mark.parametrize(
    "name",
    [
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "HF_TOKEN",
        "CI_JOB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SESSION_TOKEN",
        "OPENAI_API_KEY",
        "MY_SERVICE_APIKEY",
        "DB_PASSWORD",
        "PGPASSWORD",
        "SMTP_PASSWD",
        "VAULT_SECRET",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "github_token",
    ],
)
def test_credential_names(name: str) -> None:
    assert is_credential_name(name)


@pytest.mark.parametrize(
    "name",
    ["PATH", "HOME", "CXX", "PYTHONPATH", "KEYBOARD", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK"],
)
def test_ordinary_names(name: str) -> None:
    assert not is_credential_name(name)


def test_command_environment_drops_credentials_unless_named() -> None:
    environ = {
        "PATH": "/usr/bin",
        "GITHUB_TOKEN": GH,
        "HF_TOKEN": PASSED,
        "PIP_INDEX_URL": f"https://ci:{PASSWORD}@pypi.example.invalid/simple",
        "GIT_URL": "git+ssh://git@github.com/o/r",
    }
    env = command_environment({"HF_TOKEN": None, "CXX": "hipcc", "ABSENT": None}, environ)
    assert env == {
        "PATH": "/usr/bin",
        "HF_TOKEN": PASSED,
        "CXX": "hipcc",
        "GIT_URL": "git+ssh://git@github.com/o/r",
    }


def test_redact_hides_values_shapes_and_url_passwords() -> None:
    environ = {"VAULT_SECRET": "vault-value-123"}
    text = (
        f"token {GH} then vault-value-123 and https://ci:{PASSWORD}@h.invalid/x "
        "and https://abcdef1234567@h.invalid/y and git@github.com:o/r and "
        "github_pat_11ABCDEFG0123456789_abcdefghijkl"
    )
    out = redact(text, environ=environ)
    for secret in (GH, "vault-value-123", PASSWORD, "abcdef1234567", "github_pat_11ABC"):
        assert secret not in out
    assert "https://ci:***@h.invalid/x" in out and "https://***@h.invalid/y" in out
    assert "git@github.com:o/r" in out


def test_a_command_runs_without_credentials_and_its_log_is_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an unpacked image's site-packages, with its interpreter where CPython's layout puts it
    root = tmp_path / "image" / "lib" / "python3.11" / "site-packages"
    shutil.copytree(REPO / "demo" / "engine" / "src", root)
    (tmp_path / "image" / "bin").mkdir()
    (tmp_path / "image" / "bin" / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("GITHUB_TOKEN", GH)
    monkeypatch.setenv("MY_SERVICE_API_KEY", "apikey-value-77")
    monkeypatch.setenv("HF_TOKEN", PASSED)
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", f"https://ci:{PASSWORD}@pypi.example.invalid/s")
    script = (
        "import json, os, sys; json.dump(dict(os.environ), open('demo_engine/env.json', 'w')); "
        "print('building with', os.environ['HF_TOKEN'], sys.argv[1])"
    )
    ps = write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "probe-env",
                "kind": "command",
                "argv": ["{python}", "-c", script, GH],
                "env": {"HF_TOKEN": None, "CXX": "hipcc"},
                "output": "demo_engine/env.json",
            }
        ],
    )
    (root / ".patchbay" / "logs").mkdir(parents=True)
    old_log = root / ".patchbay" / "logs" / "probe-env.log"
    old_log.write_text("an older, world-readable log\n")
    old_log.chmod(0o644)
    res = run_main("apply", ps, "--root", root)
    assert res.code == 0, res.err
    seen = json.loads((root / "demo_engine" / "env.json").read_text())
    assert "GITHUB_TOKEN" not in seen and "MY_SERVICE_API_KEY" not in seen
    assert "PIP_EXTRA_INDEX_URL" not in seen
    assert seen["HF_TOKEN"] == PASSED and seen["CXX"] == "hipcc"
    assert seen["PATH"] == os.environ["PATH"]
    log = root / ".patchbay" / "logs" / "probe-env.log"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    text = log.read_text()
    assert "building with *** ***" in text  # the output and the argv line, both redacted
    assert GH not in text and PASSED not in text and "older" not in text
    # the ledger records the command line it ran, with the credential masked
    state = [f for f in (root / ".patchbay").rglob("*") if f.is_file() and f != log]
    assert any("probe-env" in f.read_text(errors="replace") for f in state)
    assert not [f for f in state if GH in f.read_text(errors="replace")]


def test_report_never_shows_a_token_or_a_url_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "proj"
    (repo / "patchsets" / "engine").mkdir(parents=True)
    (repo / "patchsets" / "engine" / "patchset.yaml").write_text(
        "schema: 1\nname: engine\nimage: {reference: example.invalid/engine:1.0}\n"
        "components:\n  - {distribution: engine, repository: acme/engine, commit: "
        + "a"
        * 40
        + "}\ntargets:\n  engine: {package: engine}\npatches:\n"
        "  - id: p1\n    kind: replace\n    target: engine\n    description: one\n"
        "    upstream: [acme/engine#5]\n"
        "    edits: [{file: engine/x.py, old: 'A = 1', new: 'A = 2'}]\n"
    )
    monkeypatch.setenv("GITHUB_TOKEN", GH)
    pull = {
        "number": 5,
        "title": f"leaks {GH} in its title",
        "state": "open",
        "html_url": f"https://ci:{PASSWORD}@github.example.invalid/acme/engine/pull/5",
        "base": {"ref": "main"},
    }
    outputs = [tmp_path / "r.md", tmp_path / "r.json", tmp_path / "r.html"]
    with Server() as server:
        body = json.dumps(pull).encode()
        server.add("/repos/acme/engine/pulls/5", Response(body=body))
        server.add("/repos/acme/engine/issues/5", Response(body=body))
        api = server.url.replace("http://", f"http://ci:{PASSWORD}@")
        args = ["report", "--repo", repo, "--api-url", api, "--no-graphql"]
        args += ["--cache-dir", tmp_path / "cache", "--history", tmp_path / "h.jsonl"]
        res = run_main(*args, *[a for o in outputs for a in ("-o", o)])
        assert res.code == 0, res.err
        printed = run_main(*args, "--format", "json")
        # the forge is gone: the error names the URL, without its password
        server.stop()
        failed = run_main(*args, "--timeout", "1", "--cache-dir", tmp_path / "cache2")
    assert failed.code == 1 and "ci:***@127.0.0.1" in failed.err
    texts = [p.read_text() for p in [*outputs, tmp_path / "h.jsonl"]]
    texts += [res.out, res.err, printed.out, printed.err, failed.out, failed.err]
    assert "leaks *** in its title" in texts[1]  # the JSON report keeps the title
    for text in texts:
        assert GH not in text and PASSWORD not in text


def test_write_log_makes_an_existing_log_private(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "x.log"
    log.parent.mkdir()
    log.write_text("old\n")
    log.chmod(0o666)
    write_log(log, [f"one {GH}\n", "two\n"])
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert log.read_text() == "one ***\ntwo\n"


def test_what_a_command_prints_is_redacted(tmp_path: Path) -> None:
    url = f"https://ci:{PASSWORD}@downloads.example.invalid/k.co"
    ps = write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "kernels",
                "kind": "artifact",
                "files": [{"url": url, "dest": "demo_engine/k.co", "sha256": None}],
            }
        ],
    )
    res = run_main("validate", ps)
    assert res.code == 0, res.err
    assert "NOT LOCKED: kernels" in res.out
    assert "https://ci:***@downloads.example.invalid/k.co" in res.out
    assert PASSWORD not in res.out + res.err
