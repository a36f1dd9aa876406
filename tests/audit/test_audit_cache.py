"""The audit's cache of script findings (``patchbay.audit.cache``), in-process on real files.

A cached entry is reused only while the script, every repository file its analysis looked at,
the engine names and the analyser are the same; a broken cache file is ignored and replaced.
Each test compares the findings with a fresh analysis of the same tree (no cache), so a stale
entry shows up as a difference.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import dedent
from patchbay.analysis import EngineNames
from patchbay.analysis.inputs import Inputs, unchanged
from patchbay.audit import cache as cache_module
from patchbay.audit import run_audit
from patchbay.audit.cache import ScriptCache
from patchbay.audit.rules import Finding
from patchbay.audit.scanner import scan_tree

ENGINES = EngineNames.build()
SITE_LINE = "SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"

RUN_SH = dedent(
    f"""
    #!/usr/bin/env bash
    set -e
    {SITE_LINE}
    sed -i 's/MAX = 1/MAX = 2/' "$SITE/vllm/envs.py"
    source "$(dirname "$0")/lib/helpers.sh"
    for p in "$(dirname "$0")"/patches/*.patch; do
      git -C "$SITE" apply "$p"
    done
    """
)
HELPERS_SH = 'cp overrides/rocm.py "$SITE/vllm/attention/rocm.py"\n'


def _tree(root: Path) -> Path:
    (root / "bench" / "lib").mkdir(parents=True)
    (root / "bench" / "patches").mkdir()
    (root / "bench" / "run.sh").write_text(RUN_SH)
    (root / "bench" / "lib" / "helpers.sh").write_text(HELPERS_SH)
    (root / "bench" / "patches" / "a.patch").write_text("--- a/vllm/x.py\n+++ b/vllm/x.py\n")
    (root / "bench" / "harness.sh").write_text("#!/bin/sh\npip install tabulate\n")
    return root


def _key(findings: list[Finding]) -> list[tuple]:
    return sorted(
        (f.code, f.path, f.line, f.end_line, f.message, f.chain, f.suppression) for f in findings
    )


def _scan(root: Path, folder: Path | None, engines: EngineNames = ENGINES) -> tuple:
    """(findings, hits, misses) of one scan with a cache in ``folder`` (None: no cache)."""
    cache = ScriptCache(folder, root, engines) if folder is not None else None
    found = scan_tree(root, ["**/*.sh"], [], engines, cache)
    return _key(found), (cache.hits if cache else 0), (cache.misses if cache else 0)


def test_a_warm_scan_reuses_every_entry_and_agrees(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, None)
    assert {code for code, *_ in fresh} >= {"PB401", "PB402", "PB404"}
    # run.sh and lib/helpers.sh are analysed; harness.sh fails the gate
    assert _scan(root, folder) == (fresh, 0, 2)
    written = next(folder.iterdir())
    before = written.stat().st_mtime_ns
    assert _scan(root, folder) == (fresh, 2, 0)
    assert written.stat().st_mtime_ns == before  # nothing changed: nothing written


@pytest.mark.parametrize(
    ("change", "hits", "misses"),
    [
        ("script", 1, 1),  # run.sh again, lib/helpers.sh reused
        ("sourced helper", 0, 2),  # both: run.sh read it
        ("new glob match", 1, 1),
        ("removed helper", 0, 1),  # run.sh looked for it; it is no longer listed
    ],
)
def test_a_change_of_the_script_or_a_file_it_looked_at_invalidates(
    tmp_path: Path, change: str, hits: int, misses: int
) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    before, _, _ = _scan(root, folder)
    if change == "script":
        (root / "bench" / "run.sh").write_text(RUN_SH + 'rm -rf "$SITE/vllm/_C.so"\n')
    elif change == "sourced helper":
        (root / "bench" / "lib" / "helpers.sh").write_text(
            HELPERS_SH + 'echo x > "$SITE/vllm/hook.pth"\n'
        )
    elif change == "new glob match":
        (root / "bench" / "patches" / "b.patch").write_text("--- a/vllm/y.py\n+++ b/vllm/y.py\n")
    else:
        (root / "bench" / "lib" / "helpers.sh").unlink()
    fresh, _, _ = _scan(root, None)
    if change != "new glob match":  # (a second patch applied by the same line: same finding)
        assert fresh != before
    assert _scan(root, folder) == (fresh, hits, misses)
    assert _scan(root, folder) == (fresh, hits + misses, 0)  # the new answers are cached


def test_other_engine_names_or_another_analyser_do_not_reuse_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    _scan(root, folder)
    others = EngineNames.build(packages=["demo_engine"])
    fresh, _, _ = _scan(root, None, others)
    assert _scan(root, folder, others) == (fresh, 0, 2)
    monkeypatch.setattr(cache_module, "_code_digest", lambda: "another analyser")
    assert _scan(root, folder, others)[1:] == (0, 2)


