"""Upstream tracking against a GitHub stand-in backed by real git history: references, the
client's cache, retries and rate limits, and the verdicts of every merge and revert case."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import CASES
from github_standin import (
    Fault,
    GitHubStandIn,
    Pull,
    build_engine_history,
    serve_engine,
)
from patchbay.patchset.loading import load_patchset
from patchbay.upstream import (
    GitHubClient,
    RateLimitError,
    Verdict,
    assess,
    parse_ref,
    upstream_findings,
)
from patchbay.upstream.status import waiver_reviews

TOKEN = "ghp_standin0123456789abcdefTOKEN"


def write_patchset(
    folder: Path,
    pin: str | None,
    refs: dict[str, list[str]],
    *,
    name: str = "engine",
    waived: tuple[str, ...] = (),
) -> Path:
    """A patchset whose component ``acme/engine`` is pinned at ``pin``; one replace patch per
    entry of ``refs`` (id -> upstream references; empty: Upstream-Status Pending)."""
    folder.mkdir(parents=True, exist_ok=True)
    component = "{distribution: engine, repository: acme/engine" + (
        f", commit: {pin}}}" if pin else "}"
    )
    lines = [
        "schema: 1",
        f"name: {name}",
        "image: {reference: example.invalid/engine:1.0}",
        "components:",
        f"  - {component}",
        "targets:",
        "  engine: {package: engine}",
        "patches:",
    ]
    for pid, upstream in refs.items():
        lines += [
            f"  - id: {pid}",
            "    kind: replace",
            "    target: engine",
            f"    description: patch {pid}",
        ]
        if upstream:
            lines.append("    upstream: [" + ", ".join(upstream) + "]")
        else:
            lines.append("    upstream_status: {status: Pending, reason: not sent upstream yet}")
        if pid in waived:
            lines.append("    waiver: w1")
        lines.append(f"    edits: [{{file: engine/{pid}.py, old: 'A = 1', new: 'A = 2'}}]")
    (folder / "patchset.yaml").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture(scope="module")
def engine_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("upstream") / "engine"
    return path, build_engine_history(path)


@pytest.fixture
def standin(engine_history: tuple[Path, dict[str, str]]) -> GitHubStandIn:
    with GitHubStandIn(token=TOKEN) as server:
        serve_engine(server, *engine_history)
        yield server


def client(server: GitHubStandIn, tmp: Path, **kwargs: object) -> GitHubClient:
    options: dict[str, object] = {
        "token": TOKEN,
        "cache_dir": tmp / "cache",
        "backoff": 0.01,
        "use_graphql": False,
    }
    options.update(kwargs)
    return GitHubClient(server.url, **options)  # type: ignore[arg-type]


# -- references ---------------------------------------------------------------------------------


def test_references_parse_every_form() -> None:
    pr = parse_ref("https://github.com/vllm-project/vllm/pull/51682/files")
    assert (pr.kind, pr.repository, pr.number) == ("pull", "vllm-project/vllm", 51682)
    issue = parse_ref("https://github.com/o/r/issues/3#issuecomment-1")
    assert (issue.kind, issue.number) == ("issue", 3)
    commit = parse_ref("https://github.com/o/r/commit/" + "a" * 40)
    assert (commit.kind, commit.commit) == ("commit", "a" * 40)
    assert parse_ref("o/r#12").kind == "number"
    assert parse_ref("o/r@abcdef1").commit == "abcdef1"
    assert parse_ref("https://gitlab.com/o/r/-/merge_requests/4").kind == "other"
    enterprise = parse_ref(
        "https://ghe.example.com/o/r/pull/9", web_hosts=frozenset({"ghe.example.com"})
    )
    assert enterprise.kind == "pull"
    # pull requests and issues share one number space: one key
    assert parse_ref("o/r#12").key == parse_ref("https://github.com/O/R/pull/12").key


# -- every kind of merge, over REST and over GraphQL ---------------------------------------------

CASES_BY_ID = {
    # id: (references, verdict, state label)
    "squash": (["https://github.com/acme/engine/pull/11"], "remove", "merged"),
    "merge-commit": (["acme/engine#12"], "remove", "merged"),
    "rebase": (["acme/engine#13"], "remove", "merged"),
    "after-pin": (["https://github.com/acme/engine/pull/14"], "bump", "merged"),
    "title-revert": (["acme/engine#15"], "attention", "reverted"),
    "closed-unmerged": (["acme/engine#16"], "attention", "closed"),
    "open": (["acme/engine#17"], "keep", "open"),
    "draft": (["acme/engine#18"], "keep", "draft"),
    "issue-open": (["https://github.com/acme/engine/issues/20"], "keep", "open"),
    "issue-not-planned": (["https://github.com/acme/engine/issues/22"], "attention", "closed"),
    "missing-repo": (["nosuch/repo#5"], "attention", "unknown"),
    "no-upstream": ([], "attention", None),
}


@pytest.mark.parametrize("graphql", [False, True], ids=["rest", "graphql"])
def test_every_case_gets_its_verdict(
    graphql: bool,
    standin: GitHubStandIn,
    engine_history: tuple[Path, dict[str, str]],
    tmp_path: Path,
) -> None:
    _, ids = engine_history
    refs = {pid: refs for pid, (refs, _, _) in CASES_BY_ID.items()}
    refs["issue-closed"] = ["acme/engine#21"]
    refs["commit-in-image"] = [f"acme/engine@{ids['S'][:10]}"]
    refs["commit-after-pin"] = [f"https://github.com/acme/engine/commit/{ids['L']}"]
    refs["commit-off-branch"] = [f"acme/engine@{ids['Z']}"]
    ps = load_patchset(write_patchset(tmp_path / "ps", ids["P"], refs))
    c = client(standin, tmp_path, use_graphql=graphql)
    got = {a.patch_id: a for a in assess([ps], c)}

    for pid, (_, verdict, label) in CASES_BY_ID.items():
        assert got[pid].verdict.value == verdict, (pid, got[pid].reason)
        if label is not None:
            assert got[pid].refs[0].state.value == label, (pid, got[pid].refs[0].reason)
    # merged after the pin: the bump names the commit an image must contain
    assert got["after-pin"].needed_commits == [ids["L"]]
    assert ids["L"][:12] in got["after-pin"].reason
    # a revert found by its title alone, before the pin: the image lacks the fix
    assert "reverted in " + ids["T"][:12] in got["title-revert"].reason
    assert "before the pinned commit" in got["title-revert"].reason
    assert got["missing-repo"].refs[0].state.value == "unknown"
    assert "not found" in got["missing-repo"].reason
    assert "no upstream reference" in got["no-upstream"].reason
    assert "Pending" in got["no-upstream"].reason
    # the issue closed by #11 (GraphQL names the PR, REST the closing commit): in the image
    assert got["issue-closed"].verdict is Verdict.REMOVE
    assert got["issue-closed"].refs[0].label.startswith("closed by ")
    assert got["commit-in-image"].verdict is Verdict.REMOVE
    assert got["commit-after-pin"].verdict is Verdict.BUMP
    assert got["commit-after-pin"].needed_commits == [ids["L"]]
    assert got["commit-off-branch"].verdict is Verdict.ATTENTION
    assert got["commit-off-branch"].refs[0].label == "not on main"
    if graphql:
        # every numbered reference in one GraphQL query
        assert standin.count("POST", "/graphql") == 1
        assert standin.count("GET", "/repos/acme/engine/pulls/") == 0
    else:
        assert standin.count("POST", "/graphql") == 0


def test_merged_flag_alone_never_removes(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    refs = {"squash": ["acme/engine#11"], "after-pin": ["acme/engine#14"]}
    # no pinned commit: merged, but nobody can say whether the image has it
    ps = load_patchset(write_patchset(tmp_path / "ps", None, refs))
    got = {a.patch_id: a for a in assess([ps], client(standin, tmp_path))}
    assert got["squash"].verdict is Verdict.ATTENTION
    assert "no pinned `commit`" in got["squash"].reason
    assert got["after-pin"].verdict is Verdict.ATTENTION


# -- case 009: merged upstream, then reverted -----------------------------------------------------


@pytest.fixture(scope="module")
def history_009(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("case009") / "repo"
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    out = subprocess.run(
        ["bash", str(CASES / "009-merged-then-reverted" / "make_history.sh"), str(path)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    ids = dict(line.split() for line in out.splitlines())
    assert set(ids) == {"B", "M", "X", "R", "Y"}
    return path, ids


@pytest.mark.parametrize("graphql", [False, True], ids=["rest", "graphql"])
@pytest.mark.parametrize("pin", ["B", "X", "Y"])
def test_case_009_merged_then_reverted(
    pin: str, graphql: bool, history_009: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, ids = history_009
    with GitHubStandIn(token=TOKEN) as server:
        repo = server.add_repo("acme/engine", str(path))
        repo.pulls[101] = Pull(
            101,
            "Fix split-K semaphore reuse under graph capture",
            "closed",
            merged=True,
            merge_commit_sha=ids["M"],
            merged_at="2026-08-12T09:44:00Z",
        )
        repo.pulls[120] = Pull(
            120,
            'Revert "Fix split-K semaphore reuse under graph capture (#101)"',
            "closed",
            merged=True,
            merge_commit_sha=ids["R"],
            merged_at="2026-08-12T16:53:00Z",
        )
        ps = load_patchset(
            write_patchset(
                tmp_path / "ps",
                ids[pin],
                {"gemm-semaphore": ["https://github.com/acme/engine/pull/101"]},
            )
        )
        (a,) = assess([ps], client(server, tmp_path, use_graphql=graphql))
    ref = a.refs[0]
    assert ref.state.value == "reverted"  # at the branch head, upstream has undone it
    assert ref.reverted_by == ids["R"]
    assert a.verdict is not Verdict.REMOVE or pin == "X"
    if pin == "B":
        # merged after the pin, then reverted: no newer image carries the fix; keep the patch
        assert a.verdict is Verdict.ATTENTION
        assert "after the pinned commit" in a.reason
        assert "keep the patch" in a.reason
        assert ids["R"][:12] in a.reason
        assert a.needed_commits == []
    elif pin == "X":
        # the image has the fix: the patch is redundant; a bump past R needs it again
        assert a.verdict is Verdict.REMOVE
        assert ref.in_image is True
        (warning,) = a.warnings
        assert ids["R"][:12] in warning
        assert "needs the patch again" in warning
    else:
        # merged and reverted before the pin: still needed, needs attention, never remove
        assert a.verdict is Verdict.ATTENTION
        assert ref.in_image is False
        assert "before the pinned commit" in a.reason
        assert "still needed" in a.reason


# -- the client: cache, retries, timeouts, rate limits --------------------------------------------


def one_patch(tmp_path: Path, ids: dict[str, str], ref: str = "acme/engine#11") -> object:
    return load_patchset(write_patchset(tmp_path / "ps", ids["P"], {"fix": [ref]}))


def test_unchanged_rerun_is_answered_by_304s(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = engine_history
    refs = {
        "squash": ["acme/engine#11"],
        "after-pin": ["acme/engine#14"],
        "open": ["acme/engine#17"],
        "issue": ["acme/engine#21"],
        "commit": [f"acme/engine@{ids['S']}"],
    }
    ps = load_patchset(write_patchset(tmp_path / "ps", ids["P"], refs))
    first = [a.verdict for a in assess([ps], client(standin, tmp_path))]
    # acme/engine#21 is an issue: /pulls/21 answers 404 once, then the cache knows better
    assert {e.status for e in standin.log} == {200, 404}
    standin.clear_log()
    again = client(standin, tmp_path)  # a new run: only the disk cache is shared
    assert [a.verdict for a in assess([ps], again)] == first
    assert standin.log
    assert {e.status for e in standin.log} == {304}
    assert all("if-none-match" in e.headers for e in standin.log)
    assert again.stats.not_modified == again.stats.requests == len(standin.log)


def test_server_error_then_success(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = engine_history
    standin.fail("/repos/acme/engine/pulls/11", Fault(500), Fault(502))
    (a,) = assess([one_patch(tmp_path, ids)], client(standin, tmp_path))
    assert a.verdict is Verdict.REMOVE
    statuses = [e.status for e in standin.log if e.path.startswith("/repos/acme/engine/pulls/11")]
    assert statuses == [500, 502, 200]


def test_server_errors_beyond_retries_are_unknown(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = engine_history
    standin.fail("/repos/acme/engine/pulls/11", *[Fault(503)] * 3)
    (a,) = assess([one_patch(tmp_path, ids)], client(standin, tmp_path, retries=2))
    assert a.verdict is Verdict.ATTENTION
    assert a.refs[0].state.value == "unknown"
    assert "HTTP 503" in a.reason and "after 3 attempts" in a.reason


def test_timeout_is_unknown_never_guessed(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = engine_history
    late = Fault(status=None, delay=1.0)
    standin.fail("/repos/acme/engine/pulls/11", late, late)
    c = client(standin, tmp_path, timeout=0.2, retries=1)
    (a,) = assess([one_patch(tmp_path, ids)], c)
    assert a.verdict is Verdict.ATTENTION
    assert a.refs[0].state.value == "unknown"
    assert "no answer within 0.2 s (2 attempts)" in a.reason
    assert c.stats.statuses["timeout"] == 2


def test_rate_limit_with_a_far_reset_stops_with_a_clear_message(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = engine_history
    reset = int(time.time()) + 3000
    limited = Fault(
        403,
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset), "x-ratelimit-limit": "60"},
        "API rate limit exceeded",
    )
    standin.fail("/repos/acme/engine/", limited)
    slept: list[float] = []
    with pytest.raises(RateLimitError) as info:
        assess([one_patch(tmp_path, ids)], client(standin, tmp_path, sleep=slept.append))
    message = str(info.value)
    assert "rate limit reached (60 requests an hour)" in message
    assert time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(reset)) + " UTC" in message
    assert "--max-wait" in message
    assert TOKEN not in message
    assert slept == []  # it did not wait for an hour


def test_rate_limit_within_the_bound_is_waited_for(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = engine_history
    reset = int(time.time()) + 20
    standin.fail(
        "/repos/acme/engine/pulls/11",
        Fault(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}, "limit"),
        Fault(429, {"retry-after": "7"}, "secondary rate limit"),
    )
    slept: list[float] = []
    c = client(standin, tmp_path, sleep=slept.append, max_wait=120)
    (a,) = assess([one_patch(tmp_path, ids)], c)
    assert a.verdict is Verdict.REMOVE
    # waited until the reset (measured against the answer's Date) and then retry-after
    assert len(slept) == 2
    assert 15 <= slept[0] <= 23
    assert slept[1] == 7.0


def test_token_is_redacted_from_answers(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = engine_history
    standin.fail("/repos/acme/engine/pulls/11", Fault(401, {}, f"token {TOKEN} is revoked"))
    c = client(standin, tmp_path)
    (a,) = assess([one_patch(tmp_path, ids)], c)
    assert a.refs[0].state.value == "unknown"
    assert TOKEN not in a.reason and "token *** is revoked" in a.reason
    assert TOKEN not in repr(c)
    for path in (tmp_path / "cache").rglob("*.json"):
        assert TOKEN not in path.read_text()


def test_api_base_must_be_http() -> None:
    from patchbay.errors import InputError

    with pytest.raises(InputError, match="not an http"):
        GitHubClient("ftp://example.invalid")


# -- waivers and the audit -------------------------------------------------------------------------


def test_passed_waiver_review_needs_attention(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    from datetime import date

    _, ids = engine_history
    refs = {"open": ["acme/engine#17"], "fresh": ["acme/engine#18"]}
    ps = load_patchset(write_patchset(tmp_path / "ps", ids["P"], refs, waived=("open",)))
    waivers = tmp_path / "waivers"
    waivers.mkdir()
    (waivers / "w1.md").write_text(
        "---\nid: w1\npatches: [open]\nreview_by: 2026-08-01\n---\n\n# Waiver\n"
    )
    (waivers / "w2.md").write_text(
        "---\nid: w2\npatches: [engine/fresh]\nexpires: 2027-01-01\n---\n\n# Waiver\n"
    )
    reviews = waiver_reviews(waivers, [ps])
    assert reviews[("engine", "open")].review == date(2026, 8, 1)
    got = {
        a.patch_id: a
        for a in assess([ps], client(standin, tmp_path), today=date(2026, 9, 1), waivers=reviews)
    }
    assert got["open"].verdict is Verdict.ATTENTION
    assert "review date 2026-08-01 of waiver w1 has passed" in got["open"].reason
    assert got["fresh"].verdict is Verdict.KEEP


def test_audit_findings_name_file_line_and_patch(
    standin: GitHubStandIn, engine_history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = engine_history
    refs = {"in-image": ["acme/engine#11"], "open": ["acme/engine#17"], "later": ["acme/engine#14"]}
    ps = load_patchset(write_patchset(tmp_path / "ps", ids["P"], refs))
    findings = upstream_findings([ps], client=client(standin, tmp_path))
    assert len(findings) == 1
    path, line, patch_id, message = findings[0]
    assert (path, patch_id) == (ps.path, "in-image")
    assert ps.path.read_text().splitlines()[line - 1].strip().startswith("upstream:")
    assert "remove the patch" in message and ids["S"][:12] in message


def test_audit_findings_default_client_reads_the_environment(
    standin: GitHubStandIn,
    engine_history: tuple[Path, dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, ids = engine_history
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    ps = one_patch(tmp_path, ids)
    findings = upstream_findings([ps], api_url=standin.url, cache_dir=tmp_path / "cache")
    assert [f[2] for f in findings] == ["fix"]
    assert standin.count("POST", "/graphql") == 1  # a token: one GraphQL query


def test_revert_scan_follows_reverts_and_reapplies() -> None:
    from patchbay.upstream.fixes import RevertScan
    from patchbay.upstream.queries import CommitInfo

    fix, r1, r2, r3 = "f" * 40, "1" * 40, "2" * 40, "3" * 40
    scan = RevertScan(fix, "Fix the cache (#7)")
    scan.feed(
        [CommitInfo("a" * 40, 'Revert "Other change"\n\nThis reverts commit ' + "b" * 40, None)]
    )
    assert scan.present
    scan.feed(
        [CommitInfo(r1, f'Revert "Fix the cache (#7)"\n\nThis reverts commit {fix[:10]}.', None)]
    )
    assert not scan.present and scan.last_revert is not None and scan.last_revert.sha == r1
    scan.feed([CommitInfo(r2, f"Reapply the cache fix\n\nThis reverts commit {r1}.", None)])
    assert scan.present
    # a revert by title alone (GitHub's revert of a squash merge names no commit) counts too
    scan.feed([CommitInfo(r3, 'Revert "Fix the cache" (#9)', None)])
    assert not scan.present and scan.last_revert.sha == r3
