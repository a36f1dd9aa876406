"""The analyser's corpus: scripts written in the style of benchmark teams' patch scripts (vLLM,
aiter, SGLang in a ROCm container), each with a sidecar ``NAME.expected`` of the modifications
a reader finds in it.

Sidecar lines (``#`` starts a comment; an empty file: the script must stay silent):

- ``LINE MECHANISM [FLAG...]``: a modification whose statement starts at ``LINE`` of the script
  (``lib/x.sh:LINE`` for one in a file it sources or runs); flags: ``uncalled`` (in a function
  never called), ``swallowed`` (its failure is swallowed), ``alt=N`` (N alternatives),
  ``pinned`` (a checkout at a fixed commit that is built: the audit reports only moving refs);
- ``error LINE``: the script cannot be read (an unterminated here-document at ``LINE``);
- ``unresolved LINE`` (or ``PATH:LINE``): a statement that runs code the analyser cannot see
  (the audit's PB414); every other script must have none.

Used by ``tests/audit/test_corpus.py`` and ``benchmarks/bench_corpus.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus" / "scripts"


@dataclass(frozen=True)
class Expected:
    path: str  # "" for the script itself
    line: int
    mechanism: str
    flags: frozenset[str] = field(default_factory=frozenset)


@dataclass
class Case:
    script: Path
    rel: str
    kind: str
    expected: list[Expected]
    error_line: int | None = None
    unresolved: set[tuple[str, int]] = field(default_factory=set)


def kind_of(name: str) -> str:
    if name.endswith(".py"):
        return "python"
    if name.startswith("Dockerfile"):
        return "dockerfile"
    return "shell"


def load_cases() -> list[Case]:
    cases = []
    for sidecar in sorted(CORPUS.glob("*.expected")):
        script = sidecar.with_suffix("")
        rel = script.relative_to(CORPUS).as_posix()
        expected: list[Expected] = []
        error = None
        unresolved: set[tuple[str, int]] = set()
        for raw in sidecar.read_text().splitlines():
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            head, *rest = line.split()
            if head == "error":
                error = int(rest[0])
                continue
            if head == "unresolved":
                path, _, number = rest[0].rpartition(":")
                unresolved.add((path, int(number)))
                continue
            path, _, number = head.rpartition(":")
            expected.append(Expected(path, int(number), rest[0], frozenset(rest[1:])))
        cases.append(Case(script, rel, kind_of(script.name), expected, error, unresolved))
    return cases


def unresolved_of(analysis, rel: str) -> set[tuple[str, int]]:
    """The analysis's unresolved statements as ``(path, line)`` (path "" for the script)."""
    return {("" if u.path == rel else u.path, u.line) for u in analysis.unresolved}


def found_of(analysis, rel: str) -> list[tuple[Expected, object]]:
    """The analysis's modifications as :class:`Expected` keys (flags included)."""
    out = []
    for mod in analysis.modifications:
        where = mod.chain[-1] if mod.chain else rel
        path = "" if where == rel else where
        flags = set()
        if not mod.called:
            flags.add("uncalled")
        if mod.swallowed:
            flags.add("swallowed")
        if mod.alternatives:
            flags.add(f"alt={len(mod.alternatives)}")
        if mod.pinned and mod.mechanism.value == "vcs":
            flags.add("pinned")
        out.append((Expected(path, mod.line, mod.mechanism.value, frozenset(flags)), mod))
    return out