@pytest.mark.parametrize(
    "content",
    [
        b"not json {",
        b"\xff\xfe\x00garbage",
        b"[]",
        b'{"format": 1}',
        "forged",
    ],
)
def test_a_corrupt_cache_file_is_ignored_and_replaced(tmp_path: Path, content: bytes | str) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, folder)
    path = next(folder.iterdir())
    if content == "forged":  # the right header, entries of the wrong shape
        doc = json.loads(path.read_text())
        for entry in doc["entries"].values():
            entry["findings"] = [["PB999", "x", 1, "m", None, [], None], "nonsense"]
            entry["inputs"] = [["file", 3, True]]
        path.write_text(json.dumps(doc))
    else:
        assert isinstance(content, bytes)
        path.write_bytes(content)
    assert _scan(root, folder) == (fresh, 0, 2)
    assert _scan(root, folder) == (fresh, 2, 0)
    assert json.loads(path.read_text())["format"] == cache_module.FORMAT


def test_inputs_record_what_was_seen_and_notice_each_change(tmp_path: Path) -> None:
    """Each kind of look (a file's existence, its content, a glob, a folder's entries) is
    answered again on reuse; any other answer, or a probe of an unknown kind, is a change."""
    (tmp_path / "d").mkdir()
    (tmp_path / "f.txt").write_text("one\r\n")
    inputs = Inputs()
    assert inputs.isfile(str(tmp_path / "f.txt")) and not inputs.isfile(str(tmp_path / "g"))
    assert inputs.read_text(tmp_path / "f.txt") == "one\n"
    assert inputs.glob(str(tmp_path / "*.txt")) == [str(tmp_path / "f.txt")]
    assert inputs.folder(tmp_path / "d") == (True, [])
    probes = json.loads(json.dumps(inputs.probes))  # as the cache file stores them
    assert unchanged(probes)
    changes = [
        lambda: (tmp_path / "g").write_text(""),
        lambda: (tmp_path / "f.txt").write_text("two\n"),
        lambda: (tmp_path / "d" / "x.py").write_text(""),
    ]
    for change in changes:
        change()
        assert not unchanged(probes)
        inputs = Inputs()
        inputs.isfile(str(tmp_path / "f.txt"))
        inputs.isfile(str(tmp_path / "g"))
        inputs.read_text(tmp_path / "f.txt")
        inputs.glob(str(tmp_path / "*.txt"))
        inputs.folder(tmp_path / "d")
        probes = json.loads(json.dumps(inputs.probes))
        assert unchanged(probes)
    assert not unchanged([("socket", str(tmp_path), True)])


def test_run_audit_uses_the_cache_folder_and_can_be_told_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "xdg"
    off = run_audit(root, cache_dir=folder, script_cache=False)
    assert not folder.exists()
    monkeypatch.setenv("PATCHBAY_NO_CACHE", "1")
    run_audit(root, cache_dir=folder)
    assert not folder.exists()
    monkeypatch.delenv("PATCHBAY_NO_CACHE")
    cold = run_audit(root, cache_dir=folder)
    (written,) = (folder / "audit").iterdir()
    assert written.name.startswith("scripts-") and written.suffix == ".json"
    before = written.stat().st_mtime_ns
    warm = run_audit(root, cache_dir=folder)
    assert written.stat().st_mtime_ns == before  # every entry reused: nothing to write
    assert _key(off.findings) == _key(cold.findings) == _key(warm.findings)


def test_a_script_the_gate_rejected_is_judged_again_when_what_it_runs_appears(
    tmp_path: Path,
) -> None:
    """The gate's verdict on a script is cached with the answers it rested on: ``bash
    helper.sh`` counts only when helper.sh exists, so a warm scan skips run.sh while it does
    not, and judges (and follows) it again once it does."""
    root = tmp_path / "repo"
    (root / "bench").mkdir(parents=True)
    (root / "bench" / "run.sh").write_text("#!/bin/bash\ncd bench\nbash helper.sh\n")
    (root / "bench" / "notes.sh").write_text("#!/bin/bash\necho hello\n")
    folder = tmp_path / "cache"
    assert _scan(root, folder) == ([], 0, 0)
    cache = ScriptCache(folder, root, ENGINES)
    assert len(cache.harmless) == 2 and ("bench", "helper.sh") in cache.gate_probes
    assert cache.harmless_verdicts(lambda folder, word: False)
    assert _scan(root, folder) == ([], 0, 0)
    (root / "bench" / "helper.sh").write_text(f"{SITE_LINE}\n{HELPERS_SH}")
    fresh, _, _ = _scan(root, None)
    assert any(chain for _code, path, *_, chain, _s in fresh if path == "bench/helper.sh")
    assert _scan(root, folder) == (fresh, 0, 2)  # run.sh and helper.sh analysed
    assert _scan(root, folder) == (fresh, 2, 0)


def test_gate_verdicts_of_the_wrong_shape_are_dropped(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, folder)
    path = next(folder.iterdir())
    doc = json.loads(path.read_text())
    assert doc["harmless"]  # harness.sh
    doc["gate_probes"] = [["bench", "x.sh", "yes"]]
    path.write_text(json.dumps(doc))
    assert ScriptCache(folder, root, ENGINES).harmless == set()
    assert _scan(root, folder) == (fresh, 2, 0)
    assert json.loads(path.read_text())["harmless"] == doc["harmless"]
