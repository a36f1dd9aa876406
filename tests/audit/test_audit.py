"""`patchbay audit`: every patch and waiver rule (PB1xx-PB3xx) positive and negative, the
configuration, exit codes, and the output formats (JSON, GitHub annotations, SARIF against the
SARIF 2.1.0 schema in tests/data), through the real CLI."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from datetime import date
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console

from conftest import REPO, dedent, run_cli, write_patchset
from patchbay.audit import AuditResult, Finding, Severity, Suppression, formats, run_audit
from patchbay.audit.waived import ScriptLink, ScriptLinks, waive
from patchbay.errors import InputError
from patchbay.waivers import Waiver

DATA = Path(__file__).resolve().parents[1] / "data"
TODAY = "2030-01-01"
EDIT = [{"file": "demo_engine/x.py", "old": "a = 1\n", "new": "a = 2\n"}]


def _waiver(patches: list[str], *, wid: str, front: str = "", body: str | None = None) -> str:
    head = (
        f"---\nid: {wid}\npatches: [{', '.join(patches)}]\n"
        + (
            front
            or "owner: '@team'\nfiled: 2029-01-01\nreview_by: 2099-01-01\nstatus: approved\n"
            "approval: https://example.invalid/pr/1#review\n"
        )
        + "---\n"
    )
    return head + (
        body
        if body is not None
        else dedent(
            """
            # Waiver

            ## What is patched
            The scheduler's batch cap.

            ## Why the unmodified image cannot run the benchmark
            The server crashes on the first full batch.

            ## Upstream
            - demo-org/demo-engine#101

            ## Removal plan
            Drop it when the image contains demo-org/demo-engine#101.
            """
        )
    )


def _rules_repo(root: Path) -> Path:
    write_patchset(
        root / "patchsets" / "main",
        [
            {"id": "p-ok", "kind": "diff", "file": "patches/good.patch", "waiver": "w-ok"},
            {"id": "p-nowaiver", "kind": "replace", "edits": EDIT},
            {"id": "p-badwaiver", "kind": "replace", "edits": EDIT, "waiver": "w-missing"},
            {"id": "p-mismatch", "kind": "replace", "edits": EDIT, "waiver": "w-ok"},
            {
                "id": "p-tbd",
                "kind": "replace",
                "edits": EDIT,
                "upstream": [],
                "upstream_status": {"status": "Pending", "reason": "TBD"},
            },
            {"id": "p-missingfile", "kind": "diff", "file": "patches/missing.patch"},
            {"id": "p-listed", "kind": "replace", "edits": EDIT},
            {
                "id": "p-reason",
                "kind": "replace",
                "edits": EDIT,
                "upstream": [],
                "upstream_status": {"status": "Inappropriate", "reason": "benchmark-only switch"},
            },
            {"id": "p-legacy", "kind": "replace", "edits": EDIT, "waiver": "1350"},
        ],
        name="main",
        files={"patches/good.patch": "diff\n", "patches/stray.patch": "diff\n"},
    )
    waivers = root / "waivers"
    waivers.mkdir()
    files = {
        "w-ok.md": _waiver(["p-ok"], wid="w-ok"),
        "w-listed.md": _waiver(
            ["p-tbd", "p-missingfile", "p-listed", "p-reason", "gone-patch"], wid="w-listed"
        ),
        "w-orphan.md": _waiver(["removed-patch"], wid="w-orphan"),
        "w-blank.md": _waiver(
            ["main/p-listed"],
            wid="w-blank",
            front="owner: '<TODO: who>'\nfiled: 2029-01-01\nreview_by: 2099-01-01\n"
            "status: approved\napproval: https://example.invalid/pr/2\n",
            body="# W\n\n## What is patched\nThe cap.\n\n## Why\nTODO\n\n## Upstream\n- o/r#1\n",
        ),
        "w-expired.md": _waiver(
            ["p-listed"],
            wid="w-expired",
            front="owner: me\nfiled: 2019-01-01\nreview_by: 2020-01-01\nstatus: approved\n"
            "approval: https://example.invalid/pr/3\n",
        ),
        "w-expiring.md": _waiver(
            ["p-listed"],
            wid="w-expiring",
            front="owner: me\nfiled: 2029-01-01\nexpires: 2030-01-11\nstatus: requested\n",
        ),
        "w-fm-missing.md": _waiver(
            ["p-listed"], wid="w-fm-missing", front="filed: 2029-01-01\nstatus: approved\n"
        ),
        "w-zdup.md": _waiver(["p-ok"], wid="w-ok"),
        "w-unmapped.md": _waiver(
            ["p-listed"],
            wid="w-unmapped",
            body="# W\n\n## What is patched\nThe cap.\n\n## Why\nIt crashes.\n\n"
            "## Upstream\n- lmdeploy #12\n\n## Removal plan\nWith lmdeploy 0.9.\n",
        ),
        "README.md": "# Waivers\n\nOne file per waiver.\n",
    }
    for name, text in files.items():
        (waivers / name).write_text(text)
    shutil.copy(DATA / "waivers-legacy" / "1350.md", waivers / "1350.md")
    return root


@pytest.fixture(scope="module")
def rules_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _rules_repo(tmp_path_factory.mktemp("rules"))


@pytest.fixture(scope="module")
def report(rules_repo: Path) -> dict:
    res = run_cli("audit", rules_repo, "--format", "json", "--today", TODAY)
    assert res.code == 1, res.err
    return json.loads(res.out)


def _found(report: dict) -> set[tuple[str, str, int | None]]:
    return {(f["code"], f["path"], f["line"]) for f in report["findings"]}


PS = "patchsets/main/patchset.yaml"


def _patch_line(repo: Path, patch_id: str, key: str = "id") -> int:
    lines = (repo / PS).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith(f"id: {patch_id}"))
    if key == "id":
        return start + 1
    return next(
        i + 1 for i, line in enumerate(lines) if i >= start and line.strip().startswith(f"{key}:")
    )


def test_patch_and_waiver_coverage_rules(rules_repo: Path, report: dict) -> None:
    found = _found(report)
    # positives
    assert ("PB101", PS, _patch_line(rules_repo, "p-nowaiver")) in found
    assert ("PB102", PS, _patch_line(rules_repo, "p-badwaiver", "waiver")) in found
    assert ("PB103", "waivers/w-orphan.md", 3) in found
    assert ("PB104", "waivers/w-listed.md", 3) in found
    assert ("PB105", PS, _patch_line(rules_repo, "p-mismatch", "waiver")) in found
    assert ("PB208", "waivers/w-zdup.md", 2) in found
    # negatives: covered by `waiver:`, by a waiver's list (bare or patchset/id), or both
    pb101 = {line for code, path, line in found if code == "PB101"}
    assert pb101 == {_patch_line(rules_repo, "p-nowaiver")}
    assert {p for c, p, _ in found if c == "PB103"} == {"waivers/w-orphan.md"}
    assert {c for c, p, _ in found if p == "waivers/w-ok.md"} == set()
    assert not [f for f in report["findings"] if "README" in f["path"]]


def test_waiver_content_rules(report: dict) -> None:
    found = _found(report)
    assert ("PB201", "waivers/w-blank.md", 1) in found  # no removal plan
    assert ("PB202", "waivers/w-blank.md", 4) in found  # owner placeholder
    assert ("PB202", "waivers/w-blank.md", 16) in found  # "Why: TODO"
    assert ("PB203", "waivers/w-expired.md", 6) in found
    assert ("PB204", "waivers/w-expiring.md", 6) in found
    assert ("PB205", "waivers/w-expiring.md", 7) in found
    missing = [
        f["message"] for f in report["findings"]
        if f["code"] == "PB201" and f["path"] == "waivers/w-fm-missing.md"
    ]  # fmt: skip
    assert len(missing) == 3
    assert any("owner" in m for m in missing)
    assert any("review_by" in m for m in missing)
    assert any("approval" in m for m in missing)
    assert ("PB206", "waivers/1350.md", 1) in found
    # `lmdeploy #12` names no repository; `flashinfer #1877` resolves through the map import
    # uses too (patchbay.environment.projects)
    assert ("PB207", "waivers/w-unmapped.md", 19) in found
    assert {c for c, p, _ in found if p == "waivers/w-unmapped.md"} == {"PB207"}
    assert ("PB207", "waivers/1350.md", 13) not in found
    # negatives: a complete, approved waiver far from its review date
    for code in ("PB201", "PB202", "PB203", "PB204", "PB205", "PB206", "PB207"):
        assert (code, "waivers/w-ok.md") not in {(c, p) for c, p, _ in found}
    assert {c for c, p, _ in found if p == "waivers/w-listed.md"} == {"PB104"}
    severities = {f["code"]: f["severity"] for f in report["findings"]}
    assert severities["PB204"] == "warning"
    assert severities["PB207"] == "note"


def test_patchset_rules(rules_repo: Path, report: dict) -> None:
    found = _found(report)
    assert ("PB301", PS, _patch_line(rules_repo, "p-tbd", "reason")) in found
    assert ("PB302", PS, _patch_line(rules_repo, "p-missingfile", "file")) in found
    assert ("PB303", "patchsets/main/patches/stray.patch", None) in found
    assert {c for c, p, _ in found if c in ("PB301", "PB302", "PB303")} == {
        "PB301",
        "PB302",
        "PB303",
    }
    assert len([1 for c, _p, _l in found if c == "PB301"]) == 1  # p-reason has a real reason
    assert ("PB303", "patchsets/main/patches/good.patch", None) not in found


def test_legacy_waivers_in_an_audit(tmp_path: Path) -> None:
    """The four legacy layouts audit with their known gaps only: no missing field; 1402's two
    upstream rows; `project #N` resolved through the default project map, which
    upstream-names overrides."""
    write_patchset(
        tmp_path / "patchsets" / "legacy",
        [
            {"id": f"p{n}", "kind": "replace", "edits": EDIT, "waiver": n}
            for n in ("1204", "1311", "1350", "1402")
        ],
    )
    shutil.copytree(DATA / "waivers-legacy", tmp_path / "waivers")
    res = run_cli("audit", tmp_path, "--format", "json")
    assert res.code == 1, res.err
    doc = json.loads(res.out)
    found = sorted((f["path"][8:], f["line"], f["code"]) for f in doc["findings"])
    assert found == [
        ("1204.md", 1, "PB206"),
        ("1311.md", 1, "PB206"),
        ("1350.md", 1, "PB206"),
        ("1402.md", 1, "PB206"),
        ("1402.md", 3, "PB205"),
        ("1402.md", 17, "PB202"),
        ("1402.md", 18, "PB202"),
    ]
    rows = [f["message"] for f in doc["findings"] if f["code"] == "PB202"]
    assert "block32 dense linear" in rows[0] and "host table pointers" in rows[1]
    waivers = {w["id"]: w for w in doc["waivers"]}
    assert set(waivers) == {"1204", "1311", "1350", "1402"}
    assert all(w["legacy"] for w in waivers.values())
    assert waivers["1402"]["fields"]["upstream"]["status"] == "placeholder"
    assert {n: f["status"] for n, f in waivers["1311"]["fields"].items()} == dict.fromkeys(
        ("what", "why", "upstream", "removal"), "found"
    )
    refs = {r["reference"] for w in doc["waivers"] for r in w["references"]}
    assert {"flashinfer-ai/flashinfer#1877", "vllm-project/vllm#48110", "ROCm/aiter#3950"} <= refs
    (tmp_path / "patchbay.toml").write_text('upstream-names = {flashinfer = "my-org/flashinfer"}\n')
    mapped = json.loads(run_cli("audit", tmp_path, "--format", "json").out)
    refs = {r["reference"] for w in mapped["waivers"] for r in w["references"]}
    assert "my-org/flashinfer#1877" in refs and "flashinfer-ai/flashinfer#1877" not in refs


def test_severity_and_ignores_from_config(rules_repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "patchbay.toml"
    config.write_text(
        dedent(
            """
            [severity]
            PB101 = "off"
            PB208 = "warning"

            [[ignore]]
            rule = "PB303"
            paths = ["patchsets/**"]
            reason = "kept for the 0.3 image until it is retired"
            """
        )
    )
    res = run_cli("audit", rules_repo, "--format", "json", "--today", TODAY, "--config", config)
    assert res.code == 1, res.err
    findings = json.loads(res.out)["findings"]
    assert not [f for f in findings if f["code"] == "PB101"]
    assert {f["severity"] for f in findings if f["code"] == "PB208"} == {"warning"}
    (stray,) = [f for f in findings if f["code"] == "PB303"]
    assert stray["suppressed"] == {
        "kind": "external",
        "reason": "kept for the 0.3 image until it is retired",
    }


def test_exit_codes_follow_fail_on(tmp_path: Path) -> None:
    """Only a warning (a waiver within its expiry window): exit 0 by default, 1 with
    --fail-on warning; the summary says so."""
    write_patchset(tmp_path / "patchsets" / "one", [{"id": "p1", "kind": "replace", "edits": EDIT}])
    (tmp_path / "waivers").mkdir()
    (tmp_path / "waivers" / "w.md").write_text(
        _waiver(
            ["p1"],
            wid="w",
            front="owner: me\nfiled: 2029-01-01\nreview_by: 2030-01-05\nstatus: approved\n"
            "approval: https://example.invalid/pr/1\n",
        )
    )
    clean = run_cli("audit", tmp_path, "--today", TODAY)
    assert clean.code == 0, clean.out + clean.err
    assert "1 warning(s)" in clean.out
    assert "waivers/w.md" in clean.out  # the table is grouped by file
    strict = run_cli("audit", tmp_path, "--today", TODAY, "--fail-on", "warning")
    assert strict.code == 1


@pytest.mark.parametrize(
    ("toml", "line", "reason"),
    [
        ('[tool.patchbay]\nwaivers = "w"\nfail_on = "error"\n', 3, "unknown key"),
        ('[tool.patchbay.severity]\nPB999 = "error"\n', 1, "unknown rule"),
        ('[tool.patchbay]\n\n[[tool.patchbay.ignore]]\nrule = "PB303"\n', 3, "reason"),
        (
            '[tool.patchbay]\n\n[[tool.patchbay.ignore]]\nrule = "PB303"\nreason = "TBD"\n',
            5,
            "reason",
        ),
        ("[tool.patchbay]\nwaivers = \n", 2, "invalid TOML"),
        ('[tool.patchbay]\nscripts = ["/etc/**"]\n', 2, "globs are relative"),
        ('[tool.patchbay]\nexclude = ["../**/*.sh"]\n', 2, "globs are relative"),
    ],
)
def test_bad_configuration_is_one_line_exit_2(
    tmp_path: Path, toml: str, line: int, reason: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(toml)
    res = run_cli("audit", tmp_path)
    assert res.code == 2
    assert res.err.startswith(f"patchbay: error: {tmp_path / 'pyproject.toml'}:{line}: ")
    assert reason in res.err
    assert "Traceback" not in res.err


def test_malformed_waiver_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "waivers").mkdir()
    (tmp_path / "waivers" / "w.md").write_text("---\nid: w\nstatus: maybe\n---\n# W\n")
    res = run_cli("audit", tmp_path)
    assert res.code == 2
    assert res.err.strip().splitlines() == [
        f"patchbay: error: {tmp_path / 'waivers' / 'w.md'}:3: waiver front matter: status: "
        "must be 'requested' or 'approved', not 'maybe'"
    ]


def test_sarif_validates_against_the_sarif_schema(rules_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "audit.sarif"
    res = run_cli("audit", rules_repo, "--format", "sarif", "--today", TODAY, "--output", out)
    assert res.code == 1
    log = json.loads(out.read_text())
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft4Validator(schema).validate(log)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert all(r["id"] == r["id"].upper() and r["id"].startswith("PB") for r in rules)
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
    by_rule = {r["ruleId"]: r for r in run["results"]}
    region = by_rule["PB101"]["locations"][0]["physicalLocation"]
    assert region["artifactLocation"]["uri"] == PS
    assert region["region"]["startLine"] > 0


def test_sarif_marks_suppressions(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(
        "cp x.py /usr/lib/python3/site-packages/vllm/x.py  # patchbay-reviewed: vetted copy\n"
    )
    res = run_cli("audit", tmp_path, "--format", "sarif")
    assert res.code == 0, res.err
    log = json.loads(res.out)
    jsonschema.Draft4Validator(json.loads((DATA / "sarif-schema-2.1.0.json").read_text())).validate(
        log
    )
    (result,) = log["runs"][0]["results"]
    assert result["suppressions"] == [{"kind": "inSource", "justification": "vetted copy"}]


_ANNOTATION = re.compile(
    r"^::(error|warning|notice) file=[^,:]+(,line=\d+)?(,endLine=\d+)?,title=PB\d{3} [a-z-]+::"
    r"[^\r\n]+$"
)


def test_github_annotations(rules_repo: Path) -> None:
    res = run_cli("audit", rules_repo, "--format", "github", "--today", TODAY)
    assert res.code == 1
    lines = res.out.splitlines()
    assert lines and all(_ANNOTATION.match(line) for line in lines), lines
    assert any(line.startswith(f"::error file={PS},line=") for line in lines)
    assert any(line.startswith("::warning file=waivers/w-expiring.md,line=6,") for line in lines)
    assert any(line.startswith("::notice file=waivers/w-unmapped.md,line=19,") for line in lines)
    assert "error(s)" in res.err  # the summary goes to stderr, annotations alone to stdout


def test_github_escaping() -> None:
    from patchbay.audit.formats import _data, _prop

    assert _data("50% done\nnext") == "50%25 done%0Anext"
    assert _prop("a:b,c") == "a%3Ab%2Cc"


def test_demo_patchset_and_its_waivers_audit_clean(tmp_path: Path) -> None:
    """The repository's demo patchset, its two waivers and scripts/demo (whose engine install
    goes into a virtual environment the script itself creates, not into an image) have no
    finding; `.ci/run` audits the whole repository."""
    shutil.copytree(REPO / "patchsets" / "demo", tmp_path / "patchsets" / "demo")
    (tmp_path / "waivers").mkdir()
    for name in ("demo-asm-padding.md", "demo-mla.md"):
        shutil.copy(REPO / "waivers" / name, tmp_path / "waivers" / name)
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "demo", tmp_path / "scripts" / "demo")
    res = run_cli("audit", tmp_path, "--today", "2027-01-01", "--format", "json")
    assert res.code == 0, res.out + res.err
    doc = json.loads(res.out)
    assert doc["counts"] == {"error": 0, "warning": 0, "note": 0, "waived": 0, "suppressed": 0}
    assert doc["findings"] == []


def test_remote_content_without_a_hash(tmp_path: Path) -> None:
    """PB304: an upstream diff source not in the lock, an artifact without sha256; gone once
    the lock pins them."""
    ps = write_patchset(
        tmp_path / "patchsets" / "remote",
        [
            {
                "id": "src",
                "kind": "diff",
                "waiver": "w",
                "source": {"repo": "demo-org/demo-engine", "pr": 7},
            },
            {
                "id": "bin",
                "kind": "artifact",
                "waiver": "w",
                "files": [{"url": "https://example.invalid/k.co", "dest": "k.co", "sha256": None}],
            },
        ],
        name="remote",
    )
    (tmp_path / "waivers").mkdir()
    (tmp_path / "waivers" / "w.md").write_text(_waiver(["src", "bin"], wid="w"))
    res = run_cli("audit", tmp_path, "--today", TODAY, "--format", "json")
    found = [f for f in json.loads(res.out)["findings"] if f["code"] == "PB304"]
    assert sorted(f["message"].split(":")[0] for f in found) == ["patch bin", "patch src"]
    (ps / "vendor").mkdir()
    (ps / "vendor" / "src.patch").write_text("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n")
    lock = {
        "format": 1,
        "sources": {
            "src": {
                "repo": "demo-org/demo-engine",
                "ref": "demo-org/demo-engine#7",
                "commit": "a" * 40,
                "url": "u",
                "file": "vendor/src.patch",
                "sha256": "0" * 64,
                "base": "b" * 40,
                "paths": [],
            }
        },
        "artifacts": {"https://example.invalid/k.co": {"sha256": "1" * 64, "size": 3}},
    }
    (ps / "patchbay.lock").write_text(json.dumps(lock))
    res = run_cli("audit", tmp_path, "--today", TODAY, "--format", "json")
    assert not [f for f in json.loads(res.out)["findings"] if f["code"] == "PB304"]


@pytest.mark.parametrize(
    ("toml", "line", "reason"),
    [
        ("tool = 1\n", 1, "tool must be a table"),
        ("[tool]\npatchbay = 1\n", 2, "[tool.patchbay] must be a table"),
        ('[tool.patchbay]\nfail-on = "error"\nwaivers = "nope"\n', 3, "'nope' does not exist"),
        ('[tool.patchbay]\nwaivers = "pyproject.toml"\n', 2, "is not a folder"),
    ],
)
def test_configuration_types_and_waivers_path_are_one_line_exit_2(
    tmp_path: Path, toml: str, line: int, reason: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(toml)
    res = run_cli("audit", tmp_path)
    assert res.code == 2
    assert res.err.strip().splitlines() == [
        f"patchbay: error: {tmp_path / 'pyproject.toml'}:{line}: "
        + res.err.split(f":{line}: ", 1)[1].strip()
    ]
    assert reason in res.err
    assert "Traceback" not in res.err


def test_waivers_path_that_exists_or_default_is_fine(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool]\nblack = {}\n")
    assert run_cli("audit", tmp_path).code == 0  # no [tool.patchbay], no waivers/: defaults
    (tmp_path / "patchbay.toml").write_text('waivers = "docs/waivers"\n')
    assert run_cli("audit", tmp_path).code == 2
    (tmp_path / "docs" / "waivers").mkdir(parents=True)
    res = run_cli("audit", tmp_path)
    assert res.code == 0, res.err


def _two_patchsets(root: Path) -> None:
    edits = [{"file": "a.py", "old": "x", "new": "y"}]
    write_patchset(
        root / "patchsets" / "a",
        [{"id": "pad", "kind": "replace", "edits": edits}],
        name="a",
    )
    write_patchset(
        root / "patchsets" / "b",
        [
            {"id": "pad", "kind": "replace", "edits": edits},
            {"id": "solo", "kind": "replace", "edits": edits},
        ],
        name="b",
    )
    (root / "waivers").mkdir()


def _write_waiver(root: Path, wid: str, patches: str) -> None:
    (root / "waivers" / f"{wid}.md").write_text(
        f'---\nid: {wid}\npatches: {patches}\nowner: "@team"\nfiled: 2026-01-01\n'
        "review_by: 2027-06-01\nstatus: requested\n---\n\n# W\n\n## What is patched\nx\n\n"
        "## Why the unmodified image cannot run the benchmark\nx\n\n## Upstream\n"
        "demo-org/demo-engine#101\n\n## Removal plan\nx\n"
    )


def _codes(root: Path) -> list[tuple[str, str, int, str]]:
    res = run_cli("audit", root, "--format", "json", "--today", TODAY)
    assert res.code in (0, 1), res.err
    return [
        (f["code"], f["path"], f["line"], f["message"])
        for f in json.loads(res.out)["findings"]
        if f["code"] in ("PB101", "PB103", "PB104", "PB106")
    ]


def test_bare_patch_id_shared_by_patchsets_covers_nothing(tmp_path: Path) -> None:
    _two_patchsets(tmp_path)
    _write_waiver(tmp_path, "w1", "[pad, solo]")
    found = _codes(tmp_path)
    pb106 = [f for f in found if f[0] == "PB106"]
    assert [(c, p, n) for c, p, n, _ in pb106] == [("PB106", "waivers/w1.md", 3)]
    assert "a/pad or b/pad" in pb106[0][3]
    # neither pad is covered; solo (unique) is
    assert sorted((c, p) for c, p, _, m in found if c == "PB101") == [
        ("PB101", "patchsets/a/patchset.yaml"),
        ("PB101", "patchsets/b/patchset.yaml"),
    ]
    assert not [f for f in found if f[0] in ("PB103", "PB104")]


def test_two_patchsets_of_one_name_are_an_error_naming_both(tmp_path: Path) -> None:
    """Two folders whose patchsets have the same ``name:``: PB108 names both folders, and the
    PB106 of a bare id they share names the name once and says to rename, never
    "write a/pad or a/pad"."""
    from inprocess import run_main

    _two_patchsets(tmp_path)
    yaml_b = tmp_path / "patchsets" / "b" / "patchset.yaml"
    yaml_b.write_text(yaml_b.read_text().replace("name: b\n", "name: a\n"))
    _write_waiver(tmp_path, "w1", "[pad]")
    res = run_main("audit", "--repo", tmp_path, "--format", "json", "--today", TODAY)
    assert res.code == 1, res.err
    found = {f["code"]: f for f in json.loads(res.out)["findings"]}
    pb108 = found["PB108"]
    assert pb108["path"] == "patchsets/b/patchset.yaml" and pb108["severity"] == "error"
    assert pb108["line"] == yaml_b.read_text().splitlines().index("name: a") + 1
    assert "patchset name a is also used by patchsets/a/patchset.yaml" in pb108["message"]
    message = found["PB106"]["message"]
    assert "2 patchsets named a have" in message and "rename one of the patchsets" in message
    assert "a/pad or a/pad" not in message


def test_qualified_and_unique_ids_cover(tmp_path: Path) -> None:
    _two_patchsets(tmp_path)
    _write_waiver(tmp_path, "w1", "[a/pad, b/pad, solo]")
    assert _codes(tmp_path) == []


def test_unknown_patchset_reference_lists_the_patchsets(tmp_path: Path) -> None:
    _two_patchsets(tmp_path)
    _write_waiver(tmp_path, "w1", "[a/pad, b/pad, solo, c/pad]")
    _write_waiver(tmp_path, "w2", "[zz/pad]")
    found = _codes(tmp_path)
    (pb104,) = [f for f in found if f[0] == "PB104"]
    assert "there is no patchset c (patchsets: a, b)" in pb104[3]
    (pb103,) = [f for f in found if f[0] == "PB103"]
    assert pb103[1] == "waivers/w2.md" and "no patchset zz (patchsets: a, b)" in pb103[3]
    # a patchset that exists, a patch it lacks: no list of patchsets
    _write_waiver(tmp_path, "w2", "[a/solo, solo]")
    (pb104,) = [f for f in _codes(tmp_path) if f[0] == "PB104" and f[1] == "waivers/w2.md"]
    assert "a/solo" in pb104[3] and "patchsets:" not in pb104[3]


# -- adoption before migration: waivers that link patch scripts -------------------------------

INNER = "benchmarks/single_node/apply_k3_container_patches.sh"
OUTER = "benchmarks/single_node/k3_fp4_mi355x.sh"
OTHER = "benchmarks/single_node/apply_ds4_patches.sh"
SITE_LINE = "SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')\n"


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _legacy_waiver(script_line: str, *, number: str = "2508", status: str = "approved") -> str:
    return dedent(
        f"""
        # Engine patch waiver — PR #{number}

        - **Status:** {status}
        {script_line}

        ## What is patched
        The MLA decode path of the installed vLLM (vllm #48110) and one env cap.

        ## Why the unmodified image cannot run the benchmark
        The pinned nightly faults during graph capture at TP8.

        ## Removal plan
        Drop the patch script once a nightly has vllm #48110.
        """
    )


def _adoption_repo(root: Path, waivers: dict[str, str]) -> Path:
    """A benchmark repository that has not moved to patchsets: a benchmark script that runs a
    patch script with `bash path`, a second patch script, waivers named after pull requests
    in docs/waiver/; committed with real git."""
    bench = root / "benchmarks" / "single_node"
    bench.mkdir(parents=True)
    (root / OUTER).write_text(
        f"#!/usr/bin/env bash\nset -euo pipefail\nbash {INNER}\nvllm serve k3 --tp 8\n"
    )
    (root / INNER).write_text(
        "#!/usr/bin/env bash\nset -euo pipefail\n"
        + SITE_LINE
        + 'cd "$SITE" && git apply /workspace/patches/k3_mla.patch\n'
        + "sed -i 's/MAX = 8/MAX = 16/' \"$SITE/vllm/envs.py\"\n"
    )
    (root / OTHER).write_text(
        "#!/usr/bin/env bash\n" + SITE_LINE + "sed -i 's/A = 1/A = 2/' \"$SITE/sglang/srt/x.py\"\n"
    )
    folder = root / "docs" / "waiver"
    folder.mkdir(parents=True)
    for name, text in waivers.items():
        (folder / name).write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "benchmarks")
    return root


def _audit(root: Path, **kwargs: object) -> AuditResult:
    return run_audit(root, today=date(2030, 1, 1), **kwargs)  # type: ignore[arg-type]


def _by_file(result: AuditResult) -> dict[str, list[tuple[int | None, str, str, str | None]]]:
    out: dict[str, list[tuple[int | None, str, str, str | None]]] = {}
    for f in result.findings:
        waiver = f.waived_by.id if f.waived_by else None
        out.setdefault(f.path, []).append((f.line, f.code, f.severity.value, waiver))
    return out


def test_a_waiver_that_names_the_patch_script_waives_its_findings(tmp_path: Path) -> None:
    """docs/waiver/2508.md names the patch script: its findings are waived (note, waiver id),
    the waiver is no orphan, the other patch script stays an error, and a waiver whose
    script is gone is one (PB103)."""
    root = _adoption_repo(
        tmp_path,
        {
            "2508.md": _legacy_waiver(f"- **Patch script:** `{INNER}`"),
            "2490.md": _legacy_waiver(
                "- **Patch script:** `benchmarks/old/apply_old.sh`", number="2490"
            ),
        },
    )
    result = _audit(root)
    found = _by_file(result)
    assert found[INNER] == [(4, "PB401", "note", "2508"), (5, "PB402", "note", "2508")]
    assert found[OTHER] == [(3, "PB402", "error", None)]
    assert found["docs/waiver/2508.md"] == [(1, "PB206", "warning", None)]
    assert [c for _, c, _, _ in found["docs/waiver/2490.md"]] == ["PB103", "PB206"]
    assert OUTER not in found
    assert result.counts() == {"error": 2, "warning": 2, "note": 0, "waived": 2, "suppressed": 0}
    assert {(f.path, f.code) for f in result.failing(Severity.ERROR)} == {
        (OTHER, "PB402"),
        ("docs/waiver/2490.md", "PB103"),
    }
    assert [(link.path, link.line) for link in result.scripts["2508"]] == [(INNER, 4)]

    # JSON: the waived object, the waiver's scripts
    doc = result.to_json()
    waived = [f for f in doc["findings"] if f["waived"]]
    assert [f["waived"] for f in waived] == [
        {"waiver": "2508", "path": "docs/waiver/2508.md", "status": "approved", "script": INNER}
    ] * 2
    assert all(f["severity"] == "note" and f["suppressed"] is None for f in waived)
    waivers = {w["id"]: w for w in doc["waivers"]}
    assert waivers["2508"]["scripts"] == [{"path": INNER, "line": 4}]
    assert waivers["2490"]["scripts"] == []

    # SARIF: level note, an external suppression accepted by the (approved) waiver
    log = formats.sarif(result)
    jsonschema.Draft4Validator(json.loads((DATA / "sarif-schema-2.1.0.json").read_text())).validate(
        log
    )
    sarif = {
        (r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["ruleId"]): r
        for r in log["runs"][0]["results"]
    }
    assert sarif[(INNER, "PB401")]["level"] == "note"
    assert sarif[(INNER, "PB401")]["suppressions"] == [
        {
            "kind": "external",
            "status": "accepted",
            "justification": f"waiver 2508 (docs/waiver/2508.md) covers {INNER}",
        }
    ]
    assert "suppressions" not in sarif[(OTHER, "PB402")]

    # GitHub: a notice that names the waiver; the unwaived script stays an error
    lines = formats.github_lines(result)
    assert (
        f"::notice file={INNER},line=4,title=PB401 undeclared-diff-apply (waived by 2508)::"
        "git apply into <site-packages> "
        "(written $SITE; $SITE, set at line 3; computed with purelib)"
    ) in lines
    assert any(line.startswith(f"::error file={OTHER},line=3,") for line in lines)

    # table: the waived rows are shown, marked; the summary counts them apart
    out = io.StringIO()
    formats.print_table(result, Console(file=out, width=200), Severity.ERROR)
    text = out.getvalue()
    assert text.count("note (waived by 2508)") == 2
    assert "2 error(s), 2 warning(s), 0 note(s), 2 waived, 0 suppressed" in text


def test_without_a_waiver_naming_it_the_patch_script_is_an_error(tmp_path: Path) -> None:
    root = _adoption_repo(tmp_path, {"2508.md": _legacy_waiver("- Config: `k3-fp4`")})
    found = _by_file(_audit(root))
    assert found[INNER] == [(4, "PB401", "error", None), (5, "PB402", "error", None)]
    assert [c for _, c, _, _ in found["docs/waiver/2508.md"]] == ["PB103", "PB206"]


@pytest.mark.parametrize(
    "script_line",
    [
        f"- **Patch script:** `{INNER}`",
        "- Patch script: `benchmarks/.../apply_k3_container_patches.sh`",  # elided folders
        "- **Patch entrypoint:** the benchmark calls `apply_k3_container_patches.sh`",  # bare
        f"- Patch script: [apply](../../{INNER})",  # relative to the waiver's folder
        f"- Patch script: [apply](/{INNER})",  # relative to the repository
        f"- Patch script: <https://github.com/org/bench/blob/main/{INNER}>",
        f"- The edits are made by {INNER}:4-5 before the server starts.",
    ],
)
def test_the_ways_a_waiver_names_a_patch_script(tmp_path: Path, script_line: str) -> None:
    root = _adoption_repo(tmp_path, {"2508.md": _legacy_waiver(script_line)})
    result = _audit(root)
    assert [link.path for link in result.scripts["2508"]] == [INNER]
    inner = [
        (f.code, f.waived_by.id if f.waived_by else None)
        for f in result.findings
        if f.path == INNER
    ]
    assert [w for c, w in inner if c in ("PB401", "PB402")] == ["2508", "2508"]
    assert not [f for f in result.findings if f.code == "PB103"]


def test_a_requested_waiver_waives_under_review(tmp_path: Path) -> None:
    root = _adoption_repo(
        tmp_path, {"2508.md": _legacy_waiver(f"- Patch script: `{INNER}`", status="requested")}
    )
    result = _audit(root)
    (first, *_) = [r for r in formats.sarif(result)["runs"][0]["results"] if "suppressions" in r]
    assert first["suppressions"][0]["status"] == "underReview"
    assert ("docs/waiver/2508.md", "PB205") in {(f.path, f.code) for f in result.findings}


def test_an_annotated_line_stays_suppressed_not_waived(tmp_path: Path) -> None:
    root = _adoption_repo(tmp_path, {"2508.md": _legacy_waiver(f"- Patch script: `{INNER}`")})
    text = (
        (root / INNER)
        .read_text()
        .replace("k3_mla.patch\n", "k3_mla.patch  # patchbay-reviewed: vetted in review 12\n")
    )
    (root / INNER).write_text(text)
    found = {(f.line, f.code): f for f in _audit(root).findings if f.path == INNER}
    assert found[(4, "PB401")].suppression is not None and found[(4, "PB401")].waived_by is None
    assert found[(5, "PB402")].waived_by is not None


def _links(waiver_id: str, *scripts: str) -> ScriptLinks:
    w = Waiver(path=Path("/r/docs/waiver") / f"{waiver_id}.md", id=waiver_id, front_matter=None)
    return ScriptLinks(
        by_waiver={waiver_id: [ScriptLink(s, 3, s) for s in scripts]}, waivers={waiver_id: w}
    )


def test_coverage_follows_the_chain_of_scripts() -> None:
    """A finding reached through `bash path` carries the chain of scripts (outermost first);
    a waiver that links any script of the chain covers it."""
    links = _links("2508", OUTER)
    through = Finding.of("PB401", INNER, 4, "git apply into $SITE")
    through.chain = (OUTER,)
    deeper = Finding.of("PB402", "benchmarks/lib/sed_env.sh", 2, "sed -i")
    deeper.chain = (OUTER, INNER)
    alone = Finding.of("PB402", INNER, 5, "sed -i")  # the inner script read on its own
    unrelated = Finding.of("PB402", OTHER, 3, "sed -i")
    in_outer = Finding.of("PB404", OUTER, 9, "cp into site-packages")
    annotation = Finding.of("PB410", OUTER, 3, "annotation without a reason")
    suppressed = Finding.of("PB402", OUTER, 5, "sed -i")
    suppressed.suppression = Suppression("inSource", "vetted")
    coverage = Finding.of("PB101", OUTER, 1, "patch without waiver")
    findings = [through, deeper, alone, unrelated, in_outer, annotation, suppressed, coverage]
    waive(findings, links, Path("/r"))
    assert [(f.waived_by.id, f.waived_by.script) if f.waived_by else None for f in findings] == [
        ("2508", OUTER),
        ("2508", OUTER),
        ("2508", OUTER),  # OUTER runs INNER (the chain of `through` says so)
        None,
        ("2508", OUTER),
        None,  # PB410 is about the annotation, never waived
        None,  # already suppressed by its annotation
        None,  # not a script finding
    ]
    assert [f.severity for f in findings[:5]] == [
        Severity.NOTE,
        Severity.NOTE,
        Severity.NOTE,
        Severity.ERROR,
        Severity.NOTE,
    ]
    assert through.waived_by is not None and through.waived_by.path == "docs/waiver/2508.md"


def test_the_first_waiver_in_order_covers_a_script_linked_twice() -> None:
    links = _links("2490", INNER)
    extra = _links("2508", INNER)
    links.by_waiver.update(extra.by_waiver)
    links.waivers.update(extra.waivers)
    finding = Finding.of("PB401", INNER, 4, "git apply")
    waive([finding], links, Path("/r"))
    assert finding.waived_by is not None and finding.waived_by.id == "2490"


def test_a_waiver_naming_the_benchmark_script_covers_the_patch_script_it_runs(
    tmp_path: Path,
) -> None:
    root = _adoption_repo(
        tmp_path, {"2508.md": _legacy_waiver(f"- **Patch entrypoint:** `{OUTER}`")}
    )
    result = _audit(root)
    inner = [f for f in result.findings if f.path == INNER]
    assert inner and all(f.waived_by is not None and f.waived_by.id == "2508" for f in inner)
    assert any(f.chain[:1] == (OUTER,) for f in inner)  # reached through the benchmark script
    assert not [f for f in result.findings if f.code == "PB103"]


def test_translations_are_listed_not_audited(tmp_path: Path) -> None:
    """1234_zh.md next to 1234.md (same front matter id) is a translation: no PB208, none of
    its findings; JSON lists it, the summary says so."""
    waivers = tmp_path / "waivers"
    waivers.mkdir()
    (waivers / "w-ok.md").write_text(_waiver([], wid="w-ok"))
    (waivers / "w-ok_zh.md").write_text(_waiver([], wid="w-ok", body="# 豁免\n"))
    (waivers / "README.md").write_text("# Waivers\n")
    (waivers / "README_zh.md").write_text("# 豁免说明\n")
    result = _audit(tmp_path)
    assert {f.path for f in result.findings} == {"waivers/w-ok.md"}  # PB103 only
    assert [w.id for w in result.waivers] == ["w-ok"]
    assert result.to_json()["translations"] == [
        {"path": "waivers/README_zh.md", "of": "waivers/README.md", "language": "zh"},
        {"path": "waivers/w-ok_zh.md", "of": "waivers/w-ok.md", "language": "zh"},
    ]
    assert "2 translation(s) not audited" in formats.summary(result, Severity.ERROR)


def test_waiver_folders_are_configurable(tmp_path: Path) -> None:
    for folder in ("compliance/waivers", "docs/waiver", "waivers"):
        (tmp_path / folder).mkdir(parents=True)
        name = folder.replace("/", "-")
        (tmp_path / folder / f"{name}.md").write_text(_waiver([], wid=name))
    default = {w.id for w in _audit(tmp_path).waivers}
    assert default == {"docs-waiver", "waivers"}
    (tmp_path / "patchbay.toml").write_text('waivers = "compliance/waivers"\n')
    assert [w.id for w in _audit(tmp_path).waivers] == ["compliance-waivers"]
    (tmp_path / "patchbay.toml").write_text('waivers = ["compliance/waivers", "waivers"]\n')
    assert [w.id for w in _audit(tmp_path).waivers] == ["compliance-waivers", "waivers"]
    (tmp_path / "patchbay.toml").write_text('\nwaivers = ["waivers", "gone"]\n')
    with pytest.raises(InputError) as exc:
        _audit(tmp_path)
    assert "configured waivers folder 'gone' does not exist" in str(exc.value)
    assert exc.value.line == 2
    (tmp_path / "patchbay.toml").write_text("waivers = []\n")
    with pytest.raises(InputError, match="waivers"):
        _audit(tmp_path)


def test_waiver_new_writes_into_the_waiver_folder_that_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from patchbay.cli.commands import waiver as waiver_cmd

    write_patchset(tmp_path / "patchsets" / "k3", [{"id": "p1", "kind": "replace", "edits": EDIT}])
    (tmp_path / "docs" / "waiver").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    code = waiver_cmd.new("patchsets/k3", ["p1"], waiver_id=None, output=None, force=False)
    assert code == 0
    assert (tmp_path / "docs" / "waiver" / "p1.md").is_file()
    assert not (tmp_path / "waivers").exists()


def test_the_legacy_waivers_cover_the_scripts_they_name(tmp_path: Path) -> None:
    """The four shared legacy waivers (tests/data, byte for byte) in docs/waiver/ of a
    repository that has the scripts they name: 1204 covers its "Patch script", 1311 the
    benchmark script whose heredoc it describes, 1350 the script that pins flashinfer; each is
    no orphan, and the findings are waived by the waiver that names the script."""
    scripts = {
        "benchmarks/single_node/demo3_fp4_mi355x.sh": (
            "#!/usr/bin/env bash\nbash benchmarks/single_node/apply_demo3_patches.sh\n"
        ),
        "benchmarks/single_node/apply_demo3_patches.sh": (
            "#!/usr/bin/env bash\n" + SITE_LINE + 'git -C "$SITE" apply /patches/mla.diff\n'
        ),
        "benchmarks/demo4_h200.sh": (
            "#!/usr/bin/env bash\n"
            + SITE_LINE
            + "python3 - \"$SITE/sglang/srt/managers/scheduler.py\" <<'PY'\n"
            + "import sys\np = sys.argv[1]\n"
            + 's = open(p).read().replace("a", "b")\nopen(p, "w").write(s)\nPY\n'
        ),
        "benchmarks/demo5_b200.sh": "#!/usr/bin/env bash\npip install flashinfer-python==0.4.2\n",
    }
    for rel, text in scripts.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    shutil.copytree(DATA / "waivers-legacy", tmp_path / "docs" / "waiver")
    _git(tmp_path, "init", "-q")
    result = _audit(tmp_path)
    waived = {(f.path, f.code): f.waived_by.id for f in result.findings if f.waived_by}
    assert waived == {
        ("benchmarks/single_node/apply_demo3_patches.sh", "PB401"): "1204",
        ("benchmarks/demo4_h200.sh", "PB403"): "1311",
        ("benchmarks/demo5_b200.sh", "PB408"): "1350",
    }
    assert not [f for f in result.active if f.path.startswith("benchmarks/")]
    orphans = {f.path for f in result.findings if f.code == "PB103"}
    assert orphans == {"docs/waiver/1402.md"}  # its installer is not in this repository
    assert {w: [link.path for link in links] for w, links in result.scripts.items()} == {
        "1204": [
            "benchmarks/single_node/demo3_fp4_mi355x.sh",
            "benchmarks/single_node/apply_demo3_patches.sh",
        ],
        "1311": ["benchmarks/demo4_h200.sh"],
        "1350": ["benchmarks/demo5_b200.sh"],
    }
    assert [t.path.name for t in result.translations] == []  # README.md is documentation


def test_patch_files_are_found_as_rglob_finds_them(tmp_path: Path) -> None:
    """PB303's listing of a patchset folder gives what ``sorted(rglob("*"))`` filtered on the
    suffix gives: hidden folders, a folder named like a patch, symbolic links (to files,
    dangling, to folders, which are not followed) and a file named only ``.patch``."""
    from patchbay.audit.checks import PATCH_SUFFIXES, _patch_files

    for rel in ["x.patch", "a/y.diff", "a/b/z.patch", ".patch", "a-b/q.patch", ".hid/h.diff",
                "a/n.txt", "a/dir.patch/k.patch"]:  # fmt: skip
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "a", target_is_directory=True)
    (tmp_path / "l.patch").symlink_to(tmp_path / "x.patch")
    (tmp_path / "dangling.diff").symlink_to(tmp_path / "nope")
    expected = sorted(p for p in tmp_path.rglob("*") if p.suffix in PATCH_SUFFIXES)
    assert len(expected) == 9
    assert _patch_files(tmp_path) == expected


def _strict_json(text: str) -> object:
    """``json.loads`` as a strict parser reads JSON: no lone surrogate, escaped or not."""
    doc = json.loads(text)

    def walk(value: object) -> None:
        if isinstance(value, str):
            value.encode("utf-8")  # raises on a lone surrogate
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(doc)
    return doc


def test_file_names_that_are_not_utf8_in_every_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A patch script and a waiver whose names are Latin-1 bytes (``q\\xe9.sh``, as a file
    system gives them): every format prints them, undecodable bytes as ``\\xe9`` (percent-
    encoded in SARIF's URI), as valid UTF-8 and strict JSON; the script cache keys them by
    their bytes (a second run, from the cache, says the same); ``--changed-since`` too."""
    from inprocess import run_main

    root = _adoption_repo(
        tmp_path / "repo", {"2508.md": _legacy_waiver(f"- **Patch script:** `{INNER}`")}
    )
    script = os.fsdecode(os.fsencode(str(root / "benchmarks")) + b"/q\xe9.sh")
    Path(script).write_text(
        "#!/usr/bin/env bash\n" + SITE_LINE + "sed -i 's/A = 1/A = 2/' \"$SITE/vllm/y.py\"\n"
    )
    waiver = os.fsdecode(os.fsencode(str(root / "docs" / "waiver")) + b"/w\xe9.md")
    Path(waiver).write_text(
        _legacy_waiver("- **Patch script:** `benchmarks/other.sh`", number="2509")
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    outputs: dict[str, str] = {}
    for run in ("cold", "cached"):
        for fmt in ("table", "concise", "json", "github", "sarif"):
            r = run_main("audit", "--repo", root, "-f", fmt)
            assert r.crash is None, r.crash
            assert r.code == 1, r.err  # the unwaived script is an error
            r.out.encode("utf-8")
            r.err.encode("utf-8")
            if run == "cached":
                assert r.out == outputs[fmt], fmt
            outputs[fmt] = r.out
    for fmt in ("table", "concise", "github"):
        assert "benchmarks/q\\xe9.sh" in outputs[fmt], fmt
        assert "docs/waiver/w\\xe9.md" in outputs[fmt], fmt
    doc = _strict_json(outputs["json"])
    paths = {f["path"] for f in doc["findings"]}  # type: ignore[index]
    assert {"benchmarks/q\\xe9.sh", "docs/waiver/w\\xe9.md"} <= paths
    sarif = _strict_json(outputs["sarif"])
    uris = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for res in sarif["runs"][0]["results"]  # type: ignore[index]
        for loc in res["locations"]
    }
    assert {"benchmarks/q%E9.sh", "docs/waiver/w%E9.md"} <= uris
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "latin-1 names")
    (root / OTHER).write_text((root / OTHER).read_text() + "# changed\n")
    r = run_main("audit", "--repo", root, "--json", "--changed-since", "HEAD")
    assert r.crash is None, r.crash
    _strict_json(r.out)


def test_off_a_terminal_a_table_that_would_wrap_is_concise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule of status and check: off a terminal, the default table is printed when every
    table fits ``$COLUMNS`` without wrapping a cell, else the audit is concise (one finding a
    line, its patch id whole); ``--format table`` is a table whatever the width."""
    from inprocess import run_main
    from patchbay.cli.commands import common

    def width(columns: str) -> None:  # the console is made once a process: made again
        monkeypatch.setenv("COLUMNS", columns)
        common._console.cache_clear()

    root = _adoption_repo(tmp_path / "repo", {})
    width("40")
    narrow = run_main("audit", "--repo", root)
    assert narrow.code == 1, narrow.err
    assert "┃" not in narrow.out
    assert f"{OTHER}:3: PB402 in-place edit" in narrow.out
    assert "┃" in run_main("audit", "--repo", root, "--format", "table").out
    width("1000")
    wide = run_main("audit", "--repo", root)
    monkeypatch.undo()  # the process's own width again, for the tests after this one
    common._console.cache_clear()
    assert "┃" in wide.out and f"{OTHER}:3:" not in wide.out
