"""``audit PATH...``, ``--select``/``--ignore`` and ``--statistics``, as ruff and pre-commit
users expect them: the whole repository judged, the findings chosen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli, write_patchset
from patchbay.audit.rules import RULES

SCRIPT = '#!/bin/bash\nsed -i "s/a/b/" /usr/local/lib/python3.12/dist-packages/vllm/envs.py\n'


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one script finding (PB402) and one patch without a waiver (PB101)."""
    root = tmp_path / "bench"
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "x.sh").write_text(SCRIPT)
    edit = {"file": "demo_engine/a.py", "old": "X = 1\n", "new": "X = 2\n"}
    write_patchset(root / "patchsets" / "p", [{"id": "a", "kind": "replace", "edits": [edit]}])
    return root


def _codes(res_out: str) -> list[str]:
    return [f["code"] for f in json.loads(res_out)["findings"]]


def test_paths_report_only_their_files_and_a_folder_alone_is_the_repository(repo: Path) -> None:
    res = run_cli("audit", "--format", "json", cwd=repo)
    assert sorted(_codes(res.out)) == ["PB101", "PB402"]
    res = run_cli("audit", "benchmarks/x.sh", "--format", "json", cwd=repo)
    assert (res.code, _codes(res.out)) == (1, ["PB402"])
    res = run_cli("audit", "patchsets", "benchmarks/x.sh", "--format", "json", cwd=repo)
    assert sorted(_codes(res.out)) == ["PB101", "PB402"]
    res = run_cli("audit", "patchsets/p/patchset.yaml", "--format", "json", cwd=repo)
    assert _codes(res.out) == ["PB101"]
    res = run_cli("audit", repo, "--format", "json")  # the old spelling: the repository
    assert sorted(_codes(res.out)) == ["PB101", "PB402"]
    res = run_cli("audit", "benchmarks/missing.sh", cwd=repo)
    assert res.code == 2 and "benchmarks/missing.sh" in res.err


def test_select_and_ignore_take_codes_and_prefixes(repo: Path) -> None:
    res = run_cli("audit", "--select", "PB4", "--format", "json", cwd=repo)
    assert (res.code, _codes(res.out)) == (1, ["PB402"])
    res = run_cli("audit", "--ignore", "PB402,PB1", "--format", "json", cwd=repo)
    assert (res.code, _codes(res.out)) == (0, [])
    res = run_cli("audit", "--select", "PB", "--ignore", "pb101", "--format", "json", cwd=repo)
    assert _codes(res.out) == ["PB402"]
    res = run_cli("audit", "--select", "PB9", cwd=repo)
    assert res.code == 2 and "'PB9' is no rule code" in res.err


def test_statistics_counts_findings_per_rule(repo: Path) -> None:
    (repo / "benchmarks" / "y.sh").write_text(SCRIPT)
    res = run_cli("audit", "--statistics", cwd=repo)
    assert res.code == 1
    lines = res.out.splitlines()
    assert lines[0].split() == ["2", "PB402", RULES["PB402"].name, "[error]"]
    assert lines[1].split()[:2] == ["1", "PB101"]
    res = run_cli("audit", "--statistics", "--format", "json", cwd=repo)
    doc = json.loads(res.out)
    assert [(r["count"], r["code"]) for r in doc["statistics"]] == [(2, "PB402"), (1, "PB101")]


def test_a_folder_inside_the_current_repository_is_a_path_not_the_repository(repo: Path) -> None:
    """``cd repo && patchbay audit patchsets/p`` reports that folder's findings of the whole
    audit (a CI step passing a folder must not audit a repository of nothing and pass)."""
    (repo / "pyproject.toml").write_text("[tool.patchbay]\n")
    res = run_cli("audit", "patchsets/p", "--format", "json", cwd=repo)
    assert (res.code, _codes(res.out)) == (1, ["PB101"])
    res = run_cli("audit", "benchmarks", "--format", "json", cwd=repo)
    doc = json.loads(res.out)
    assert [(f["code"], f["path"]) for f in doc["findings"]] == [("PB402", "benchmarks/x.sh")]
