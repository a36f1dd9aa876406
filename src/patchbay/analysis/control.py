"""The walk's compound statements: ``if``/``case`` branches (alternatives) and loops (unrolled).

A branch is walked once per clause from the same state, and the states merge after it; the same
file changed in two clauses is one change with alternatives. A ``for`` loop over literal words,
checked-in files (a glob next to the script) or the lines a ``while read`` is fed is unrolled,
within the bounds of :mod:`.budget`.
"""

from __future__ import annotations

import glob as globbing
import posixpath
from collections.abc import Callable
from typing import TYPE_CHECKING

from .budget import MAX_ITEMS
from .lists import same_place
from .syntax import Node, statements
from .values import SCRIPT_DIR, State, Val, unknown

if TYPE_CHECKING:
    from .model import Modification
    from .streams import Stdin


class ControlMixin:
    """Branches and loops of :class:`~.walk.Walker` (it provides the state and the walk)."""

    def if_statement(self, node: Node) -> None:
        """``if``/``elif``/``else``: the conditions run in turn (a command in the condition of
        an ``elif`` runs only when the ones before failed: the same change made there is an
        alternative, as in ``a || b``), then the clauses are branches."""
        conditions, body = self.clause_parts(node, node)
        cond_text = " ".join(self.src.text(c).strip() for c in conditions)
        clauses: list[tuple[str, list[Node]]] = [(f"if {cond_text}", body)]
        tried: list[list[Node]] = [conditions]
        for child in node.children:
            if child.type == "elif_clause":
                elif_conditions, parts = self.clause_parts(child, None)
                tried.append(elif_conditions)
                text = " ".join(self.src.text(c).strip() for c in elif_conditions)
                clauses.append((f"elif {text}", parts))
            elif child.type == "else_clause":
                clauses.append((f"else of if {cond_text}", statements(child)))
        groups: list[list[Modification]] = []
        for nodes in tried:
            before = len(self.mods)
            for c in nodes:
                self.statement(c)
            groups.append(self.mods[before:])
        self.merge_alternatives(groups)
        produced = self.branches(clauses)
        if clauses[-1][0].startswith("else of") and groups[0]:
            # `if git apply X; then ...; else patch < X; fi`: the else runs when it failed
            self.merge_alternatives([groups[0], produced[-1]])

    def clause_parts(self, clause: Node, owner: Node | None) -> tuple[list[Node], list[Node]]:
        """(condition, body) statements of an ``if`` (``owner``: its field names say which)
        or of an ``elif`` clause (the grammar names no field there: what comes before
        ``then`` is the condition)."""
        conditions: list[Node] = []
        body: list[Node] = []
        seen_then = False
        for i, child in enumerate(clause.children):
            if child.type in ("elif_clause", "else_clause"):
                break
            if child.type == "then":
                seen_then = True
                continue
            if not child.is_named or child.type == "comment":
                continue
            field = clause.field_name_for_child(i)
            if (owner is not None and field == "condition") or (owner is None and not seen_then):
                conditions.append(child)
            else:
                body.append(child)
        return conditions, body

    def merge_alternatives(self, groups: list[list[Modification]]) -> None:
        """The same file changed by several groups of statements of which only one takes
        effect: one change (the first group's), the others its alternatives."""
        with_mods = [m for m in groups if m]
        if len(with_mods) < 2:
            return
        first = with_mods[0]
        for other in with_mods[1:]:
            for mod in other:
                same = next((m for m in first if same_place(mod, m)), None)
                if same is not None and mod in self.mods:
                    self.mods.remove(mod)
                    same.alternatives.append(mod)

    def branches(self, clauses: list[tuple[str, list[Node]]]) -> list[list[Modification]]:
        """Walk each clause from the same state, then merge the states; returns the
        modifications each clause made (the same file changed in two clauses is one change,
        the later ones its alternatives)."""
        start = self.state
        ends: list[State] = []
        produced: list[list[Modification]] = []
        for label, nodes in clauses:
            self.state = start.copy()
            self.conditions.append(label)
            before = len(self.mods)
            try:
                for n in nodes:
                    self.statement(n)
            finally:
                self.conditions.pop()
            produced.append(self.mods[before:])
            ends.append(self.state)
        merged = ends[0] if ends else start
        for other in ends[1:]:
            merged.merge(other)
        if len(clauses) == 1:  # no else: the state before the if is one of the outcomes
            merged.merge(start)
        self.state = merged
        self.stopped = False
        self.merge_alternatives(produced)  # the same file changed in two branches
        return produced

    def case_statement(self, node: Node) -> None:
        value = node.child_by_field_name("value")
        subject = self.src.text(value) if value is not None else ""
        clauses = []
        for item in node.children:
            if item.type != "case_item":
                continue
            pats = []
            body = []
            for i, c in enumerate(item.children):
                if item.field_name_for_child(i) == "value" or c.type in ("extglob_pattern",):
                    pats.append(self.src.text(c))
                elif c.is_named and c.type not in ("comment",):
                    body.append(c)
            clauses.append((f"case {subject} in {'|'.join(pats)})", body))
        if not any("*" in label.rsplit(" in ", 1)[-1] for label, _ in clauses):
            clauses.append(("case: no pattern matches", []))
        self.branches(clauses)

    def for_statement(self, node: Node, stdin: Stdin | None) -> None:
        var_node = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        if var_node is None or body is None:
            return
        var = self.src.text(var_node)
        values_nodes = [
            c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "value"
        ]
        items: list[Val] = []
        if not values_nodes:
            items = list(self.state.args) or [unknown("$@", "the script's arguments")]
        for v in values_nodes:
            items.extend(self.fields(v))
        if not items:
            return
        expanded: list[Val] = []
        globbed = False
        for item in items:
            if "*" in item.text or "?" in item.text:
                found = self.glob(item)
                globbed = globbed or found != [item]
                expanded.extend(found)
            else:
                expanded.append(item)
        computed = [
            self.src.text(v)
            for v, vals in ((v, self.fields(v)) for v in values_nodes)
            if any(not x.known or "*" in x.text or "?" in x.text for x in vals)
            and not (globbed and all(x.text.startswith(SCRIPT_DIR) for x in vals))
        ]
        if not values_nodes:
            computed = ["$@"]
        if len(self.chain) == 1:
            self.result.loops.setdefault(
                self.src.line(node),
                {"items": len(expanded), "computed": computed, "globbed": globbed},
            )
        line = self.src.line(node)

        def bind(item: Val | None) -> None:
            self.state.vars[var] = [
                item or unknown(f"${var}", f"an item of the loop at line {line}")
            ]

        self.loop(line, expanded[:MAX_ITEMS], bind, body)

    def loop(
        self, line: int, items: list[Val], bind: Callable[[Val | None], None], body: Node
    ) -> None:
        """Walk ``body`` once per item (``bind`` sets the loop's variables to it), or, when
        the loops around it already unroll into too many alternatives (:mod:`.budget`), once
        with the variables unknown (``bind(None)``), noting it on every modification inside."""
        budget = self.budget
        if budget.unroll(len(items)):
            budget.product *= max(len(items), 1)
            try:
                for item in items:
                    bind(item)
                    self.statement(body)
            finally:
                budget.product //= max(len(items), 1)
            return
        note = (
            f"the loop at line {line} was walked once with its variable unknown (the loops "
            f"around it already unroll into {budget.product} alternatives)"
        )
        if (line, note) not in self.result.notes:
            self.result.notes.append((line, note))
        budget.summaries.append(note)
        try:
            bind(None)
            self.statement(body)
        finally:
            budget.summaries.pop()

    def glob(self, pattern: Val) -> list[Val]:
        """A glob over checked-in files next to the script is expanded now (sorted, as bash
        does in the C locale); any other stays the pattern (below an install root it is an
        installed location)."""
        text = pattern.text
        if self.root is not None and pattern.known and text.startswith(SCRIPT_DIR + "/"):
            folder = posixpath.join(self.root_text, posixpath.dirname(self.chain[-1]))
            rel = text[len(SCRIPT_DIR) + 1 :]
            found = self.inputs.glob(posixpath.join(globbing.escape(folder), rel))
            if found:
                return [Val(SCRIPT_DIR + "/" + posixpath.relpath(f, folder)) for f in found]
        return [pattern]

    def while_statement(self, node: Node, stdin: Stdin | None) -> None:
        body = node.child_by_field_name("body")
        cond = node.child_by_field_name("condition")
        lines: list[Val] = []
        read_vars: list[str] = []
        if cond is not None:
            for c in [cond, *cond.named_children]:
                if c.type == "command" and self.command_name(c) == "read":
                    read_vars = [
                        self.src.text(w)
                        for w in c.children_by_field_name("argument")
                        if not self.src.text(w).startswith("-")
                    ]
        if stdin is not None and read_vars:
            if stdin.kind in ("heredoc", "herestring") and stdin.text is not None:
                lines = [Val(x) for x in stdin.text.splitlines() if x.strip()]
            elif stdin.value is not None:
                lines = [stdin.value]
        if not lines and read_vars:
            lines = [unknown(f"${read_vars[0]}", "a value read at run time")]
        if body is None:
            return
        at = self.src.line(node)

        def bind(line: Val | None) -> None:
            if line is None:
                line = unknown(f"${read_vars[0]}" if read_vars else "", f"the loop at line {at}")
            words = line.text.split(None, len(read_vars) - 1)
            for k, name in enumerate(read_vars):
                text = words[k] if k < len(words) else ""
                self.state.vars[name] = [Val(text, line.how, line.unknown)]

        self.loop(at, (lines or [Val("")])[:MAX_ITEMS], bind, body)
