"""The audit on real material no one here wrote: it survives all of it, and stays silent on
scripts that patch no engine.

- the real benchmark repository (``../shared/corpus/inferencex-c9d4a624f``, read where it is:
  it is never copied into the project): the audit exits 0 or 1, never 70, and no file is left
  unanalysed without a finding that says why;
- every shell script the machine's system packages installed (:mod:`system_scripts`): no crash,
  no hang, and no finding, since none of them patches an engine.

Recall and precision against the labels of ``tests/corpus/real`` are printed by
``benchmarks/bench_corpus.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import REPO
from inprocess import run_main
from system_scripts import copy_system_scripts

SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus" / "inferencex-c9d4a624f"

_PLACEHOLDER = re.compile(r"/@\w+|<temporary folder>|<script folder>|\$\(\S+ [^)]*\) \$\{")
"""Placeholders of the walk, and the shell fragments a half-expanded value showed."""

needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the real corpus is not at {CORPUS} (CI has it there)"
)


def _audit(root: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[dict]]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("PATCHBAY_NO_CACHE", raising=False)
    result = run_main("audit", root, "--format", "json")
    assert result.crash is None, result.crash
    assert result.code in (0, 1), result.err
    return result.code, json.loads(result.out)["findings"]


@needs_corpus
def test_the_audit_survives_the_real_benchmark_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, findings = _audit(CORPUS, tmp_path / "cache", monkeypatch)
    assert findings, "the real repository patches engines: the audit must see some of it"
    failed = [f for f in findings if f["code"] == "PB412" and "analyser failed" in f["message"]]
    assert failed == [], "a fault of the analyser on real scripts"
    for f in findings:
        assert (CORPUS / f["path"]).is_file(), f
        assert f["line"] is None or f["line"] >= 1
    # a path in a message is resolved, or shown as written with why: never a placeholder of
    # the walk, never a half-expanded shell fragment
    shown = [f"{f['path']}:{f['line']}: {f['message']}" for f in findings]
    assert [m for m in shown if _PLACEHOLDER.search(m)] == []
    # a second run, warm, says the same
    _, again = _audit(CORPUS, tmp_path / "cache", monkeypatch)
    assert again == findings


def test_the_system_shell_scripts_give_no_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copied = copy_system_scripts(tmp_path / "tree")
    assert len(copied) > 100, "too few system scripts to be a corpus"
    code, findings = _audit(tmp_path / "tree", tmp_path / "cache", monkeypatch)
    assert [(f["path"], f["line"], f["code"], f["message"]) for f in findings] == []
    assert code == 0
