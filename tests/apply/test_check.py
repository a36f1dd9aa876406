"""``check`` against a newer image, and ``verify --installed`` against RECORD.

The candidate image is a second build of the demo engine (0.5.0), made here from a modified
copy of demo/engine, in which upstream shipped one patch fully, one partly (one hunk of three),
changed the code under a third, and left the other two still needed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import (
    CASES,
    REPO,
    Engine,
    build_wheel,
    make_engine,
    run_cli,
    snapshot,
    write_patchset,
)

DEMO = REPO / "patchsets" / "demo"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new))


@pytest.fixture(scope="session")
def candidate(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    work = tmp_path_factory.mktemp("candidate")
    src = work / "engine-src"
    shutil.copytree(REPO / "demo" / "engine", src)
    pkg = src / "src" / "demo_engine"
    _edit(src / "pyproject.toml", 'version = "0.4.1+g1a2b3c4"', 'version = "0.5.0"')
    # envs-asm-padding landed upstream as is
    _edit(
        pkg / "envs.py",
        'KV_CACHE_DTYPE = os.environ.get("DEMO_KV_CACHE_DTYPE", "auto")\n',
        'KV_CACHE_DTYPE = os.environ.get("DEMO_KV_CACHE_DTYPE", "auto")\n'
        'ASM_PADDING = os.environ.get("DEMO_ASM_PADDING", "none")\n',
    )
    # of mla-large-cache's three hunks only the fp8 dequantisation (hunk 2) landed
    _edit(
        pkg / "attention" / "mla.py",
        "def to_compute_dtype(q):\n    return q\n",
        'def to_compute_dtype(q):\n    if getattr(q, "dtype", None) == "float8":\n'
        '        return q.astype("bfloat16")\n    return q\n',
    )
    # upstream rewrote the code under scheduler-padding's first hunk
    _edit(
        pkg / "scheduler.py",
        "    limit = envs.MAX_BATCH\n",
        "    limit = min(envs.MAX_BATCH, 512)\n",
    )
    return make_engine(work / "env", build_wheel(src, work / "wheels"))


def test_check_against_a_newer_image(candidate: Engine) -> None:
    before = snapshot(candidate.prefix)
    res = run_cli("check", DEMO, "--python", candidate.python, "--json")
    assert res.code == 1  # something conflicts
    doc = json.loads(res.out)
    verdicts = {p["id"]: p["verdict"] for p in doc["patches"]}
    assert verdicts == {
        "envs-asm-padding": "upstream",
        "scheduler-padding": "conflict",
        "mla-large-cache": "partial",
        "mla-full-graph": "applies",
        "mla-fp8-kernel-row": "applies",
    }
    assert doc["droppable"] == ["envs-asm-padding"]
    partial = {h["hunk"]: h for h in doc["patches"][2]["hunks"]}
    assert (partial[1]["state"], partial[1]["line"]) == ("pending", 6)
    assert (partial[2]["state"], partial[2]["line"]) == ("upstream", 20)  # the image has it
    assert (partial[3]["state"], partial[3]["line"]) == ("pending", 37)
    conflict = doc["patches"][1]["hunks"][0]
    assert conflict["state"] == "conflict"
    assert "closest match at line 4" in conflict["detail"]
    assert conflict["text"].startswith("@@ -4,")
    assert "+        limit = min(limit, 128)" in conflict["text"]
    assert doc["guard"]["ok"] is False  # the pinned version guard is reported, not enforced
    assert snapshot(candidate.prefix) == before  # check writes nothing


def test_check_table_names_hunks_and_droppable_patches(candidate: Engine) -> None:
    res = run_cli("check", DEMO, "--python", candidate.python)
    assert res.code == 1
    assert "demo_engine/attention/mla.py hunk 2: upstream at line 20" in res.out
    assert "demo_engine/attention/mla.py hunk 1: pending at line 6" in res.out
    assert "1 upstream, 2 pending" in res.out
    # the conflict's closest place, the file's lines beside the hunk's
    assert "scheduler-padding: demo_engine/scheduler.py hunk 1 (conflict):" in res.out
    assert "closest place: line 4 (" in res.out
    print(res.out)
    assert "1 patch(es) can be dropped with this image: envs-asm-padding" in res.out


def test_check_is_clear_on_the_pinned_image(engine: Engine) -> None:
    res = run_cli("check", DEMO, "--python", engine.python, "--json")
    assert res.code == 0, res.err
    assert {p["verdict"] for p in json.loads(res.out)["patches"]} == {"applies"}


def test_check_reads_the_ledger_of_the_candidate(engine: Engine) -> None:
    """What patchbay applied in the candidate is applied there, never upstream or droppable."""
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    res = run_cli("check", DEMO, "--python", engine.python, "--json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["droppable"] == []
    assert {p["verdict"] for p in doc["patches"]} == {"applied"}
    assert all("applied by patchbay in this environment" in n for p in doc["patches"]
               for n in p["notes"][-1:])  # fmt: skip
    res = run_cli("check", DEMO, "--python", engine.python)
    assert "can be dropped" not in res.out


def test_check_and_rebase_of_a_patched_candidate_keep_patchbays_patches(
    tmp_path: Path, engine: Engine, candidate: Engine
) -> None:
    """The newer image with patches applied by patchbay: the patch the image ships is still
    upstream and dropped; those patchbay applied are applied there, kept by rebase."""
    import yaml

    cand = tmp_path / "cand"
    shutil.copytree(candidate.prefix, cand, symlinks=True)
    python = cand / "bin" / "python"
    ps = tmp_path / "ps"
    shutil.copytree(DEMO, ps)
    doc = yaml.safe_load((ps / "patchset.yaml").read_text())
    doc.pop("base", None)  # applied on the newer image on purpose
    keep = {"envs-asm-padding", "mla-full-graph", "mla-fp8-kernel-row"}
    doc["patches"] = [p for p in doc["patches"] if p["id"] in keep]
    (ps / "patchset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    res = run_cli("apply", ps, "--python", python)
    assert res.code == 0, res.err
    res = run_cli("check", ps, "--python", python, "--json")
    assert res.code == 0, res.err
    out = json.loads(res.out)
    assert {p["id"]: p["verdict"] for p in out["patches"]} == {
        "envs-asm-padding": "upstream",
        "mla-full-graph": "applied",
        "mla-fp8-kernel-row": "applied",
    }
    assert out["droppable"] == ["envs-asm-padding"]
    res = run_cli(
        "rebase", ps, "--python", engine.python, "--onto-python", python, "--out", tmp_path / "r"
    )
    assert res.code == 0, res.err + res.out
    rebased = yaml.safe_load((tmp_path / "r" / "patchset.yaml").read_text())
    assert [p["id"] for p in rebased["patches"]] == ["mla-full-graph", "mla-fp8-kernel-row"]


def test_check_on_an_unpacked_tree_with_duplicated_context(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    shutil.copytree(CASES / "008-partly-upstream" / "tree", root)
    mla = root / "demo_engine" / "mla.py"
    text = mla.read_text()
    mla.write_text(text + "\n\n" + text[text.index("def kv_offsets") :])
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "mla", "kind": "diff", "file": "b.patch"}],
        files={"b.patch": (CASES / "008-partly-upstream" / "backport.patch").read_bytes()},
    )
    res = run_cli("check", ps, "--root", root, "--json")
    assert res.code == 1
    (patch,) = json.loads(res.out)["patches"]
    assert patch["verdict"] == "ambiguous"
    assert patch["hunks"][0]["state"] == "ambiguous"
    assert patch["hunks"][0]["candidates"] == [6, 44]


# -- verify --installed ---------------------------------------------------------------------


def test_verify_installed_as_shipped_and_with_declared_patches(
    tmp_path: Path, engine: Engine
) -> None:
    res = run_cli("verify", DEMO, "--python", engine.python, "--installed")
    assert res.code == 0, res.err
    assert "image as shipped" in res.out
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    record = tmp_path / "result" / "provenance.json"
    res = run_cli("verify", DEMO, "--python", engine.python, "--installed", "--record", record)
    assert res.code == 0, res.err
    assert "5 declared patch(es)" in res.out
    doc = json.loads(record.read_text())
    assert doc["installed"]["ok"] is True
    assert doc["installed"]["undeclared"] == []
    declared = {Path(f["path"]).name: f["declared_by"] for f in doc["installed"]["declared"]}
    assert declared["scheduler.py"] == "demo/scheduler-padding, demo/mla-full-graph"
    assert {p["status"] for p in doc["patches"]} == {"applied"}


def test_verify_installed_finds_a_hand_edit_after_apply(engine: Engine) -> None:
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    worker = engine.pkg / "worker.py"  # not patched
    worker.write_text(worker.read_text().replace("r * 2", "r * 4"))
    envs = engine.pkg / "envs.py"  # patched, then edited by hand
    envs.write_text(envs.read_text() + "DEBUG = True\n")
    (engine.pkg / "sitehook.py").write_text("import os\n")
    res = run_cli("verify", DEMO, "--python", engine.python, "--installed", "--json")
    assert res.code == 1
    doc = json.loads(res.out)
    undeclared = {Path(f["path"]).name: f for f in doc["undeclared"]}
    assert set(undeclared) == {"worker.py", "envs.py", "sitehook.py"}
    assert undeclared["worker.py"]["detail"] == "differs from RECORD"
    assert undeclared["envs.py"]["detail"] == "changed since demo/envs-asm-padding wrote it"
    assert (undeclared["sitehook.py"]["kind"], undeclared["sitehook.py"]["detail"]) == (
        "added",
        "not in RECORD",
    )
    res = run_cli("verify", DEMO, "--python", engine.python, "--installed")
    assert f"{worker}: undeclared modified" in res.err


def test_verify_installed_missing_or_malformed_record(engine: Engine) -> None:
    record = next(engine.site.glob("demo_engine-*.dist-info")) / "RECORD"
    good = record.read_text()
    record.write_text(good.replace(",sha256=", ",md5=", 1))
    res = run_cli("verify", DEMO, "--python", engine.python, "--installed")
    assert res.code == 2
    assert f"{record}:1: malformed RECORD hash" in res.err
    record.write_text(good + "only,two\n")
    res = run_cli("verify", DEMO, "--python", engine.python, "--installed")
    assert res.code == 2
    assert f"{record}:{len(good.splitlines()) + 1}: malformed RECORD line" in res.err
    record.unlink()
    res = run_cli("verify", DEMO, "--python", engine.python, "--installed")
    assert res.code == 2
    assert f"{record}: RECORD is missing" in res.err
    assert "Traceback" not in res.err


def test_verify_installed_empty_record_and_unknown_distribution(engine: Engine) -> None:
    record = next(engine.site.glob("demo_engine-*.dist-info")) / "RECORD"
    record.write_text("")
    res = run_cli("verify", DEMO, "--python", engine.python, "--installed")
    assert res.code == 2
    assert "RECORD lists no hashed file" in res.err
    res = run_cli("verify", DEMO, "--python", engine.python, "--installed", "--dist", "nosuch")
    assert res.code == 2
    assert "'nosuch' is not installed" in res.err


def test_verify_installed_a_hand_edit_hidden_from_record(engine: Engine) -> None:
    """Dropping a patched file's RECORD line must not turn a later hand edit into 'declared'."""
    assert run_cli("apply", DEMO, "--python", engine.python).code == 0
    record = next(engine.site.glob("demo_engine-*.dist-info")) / "RECORD"
    record.write_text(
        "".join(ln for ln in record.read_text().splitlines(True) if "scheduler.py," not in ln)
    )
    sched = engine.pkg / "scheduler.py"
    sched.write_text(sched.read_text() + "# hand edit\n")
    doc = json.loads(
        run_cli("verify", DEMO, "--python", engine.python, "--installed", "--json").out
    )
    assert [Path(f["path"]).name for f in doc["undeclared"]] == ["scheduler.py"]
