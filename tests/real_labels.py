"""The labels of real scripts (``tests/corpus/real``, written by reading them) and the score of
audit findings against them.

The scripts stay in ``../shared/`` (never copied into the project); the labels say which of
their statements change an engine (see ``tests/corpus/real/README.md`` for the format and the
rules). Used by ``tests/audit/test_real_corpus.py`` and ``benchmarks/bench_corpus.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABELS = HERE / "corpus" / "real"
SHARED = HERE.parent.parent / "shared"

SOURCES: dict[str, tuple[Path, list[str], list[Path]]] = {
    "inferencex-c9d4a624f": (
        SHARED / "corpus" / "inferencex-c9d4a624f",
        ["**/*.sh", "**/Dockerfile*", "**/*.py"],
        sorted((LABELS / "inferencex-c9d4a624f").glob("*.labels")),
    ),
    "mission": (SHARED / "mission", ["*.sh"], [LABELS / "mission.labels"]),
}
"""Name -> (the folder of real scripts, the globs the audit reads there, the label files)."""

COUNTED_CODES = frozenset(f"PB40{k}" for k in range(1, 9))
"""The findings that say a statement changes an engine (PB409-PB413 say something else about
a statement or a file: a swallowed failure, an annotation, a file not or not fully read)."""


@dataclass(frozen=True)
class Label:
    """One labelled statement.

    Attributes:
        path: the file, relative to the corpus folder.
        line: the statement's first line.
        mechanism: ``diff``, ``edit``... (:class:`patchbay.analysis.Mechanism` values).
        also: other lines of the same file where a finding counts for this label.
        stack: the package it changes when that is not a default engine (recorded only).
        harness: it changes an evaluation harness (recorded only).
        flags: the other flags (``uncalled``).
        note: the label's comment.
    """

    path: str
    line: int
    mechanism: str
    also: tuple[int, ...] = ()
    stack: str | None = None
    harness: bool = False
    flags: frozenset[str] = field(default_factory=frozenset)
    note: str = ""

    @property
    def counted(self) -> bool:
        """Counted in recall and precision (a default engine's change)."""
        return self.stack is None and not self.harness

    @property
    def lines(self) -> set[int]:
        return {self.line, *self.also}


def load_labels(files: list[Path]) -> list[Label]:
    """The labels of ``files``.

    Raises:
        ValueError: a line that is not ``PATH:LINE MECHANISM [FLAG...]`` (naming file:line).
    """
    out = []
    for file in files:
        for number, raw in enumerate(file.read_text().splitlines(), 1):
            text, _, note = raw.partition("#")
            if not text.strip():
                continue
            head, *rest = text.split()
            path, _, line = head.rpartition(":")
            if not path or not line.isdigit() or not rest:
                raise ValueError(f"{file}:{number}: not PATH:LINE MECHANISM [FLAG...]: {raw!r}")
            also: tuple[int, ...] = ()
            stack = None
            harness = False
            flags = set()
            for flag in rest[1:]:
                if flag.startswith("also="):
                    also = tuple(int(x) for x in flag[5:].split(","))
                elif flag.startswith("stack="):
                    stack = flag[6:]
                elif flag == "harness":
                    harness = True
                else:
                    flags.add(flag)
            out.append(
                Label(
                    path, int(line), rest[0], also, stack, harness, frozenset(flags), note.strip()
                )
            )
    return out


@dataclass
class Score:
    """Findings against labels.

    Attributes:
        found: counted labels with a finding at one of their lines.
        missed: counted labels without one.
        true: findings at a line of a counted label.
        false: findings at no labelled line (false positives).
        neutral: findings at a line of a label that is not counted (stack, harness).
    """

    found: list[Label] = field(default_factory=list)
    missed: list[Label] = field(default_factory=list)
    true: list[tuple[str, int, str]] = field(default_factory=list)
    false: list[tuple[str, int, str, str]] = field(default_factory=list)
    neutral: list[tuple[str, int, str]] = field(default_factory=list)

    @property
    def recall(self) -> tuple[int, int]:
        return len(self.found), len(self.found) + len(self.missed)

    @property
    def precision(self) -> tuple[int, int]:
        return len(self.true), len(self.true) + len(self.false)


def score(findings: list[tuple[str, int | None, str, str]], labels: list[Label]) -> Score:
    """Score ``(path, line, code, message)`` findings (only :data:`COUNTED_CODES` count)
    against ``labels``: one finding per statement line (several codes at one line are one)."""
    at: dict[tuple[str, int], tuple[str, str]] = {}
    for path, line, code, message in findings:
        if code in COUNTED_CODES and line is not None:
            at.setdefault((path, line), (code, message))
    result = Score()
    for label in labels:
        hit = any((label.path, n) in at for n in label.lines)
        if label.counted:
            (result.found if hit else result.missed).append(label)
    counted = {(lb.path, n) for lb in labels if lb.counted for n in lb.lines}
    neutral = {(lb.path, n) for lb in labels if not lb.counted for n in lb.lines}
    for (path, line), (code, message) in sorted(at.items()):
        if (path, line) in counted:
            result.true.append((path, line, code))
        elif (path, line) in neutral:
            result.neutral.append((path, line, code))
        else:
            result.false.append((path, line, code, message))
    return result
