"""Shared case 013: a comment that mentions a here-document operator opens none.

``patch-engine.sh`` line 3 is a comment showing ``<<'PYEOF'``; no line of the script is
``PYEOF``. The analyser must find the ``sed -i`` at line 6 (path from ``sysconfig`` purelib) and
the Python rewrite at lines 9-14 (through ``$PY``, on a target printed by a helper from
``find_spec(...).origin``), and nothing at line 3; the audit reports both.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import CASES
from patchbay.analysis import EngineNames, Mechanism, analyse_shell
from patchbay.audit.scanner import scan_tree

CASE = CASES / "013-heredoc-word-in-comment"
ENGINES = EngineNames.build(["demo-engine"], ["demo_engine"])


def test_comment_opens_no_heredoc_and_both_changes_are_found() -> None:
    analysis = analyse_shell((CASE / "patch-engine.sh").read_text(), "patch-engine.sh", ENGINES)
    mods = analysis.modifications
    assert [(m.line, m.end_line, m.mechanism) for m in mods] == [
        (6, 6, Mechanism.EDIT),
        (9, 14, Mechanism.EDIT),
    ]
    sed, python = mods
    assert sed.target is not None and sed.target.site_relative == "demo_engine/scheduler.py"
    assert sed.target.how == "$SITE, set at line 5" and "purelib" in sed.target.origin
    assert sed.edits == [("max_batch = 256", "max_batch = 512")]
    assert python.target is not None and python.target.site_relative == "demo_engine/envs.py"
    assert "find_spec" in python.target.origin
    assert python.edits == [("PADDING = 0", "PADDING = 16")]


def test_audit_reports_lines_6_and_9_to_14(tmp_path: Path) -> None:
    shutil.copy(CASE / "patch-engine.sh", tmp_path / "patch-engine.sh")
    found = scan_tree(tmp_path, ["**/*.sh"], [], ENGINES)
    assert [(f.line, f.end_line, f.code) for f in found] == [(6, None, "PB402"), (9, 14, "PB403")]
    assert all(f.chain == () for f in found)  # found in the script that was scanned


def test_import_makes_a_replace_of_the_python_edit_and_of_the_literal_sed(tmp_path: Path) -> None:
    """Import: a `replace` patch for the Python edit, and one for the literal `sed -i`
    (the case allows it converted or listed; a `replace` expects the old text once, and
    `status` says conflict otherwise); nothing is left out, so the import is complete."""
    import yaml

    from patchbay.importer import import_script

    script = tmp_path / "patch-engine.sh"
    shutil.copy(CASE / "patch-engine.sh", script)
    result = import_script(script, tmp_path / "out")
    assert not result.partial, result.unconverted
    doc = yaml.safe_load((tmp_path / "out" / "patchset.yaml").read_text())
    sed, patch = doc["patches"]
    assert sed["kind"] == "replace"
    assert sed["edits"] == [
        {"file": "demo_engine/scheduler.py", "old": "max_batch = 256", "new": "max_batch = 512"}
    ]
    assert patch["kind"] == "replace"
    assert patch["edits"] == [
        {"file": "demo_engine/envs.py", "old": "PADDING = 0", "new": "PADDING = 16"}
    ]
