"""The repository's real cases: both patchsets validate offline and list what is not vendored,
the repository audits without errors, and the shapes they use work end to end: one upstream PR
taken at a fixed head commit and split over two install roots by ``paths`` filters (vendored
from a forge on 127.0.0.1, applied to a real engine environment)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from conftest import REPO, Engine, write_patchset
from inprocess import run_main
from servers import Response, Server

KIMI = REPO / "patchsets" / "kimik3-mi355x-vllm"
MINIMAX = REPO / "patchsets" / "minimaxm3-mi355x-vllm"

# the eight kernels of ROCm/aiter#4521, as the issue names them
KERNELS = {
    f"mla_a8w8_{stem}.co"
    for stem in (
        "qh16_qseqlen4_gqaratio16_cprr_v3_ps",
        "qh16_qseqlen4_gqaratio16_lse_cprr_v3_ps",
        "qh16_qseqlen4_gqaratio16_lse_v3_ps",
        "qh16_qseqlen4_gqaratio16_v3_ps",
        "qh32_qseqlen4_gqaratio32_cprr_ps",
        "qh32_qseqlen4_gqaratio32_lse_cprr_ps",
        "qh32_qseqlen4_gqaratio32_lse_ps",
        "qh32_qseqlen4_gqaratio32_ps",
    )
}
HEAD_4521 = "0cbedbb1bc5b3b254dd12ca4e8d3c7638b86830b"


def _fresh(patchset: Path, dest: Path) -> Path:
    """The shipped patchset as a fresh clone has it: its lock, no vendored diffs."""
    shutil.copytree(patchset, dest, ignore=shutil.ignore_patterns("vendor"))
    return dest


def test_the_kimi_patchset_validates_offline_and_lists_what_is_not_vendored(
    tmp_path: Path,
) -> None:
    ps = _fresh(KIMI, tmp_path / "kimi")
    res = run_main("validate", ps)
    assert res.code == 0, res.err
    doc = yaml.safe_load((KIMI / "patchset.yaml").read_text())
    unlocked = {line.split(":")[1].strip() for line in res.out.splitlines() if "NOT LOCKED" in line}
    diffs = {p["id"] for p in doc["patches"] if p.get("source")}  # the kernels are hashed
    assert unlocked == diffs
    assert f"valid ({len(doc['patches'])} patch(es), {len(diffs)} not locked yet" in res.out
    kernels = next(p for p in doc["patches"] if p["id"] == "aiter-4521-verify-kernels")
    assert {Path(f["dest"]).name for f in kernels["files"]} == KERNELS
    assert all(f["dest"].startswith("hsa/gfx950/mla/") for f in kernels["files"])
    assert all(f"/{HEAD_4521}/hsa/gfx950/mla/" in f["url"] for f in kernels["files"])
    assert all(len(f["sha256"]) == 64 and f["size"] > 1000 for f in kernels["files"])


def test_the_minimax_patchset_is_locked_but_not_vendored_in_a_fresh_clone(tmp_path: Path) -> None:
    ps = _fresh(MINIMAX, tmp_path / "minimax")
    res = run_main("validate", ps)
    assert res.code == 0, res.err
    assert "NOT LOCKED: vllm-pa-gluon-decode: upstream source SemiAnalysisAI/InferenceX@" in res.out
    assert "but not vendored here" in res.out
    (tmp_path / "vllm").mkdir()  # --root stands in for site-packages: the target package is there
    res = run_main("status", ps, "--root", tmp_path, "--json")
    assert json.loads(res.out)["patches"][0]["status"] == "unlocked"


def test_the_repository_audits_without_errors() -> None:
    res = run_main("audit", REPO, "--format", "json")
    assert res.code == 0, res.err
    findings = json.loads(res.out)["findings"]
    assert not [f for f in findings if f["severity"] == "error" and not f["suppressed"]]
    unlocked = [f for f in findings if f["code"] == "PB304"]
    assert {f["message"].split(":")[0] for f in unlocked} == {
        "patch aiter-4521-python",
        "patch aiter-4521-meta",
    }  # only the #4521 PR diff is not in the lock: only the forge can give it


# a PR that spans the package and its data folder, plus a test file that is not installed
BASE, HEAD, PINNED = "b" * 40, "c" * 40, "d" * 40
PR_DIFF = (
    "diff --git a/demo_engine/envs.py b/demo_engine/envs.py\n"
    "--- a/demo_engine/envs.py\n+++ b/demo_engine/envs.py\n"
    "@@ -3,3 +3,4 @@ import os\n"
    ' USE_FAST_DECODE = os.environ.get("DEMO_USE_FAST_DECODE", "0") == "1"\n'
    ' MAX_BATCH = int(os.environ.get("DEMO_MAX_BATCH", "256"))\n'
    ' KV_CACHE_DTYPE = os.environ.get("DEMO_KV_CACHE_DTYPE", "auto")\n'
    '+ASM_PADDING = os.environ.get("DEMO_ASM_PADDING", "none")\n'
    "diff --git a/kernels/mla_asm.csv b/kernels/mla_asm.csv\n"
    "--- a/kernels/mla_asm.csv\n+++ b/kernels/mla_asm.csv\n"
    "@@ -1,2 +1,3 @@\n heads,qlen,dtype,kernel\n 128,1,bf16,mla_a16w16_qh128.co\n"
    "+16,4,fp8,mla_a8w8_qh16_qseqlen4_gqaratio16_ps.co\n"
    "diff --git a/op_tests/test_mla.py b/op_tests/test_mla.py\nnew file mode 100644\n"
    "--- /dev/null\n+++ b/op_tests/test_mla.py\n@@ -0,0 +1 @@\n+def test(): pass\n"
)


def test_a_pr_at_a_head_commit_split_over_two_roots(tmp_path: Path, engine: Engine) -> None:
    def half(pid: str, target: str, paths: list[str]) -> dict[str, object]:
        source = {"repo": "demo-org/demo-engine", "pr": 4521, "commit": PINNED, "paths": paths}
        return {"id": pid, "kind": "diff", "target": target, "source": source}

    ps = write_patchset(
        tmp_path / "ps",
        [half("python", "engine", ["demo_engine"]), half("meta", "meta", ["kernels"])],
        targets={
            "engine": {"package": "demo_engine"},
            "meta": {"package": "demo_engine", "path": "demo_engine_meta"},
        },
    )
    with Server() as forge:
        pr = {"number": 4521, "head": {"sha": HEAD}, "base": {"sha": BASE}, "state": "open"}
        forge.add(
            "/repos/demo-org/demo-engine/pulls/4521",
            Response(body=json.dumps(pr).encode(), headers={"Content-Type": "application/json"}),
        )
        # the PR as it was at the pinned commit, not at its head today
        forge.add(
            f"/repos/demo-org/demo-engine/compare/{BASE}...{PINNED}",
            Response(body=PR_DIFF.encode()),
        )
        res = run_main("vendor", ps, "--api-url", forge.url)
        assert res.code == 0, res.err
        assert forge.requests_for(f"/repos/demo-org/demo-engine/compare/{BASE}...{HEAD}") == 0
    assert "left out by its paths filter: kernels/mla_asm.csv, op_tests/test_mla.py" in res.out
    lock = json.loads((ps / "patchbay.lock").read_text())["sources"]
    assert lock["python"]["commit"] == lock["meta"]["commit"] == PINNED
    assert lock["meta"]["ref"] == f"demo-org/demo-engine#4521@{PINNED}"

    res = run_main("apply", ps, "--python", engine.python)
    assert res.code == 0, res.err
    assert "ASM_PADDING" in (engine.pkg / "envs.py").read_text()
    table = engine.site / "demo_engine_meta" / "kernels" / "mla_asm.csv"
    assert "mla_a8w8_qh16_qseqlen4_gqaratio16_ps.co" in table.read_text()
    assert not (engine.site / "op_tests").exists()
