"""Upstream coverage per hunk (``upstream: [{ref, covers}]``): a merged reference that covers
only some hunks of a diff never makes the patch removable by itself (the GitHub stand-in on
127.0.0.1 serves a real git history); ``covers`` is checked against the diff; the report and
``waiver new`` show what each reference covers and the local rest with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from github_standin import GitHubStandIn, build_engine_history, serve_engine
from inprocess import run_main
from patchbay.patchset.loading import load_patchset
from patchbay.upstream import GitHubClient
from patchbay.upstream.status import assess
from patchbay.upstream.verdicts import Verdict

# files the served history does not have: the forge cannot show their content, so the
# verdicts below are by reference only (tests/upstream/test_upstream_truth.py reads content)
DIFF = (
    "--- a/engine/carried.py\n+++ b/engine/carried.py\n"
    "@@ -1,2 +1,3 @@\n a = 1\n+b = 2\n c = 3\n"
    "@@ -10,2 +11,3 @@\n j = 1\n+k = 2\n l = 3\n"
    "--- a/engine/other.py\n+++ b/engine/other.py\n"
    "@@ -1,2 +1,3 @@\n x = 1\n+y = 2\n z = 3\n"
)


def _patchset(folder: Path, pin: str, upstream: str, status: str | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "core.patch").write_text(DIFF)
    text = (
        "schema: 1\nname: engine\nimage: {reference: example.invalid/engine:1.0}\n"
        f"components:\n  - {{distribution: engine, repository: acme/engine, commit: {pin}}}\n"
        "targets:\n  engine: {package: engine}\npatches:\n"
        "  - id: part\n    kind: diff\n    target: engine\n    description: d\n"
        f"    file: core.patch\n    upstream: {upstream}\n"
    )
    if status:
        text += f"    upstream_status: {status}\n"
    (folder / "patchset.yaml").write_text(text)
    return folder


LOCAL = "{status: Pending, reason: the rest is local tuning}"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("coverage") / "engine"
    return path, build_engine_history(path)


def test_a_merged_reference_covering_one_hunk_says_refresh_not_remove(
    tmp_path: Path, history: tuple[Path, dict[str, str]]
) -> None:
    path, ids = history
    partial = _patchset(tmp_path / "a", ids["P"], "[{ref: acme/engine#11, covers: [1]}]", LOCAL)
    files = _patchset(
        tmp_path / "b", ids["P"], "[{ref: acme/engine#11, covers: [engine/carried.py]}]", LOCAL
    )
    whole = _patchset(tmp_path / "c", ids["P"], "[acme/engine#11]")
    with GitHubStandIn() as server:
        serve_engine(server, path, ids)
        client = GitHubClient(server.url, cache_dir=tmp_path / "cache")
        got = [assess([load_patchset(ps)], client)[0] for ps in (partial, files, whole)]
    a, b, c = got
    # #11 is merged before the pin and covers it all, but no content confirms it
    assert c.verdict is Verdict.ATTENTION and c.reason.startswith("by reference only")
    assert a.verdict is Verdict.REFRESH
    assert "hunks 2-3 not covered by it (local)" in a.reason
    assert a.coverage == [
        "acme/engine#11 covers hunk 1",
        "hunks 2-3 are local: the rest is local tuning",
    ]
    assert b.verdict is Verdict.REFRESH and "hunk 3 not covered" in b.reason
    assert b.coverage[0] == "acme/engine#11 covers engine/carried.py"
    assert a.to_json()["coverage"] == a.coverage
    # the report shows it in every format
    from patchbay.upstream.report import build_report
    from patchbay.upstream.report_formats import render

    with GitHubStandIn() as server:
        serve_engine(server, path, ids)
        client = GitHubClient(server.url, cache_dir=tmp_path / "cache2")
        report = build_report([load_patchset(partial)], client)
    for fmt in ("markdown", "html", "json"):
        text = render(report, fmt)
        assert "acme/engine#11 covers hunk 1" in text, fmt
        assert "hunks 2-3 are local: the rest is local tuning" in text, fmt


def test_covers_is_checked_against_the_diff_and_needs_a_reason(tmp_path: Path) -> None:
    pin = "a" * 40
    for name, upstream, status, message in [
        ("past", "[{ref: o/r#1, covers: [4]}]", LOCAL, "covers hunk 4, but the patch has 3"),
        ("file", "[{ref: o/r#1, covers: [engine/nope.py]}]", LOCAL, "no file of the patch"),
        ("why", "[{ref: o/r#1, covers: [1]}]", None, "give `upstream_status` with the reason"),
    ]:
        ps = _patchset(tmp_path / name, pin, upstream, status)
        res = run_main("validate", ps)
        assert res.code == 2, name
        assert f"{ps / 'patchset.yaml'}:" in res.err and message in res.err, res.err
    ps = tmp_path / "replace"
    ps.mkdir()
    (ps / "patchset.yaml").write_text(
        "schema: 1\nname: e\nimage: {reference: x}\ntargets:\n  engine: {package: engine}\n"
        "patches:\n  - {id: r, kind: replace, target: engine, description: d,\n"
        f"     upstream: [{{ref: o/r#1, covers: [1]}}], upstream_status: {LOCAL},\n"
        "     edits: [{file: engine/a.py, old: a, new: b}]}\n"
    )
    res = run_main("validate", ps)
    assert res.code == 2 and "`covers` names hunks or files of a diff patch" in res.err


def test_the_waiver_template_shows_what_each_reference_covers(tmp_path: Path) -> None:
    ps = _patchset(tmp_path / "ps", "a" * 40, "[{ref: o/r#1, covers: [1, 3]}]", LOCAL)
    out = tmp_path / "w.md"
    res = run_main("waiver", "new", ps, "part", "--id", "w", "-o", out)
    assert res.code == 0, res.err
    text = out.read_text()
    assert (
        "- `part`: o/r#1 (Upstream-Status Pending: the rest is local tuning); o/r#1 covers "
        "hunks 1, 3; hunk 2 is local: the rest is local tuning"
    ) in text
