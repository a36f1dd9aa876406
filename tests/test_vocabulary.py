"""One vocabulary: every state and verdict the code can give is the one the docs list, derived
from the code's enums (a word added to the code without the docs fails here, and the converse)."""

from __future__ import annotations

import re

from conftest import REPO
from patchbay.apply.check import Verdict as CheckVerdict
from patchbay.apply.results import PatchStatus
from patchbay.diff.hunks import HunkResult, HunkState
from patchbay.diff.hunkview import WORDS, state_word
from patchbay.upstream.verdicts import Verdict

README = (REPO / "README.md").read_text()


def _table_words(text: str, heading: str) -> set[str]:
    """The first-column words of the Markdown table right after ``heading``."""
    section = text.split(heading, 1)[1]
    rows = re.findall(r"^\| `([a-z-]+)` \|", section.split("\n\n#", 1)[0], flags=re.M)
    return set(rows)


def test_the_report_verdict_table_lists_every_verdict_of_the_code() -> None:
    doc = (REPO / "docs" / "upstream-report.md").read_text()
    assert _table_words(doc, "## Verdicts") == {v.value for v in Verdict}


def test_the_readme_patch_states_table_lists_every_status() -> None:
    assert _table_words(README, "### Patch states") == {s.value for s in PatchStatus}


def test_check_verdicts_are_those_the_readme_names() -> None:
    line = next(line for line in README.splitlines() if line.startswith("| `patchbay check "))
    named = set(re.findall(r"`([a-z]+)`", line.split("|")[2]))
    assert {v.value for v in CheckVerdict} - {"outdated", "unlocked"} <= named


def test_every_hunk_word_is_one_of_the_listed_words_and_the_readme_names_them() -> None:
    seen = set()
    for state in HunkState:
        for kind in ("diff", "replace", "pip", "artifact"):
            for mine in (True, False):
                h = HunkResult(file="f", index=1, declared_line=1, state=state)
                seen.add(state_word(h, kind, by_patchbay=mine))
    assert seen == set(WORDS)
    paragraph = README.split("Each hunk (an edit of a `replace` patch) has one word", 1)[1]
    paragraph = paragraph.split("\n\n", 1)[0]
    assert set(re.findall(r"`([a-z]+)` \(", paragraph)) | {"conflict", "ambiguous"} >= seen
    assert "applies" not in seen  # the patch-level verdict of `check`, never a hunk's word


def test_the_json_schemas_name_the_same_hunk_words() -> None:
    import json

    for name in ("status", "check"):
        schema = json.loads((REPO / "docs" / "schemas" / f"{name}.schema.json").read_text())
        assert set(schema["$defs"]["hunk"]["properties"]["state"]["enum"]) == set(WORDS), name
