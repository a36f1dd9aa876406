"""What each command imports (start-up time is the cost of a short run): ``--help``,
``--version`` and a verified no-op ``apply`` import neither msgspec (nor the models, the kinds,
YAML) nor rich nor GitPython; a cold ``apply`` off a terminal, and ``validate``, of a patchset
without pins validate it (msgspec, the models) but draw nothing (no rich), write diffs without
git (with ``--root`` nothing is spawned at all: no subprocess), lock with ``flock`` (no
filelock) and load neither packaging (pins) nor requests (downloads) nor pydantic (no longer a
dependency) nor dataclasses (the records on that path are msgspec Structs, created in C) nor
the lock file of remote sources. Each case runs the real :func:`patchbay.cli.main` in a fresh
interpreter and reads its ``sys.modules``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_patchset

HEAVY = ("pydantic", "msgspec", "rich", "git", "typer", "yaml", "patchbay.patchset.model",
         "patchbay.kinds", "patchbay.apply.engine", "requests", "packaging", "filelock",
         "patchbay.kinds.pip", "patchbay.kinds.artifact", "patchbay.kinds.command",
         "patchbay.carry.fetch", "dataclasses", "patchbay.patchset.lockfile",
         "subprocess")  # fmt: skip
# what a run on a patchset of diffs and edits never needs (off a terminal): no pins, downloads
# or commands
NOT_FOR_PLAIN_PATCHES = {"pydantic", "rich", "git", "typer", "requests", "packaging", "filelock",
                         "patchbay.kinds.pip", "patchbay.kinds.artifact",
                         "patchbay.kinds.command", "patchbay.carry.fetch", "dataclasses",
                         "patchbay.patchset.lockfile", "subprocess"}  # fmt: skip
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
own = sorted(m for m in sys.modules if m == "patchbay" or m.startswith("patchbay."))
print(json.dumps({{"code": code, "out": out.getvalue(), "heavy": heavy, "own": own}}))
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


def _plain_patchset(tmp_path: Path) -> tuple[Path, Path]:
    """A tree and a patchset of an exact-text edit and a diff (no pins, no downloads)."""
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
    return root, ps


def test_a_verified_noop_apply_imports_nothing_heavy_and_a_cold_one_only_what_it_needs(
    tmp_path: Path,
) -> None:
    root, ps = _plain_patchset(tmp_path)
    code, out, heavy = _imports("apply", ps, "--root", root)
    assert code == 0 and "2 applied" in out
    assert {"msgspec", "patchbay.patchset.model"} <= heavy  # the cold run validates the patchset
    assert heavy.isdisjoint(NOT_FOR_PLAIN_PATCHES), heavy
    code, out, heavy = _imports("apply", ps, "--root", root)
    assert (code, out) == (0, "nothing to do: 2 patch(es) already present\n")
    assert heavy == set()
    # a tampered file: the full engine runs (and imports what it needs)
    (root / "demo_engine" / "a.py").write_text("X = 2\n# edited\n")
    code, out, heavy = _imports("apply", ps, "--root", root)
    assert "patchbay.patchset.model" in heavy and "changed since patchbay wrote it" in out
    assert heavy.isdisjoint(NOT_FOR_PLAIN_PATCHES), heavy


def test_validate_of_a_patchset_without_pins_loads_no_packaging_filelock_or_rich(
    tmp_path: Path,
) -> None:
    _, ps = _plain_patchset(tmp_path)
    code, out, heavy = _imports("validate", ps)
    assert code == 0 and "valid (2 patch(es))" in out
    assert "patchbay.patchset.model" in heavy
    assert heavy.isdisjoint(NOT_FOR_PLAIN_PATCHES), heavy


def test_a_pin_loads_packaging_where_it_is_checked(tmp_path: Path) -> None:
    """The other side of the lazy import: a ``pip`` patch's requirement is still parsed."""
    ps = write_patchset(
        tmp_path / "ps", [{"id": "pin", "kind": "pip", "requirement": "demo-helper==1.0"}]
    )
    code, _, heavy = _imports("validate", ps)
    assert code == 0 and "packaging" in heavy


# every patchbay module a cold apply of plain diffs and edits imports, off a terminal: a module
# added to this path costs every container's first apply its import, so it is added here on
# purpose (or imported where it is needed instead)
COLD_APPLY_MODULES = {
    "patchbay", "patchbay.apply", "patchbay.apply.applied_identity", "patchbay.apply.check",
    "patchbay.apply.childgroup", "patchbay.apply.engine", "patchbay.apply.folders",
    "patchbay.apply.interrupted", "patchbay.apply.journal", "patchbay.apply.judge",
    "patchbay.apply.layers", "patchbay.apply.ledger", "patchbay.apply.noop",
    "patchbay.apply.plan", "patchbay.apply.recovery", "patchbay.apply.results",
    "patchbay.apply.revert", "patchbay.apply.statelock", "patchbay.apply.transaction",
    "patchbay.cli", "patchbay.cli.arguments", "patchbay.cli.commands",
    "patchbay.cli.commands.apply", "patchbay.cli.commands.common", "patchbay.cli.entry",
    "patchbay.cli.grammar", "patchbay.cli.grammar.apply", "patchbay.cli.output",
    "patchbay.cli.parser", "patchbay.cli.plainline", "patchbay.diff", "patchbay.diff.binary",
    "patchbay.diff.hunks",
    "patchbay.diff.hunkview", "patchbay.diff.identity", "patchbay.diff.parse",
    "patchbay.digests", "patchbay.environment", "patchbay.environment.owners",
    "patchbay.environment.paths", "patchbay.environment.statefolder",
    "patchbay.environment.targets", "patchbay.environment.tree", "patchbay.errors",
    "patchbay.kinds", "patchbay.kinds.base", "patchbay.kinds.diff", "patchbay.kinds.diffwrite",
    "patchbay.kinds.replace",
    "patchbay.options", "patchbay.patchset", "patchbay.patchset.coverage",
    "patchbay.patchset.inputfiles", "patchbay.patchset.loading", "patchbay.patchset.model",
    "patchbay.patchset.sources", "patchbay.patchset.validation", "patchbay.patchset.yamlfile",
    "patchbay.patterns", "patchbay.redaction",
}  # fmt: skip


def test_a_cold_apply_of_plain_patches_imports_only_the_modules_listed(tmp_path: Path) -> None:
    root, ps = _plain_patchset(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "apply", str(ps), "--root", str(root)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    doc = json.loads(proc.stdout.splitlines()[-1])
    assert doc["code"] == 0 and "2 applied" in doc["out"]
    own = set(doc["own"])
    assert own - COLD_APPLY_MODULES == set(), "new on the cold apply path"
    # the path is not larger than it is, and nothing of audit, import, authoring or report
    assert len(own) <= len(COLD_APPLY_MODULES)
    assert not any(
        m.startswith(("patchbay.audit", "patchbay.importer", "patchbay.authoring",
                      "patchbay.upstream", "patchbay.analysis", "patchbay.waivers"))
        for m in own
    )  # fmt: skip
