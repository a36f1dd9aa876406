"""`patchbay audit --upstream` (PB501) against the GitHub stand-in backed by real git history:
a patch whose upstream fix is in the pinned commit is a finding, an open PR is not; a forge that
answers nothing is one line, and the token is never printed."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from conftest import run_cli
from github_standin import GitHubStandIn, build_engine_history, serve_engine
from patchbay.audit import run_audit
from patchbay.patchset.loading import load_patchset

TOKEN = "ghp_standinAUDIT0123456789abcdefTOKEN"


def write_repo(root: Path, pin: str, refs: dict[str, str]) -> Path:
    """A repository with patchset ``engine`` (component ``acme/engine`` pinned at ``pin``),
    one replace patch per entry of ``refs`` (id -> upstream reference)."""
    folder = root / "patchsets" / "engine"
    folder.mkdir(parents=True)
    lines = [
        "schema: 1",
        "name: engine",
        "image: {reference: example.invalid/engine:1.0}",
        "components:",
        f"  - {{distribution: engine, repository: acme/engine, commit: {pin}}}",
        "targets:",
        "  engine: {package: engine}",
        "patches:",
    ]
    for pid, ref in refs.items():
        lines += [
            f"  - id: {pid}",
            "    kind: replace",
            "    target: engine",
            f"    description: patch {pid}",
            f"    upstream: [{ref}]",
            f"    edits: [{{file: engine/{pid}.py, old: 'A = 1', new: 'A = 2'}}]",
        ]
    (folder / "patchset.yaml").write_text("\n".join(lines) + "\n")
    return folder / "patchset.yaml"


@pytest.fixture(scope="module")
def engine_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("audit-upstream") / "engine"
    return path, build_engine_history(path)


@pytest.fixture
def standin(engine_history: tuple[Path, dict[str, str]]) -> GitHubStandIn:
    with GitHubStandIn(token=TOKEN) as server:
        serve_engine(server, *engine_history)
        yield server


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    monkeypatch.delenv("PATCHBAY_GITHUB_API", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _pb501(out: str) -> list[dict]:
    return [f for f in json.loads(out)["findings"] if f["code"] == "PB501"]


def test_merged_fix_in_the_pin_is_a_finding_open_pr_is_not(
    standin: GitHubStandIn,
    engine_history: tuple[Path, dict[str, str]],
    tmp_path: Path,
    env: None,
) -> None:
    _, ids = engine_history
    # #12: merged with a merge commit, an ancestor of the pin; #17: still open; #14: merged
    # after the pin (the image does not have it yet)
    yaml = write_repo(
        tmp_path / "repo",
        ids["P"],
        {"merged": "acme/engine#12", "open": "acme/engine#17", "later": "acme/engine#14"},
    )
    res = run_cli(
        "audit", tmp_path / "repo", "--format", "json", "--upstream", "--api-url", standin.url
    )
    assert res.code == 1, res.err
    found = _pb501(res.out)
    assert [f["message"].split(":")[0] for f in found] == ["patch merged"]
    (finding,) = found
    assert finding["path"] == "patchsets/engine/patchset.yaml"
    assert finding["severity"] == "error"
    assert finding["name"] == "patch-fixed-upstream"
    assert yaml.read_text().splitlines()[finding["line"] - 1].strip().startswith("upstream:")
    assert "remove the patch" in finding["message"]
    assert TOKEN not in res.out + res.err


def test_open_pr_only_is_no_finding_and_no_flag_asks_nothing(
    standin: GitHubStandIn,
    engine_history: tuple[Path, dict[str, str]],
    tmp_path: Path,
    env: None,
) -> None:
    _, ids = engine_history
    write_repo(tmp_path / "repo", ids["P"], {"open": "acme/engine#17"})
    res = run_cli(
        "audit", tmp_path / "repo", "--format", "json", "--upstream", "--api-url", standin.url
    )
    assert res.code == 1, res.err  # PB101: no waiver, but no PB501
    assert _pb501(res.out) == []
    assert standin.count() > 0
    standin.clear_log()
    plain = run_cli("audit", tmp_path / "repo", "--format", "json")
    assert _pb501(plain.out) == []
    assert standin.count() == 0  # without --upstream the forge is not asked


def test_in_process_with_severity_config(
    standin: GitHubStandIn,
    engine_history: tuple[Path, dict[str, str]],
    tmp_path: Path,
    env: None,
) -> None:
    _, ids = engine_history
    yaml = write_repo(tmp_path / "repo", ids["P"], {"squash": "acme/engine#11"})
    result = run_audit(
        tmp_path / "repo", upstream=True, api_url=standin.url, cache_dir=tmp_path / "c"
    )
    (finding,) = [f for f in result.findings if f.code == "PB501"]
    assert finding.line == load_patchset(yaml.parent).patch_line(0, "upstream")
    (tmp_path / "repo" / "patchbay.toml").write_text('[severity]\nPB501 = "off"\n')
    quiet = run_audit(
        tmp_path / "repo", upstream=True, api_url=standin.url, cache_dir=tmp_path / "c"
    )
    assert not [f for f in quiet.findings if f.code == "PB501"]


def test_bad_credentials_are_one_line_without_the_token(
    standin: GitHubStandIn,
    engine_history: tuple[Path, dict[str, str]],
    tmp_path: Path,
    env: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, ids = engine_history
    wrong = "ghp_wrongTOKENwrongTOKENwrong0000"
    monkeypatch.setenv("GITHUB_TOKEN", wrong)
    write_repo(tmp_path / "repo", ids["P"], {"merged": "acme/engine#12"})
    res = run_cli("audit", tmp_path / "repo", "--upstream", "--api-url", standin.url)
    assert res.code == 1
    lines = res.err.strip().splitlines()
    assert len(lines) == 1, res.err
    assert lines[0].startswith("patchbay: error: --upstream: the GitHub API at ")
    assert "401" in lines[0]
    assert wrong not in res.out + res.err and TOKEN not in res.out + res.err
    assert "Traceback" not in res.err


def test_unreachable_forge_is_one_line_exit_1(
    engine_history: tuple[Path, dict[str, str]], tmp_path: Path, env: None
) -> None:
    _, ids = engine_history
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    write_repo(tmp_path / "repo", ids["P"], {"merged": "acme/engine#12"})
    api = f"http://127.0.0.1:{port}"
    res = run_cli("audit", tmp_path / "repo", "--upstream", "--api-url", api)
    assert res.code == 1
    lines = res.err.strip().splitlines()
    # the retries are announced as they happen (progress), then the one error line
    assert all("; retry " in ln for ln in lines[:-1]) and len(lines) > 1, res.err
    lines = lines[-1:]
    quiet = run_cli("audit", tmp_path / "repo", "--upstream", "--api-url", api, "--quiet")
    assert quiet.code == 1 and quiet.err.strip().splitlines() == lines
    assert "answered none" in lines[0] and "error" in lines[0]
    assert TOKEN not in res.out + res.err


def test_bad_api_url_is_bad_input(tmp_path: Path, env: None) -> None:
    write_repo(tmp_path / "repo", "a" * 40, {"merged": "acme/engine#12"})
    res = run_cli("audit", tmp_path / "repo", "--upstream", "--api-url", "ftp://example.invalid")
    assert res.code == 2
    assert len(res.err.strip().splitlines()) == 1
    assert "not an http(s) URL" in res.err
