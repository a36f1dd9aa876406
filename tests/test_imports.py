"""What each command imports (start-up time is the cost of a short run): ``--help``,
``--version`` and a verified no-op ``apply`` import neither pydantic (nor the models, the kinds,
YAML) nor rich nor GitPython; a cold ``apply`` off a terminal validates (pydantic) but draws
nothing (no rich) and spawns ``git`` without GitPython. Each case runs the real
:func:`patchbay.cli.main` in a fresh interpreter and reads its ``sys.modules``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_patchset

HEAVY = ("pydantic", "rich", "git", "typer", "yaml", "patchbay.model", "patchbay.kinds",
         "patchbay.engine", "requests", "packaging")  # fmt: skip
PROBE = f"""
import io, json, sys, contextlib
from patchbay.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)
print(json.dumps({{"code": code, "out": out.getvalue(), "heavy": heavy}}))
"""


def _imports(*args: str | Path, cwd: Path | None = None) -> tuple[int, str, set[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *map(str, args)],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        timeout=120,
    )
    doc = json.loads(proc.stdout.splitlines()[-1])
    return doc["code"], doc["out"], set(doc["heavy"])


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["-h"], ["apply", "-h"]])
def test_help_and_version_import_nothing_heavy(args: list[str]) -> None:
    code, out, heavy = _imports(*args)
    assert code == 0 and out
    assert heavy == set()


def test_a_verified_noop_apply_imports_nothing_heavy_and_a_cold_one_no_rich_or_gitpython(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tree"
    (root / "demo_engine").mkdir(parents=True)
    (root / "demo_engine" / "a.py").write_text("X = 1\n")
    (root / "demo_engine" / "b.py").write_text("def f():\n    return 1\n")
    diff = (
        "--- a/demo_engine/b.py\n+++ b/demo_engine/b.py\n@@ -1,2 +1,2 @@\n"
        " def f():\n-    return 1\n+    return 2\n"
    )
    ps = write_patchset(
        tmp_path / "ps",
        [
            {"id": "one", "kind": "replace",
             "edits": [{"file": "demo_engine/a.py", "old": "X = 1\n", "new": "X = 2\n"}]},
            {"id": "two", "kind": "diff", "file": "b.patch"},
        ],
        files={"b.patch": diff},
    )  # fmt: skip
    code, out, heavy = _imports("apply", ps, "--root", root)
    assert code == 0 and "2 applied" in out
    assert "pydantic" in heavy  # the cold run validates the patchset
    assert heavy.isdisjoint({"rich", "git", "typer"})
    code, out, heavy = _imports("apply", ps, "--root", root)
    assert (code, out) == (0, "nothing to do: 2 patch(es) already present\n")
    assert heavy == set()
    # a tampered file: the full engine runs (and imports what it needs)
    (root / "demo_engine" / "a.py").write_text("X = 2\n# edited\n")
    code, out, heavy = _imports("apply", ps, "--root", root)
    assert "pydantic" in heavy and "changed since patchbay wrote it" in out
