"""The shared real-world cases 001-008, each as a test (inputs copied under tests/cases/).

They run against unpacked trees with ``--root`` (the tree stands in for site-packages), through
the real CLI, so exit codes and messages are what a user sees.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import CASES, run_cli, snapshot, write_patchset


def _tree(tmp_path: Path, case: str) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(CASES / case / "tree", root)
    return root


def _status(ps: Path, root: Path) -> dict[str, dict]:
    res = run_cli("status", ps, "--root", root, "--json")
    assert res.err == ""
    return {p["id"]: p for p in json.loads(res.out)["patches"]}


def test_001_blank_context_lines_apply_once(tmp_path: Path) -> None:
    root = _tree(tmp_path, "001-blank-context-lines")
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "decode", "kind": "diff", "file": "fix.patch"}],
        files={"fix.patch": (CASES / "001-blank-context-lines" / "fix.patch").read_bytes()},
    )
    assert _status(ps, root)["decode"]["status"] == "pending"
    first = run_cli("apply", ps, "--root", root)
    assert first.code == 0, first.err
    text = (root / "demo_engine/ops/decode.py").read_text()
    assert "idx = indices[i * stride_indices]" in text
    assert "\n\n        if idx <= 0:" in text  # the blank context line is kept as it was
    before = snapshot(root)
    second = run_cli("apply", ps, "--root", root)
    assert second.code == 0
    assert "nothing to do" in second.out
    assert snapshot(root) == before
    assert _status(ps, root)["decode"]["status"] == "applied"


def _crlf_patchset(tmp_path: Path) -> Path:
    return write_patchset(
        tmp_path / "ps",
        [{"id": "kv", "kind": "diff", "file": "fix.patch"}],
        files={"fix.patch": (CASES / "002-crlf-patch-file" / "fix.patch").read_bytes()},
    )


def test_002_crlf_patch_is_normalised_with_a_note(tmp_path: Path) -> None:
    root = _tree(tmp_path, "002-crlf-patch-file")
    ps = _crlf_patchset(tmp_path)
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 0, res.err
    assert "CRLF" in res.out
    data = (root / "demo_engine/kv.py").read_bytes()
    assert b"return int(row) * int(stride)  # widen before multiply\n" in data
    assert b"\r" not in data  # the LF target stays LF


def test_002_crlf_target_keeps_its_crlf_endings(tmp_path: Path) -> None:
    root = _tree(tmp_path, "002-crlf-patch-file")
    kv = root / "demo_engine/kv.py"
    kv.write_bytes(kv.read_bytes().replace(b"\n", b"\r\n"))
    ps = _crlf_patchset(tmp_path)
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 0, res.err
    data = kv.read_bytes()
    assert b"int(row) * int(stride)  # widen before multiply\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")
    assert _status(ps, root)["kv"]["status"] == "applied"


def _case003(tmp_path: Path, names: list[str]) -> Path:
    src = CASES / "003-third-patch-conflicts"
    return write_patchset(
        tmp_path / "ps",
        [{"id": n.removesuffix(".patch"), "kind": "diff", "file": n} for n in names],
        files={n: (src / n).read_bytes() for n in names},
    )


def test_003_third_patch_conflicts_nothing_written(tmp_path: Path) -> None:
    root = _tree(tmp_path, "003-third-patch-conflicts")
    ps = _case003(tmp_path, ["01-envs.patch", "02-scheduler.patch", "03-worker.patch"])
    before = snapshot(root)
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 1
    assert "03-worker" in res.err
    assert "demo_engine/worker.py hunk 1: conflict" in res.err
    assert "Traceback" not in res.err
    assert snapshot(root) == before
    assert not (root / ".patchbay" / "ledger.json").exists()


def test_004_apply_twice_is_a_noop(tmp_path: Path) -> None:
    root = _tree(tmp_path, "003-third-patch-conflicts")
    ps = _case003(tmp_path, ["01-envs.patch", "02-scheduler.patch"])
    assert run_cli("apply", ps, "--root", root).code == 0
    assert {p["status"] for p in _status(ps, root).values()} == {"applied"}
    before = snapshot(root)
    ledger = (root / ".patchbay/ledger.json").stat().st_mtime_ns
    for _ in range(3):
        res = run_cli("apply", ps, "--root", root)
        assert res.code == 0
        assert "nothing to do" in res.out
        assert snapshot(root) == before
    assert (root / ".patchbay/ledger.json").stat().st_mtime_ns == ledger
    assert {p["status"] for p in _status(ps, root).values()} == {"applied"}


def test_005_patch_edited_after_apply(tmp_path: Path) -> None:
    root = _tree(tmp_path, "003-third-patch-conflicts")
    ps = _case003(tmp_path, ["01-envs.patch"])
    assert run_cli("apply", ps, "--root", root).code == 0
    applied_v1 = (root / "demo_engine/envs.py").read_bytes()
    v2 = (CASES / "005-patch-edited-after-apply" / "01-envs.v2.patch").read_bytes()
    (ps / "01-envs.patch").write_bytes(v2)

    status = _status(ps, root)["01-envs"]
    assert status["status"] == "outdated"
    assert "changed since it was applied" in " ".join(status["notes"])

    before = snapshot(root)
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 1
    assert "--upgrade" in res.err
    assert snapshot(root) == before

    res = run_cli("apply", ps, "--root", root, "--upgrade")
    assert res.code == 0, res.err
    text = (root / "demo_engine/envs.py").read_text()
    assert 'ASM_PADDING = os.environ.get("DEMO_ASM_PADDING", "asm")' in text
    assert "ASM_MIN_HEADS" in text
    assert '"none"' not in text  # never both versions mixed
    assert applied_v1 != text.encode()
    assert _status(ps, root)["01-envs"]["status"] == "applied"
    # and the recorded v2 reverts to the pristine file
    assert run_cli("revert", ps, "--root", root).code == 0
    pristine = CASES / "003-third-patch-conflicts/tree/demo_engine/envs.py"
    assert (root / "demo_engine/envs.py").read_bytes() == pristine.read_bytes()


def test_006_image_already_has_the_fix(tmp_path: Path) -> None:
    root = _tree(tmp_path, "006-image-already-has-the-fix")
    ps = _case003(tmp_path, ["01-envs.patch", "02-scheduler.patch"])
    status = _status(ps, root)
    assert status["01-envs"]["status"] == "redundant"
    assert status["01-envs"]["applied_by"] == "image"
    assert status["02-scheduler"]["status"] == "pending"
    envs_before = (root / "demo_engine/envs.py").stat().st_mtime_ns
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 0, res.err
    assert "1 patch(es) redundant" in res.out and "01-envs" in res.out
    assert (root / "demo_engine/envs.py").stat().st_mtime_ns == envs_before
    assert "limit = min(limit, 128)" in (root / "demo_engine/scheduler.py").read_text()
    status = _status(ps, root)
    assert status["01-envs"]["status"] == "redundant"
    assert status["02-scheduler"]["status"] == "applied"


def _case007(tmp_path: Path) -> tuple[Path, Path]:
    root = _tree(tmp_path, "003-third-patch-conflicts")
    src = CASES / "003-third-patch-conflicts"
    ps = write_patchset(
        tmp_path / "ps",
        [
            {"id": "envs", "kind": "diff", "file": "patches/01-envs.patch"},
            {"id": "scheduler", "kind": "diff", "file": "patches/02-scheduler.patch"},
            {"id": "worker", "kind": "diff", "file": "patches/03-worker.patch"},
        ],
        files={
            "patches/01-envs.patch": (src / "01-envs.patch").read_bytes(),
            "patches/03-worker.patch": (src / "03-worker.patch").read_bytes(),
        },
    )
    return root, ps


def test_007_missing_patch_file_fails_with_exit_2(tmp_path: Path) -> None:
    root, ps = _case007(tmp_path)
    before = snapshot(root)
    for args in (["validate", ps], ["status", ps, "--root", root], ["apply", ps, "--root", root]):
        res = run_cli(*args)
        assert res.code == 2, (args, res.err)
        first = res.err.splitlines()[0]
        assert str(ps / "patchset.yaml") in first
        assert "patch scheduler" in first
        assert "patches/02-scheduler.patch" in first
        assert "Traceback" not in res.err
    assert snapshot(root) == before


def test_007_empty_patches_folder_names_every_missing_file(tmp_path: Path) -> None:
    root, ps = _case007(tmp_path)
    shutil.rmtree(ps / "patches")
    (ps / "patches").mkdir()
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 2
    for name in ("01-envs.patch", "02-scheduler.patch", "03-worker.patch"):
        assert name in res.err


def test_008_partly_upstream_reports_hunks_and_refuses(tmp_path: Path) -> None:
    root = _tree(tmp_path, "008-partly-upstream")
    src = CASES / "008-partly-upstream" / "backport.patch"
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "mla-backport", "kind": "diff", "file": "backport.patch"}],
        files={"backport.patch": src.read_bytes()},
    )
    report = _status(ps, root)["mla-backport"]
    assert report["status"] == "partial"
    hunks = {h["hunk"]: h for h in report["hunks"]}
    assert hunks[1]["state"] == "pending" and hunks[1]["line"] == 6
    assert hunks[2]["state"] == "upstream" and hunks[2]["line"] == 20  # the image has it
    assert hunks[3]["state"] == "pending" and hunks[3]["line"] == 37
    before = snapshot(root)
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 1
    assert "partial" in res.err
    assert "hunk 2: upstream at line 20" in res.err
    assert "mla-backport: 1 upstream, 2 pending" in res.err
    assert snapshot(root) == before

    # the author drops hunk 2 from the patch; it then applies
    text = src.read_text()
    start = text.index("@@ -20,6")
    end = text.index("@@ -35,5")
    (ps / "backport.patch").write_text(text[:start] + text[end:])
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 0, res.err
    mla = (root / "demo_engine/mla.py").read_text()
    assert "stride_kv, stride_pe = int(stride_kv), int(stride_pe)" in mla
    assert "1 <= batch_size <= 256" in mla
    assert mla.count('return q.astype("bfloat16")') == 1
