"""``patchbay report`` end to end: a project repository with real git history, the GitHub
stand-in, the three formats, the history file, the candidate image and ``--publish``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from datetime import date
from pathlib import Path

import jsonschema
import pytest

from conftest import PATCHBAY, REPO
from github_standin import (
    Fault,
    GitHubStandIn,
    Issue,
    Pull,
    build_engine_history,
    git,
    serve_engine,
)
from patchbay.patchset.loading import load_patchset
from patchbay.upstream import GitHubClient
from patchbay.upstream.report import build_report
from patchbay.upstream.report_markdown import MARKER, render_markdown

TOKEN = "ghp_reportTOKEN0123456789abcdef"
TODAY = "2026-09-01"


def patch_yaml(pid: str, refs: list[str], *, waiver: str | None = None) -> str:
    lines = [
        f"  - id: {pid}",
        "    kind: replace",
        "    target: engine",
        f"    description: patch {pid}",
    ]
    if refs:
        lines.append("    upstream: [" + ", ".join(refs) + "]")
    else:
        lines.append("    upstream_status: {status: Inappropriate, reason: local config only}")
    if waiver:
        lines.append(f"    waiver: {waiver}")
    lines.append(f"    edits: [{{file: engine/{pid}.py, old: 'A = 1', new: 'A = 2'}}]")
    return "\n".join(lines) + "\n"


def header(pin: str) -> str:
    return (
        "schema: 1\nname: engine\nimage: {reference: example.invalid/engine:1.0}\n"
        f"components:\n  - {{distribution: engine, repository: acme/engine, commit: {pin}}}\n"
        "targets:\n  engine: {package: engine}\npatches:\n"
    )


def make_project(root: Path, pin: str) -> Path:
    """A project repository: two patches committed on 2026-07-01, three more on 2026-08-01,
    one not committed yet, and a waiver whose review date passed on 2026-08-15."""
    yaml_path = root / "patchsets" / "engine" / "patchset.yaml"
    yaml_path.parent.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    first = patch_yaml("squash", ["https://github.com/acme/engine/pull/11"])
    first += patch_yaml("open", ["acme/engine#17"], waiver="w1")
    yaml_path.write_text(header(pin) + first)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "carry two patches", date="2026-07-01T12:00:00Z")
    second = first + patch_yaml("after-pin", ["https://github.com/acme/engine/pull/14"])
    second += patch_yaml("title-revert", ["acme/engine#15"])
    second += patch_yaml("local", [])
    (root / "waivers").mkdir()
    (root / "waivers" / "w1.md").write_text(
        "---\nid: w1\npatches: [open]\nreview_by: 2026-08-15\n---\n\n# Waiver w1\n"
    )
    yaml_path.write_text(header(pin) + second)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "three more", date="2026-08-01T12:00:00Z")
    yaml_path.write_text(header(pin) + second + patch_yaml("uncommitted", ["acme/engine#18"]))
    return root


def cli(*args: str | Path, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GITHUB_TOKEN", "GH_TOKEN", "PATCHBAY_GITHUB_API")
    }
    env["COLUMNS"] = "200"
    if token:
        env["GITHUB_TOKEN"] = token
    return subprocess.run(
        [str(PATCHBAY), *map(str, args)], capture_output=True, text=True, env=env, check=False
    )


@pytest.fixture(scope="module")
def engine_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("report") / "engine"
    return path, build_engine_history(path)


@pytest.fixture
def standin(engine_history: tuple[Path, dict[str, str]]) -> GitHubStandIn:
    with GitHubStandIn(token=TOKEN) as server:
        serve_engine(server, *engine_history)
        yield server


def common(server: GitHubStandIn, tmp: Path) -> list[str | Path]:
    return [
        "--api-url",
        server.url,
        "--cache-dir",
        tmp / "cache",
        "--history",
        tmp / "history.jsonl",
        "--today",
        TODAY,
    ]


def test_report_in_three_formats_with_history(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = engine_history
    project = make_project(tmp_path / "project", ids["P"])
    args = ["report", "--repo", project, *common(standin, tmp_path)]

    first = cli(*args, "--format", "json")
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    rows = {r["id"]: r for r in doc["rows"]}
    assert {k: r["verdict"] for k, r in rows.items()} == {
        "squash": "remove",
        "open": "attention",  # upstream open, but the waiver's review date passed
        "after-pin": "bump",
        "title-revert": "attention",
        "local": "keep",  # Upstream-Status Inappropriate with a reason: carried by design
        "uncommitted": "keep",
    }
    assert doc["counts"] == {"remove": 1, "bump": 1, "refresh": 0, "keep": 2, "attention": 2}
    # days carried from the first commit holding the patch; days since the upstream merge
    assert rows["squash"]["days_carried"] == 62
    assert rows["squash"]["days_since_merged"] == 58
    assert rows["after-pin"]["days_carried"] == 31
    assert rows["after-pin"]["days_since_merged"] == 43
    assert rows["uncommitted"]["days_carried"] is None
    assert rows["after-pin"]["needed_commits"] == [ids["L"]]
    assert rows["open"]["waiver"] == {"id": "w1", "review_by": "2026-08-15", "problem": None}
    yaml_lines = (project / "patchsets/engine/patchset.yaml").read_text().splitlines()
    assert yaml_lines[rows["squash"]["line"] - 1].startswith("    upstream: [https://github.com/")
    assert doc["previous"] is None and doc["changes"] == []
    assert "6 patches: 1 remove, 1 bump, 0 refresh, 2 keep, 2 attention" in first.stderr

    second = cli(*args)  # markdown, nothing changed upstream
    assert second.returncode == 0, second.stderr
    md = second.stdout
    assert "As of 2026-09-01: 6 carried patches in 1 patchset:" in md
    assert "**1 remove** · 1 bump · 0 refresh · 2 keep · 2 attention." in md
    assert "No change since the last run (2026-09-01)." in md
    assert (
        "| engine | `squash` | [acme/engine#11](https://github.com/acme/engine/pull/11) | "
        "merged | **remove** | 62 | 58 |"
    ) in md
    assert (
        "| engine | `uncommitted` | [acme/engine#18](https://github.com/acme/engine/pull/18)" in md
    )
    assert f"; needed: `{ids['L']}`" in md
    assert "review date 2026-08-15 of waiver w1 has passed" in md
    assert "carried by design (Upstream-Status Inappropriate: local config only)" in md
    # a rerun over unchanged data: nothing but 304s
    sent = re.search(r"(\d+) requests to the forge, (\d+) answered 304", second.stderr)
    assert sent is not None and int(sent.group(1)) == int(sent.group(2)) > 0

    # upstream moves: the draft PR is merged after the pin
    repo = standin.repos["acme/engine"]
    repo.pulls[18] = Pull(
        18,
        "Draft work",
        "closed",
        merged=True,
        merge_commit_sha=ids["H"],
        merged_at="2026-07-25T10:00:00Z",
    )
    out = tmp_path / "report.html"
    third = cli(*args, "--format", "html", "--output", out)
    assert third.returncode == 0, third.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "<svg" in page and "Carried patches by verdict over time" in page
    assert page.count("<title>2026-09-01: 1 remove</title>") == 3  # one bar per run
    assert "<code>engine/uncommitted</code>: keep → bump" in page
    assert "acme/engine#18 draft → merged" in page
    assert '<span class="v bump">bump</span>' in page
    for external in ("<script", "<link", "<img", "src=", "@import", "url("):
        assert external not in page
    history = (tmp_path / "history.jsonl").read_text().splitlines()
    assert len(history) == 3
    last = json.loads(history[-1])
    assert last["counts"] == {"remove": 1, "bump": 2, "refresh": 0, "keep": 1, "attention": 2}
    assert last["patches"]["engine/uncommitted"]["verdict"] == "bump"


def test_a_patch_carried_by_design_is_kept_until_its_waiver_review_passes(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = engine_history
    project = make_project(tmp_path / "project", ids["P"])
    (project / "waivers" / "w2.md").write_text(
        "---\nid: w2\npatches: [local]\nreview_by: 2026-08-20\n---\n\n# Waiver w2\n"
    )
    res = cli("report", "--repo", project, *common(standin, tmp_path), "--format", "json")
    assert res.returncode == 0, res.stderr
    local = next(r for r in json.loads(res.stdout)["rows"] if r["id"] == "local")
    assert local["verdict"] == "attention"
    assert local["reason"].startswith("the review date 2026-08-20 of waiver w2 has passed; ")
    assert "carried by design" in local["reason"]


def test_publish_upserts_one_tracking_issue(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, ids = engine_history
    project = make_project(tmp_path / "project", ids["P"])
    tracking = standin.add_repo("acme/tracking", str(path))
    tracking.pulls[1] = Pull(1, "Some PR")
    tracking.issues[2] = Issue(2, "Unrelated", body="not ours")
    args = ["report", "--repo", project, *common(standin, tmp_path), "--publish", "acme/tracking"]

    first = cli(*args, token=TOKEN)
    assert first.returncode == 0, first.stderr
    assert "tracking issue acme/tracking#3 created" in first.stderr
    assert standin.count("POST", "/repos/acme/tracking/issues") == 1
    body = tracking.issues[3].body
    assert body.startswith(MARKER)
    assert "As of 2026-09-01: 6 carried patches" in body
    assert "<!-- patchbay:fingerprint=" in body
    assert standin.count("POST", "/graphql") == 1  # with a token, one GraphQL query

    standin.clear_log()
    second = cli(*args, token=TOKEN)
    assert second.returncode == 0, second.stderr
    assert "tracking issue acme/tracking#3 is up to date; not edited" in second.stderr
    assert standin.count("POST", "/repos/") == 0
    assert standin.count("PATCH") == 0
    # the history remembers the issue: no need to list the repository's issues again
    assert standin.count("GET", "/repos/acme/tracking/issues?") == 0
    assert standin.count("GET", "/repos/acme/tracking/issues/3") == 1

    tracking_before = dict(tracking.issues)
    standin.repos["acme/engine"].pulls[17] = Pull(17, "Open work", "closed", closed_at=TODAY)
    third = cli(*args, token=TOKEN)
    assert third.returncode == 0, third.stderr
    assert "tracking issue acme/tracking#3 updated" in third.stderr
    assert standin.count("PATCH", "/repos/acme/tracking/issues/3") == 1
    assert standin.count("POST", "/repos/") == 0
    assert tracking.issues.keys() == tracking_before.keys()
    assert "acme/engine#17 open → closed" in tracking.issues[3].body
    assert tracking.issues[2].body == "not ours"
    for run in (first, second, third):
        assert TOKEN not in run.stdout + run.stderr


def test_issue_body_is_cut_detail_first_and_keeps_the_summary(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = engine_history
    folder = tmp_path / "ps"
    folder.mkdir()
    many = "".join(patch_yaml(f"p{n:03d}", ["acme/engine#17"]) for n in range(60))
    many += patch_yaml("gone", ["acme/engine#11"])
    (folder / "patchset.yaml").write_text(header(ids["P"]) + many)
    ps = load_patchset(folder)
    client = GitHubClient(standin.url, cache_dir=tmp_path / "cache")
    report = build_report([ps], client, today=date(2026, 9, 1))
    full = render_markdown(report, issue=True)
    assert "### Keep: upstream is still open" in full

    cut = render_markdown(report, issue=True, limit=len(full) - 1)
    assert len(cut) < len(full)
    assert "### Keep: upstream is still open" not in cut
    assert "### Remove: the fix is in the pinned image" in cut
    assert "detail sections (keep) were cut" in cut
    assert cut.startswith(MARKER) and "<!-- patchbay:fingerprint=" in cut

    tiny = render_markdown(report, issue=True, limit=3000)
    assert len(tiny) <= 3000
    assert "As of 2026-09-01: 61 carried patches in 1 patchset:" in tiny
    assert "table rows were cut" in tiny
    assert "`gone`" in tiny  # remove rows come before keep rows, so they stay
    assert "<!-- patchbay:fingerprint=" in tiny


def test_candidate_image_names_the_patches_a_bump_drops(
    standin: GitHubStandIn,
    engine_history: tuple[Path, dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from patchbay.cli.commands.report import run

    _, ids = engine_history
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "PATCHBAY_GITHUB_API"):
        monkeypatch.delenv(name, raising=False)
    project = make_project(tmp_path / "project", ids["P"])
    candidate = tmp_path / "candidate"
    (candidate / "engine").mkdir(parents=True)
    for pid in ("squash", "open", "after-pin", "title-revert", "local", "uncommitted"):
        text = "A = 2\n" if pid in ("squash", "after-pin") else "A = 1\n"
        (candidate / "engine" / f"{pid}.py").write_text(text)
    code = run(
        [],
        repo=project,
        output_format="markdown",
        api_url=standin.url,
        cache_dir=tmp_path / "cache",
        no_history=True,
        candidate_root=candidate,
        today=date(2026, 9, 1),
    )
    assert code == 0
    out = capsys.readouterr().out
    assert (
        "These 2 patches can be dropped with this bump: `engine/squash`, `engine/after-pin`." in out
    )
    assert "| candidate |" in out


def test_errors_are_one_line_with_the_token_redacted(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = engine_history
    project = make_project(tmp_path / "project", ids["P"])
    reset = int(time.time()) + 3000
    standin.fail(
        "/graphql",
        Fault(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}, "limit"),
    )
    limited = cli("report", "--repo", project, *common(standin, tmp_path), token=TOKEN)
    assert limited.returncode == 1
    lines = limited.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("patchbay: error: GitHub rate limit reached")
    assert "resets at" in lines[0] and "Traceback" not in limited.stderr
    assert TOKEN not in limited.stdout + limited.stderr
    assert not (tmp_path / "history.jsonl").exists()  # a stopped run is not a run

    bad = cli("report", "--repo", project, *common(standin, tmp_path), "--publish", "nope")
    assert bad.returncode == 2
    assert bad.stderr.strip() == "patchbay: error: --publish 'nope': expected owner/name"

    no_token = cli("report", "--repo", project, *common(standin, tmp_path), "--publish", "a/b")
    assert no_token.returncode == 2
    assert "needs a token in GITHUB_TOKEN or GH_TOKEN" in no_token.stderr

    empty = cli("report", "--repo", tmp_path / "nothing", *common(standin, tmp_path))
    assert empty.returncode == 2
    assert "no patchsets here" in empty.stderr


def test_scheduled_workflow_example_runs_the_report_and_publishes() -> None:
    import yaml

    repo = Path(__file__).resolve().parents[2]
    workflow = yaml.safe_load((repo / "docs" / "examples" / "upstream-report.yml").read_text())
    triggers = workflow.get("on") or workflow.get(True)
    assert "schedule" in triggers and triggers["schedule"][0]["cron"]
    steps = [s.get("run", "") for job in workflow["jobs"].values() for s in job["steps"]]
    assert any("patchbay report" in s and "--publish" in s for s in steps)


def _one_ref_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    (repo / "patchsets" / "engine").mkdir(parents=True)
    (repo / "patchsets" / "engine" / "patchset.yaml").write_text(
        header("a" * 40) + patch_yaml("p1", ["acme/engine#5"])
    )
    return repo


def test_wrong_shaped_answers_are_unknown_and_an_unanswered_run_is_an_error(
    tmp_path: Path,
) -> None:
    """Valid JSON of the wrong shape never crashes the report; a run in which the forge
    answered for no reference writes and publishes nothing."""
    from servers import Response, Server

    repo = _one_ref_repo(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN")}
    with Server() as server:
        for path in ("/repos/acme/engine/pulls/5", "/repos/acme/engine/issues/5"):
            server.add(path, Response(body=b"[]", headers={"Content-Type": "application/json"}))
        out = tmp_path / "r.md"
        proc = subprocess.run(
            [
                str(PATCHBAY),
                "report",
                "--repo",
                str(repo),
                "--api-url",
                server.url,
                "--cache-dir",
                str(tmp_path / "cache"),
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            env=env,
        )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "answered for none of 1 reference(s)" in proc.stderr
    assert "not what GitHub sends" in proc.stderr
    assert not out.exists()
    proc = subprocess.run(
        [
            str(PATCHBAY),
            "report",
            "--repo",
            str(repo),
            "--api-url",
            "http://127.0.0.1:9",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--timeout",
            "2",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 1
    assert "answered for none" in proc.stderr


def test_report_by_name_into_a_new_folder_validates_against_its_schema(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """``report NAME`` takes a patchset by its name under ./patchsets, as every command does;
    ``-o`` into folders that do not exist yet creates them (the rule of every result file);
    the JSON document validates against docs/schemas/report.schema.json."""
    from inprocess import run_main

    _, ids = engine_history
    project = make_project(tmp_path / "project", ids["P"])
    (project / "engine").mkdir()  # a folder of the same name, no patchset: not the one meant
    (project / "engine" / "README.md").write_text("the engine's sources\n")
    out = tmp_path / "new" / "deeper" / "report.json"
    res = run_main("report", "engine", *common(standin, tmp_path), "-o", out, cwd=project)
    assert res.crash is None, res.crash
    assert res.code == 0, res.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert len(doc["rows"]) == 6
    assert "patchbay: 6 patches: " in res.err  # the summary of the run, a note
    quiet = run_main("report", "engine", *common(standin, tmp_path), "-o", out, "-q", cwd=project)
    assert quiet.code == 0 and quiet.err == "", quiet.err
    schema = json.loads((REPO / "docs/schemas/report.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(doc, schema)
