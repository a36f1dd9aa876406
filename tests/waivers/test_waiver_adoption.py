"""A benchmark repository adopting patchbay with its own waiver naming: the real Kimi-K3 patch
script imported, the team's legacy pull-request waiver (``docs/waiver/2508.md``) adopted in
place, and a clean audit reached with the commands the audit's hints print."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO, run_cli

K3 = REPO.parent / "shared" / "mission" / "apply_k3_container_patches.sh"
LEGACY = """\
# Engine patch waiver — PR #2508

- **Status:** approved
- **Owner:** @bench-team
- **Approved by:** https://github.com/acme/bench/pull/2508#pullrequestreview-1
- **Patch script:** `benchmarks/apply_k3_container_patches.sh`

## What is patched

The Kimi-K3 recipe patches vLLM and aiter inside the pinned nightly image: ten source diffs,
two Python edits, a Triton pin and the aiter #4521 kernels.

## Why the unmodified upstream image cannot run this benchmark

The pinned nightly has no MLA path for 16 heads on MI355X: the server fails at start-up.

## Upstream PR / issue links

- vllm-project/vllm#51171, ROCm/aiter#4521

## Removal plan

Drop the patches once an image with vLLM and aiter containing the fixes is pinned.
"""
COMMAND = re.compile(r"`(patchbay [^`]+)`")

pytestmark = pytest.mark.skipif(not K3.is_file(), reason=f"{K3} (shared real material) is absent")


def _repository(tmp_path: Path) -> Path:
    repo = tmp_path / "bench"
    (repo / "benchmarks").mkdir(parents=True)
    shutil.copy(K3, repo / "benchmarks" / K3.name)
    (repo / "docs" / "waiver").mkdir(parents=True)
    (repo / "docs" / "waiver" / "2508.md").write_text(LEGACY)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    res = run_cli("import", f"benchmarks/{K3.name}", "--out", "patchsets/k3", cwd=repo)
    assert (repo / "patchsets" / "k3" / "patchset.yaml").is_file(), res.err
    return repo


def _adopted(tmp_path: Path) -> tuple[Path, Path]:
    """The repository with the legacy waiver adopted, and a line a reviewer added to it."""
    repo = _repository(tmp_path)
    _run(repo, "patchbay waiver new patchsets/k3 --id 2508")
    waiver = repo / "docs" / "waiver" / "2508.md"
    waiver.write_text(waiver.read_text() + "\nA line the reviewer added.\n")
    return repo, waiver


def _patchset(repo: Path, doc: dict[str, Any] | None = None) -> dict[str, Any]:
    """The imported patchset's document; written back when ``doc`` is given (as an engineer
    edits it)."""
    path = repo / "patchsets" / "k3" / "patchset.yaml"
    if doc is not None:
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return doc
    return yaml.safe_load(path.read_text())


def _audit(repo: Path) -> tuple[int, list[dict[str, object]]]:
    res = run_cli("audit", "--format", "json", cwd=repo)
    assert res.code in (0, 1), res.err
    findings = json.loads(res.out)["findings"]
    return res.code, [f for f in findings if f["severity"] == "error" and not f.get("waived")]


def _hinted(findings: list[dict[str, object]], code: str) -> list[str]:
    return list(
        dict.fromkeys(
            c for f in findings if f["code"] == code for c in COMMAND.findall(str(f["message"]))
        )
    )


def _run(repo: Path, command: str) -> None:
    res = run_cli(*shlex.split(command)[1:], cwd=repo)
    assert res.code == 0, f"{command}: {res.out}{res.err}"


def test_a_legacy_pull_request_waiver_is_adopted_and_the_hints_reach_a_clean_audit(
    tmp_path: Path,
) -> None:
    repo = _repository(tmp_path)
    steps = 1  # the import
    code, errors = _audit(repo)
    steps += 1
    assert code == 1 and {f["code"] for f in errors} >= {"PB101"}
    res = run_cli("audit", "--format", "json", cwd=repo)
    legacy = [f for f in json.loads(res.out)["findings"] if f["code"] == "PB206"]
    [adopt] = _hinted(legacy, "PB206")
    assert adopt == "patchbay waiver new patchsets/k3 --id 2508"
    assert adopt in _hinted(errors, "PB101")  # the same command, from every uncovered patch
    _run(repo, adopt)
    steps += 1
    adopted = (repo / "docs" / "waiver" / "2508.md").read_text()
    assert LEGACY in adopted  # the team's text, byte for byte
    assert adopted.startswith('---\nid: "2508"\n')
    code, errors = _audit(repo)
    steps += 1
    assert {f["code"] for f in errors} <= {"PB202", "PB301"}, errors
    assert not [f for f in errors if f["code"] in ("PB101", "PB206")]
    # what only a person can say: the review date, and the patchset's own blanks (its
    # descriptions and upstream reasons, which the waiver's generated table repeats)
    waiver = repo / "docs" / "waiver" / "2508.md"
    waiver.write_text(
        re.sub(r'review_by: "<TODO[^"]*"', "review_by: 2027-03-01", waiver.read_text())
    )
    doc = _patchset(repo)
    for patch in doc["patches"]:
        if str(patch.get("description", "")).startswith("TODO"):
            patch["description"] = f"{patch['id']}: what the recipe needs it for"
        status = patch.get("upstream_status") or {}
        if str(status.get("reason", "")).startswith("TODO"):
            status["reason"] = "a recipe pin, not a fix: it has no upstream change"
    _patchset(repo, doc)
    steps += 1
    [sync] = _hinted(errors, "PB202")
    assert sync == "patchbay waiver sync patchsets/k3 docs/waiver/2508.md"
    _run(repo, sync)
    steps += 1
    synced = waiver.read_text()
    assert LEGACY in synced and "TODO: say what" not in synced
    code, errors = _audit(repo)
    steps += 1
    assert (code, errors) == (0, [])
    assert steps == 7


def test_every_command_a_hint_prints_runs_as_printed(tmp_path: Path) -> None:
    """Each distinct ``patchbay ...`` command in the audit's messages, run in its own copy of
    the repository, exits 0 (``vendor`` excepted: it reaches the forge, which this machine has
    not)."""
    repo = _repository(tmp_path)
    res = run_cli("audit", "--format", "json", cwd=repo)
    findings = json.loads(res.out)["findings"]
    commands = sorted({c for f in findings for c in COMMAND.findall(str(f["message"]))})
    assert len(commands) >= 3, commands
    for n, command in enumerate(commands):
        if command.startswith("patchbay vendor"):
            continue
        copy = tmp_path / f"copy-{n}"
        shutil.copytree(repo, copy, symlinks=True)
        _run(copy, command)


def test_sync_keeps_the_authors_text_and_new_refuses_a_waiver_with_front_matter(
    tmp_path: Path,
) -> None:
    repo, waiver = _adopted(tmp_path)
    res = run_cli("waiver", "new", "patchsets/k3", "--id", "2508", cwd=repo)
    assert res.code == 1
    assert "patchbay waiver sync patchsets/k3 docs/waiver/2508.md" in res.err
    doc = _patchset(repo)
    doc["patches"] = doc["patches"][:3]  # the patchset drops all but three patches
    _patchset(repo, doc)
    before = waiver.read_text()
    _run(repo, "patchbay waiver sync patchsets/k3 docs/waiver/2508.md")
    after = waiver.read_text()
    assert "A line the reviewer added." in after and LEGACY in after
    kept = [p["id"] for p in doc["patches"]]
    fm = yaml.safe_load(after.split("---\n")[1])
    assert fm["patches"] == kept and fm["id"] == "2508"
    assert after.count("| `") == len(kept) and before.count("| `") > len(kept)
    res = run_cli("waiver", "sync", "patchsets/k3", "docs/waiver/2508.md", cwd=repo)
    assert res.code == 0 and "up to date" in res.out


def test_audit_fix_writes_the_mechanical_waiver_fixes_and_diff_only_shows_them(
    tmp_path: Path,
) -> None:
    repo, waiver = _adopted(tmp_path)
    doc = _patchset(repo)
    doc["patches"][0]["description"] = "pin triton 3.7.0 for the MLA kernels"
    doc["patches"].append({**doc["patches"][1], "id": "lm-eval-extra"})  # no waiver covers it
    _patchset(repo, doc)
    before = waiver.read_text()
    res = run_cli("audit", "--diff", cwd=repo)
    assert res.code == 1 and waiver.read_text() == before  # nothing written
    assert "+| `triton-3.7.0` | pip | - | pin triton==3.7.0 | pin triton 3.7.0" in res.out
    assert "+| `lm-eval-extra` |" in res.out and res.out.startswith("--- a/docs/waiver/2508.md")
    res = run_cli("audit", "--fix", "--format", "json", cwd=repo)
    assert "patchbay: fixed" in res.err
    after = waiver.read_text()
    assert "A line the reviewer added." in after and LEGACY in after
    assert "lm-eval-extra" in yaml.safe_load(after.split("---\n")[1])["patches"]
    codes = {f["code"] for f in json.loads(res.out)["findings"]}
    assert "PB101" not in codes  # the report is of the fixed tree
    res = run_cli("audit", "--diff", cwd=repo)
    assert res.code == 0 and res.out == ""


def test_two_waivers_of_one_id_are_named_as_the_fix_not_a_new_waiver(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    _run(repo, "patchbay waiver new patchsets/k3 --id 2508")
    (repo / "waivers").mkdir()
    (repo / "waivers" / "2508.md").write_text(LEGACY)  # an old copy under the same id
    code, errors = _audit(repo)
    pb101 = [f for f in errors if f["code"] == "PB101"]
    assert code == 1 and pb101
    assert all("(PB208)" in str(f["message"]) for f in pb101)
    assert not _hinted(pb101, "PB101")  # no command that would make a third waiver of 2508


def test_a_waiver_link_out_of_the_waiver_folder_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "outside.md"
    secret.write_text("## Upstream\n\nTODO SECRET-VALUE-123\n")
    repo = tmp_path / "bench"
    (repo / "docs" / "waiver").mkdir(parents=True)
    (repo / "docs" / "waiver" / "x.md").symlink_to(secret)
    (repo / "docs" / "waiver" / "inside.md").symlink_to("real.txt")  # a link inside: read
    (repo / "docs" / "waiver" / "real.txt").write_text("# Waiver\n\n**Status:** approved\n")
    res = run_cli("audit", "--format", "json", cwd=repo)
    doc = json.loads(res.out)
    assert "SECRET-VALUE" not in res.out + res.err
    assert [w["id"] for w in doc["waivers"]] == ["inside"]


def test_adoption_takes_the_owner_from_labels_written_as_one_paragraph(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    legacy = repo / "docs" / "waiver" / "2508.md"
    legacy.write_text(
        "# Waiver PR 2508\n\n**Status:** Active\n**Owner:** @bench-infra (Jane Doe)\n\n"
        + LEGACY.split("\n\n", 2)[2]
    )
    _run(repo, "patchbay waiver new patchsets/k3 --id 2508")
    fm = yaml.safe_load(legacy.read_text().split("---\n")[1])
    assert fm["owner"] == "@bench-infra (Jane Doe)"
    assert fm["status"] == "requested"  # "Active" says nothing of an approval
