"""The bounds of one file's walk: how many statements it may visit, how many alternatives it
may unroll, and what it records when it runs past them.

The walk unrolls literal loops, expands functions at each call and follows ``source`` chains;
each of those multiplies the work, so a script of nested loops or of helpers calling helpers
could cost time exponential in its depth. Every file's walk therefore has a budget:

- **steps**: statements visited, over the whole walk (:data:`MAX_STEPS`). Past it the walk
  stops where it is, keeps what it found so far, and the result says so
  (:class:`~.model.Incomplete`: the audit's PB412);
- **alternatives**: the product of the unrolled loops around a statement
  (:data:`MAX_ALTERNATIVES`). A loop that would take it past the bound is walked once, its
  variable unknown (a summary, as an abstract interpreter widens), and every modification
  found inside it says so.

The bounds are far above what real scripts need (the largest script of the real benchmark
repository walks a few thousand statements) and far below what takes a second.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_STEPS = 60_000
"""Statements one file's walk may visit (functions expanded and scripts followed included)."""

MAX_ALTERNATIVES = 256
"""The product of the item counts of the unrolled loops around a statement."""

MAX_ITEMS = 32
"""Items of one loop that are unrolled (the rest is not walked: a literal list this long is
data, not a list of patches)."""
MAX_DEPTH = 12
r"""Function calls and ``eval``\ s nested deeper than this are not walked into (a recursive
helper, ``eval "$X"`` where ``X`` holds ``eval "$X"``)."""


class Exhausted(Exception):
    """The step budget ran out (raised inside the walk, caught by its driver).

    Args:
        steps: the statements visited.
    """

    def __init__(self, steps: int) -> None:
        super().__init__(f"the walk visited {steps} statements, its bound")
        self.steps = steps


@dataclass
class Budget:
    """What one walk has spent.

    Attributes:
        steps: statements visited so far.
        product: the product of the unrolled loops' item counts around the current statement.
        summaries: the loops walked once as a summary that the current statement is inside
            (their notes, innermost last).
    """

    steps: int = 0
    product: int = 1
    summaries: list[str] = field(default_factory=list)

    def step(self) -> None:
        """Count one statement.

        Raises:
            Exhausted: past :data:`MAX_STEPS`.
        """
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Exhausted(self.steps)

    def unroll(self, items: int) -> bool:
        """Whether a loop of ``items`` items may be unrolled here (the product of the loops
        around it stays within :data:`MAX_ALTERNATIVES`)."""
        return self.product * max(items, 1) <= MAX_ALTERNATIVES
