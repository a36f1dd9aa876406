"""The upstream references a script's header comment lists, matched to the diffs of the real
Kimi-K3 script: an entry whose wrapped lines name a diff's file is that diff's, else the entries
whose words name its folders or file (never the repository's own name), else every entry of the
repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO, run_cli

K3 = REPO.parent / "shared" / "mission" / "apply_k3_container_patches.sh"


@pytest.mark.skipif(not K3.is_file(), reason=f"{K3} (shared real material) is absent")
def test_the_k3_headers_entries_go_to_the_diffs_they_name(tmp_path: Path) -> None:
    repo = tmp_path / "bench"
    (repo / "benchmarks").mkdir(parents=True)
    shutil.copy(K3, repo / "benchmarks" / K3.name)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    run_cli("import", f"benchmarks/{K3.name}", "--out", "patchsets/k3", "-q", cwd=repo)
    doc = yaml.safe_load((repo / "patchsets" / "k3" / "patchset.yaml").read_text())
    refs = {
        p["id"]: {u.rsplit("#", 1)[-1] for u in p.get("upstream") or []} for p in doc["patches"]
    }
    # the header's words: "KDA packed decode" for .../kda/fused_recurrent.py
    assert refs["diff-kda-fused-recurrent"] == {"51682"}
    # #50619's wrapped lines name gpu/attn_utils.py, gpu/model_runner.py, kimi_k3/nvidia/mla.py
    for pid in ("diff-attn-utils", "diff-model-runner", "diff-kimi-nvidia-mla"):
        assert refs[pid] == {"50619"}, pid
    # ... and rocm_aiter_mla.py only in an aside ("hunks NOT taken"): not by that file
    assert "51171" in refs["diff-rocm-aiter-mla"]
    # a file no entry's words name (gpu_worker.py, envs.py) keeps every vLLM entry, with a note
    assert len(refs["diff-vllm-envs"]) == 6 and len(refs["diff-rocm-aiter-mla"]) < 6
