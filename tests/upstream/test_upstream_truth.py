"""Per-hunk truth on real upstream history (issue 12): the ``acme/kv`` engine of
:mod:`kv_engine` (real git), served by the GitHub stand-in. Every state and verdict, and the
agreement of ``status``, ``check``, ``report`` and ``audit --upstream`` on every patch."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from conftest import build_wheel, make_engine, run_cli
from github_standin import GitHubStandIn
from kv_engine import KvEngine, build_kv_engine, git_bytes, serve_kv
from patchbay.audit import run_audit
from patchbay.cli.commands.report import run as report_run

STATUS = {
    "int64-strides": "redundant",
    "attn-three": "pending",
    "sched-cap": "pending",
    "late": "pending",
    "open-work": "pending",
}
CHECK = {
    "int64-strides": "upstream",
    "attn-three": "conflict",
    "sched-cap": "applies",
    "late": "upstream",
    "open-work": "applies",
}
REPORT = {
    "int64-strides": "remove",
    "attn-three": "refresh",
    "sched-cap": "attention",
    "late": "bump",
    "open-work": "keep",
}
# what the report says with no image at hand (it reads the files from the forge)
FORGE = REPORT  # the forge serves the files: the same verdicts by content


@pytest.fixture(scope="module")
def kv(tmp_path_factory: pytest.TempPathFactory) -> KvEngine:
    return build_kv_engine(tmp_path_factory.mktemp("kv"))


@pytest.fixture
def forge(kv: KvEngine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> GitHubStandIn:
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "PATCHBAY_GITHUB_API"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with GitHubStandIn() as server:
        serve_kv(server, kv)
        yield server


def _json(*args: str | Path) -> dict:
    res = run_cli(*args, "--json")
    assert "Traceback" not in res.err, res.err
    return json.loads(res.out)


def _report(kv: KvEngine, forge: GitHubStandIn, tmp_path: Path, *, images: bool) -> dict:
    out = tmp_path / "report.json"
    code = report_run(
        [str(kv.patchset)],
        repo=kv.patchset.parent.parent,
        outputs=[out],
        api_url=forge.url,
        cache_dir=tmp_path / "cache",
        no_history=True,
        root=kv.pinned if images else None,
        candidate_root=kv.candidate if images else None,
        today=date(2026, 8, 1),
    )
    assert code == 0
    return {row["id"]: row for row in json.loads(out.read_text())["rows"]}


def _pb501(kv: KvEngine, forge: GitHubStandIn, tmp_path: Path, *, image: bool) -> set[str]:
    result = run_audit(
        kv.patchset.parent.parent,
        upstream=True,
        api_url=forge.url,
        cache_dir=tmp_path / "cache",
        today=date(2026, 8, 1),
        image_root=kv.pinned if image else None,
    )
    return {
        f.message.split(":")[0].removeprefix("patch ") for f in result.findings if f.code == "PB501"
    }


def test_status_on_the_pinned_image(kv: KvEngine) -> None:
    doc = _json("status", kv.patchset, "--root", kv.pinned)
    patches = {p["id"]: p for p in doc["patches"]}
    assert {pid: p["status"] for pid, p in patches.items()} == STATUS
    (hunk,) = patches["int64-strides"]["hunks"]
    assert hunk["state"] == "upstream" and hunk["moved"] == {"first_line": 12, "last_line": 16}
    assert patches["int64-strides"]["applied_by"] == "image"
    assert run_cli("status", kv.patchset, "--root", kv.pinned).code == 0


def test_check_on_the_candidate_names_what_part_is_upstream(kv: KvEngine) -> None:
    doc = _json("check", kv.patchset, "--root", kv.candidate)
    patches = {p["id"]: p for p in doc["patches"]}
    assert {pid: p["verdict"] for pid, p in patches.items()} == CHECK
    attn = patches["attn-three"]
    assert attn["hunk_counts"] == {"upstream": 1, "pending": 1, "conflict": 1}
    states = [(h["hunk"], h["state"]) for h in attn["hunks"]]
    assert states == [(1, "upstream"), (2, "pending"), (3, "conflict")]  # as hunk_counts says
    closest = attn["hunks"][2]["closest"]
    assert [(c["line"], c["same"]) for c in closest] == [
        (22, False),
        (23, True),
        (24, True),
        (25, True),
    ]
    assert (
        closest[0]["file"] == "    w = int(w or 0)\n" and closest[0]["hunk"] == "    w = int(w)\n"
    )
    text = run_cli("check", kv.patchset, "--root", kv.candidate)
    assert text.code == 1
    assert "1 upstream, 1 pending, 1 conflict" in text.out
    assert "kvengine/decode.py hunk 1: upstream at lines 12-16 (context moved)" in text.out
    assert "! 22 | file:      w = int(w or 0)" in text.out
    assert doc["droppable"] == ["int64-strides", "late"]


def test_the_fix_with_three_lines_of_context_is_ambiguous_never_applied_twice(
    kv: KvEngine, tmp_path: Path
) -> None:
    ps = tmp_path / "ps"
    shutil.copytree(kv.patchset, ps)
    three = git_bytes(kv.repo, "diff", kv.ids["B0"], kv.ids["S31"])  # git's default context
    (ps / "patches" / "int64-strides.patch").write_bytes(three)
    patch = _json("status", ps, "--root", kv.pinned)["patches"][0]
    assert patch["status"] == "ambiguous"
    assert "its change is already at lines 12-16 (context moved)" in patch["hunks"][0]["detail"]


def test_report_verdicts_follow_the_content(
    kv: KvEngine, forge: GitHubStandIn, tmp_path: Path
) -> None:
    rows = _report(kv, forge, tmp_path, images=True)
    assert {pid: r["verdict"] for pid, r in rows.items()} == REPORT
    attn = rows["attn-three"]
    assert "part upstream in the candidate (hunk 1); hunks 2-3 still needed" in attn["reason"]
    assert attn["candidate"] == "conflict"
    assert attn["candidate_hunks"] == {"upstream": 1, "pending": 1, "conflict": 1}
    assert "already ships" in rows["int64-strides"]["reason"]
    assert "revert" in rows["sched-cap"]["reason"].lower()
    forge_only = _report(kv, forge, tmp_path, images=False)
    assert {pid: r["verdict"] for pid, r in forge_only.items()} == FORGE


def test_status_check_report_and_audit_agree_on_every_patch(
    kv: KvEngine, forge: GitHubStandIn, tmp_path: Path
) -> None:
    status = {
        p["id"]: p["status"] for p in _json("status", kv.patchset, "--root", kv.pinned)["patches"]
    }
    check = {
        p["id"]: p["verdict"]
        for p in _json("check", kv.patchset, "--root", kv.candidate)["patches"]
    }
    report = {pid: r["verdict"] for pid, r in _report(kv, forge, tmp_path, images=True).items()}
    for pid in STATUS:
        if status[pid] == "redundant":  # the pinned image ships it
            assert report[pid] == "remove" and check[pid] == "upstream"
        if check[pid] == "upstream":  # a newer image drops it
            assert report[pid] in ("remove", "bump")
        if check[pid] in ("partial", "conflict", "ambiguous"):  # still needed, in part
            assert report[pid] in ("refresh", "attention", "keep")
        if report[pid] in ("remove", "bump"):
            assert check[pid] == "upstream"
    # PB501 is the report's "remove", with the same evidence or without any
    assert _pb501(kv, forge, tmp_path, image=True) == {
        p for p, v in report.items() if v == "remove"
    }
    forge_only = _report(kv, forge, tmp_path, images=False)
    removable = {p for p, r in forge_only.items() if r["verdict"] == "remove"}
    assert _pb501(kv, forge, tmp_path, image=False) == removable == {"int64-strides"}


def test_the_same_diff_from_git_in_three_forms_stays_applied(kv: KvEngine, tmp_path: Path) -> None:
    root = tmp_path / "image"
    shutil.copytree(kv.pinned, root)
    ps = tmp_path / "ps"
    shutil.copytree(kv.patchset, ps)
    assert run_cli("apply", ps, "--root", root).code == 0
    patch_file = ps / "patches" / "sched-cap.patch"
    mail = git_bytes(kv.repo, "format-patch", "-1", "--stdout", "--abbrev=12", kv.ids["S35"])
    long_index = git_bytes(kv.repo, "diff", "--abbrev=12", kv.ids["R34"], kv.ids["S35"])
    assert b"Subject: [PATCH] Cap batch size (#35)" in mail and b"\n-- \n" in mail  # signature
    assert re.search(rb"^index [0-9a-f]{12}\.\.[0-9a-f]{12} ", long_index, re.M)
    assert re.search(rb"^index [0-9a-f]{7}\.\.[0-9a-f]{7} ", patch_file.read_bytes(), re.M)
    identities = set()
    for form in (long_index, mail):
        assert form != patch_file.read_bytes()
        patch_file.write_bytes(form)
        patch = {p["id"]: p for p in _json("status", ps, "--root", root)["patches"]}["sched-cap"]
        assert patch["status"] == "applied", patch["notes"]
        identities.add(patch["patch_identity"])
    assert len(identities) == 1
    assert "nothing to do" in run_cli("apply", ps, "--root", root).out


def test_a_reinstall_after_apply_is_seen_and_cleared(kv: KvEngine, tmp_path: Path) -> None:
    wheel = build_wheel(kv.pinned, tmp_path / "wheels")
    engine = make_engine(tmp_path / "env", wheel)
    assert run_cli("apply", kv.patchset, "--python", engine.python).code == 0
    applied = {
        p["id"]: p for p in _json("status", kv.patchset, "--python", engine.python)["patches"]
    }
    assert applied["attn-three"]["status"] == "applied"
    assert applied["attn-three"]["applied_by"] == "patchbay"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(engine.python), "install", "--quiet",
         "--no-index", "--no-deps", "--force-reinstall", str(wheel)],
        check=True,
    )  # fmt: skip
    after = {p["id"]: p for p in _json("status", kv.patchset, "--python", engine.python)["patches"]}
    for pid in ("attn-three", "sched-cap", "late", "open-work"):
        assert after[pid]["status"] == "pending" and after[pid]["applied_by"] is None
        assert after[pid]["ledger"]["matches_tree"] is False
    res = run_cli("revert", kv.patchset, "--python", engine.python)
    assert res.code == 0, res.err
    assert res.out.count("cleared ") == 4
    assert all(
        p["ledger"] is None
        for p in _json("status", kv.patchset, "--python", engine.python)["patches"]
    )


def test_without_an_image_the_report_reads_the_files_from_the_forge_and_caches_them(
    kv: KvEngine, forge: GitHubStandIn, tmp_path: Path
) -> None:
    check = {
        p["id"]: p["verdict"]
        for p in _json("check", kv.patchset, "--root", kv.candidate)["patches"]
    }
    rows = _report(kv, forge, tmp_path, images=False)
    contents = [e for e in forge.log if e.path.startswith("/repos/acme/kv/contents/")]
    assert contents and all(e.status == 200 for e in contents)
    refs = {e.path.split("ref=", 1)[1] for e in contents}
    assert kv.ids["P"] in refs and len(refs) > 1  # the pinned commit, and merge commits
    attn = rows["attn-three"]
    assert attn["verdict"] == "refresh"  # merged, but only hunk 1 landed: never "bump"
    assert "hunks 2-3 still needed" in attn["reason"] and "from the forge" in attn["reason"]
    assert [e["image"] for e in attn["evidence"]] == ["pinned", "candidate"]
    # at #33's merge commit hunk 1 is there, 2 and 3 still apply (the candidate, later, has
    # #34 too, which is why hunk 3 conflicts there)
    assert attn["evidence"][1]["hunk_counts"] == {"upstream": 1, "pending": 2}
    # `remove` exactly where check finds the whole patch upstream and the pin holds it
    removable = {pid for pid, r in rows.items() if r["verdict"] == "remove"}
    assert removable == {"int64-strides"} <= {p for p, v in check.items() if v == "upstream"}
    assert "already ships" in rows["int64-strides"]["reason"]
    # a second run asks again with the ETags it kept: the files come from the cache
    forge.clear_log()
    assert {pid: r["verdict"] for pid, r in _report(kv, forge, tmp_path, images=False).items()} == {
        pid: r["verdict"] for pid, r in rows.items()
    }
    again = [e for e in forge.log if e.path.startswith("/repos/acme/kv/contents/")]
    assert again and all(e.status == 304 for e in again)


def test_when_the_forge_serves_no_file_the_verdict_is_by_reference_and_never_remove(
    kv: KvEngine, forge: GitHubStandIn, tmp_path: Path
) -> None:
    from github_standin import Fault

    forge.fail("/repos/acme/kv/contents/", *[Fault(status=404, message="Not Found")] * 50)
    rows = _report(kv, forge, tmp_path, images=False)
    assert "remove" not in {r["verdict"] for r in rows.values()}
    strides = rows["int64-strides"]
    assert strides["verdict"] == "attention"
    assert strides["reason"].startswith("by reference only: the content could not be read")
    assert _pb501(kv, forge, tmp_path, image=False) == set()  # the audit agrees
