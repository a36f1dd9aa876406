"""A newer release installed over an applied patchset (``pip install -U``, an image rebuilt):
the ledger knows which distribution each record was written against, so ``status``, ``apply``
and ``revert`` say in one line that the records are stale, judge the patches afresh on the new
files, and never refuse over a record that no longer describes the tree (issue 28, part 1)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO, Engine, build_wheel, run_cli
from demo_builds import new_demo_source

PIP = [sys.executable, "-m", "pip", "--quiet"]
STALE = (
    "demo-engine 0.4.1+g1a2b3c4 → 0.5.0 was installed over {n} patches ({ids}): their records "
    "are stale"
)


@pytest.fixture(scope="module")
def next_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo engine's next release (demo/engine-next, 0.5.0) built into a wheel."""
    src = new_demo_source(tmp_path_factory.mktemp("next") / "engine-next")
    return build_wheel(src, tmp_path_factory.mktemp("next-wheel"))


def _demo_without_guard(dest: Path, keep: list[str] | None = None) -> Path:
    """patchsets/demo without its base guard (which would refuse the newer release outright),
    with only the patches in ``keep`` when given."""
    shutil.copytree(REPO / "patchsets" / "demo", dest)
    doc = yaml.safe_load((dest / "patchset.yaml").read_text())
    doc.pop("base")
    if keep is not None:
        doc["patches"] = [p for p in doc["patches"] if p["id"] in keep]
    (dest / "patchset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return dest


def _install_over(engine: Engine, wheel: Path) -> None:
    subprocess.run(
        [*PIP, "--python", str(engine.python), "install", "--no-index", "--no-deps", str(wheel)],
        check=True,
    )


def _applied_then_upgraded(
    engine: Engine, tmp_path: Path, wheel: Path, keep: list[str] | None = None
) -> Path:
    """The guard-free demo patchset (``keep``: only those patches) applied to ``engine``, then
    ``wheel`` installed over it; returns the patchset folder."""
    ps = _demo_without_guard(tmp_path / "ps", keep)
    assert run_cli("apply", ps, "--python", engine.python).code == 0
    _install_over(engine, wheel)
    return ps


def _ledger(engine: Engine) -> dict[str, dict[str, object]]:
    data = json.loads((engine.state_dir / "ledger.json").read_text())
    return {e["patch_id"]: e for b in data["patchsets"].values() for e in b["entries"]}


def _states(ps: Path, engine: Engine) -> dict[str, tuple[str, bool]]:
    res = run_cli("status", ps, "--python", engine.python, "--format", "json")
    doc = json.loads(res.out)
    return {p["id"]: (p["status"], p["ledger"] is not None) for p in doc["patches"]}


def test_each_record_keeps_the_distribution_it_was_written_against(
    engine: Engine, tmp_path: Path
) -> None:
    ps = _demo_without_guard(tmp_path / "ps")
    assert run_cli("apply", ps, "--python", engine.python).code == 0
    record = next(engine.site.glob("demo_engine-*.dist-info")) / "RECORD"
    import hashlib

    digest = hashlib.sha256(record.read_bytes()).hexdigest()
    entries = _ledger(engine)
    assert len(entries) == 5
    for entry in entries.values():  # the meta target's file too (a sibling folder it installs)
        assert entry["distributions"] == {
            "demo-engine": {"version": "0.4.1+g1a2b3c4", "record": digest}
        }, entry["patch_id"]


def test_a_newer_release_over_the_patches_makes_their_records_stale(
    engine: Engine, tmp_path: Path, next_wheel: Path
) -> None:
    ps = _applied_then_upgraded(engine, tmp_path, next_wheel)
    ids = "envs-asm-padding, scheduler-padding, mla-large-cache, mla-full-graph, mla-fp8-kernel-row"
    stale = STALE.format(n=5, ids=ids)

    status = run_cli("status", ps, "--python", engine.python, "--format", "concise")
    assert stale + ", and judged afresh on the files there" in status.out.splitlines()
    # judged on 0.5.0's files, as if unrecorded: its fix upstream is found there, and the
    # conflicts are the new release's, not "changed since patchbay wrote it"
    assert "changed since patchbay wrote it" not in status.out
    assert _states(ps, engine) == {
        "envs-asm-padding": ("redundant", False),
        "scheduler-padding": ("conflict", False),
        "mla-large-cache": ("conflict", False),
        "mla-full-graph": ("pending", False),
        "mla-fp8-kernel-row": ("pending", False),
    }
    doc = json.loads(run_cli("status", ps, "--python", engine.python, "--format", "json").out)
    assert doc["replaced_distributions"] == [
        {
            "name": "demo-engine",
            "was": "0.4.1+g1a2b3c4",
            "now": "0.5.0",
            "same_version": False,
            "patches": ids.split(", "),
        }
    ]

    # apply refuses for the new release's real conflicts only, and says why it judged afresh
    apply = run_cli("apply", ps, "--python", engine.python)
    assert apply.code == 1 and "scheduler-padding: conflict" in apply.err
    assert stale in apply.err and "changed since patchbay wrote it" not in apply.err

    # forget clears the records without writing a file; then no stale line is left
    files = {p: p.read_bytes() for p in engine.pkg.rglob("*.py")}
    forget = run_cli("revert", ps, "--forget", "--python", engine.python)
    assert forget.code == 0 and forget.out.count("forgot ") == 5, forget.err
    assert {p: p.read_bytes() for p in engine.pkg.rglob("*.py")} == files
    after = run_cli("status", ps, "--python", engine.python, "--format", "concise")
    assert "stale" not in after.out
    assert not list((engine.state_dir / "blobs").glob("*"))  # their backups went with them


def test_revert_drops_stale_records_without_writing_the_old_release_back(
    engine: Engine, tmp_path: Path, next_wheel: Path
) -> None:
    ps = _applied_then_upgraded(engine, tmp_path, next_wheel)
    files = {p: p.read_bytes() for p in engine.site.rglob("*") if p.is_file()}
    res = run_cli("revert", ps, "--python", engine.python)
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines[0].startswith(
        STALE.format(
            n=5,
            ids="envs-asm-padding, scheduler-padding, "
            "mla-large-cache, mla-full-graph, mla-fp8-kernel-row",
        )
    )
    assert lines[0].endswith("dropped without a write")
    assert lines[1:] == [
        f"cleared {pid}: its stale record only; wrote nothing"
        for pid in [
            "mla-fp8-kernel-row",
            "mla-full-graph",
            "mla-large-cache",
            "scheduler-padding",
            "envs-asm-padding",
        ]
    ]
    assert {p: p.read_bytes() for p in engine.site.rglob("*") if p.is_file()} == files
    assert not (engine.state_dir / "ledger.json").exists() or not _ledger(engine)


def test_apply_over_a_newer_release_records_afresh_what_it_writes(
    engine: Engine, tmp_path: Path, next_wheel: Path
) -> None:
    keep = ["envs-asm-padding", "mla-fp8-kernel-row"]
    ps = _applied_then_upgraded(engine, tmp_path, next_wheel, keep)
    res = run_cli("apply", ps, "--python", engine.python)
    assert res.code == 0, res.err
    out = res.out.splitlines()
    assert out[0] == STALE.format(n=2, ids="envs-asm-padding, mla-fp8-kernel-row") + (
        ", and judged afresh on the files there"
    )
    assert "dropped envs-asm-padding's stale record (no file written)" in out
    assert "applied mla-fp8-kernel-row" in out
    entries = _ledger(engine)
    assert list(entries) == ["mla-fp8-kernel-row"]  # the fix 0.5.0 ships is not recorded
    assert entries["mla-fp8-kernel-row"]["distributions"]["demo-engine"]["version"] == "0.5.0"
    again = run_cli("apply", ps, "--python", engine.python)
    assert again.code == 0 and "nothing to do" in again.out and "stale" not in again.out
    assert _states(ps, engine) == {
        "envs-asm-padding": ("redundant", False),
        "mla-fp8-kernel-row": ("applied", True),
    }


def test_a_format_1_ledger_is_read_and_written_back_as_format_2(
    engine: Engine, tmp_path: Path
) -> None:
    """A ledger an older patchbay wrote (format 1, no distributions) is read as it is, never
    found stale, and written back as format 2; a format this patchbay does not know is refused
    with its number, since it was written by a newer patchbay."""
    ps = _demo_without_guard(tmp_path / "ps", keep=["envs-asm-padding", "mla-fp8-kernel-row"])
    assert run_cli("apply", ps, "--python", engine.python).code == 0
    path = engine.state_dir / "ledger.json"
    data = json.loads(path.read_text())
    assert data["format"] == 2
    data["format"] = 1
    for bucket in data["patchsets"].values():
        bucket.pop("applied_identity", None)
        for entry in bucket["entries"][1:]:
            entry.pop("distributions")
    path.write_text(json.dumps(data))
    assert _states(ps, engine) == {
        "envs-asm-padding": ("applied", True),
        "mla-fp8-kernel-row": ("applied", True),
    }
    assert run_cli("revert", ps, "mla-fp8-kernel-row", "--python", engine.python).code == 0
    assert json.loads(path.read_text())["format"] == 2
    data = json.loads(path.read_text())
    data["format"] = 3
    path.write_text(json.dumps(data))
    res = run_cli("status", ps, "--python", engine.python)
    assert res.code != 0 and "ledger format 3 is not one this patchbay reads (1, 2)" in res.err
