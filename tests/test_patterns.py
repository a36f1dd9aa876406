"""Regular expressions compiled at first use (patchbay.patterns)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from patchbay.patterns import LazyPattern, pattern


def test_a_lazy_pattern_matches_as_the_compiled_one_does() -> None:
    lazy = pattern(r"^@@ -(\d+)(?:,(\d+))? @@", re.M)
    real = re.compile(r"^@@ -(\d+)(?:,(\d+))? @@", re.M)
    text = "x\n@@ -3,4 @@\n@@ -7 @@\n"
    assert lazy.findall(text) == real.findall(text)
    assert lazy.search(text).span() == real.search(text).span()
    assert lazy.sub("H", text) == real.sub("H", text)
    assert lazy.pattern == real.pattern and lazy.flags == real.flags
    assert pattern(rb"^\x00+$").fullmatch(b"\x00\x00") is not None


def test_a_bad_pattern_fails_at_first_use_not_at_import() -> None:
    lazy = pattern(r"(unclosed")
    with pytest.raises(re.error):
        lazy.match("x")


def test_no_module_of_a_cold_apply_compiles_its_patterns_at_import() -> None:
    """Every module-level pattern of the modules a cold apply imports is lazy until used."""
    probe = (
        "import re, sys\n"
        "import msgspec\n"  # (the schema's own patterns, msgspec.Meta's, are the schema's)
        "calls = []\n"
        "orig = re.compile\n"
        "def spy(p, f=0):\n"
        "    calls.append(sys._getframe(1).f_globals.get('__name__', ''))\n"
        "    return orig(p, f)\n"
        "re.compile = spy\n"
        "import patchbay.apply.engine, patchbay.kinds.diff, patchbay.patchset.loading\n"
        "import patchbay.cli.entry\n"
        "print(sorted({c for c in calls if c.startswith('patchbay')}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
    assert isinstance(pattern("x"), LazyPattern)
