"""From the analyser's answer to a draft patchset: what every statement of the script became.

The script analyser (:mod:`patchbay.analysis`) says which statements change the engine, how,
and with what content; this module turns its modifications into drafts (:mod:`.patches`) and
gives every top-level statement of the script a row with its outcomes: converted (into which
patch), nothing to import (a message, a check, a variable, a helper), or not converted (with the
lines and what to do). Nothing is dropped silently: a modification that no statement accounts
for, or that sits in a function the script never calls, is listed as not converted.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from ..analysis import Mechanism, Modification, ScriptAnalysis
from ..analysis.syntax import Node, Source
from ..analysis.values import display
from . import patches
from .conversion import Context
from .drafts import DiffDraft, Draft, Outcome, OutcomeKind, ReplaceDraft, Row, WalkResult
from .refs import find_refs
from .statements import describe

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _repo_name(ref: str) -> str:
    return re.split(r"[#@]", ref.rsplit("/", 1)[-1])[0] if "/" in ref else ref


def _words(text: str, ref: str) -> set[str]:
    """The words of a header entry that can name files: its text without its references,
    without the repository's own name (every file of it is under that folder) and without
    ``py`` and one-letter words."""
    own = set(re.findall(r"[a-z0-9]+", _repo_name(ref).lower()))
    found = set(re.findall(r"[a-z0-9]+", _without_ref(text).lower()))
    return {w for w in found - own if len(w) > 1 and w != "py"}


def _without_ref(text: str) -> str:
    text = re.sub(r"\s+", " ", text)  # `vllm  #51682`, as header lists align it, is a reference
    text = re.sub(r"[\w.-]+/[\w.-]+ ?#\d+|https?://\S+|[\w.-]+ #\d+", "", text)
    return re.sub(r"\s+", " ", text).strip(" -:;,")


def _clean_comment(text: str) -> str:
    text = text.strip().lstrip("#").strip().strip("-=#*~ \t").strip()
    return re.sub(r"^(?:step\s*)?\(?\d+[.):]\s+", "", text, flags=re.IGNORECASE)


class Converter:
    """One script's drafts and outcomes (see the module docstring).

    Args:
        analysis: the analyser's answer for the script.
        source: the script's syntax tree (the one the analysis walked).
        script: the script file.
        projects: project name -> ``owner/repo`` for ``name #N`` references.
    """

    def __init__(
        self, analysis: ScriptAnalysis, source: Source, script: Path, projects: dict[str, str]
    ) -> None:
        self.analysis = analysis
        self.src = source
        self.script = script
        self.root = script.resolve().parent
        self.projects = projects
        self.lines = source.data.decode("utf-8", "replace").split("\n")
        self.drafts: list[Draft] = []
        self.outcomes: list[Outcome] = []
        self.rows: list[Row] = []
        self.row: Row | None = None
        self.remarks: list[str] = []
        self.applied: dict[object, Draft] = {}
        self.pins: dict[object, Draft] = {}
        self.removal: list[tuple[Modification, Context, Row | None]] = []
        self.packages: list[str] = list(analysis.packages)
        self.comments: dict[int, tuple[str, bool]] = {}
        self.functions: dict[str, Node] = {}
        self.called: set[str] = set()
        self.done: set[int] = set()  # ids of modifications accounted for
        self.engine: dict[int, bool] = {}
        self.blocked: list[tuple[int | None, int, int]] = []
        self.by_key: dict[tuple[int | None, int], list[Modification]] = {}
        own = analysis.path
        for mod in [*analysis.modifications, *analysis.installs]:
            self.engine[id(mod)] = mod in analysis.modifications
            if mod.chain and mod.chain[-1] != own:
                continue
            via = mod.details.get("via")
            key = (via[0] if via else None, mod.line)  # type: ignore[index]
            self.by_key.setdefault(key, []).append(mod)
        self._index(source.root)

    def _index(self, node: Node) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "comment":
                line = self.src.line(n)
                before = self.lines[line - 1][: n.start_point[1]]
                self.comments[line] = (self.src.text(n), not before.strip())
            elif n.type == "function_definition":
                name = n.child_by_field_name("name")
                if name is not None:
                    self.functions.setdefault(self.src.text(name), n)
            stack.extend(n.children)

    # ------------------------------------------------------------------ the result

    def run(self) -> WalkResult:
        nodes = [n for n in self.src.root.named_children if n.type != "comment"]
        header = self.header(self.src.line(nodes[0]) if nodes else len(self.lines) + 1)
        prev = 0
        for index, node in enumerate(nodes):
            start, end = self.src.line(node), self.src.end_line(node)
            comments = self.preceding(prev, start, contiguous=index == 0)
            self.row = Row(start, end)
            self.rows.append(self.row)
            self.statement(node, Context(comments))
            self.convert_row(Context(comments), start, end)
            self.row.outcomes.sort(key=lambda o: (o.via or o.start, o.start))
            prev = end
        self.row = None
        self.flush_removal()
        self.leftovers()
        self.header_refs(self.src.line(nodes[0]) if nodes else len(self.lines) + 1)
        return WalkResult(
            drafts=self.drafts,
            outcomes=self.outcomes,
            rows=self.rows,
            packages=self.packages,
            header=header,
            remarks=self.remarks,
        )

    def header(self, first_line: int) -> str:
        texts: list[str] = []
        for line in range(1, first_line):
            c = self.comments.get(line)
            if c is None:
                if texts:
                    break
                continue
            if line == 1 and c[0].startswith("#!"):
                continue
            text = _clean_comment(c[0])
            if text:
                texts.append(text)
        return " ".join(texts)

    def header_refs(self, first_line: int) -> None:
        """``owner/repo #N  what it does`` lines of the header comment: matched to the diffs
        and edits without a reference of their own, by the repository (the package the files
        are under) and, among several of one repository, by the words that name the files."""
        entries: list[tuple[str, str]] = []
        # the files an entry's continuation lines name (the lines under it without a reference,
        # as a header list wraps a long entry: ``fallback gate: gpu/attn_utils.py, ...``)
        files_of: dict[int, list[str]] = {}
        current: list[int] = []
        for line in range(1, first_line):
            c = self.comments.get(line)
            if c is None or not c[1]:
                current = []
                continue
            found = find_refs(c[0], self.projects)
            text = _clean_comment(c[0])
            if not found.refs:
                # a file named in an aside, `(x.py hunks NOT taken ...`, is not the entry's
                aside_free = re.sub(r"\([^)]*\)?", "", text)
                named = re.findall(r"[\w./-]+\.[a-z]{1,4}\b", aside_free)
                for n in current:
                    files_of[n].extend(f.strip("./") for f in named if "/" in f or "_" in f)
                continue
            current = []
            for ref in found.refs:
                files_of[len(entries)] = []
                current.append(len(entries))
                entries.append((text, ref))
        if not entries:
            return
        for draft in self.drafts:
            if draft.refs:
                continue
            if isinstance(draft, DiffDraft):
                paths = list(draft.paths)
            elif isinstance(draft, ReplaceDraft):
                paths = [f for f, *_ in draft.edits]
            else:
                continue
            tops = {_norm(p.split("/")[0]) for p in paths}
            words = set(re.findall(r"[a-z0-9]+", " ".join(paths).lower()))
            matched = [
                (n, t, r) for n, (t, r) in enumerate(entries) if _norm(_repo_name(r)) in tops
            ]
            if len(matched) > 1:
                # an entry that names one of the files (a path ending, in its continuation
                # lines) is the one; else those whose words name the files' folders or names
                by_file = [
                    m
                    for m in matched
                    if any(p == f or p.endswith("/" + f) for f in files_of[m[0]] for p in paths)
                ]
                named = [m for m in matched if _words(m[1], m[2]) & words]
                matched = by_file or named or matched
            matched = [(t, r) for _, t, r in matched]
            if not matched:
                continue
            draft.refs = [r for _, r in matched]
            if not draft.comments:
                draft.comments = [_without_ref(t) for t, _ in matched[:1]]
            draft.notes.append(
                "its upstream reference comes from the script's header comment, matched by the "
                "files it changes: check it"
            )

    def preceding(self, after: int, before: int, *, contiguous: bool = False) -> list[str]:
        """Own-line comments between two lines (only the block right above ``before`` with
        ``contiguous``), and a trailing comment on ``before``."""
        lines = list(range(after + 1, before))
        if contiguous:
            block: list[int] = []
            for line in reversed(lines):
                c = self.comments.get(line)
                if c is None or not c[1]:
                    break
                block.insert(0, line)
            lines = block
        texts = []
        for line in lines:
            c = self.comments.get(line)
            if c is not None and c[1] and not (line == 1 and c[0].startswith("#!")):
                text = _clean_comment(c[0])
                if text:
                    texts.append(text)
        c = self.comments.get(before)
        if c is not None and not c[1]:
            text = _clean_comment(c[0])
            if text:
                texts.append(text)
        return texts

    def comments_of_line(self, line: int) -> list[str]:
        """The comments of the top-level statement that holds ``line``."""
        prev = 0
        for index, node in enumerate(
            n for n in self.src.root.named_children if n.type != "comment"
        ):
            start, end = self.src.line(node), self.src.end_line(node)
            if start <= line <= end:
                return self.preceding(prev, start, contiguous=index == 0)
            prev = end
        return []

    # ------------------------------------------------------------------ outcomes

    def record(
        self,
        mod: Modification | tuple[int, int],
        ctx: Context,
        kind: OutcomeKind,
        text: str,
        *,
        draft: Draft | None = None,
        hint: str | None = None,
        row: Row | None = None,
    ) -> None:
        if isinstance(mod, Modification):
            start, end = mod.line, mod.end_line
            self.done.add(id(mod))
            for alt in mod.alternatives:
                self.done.add(id(alt))
        else:
            start, end = mod
        text = _CONTROL.sub("", display(text))  # never a placeholder or a control byte
        outcome = Outcome(start, end, kind, text, draft=draft, via=ctx.via, hint=hint)
        self.outcomes.append(outcome)
        target = row or self.row
        if target is not None:
            target.outcomes.append(outcome)

    def consumed(self, what: Modification | tuple[int, int], ctx: Context, text: str) -> None:
        self.record(what, ctx, "consumed", text)

    def unconverted(
        self, what: Modification | tuple[int, int], ctx: Context, text: str, hint: str | None = None
    ) -> None:
        if isinstance(what, Modification) and not isinstance(what, tuple):
            self.flush_removal()
        self.record(what, ctx, "unconverted", text, hint=hint)

    def remark(self, text: str) -> None:
        if text not in self.remarks:
            self.remarks.append(text)

    def add(
        self, draft: Draft, mod: Modification, ctx: Context, what: str, extra: str = ""
    ) -> None:
        """Keep a draft: its comments, upstream references and the outcome that made it."""
        if draft.kind != "command":
            self.flush_removal()
        comments: list[str] = []
        for text in [*draft.comments, *ctx.comments]:
            if text not in comments:
                comments.append(text)
        draft.comments = comments
        found = find_refs("\n".join([*comments, extra]), self.projects)
        draft.refs = found.refs
        draft.unknown_refs = found.unknown
        if ctx.via is not None:
            draft.spans.append((ctx.via, ctx.via))
        draft.spans.append((mod.line, mod.end_line))
        self.drafts.append(draft)
        self.record(mod, ctx, "converted", what, draft=draft)

    def flush_removal(self) -> None:
        removal, self.removal = self.removal, []
        for mod, ctx, row in removal:
            rel = patches.site_rel(mod.target.path if mod.target else None)
            self.record(
                mod,
                ctx,
                "unconverted",
                f"removes {rel or 'the whole site-packages folder'} from the engine install, and "
                "no rebuild command follows",
                hint="patchbay removes files only as the `remove:` list of a `command` patch",
                row=row,
            )

    # ------------------------------------------------------------------ modifications

    def convert_row(self, ctx: Context, start: int, end: int) -> None:
        """Convert the modifications of the statement at ``start``-``end`` (and of the
        functions it calls), in line order."""
        keys = sorted(
            k
            for k in self.by_key
            if (k[0] is None and start <= k[1] <= end)
            or (k[0] is not None and start <= k[0] <= end)
        )
        for key in keys:
            # a function never called is listed as such, in the leftovers
            mods = [m for m in self.by_key[key] if id(m) not in self.done and m.called]
            via, line = key
            if any(b_via == via and a <= line <= b for b_via, a, b in self.blocked):
                for m in mods:
                    self.done.add(id(m))
                continue
            if not mods:
                continue
            inner = replace(ctx, via=via, comments=[*ctx.comments, *self.inner_comments(line, via)])
            self.convert(mods, inner)

    def inner_comments(self, line: int, via: int | None) -> list[str]:
        """Own-line comments right above a line inside a block of the top-level statement."""
        if via is not None:
            return []
        out: list[str] = []
        k = line - 1
        while k > 0 and (c := self.comments.get(k)) is not None and c[1]:
            out.insert(0, _clean_comment(c[0]))
            k -= 1
        if self.row is not None and k < self.row.start:
            return []
        return [t for t in out if t]

    def convert(self, mods: list[Modification], ctx: Context) -> None:
        python = [m for m in mods if "python" in m.details and m.mechanism is not Mechanism.REBUILD]
        pips = [m for m in mods if m.mechanism is Mechanism.PIP]
        downloads = [m for m in mods if m.mechanism is Mechanism.DOWNLOAD]
        if python:
            patches.python_edits(self, python, ctx)
            for m in python:
                self.done.add(id(m))
        if pips:
            patches.pip(self, pips, ctx, self.engine)
            for m in pips:
                self.done.add(id(m))
        if downloads:
            patches.artifact(self, downloads, ctx)
            for m in downloads:
                self.done.add(id(m))
        for mod in mods:
            if id(mod) in self.done:
                continue
            m = mod.mechanism
            if m is Mechanism.DIFF:
                patches.diff(self, mod, ctx)
            elif m is Mechanism.REMOVE:
                self.removal.append((mod, ctx, self.row))
                self.done.add(id(mod))
            elif m is Mechanism.REBUILD:
                patches.rebuild(self, mod, ctx)
            else:
                patches.unconvertible(self, mod, ctx)
            self.done.add(id(mod))

    def leftovers(self) -> None:
        """Modifications no statement accounted for (functions never called, statements of
        files the script runs), and statements that run code the analysis cannot see
        (:class:`~patchbay.analysis.model.Unresolved`): listed, never dropped."""
        listed = {o.start for o in self.outcomes if o.kind == "unconverted"}
        for gap in self.analysis.unresolved:
            where = f" in {gap.path}" if gap.path != self.analysis.path else ""
            if not where and gap.line in listed:
                continue  # its statement is listed as not converted already
            why = f" ({gap.why})" if gap.why else ""
            line = gap.line if not where else None
            row = next((r for r in self.rows if line and r.start <= line <= r.end), None)
            self.record(
                (gap.line, gap.line),
                Context(),
                "unconverted",
                f"runs code the import cannot see{where}: {gap.what}{why}",
                row=row,
                hint="check by hand what it changes, and add that as patches",
            )
        self.followed_python()
        for mod in self.analysis.modifications:
            if id(mod) in self.done:
                continue
            where = (
                f" in {mod.chain[-1]}" if mod.chain and mod.chain[-1] != self.analysis.path else ""
            )
            if not mod.called:
                text = (
                    f"{mod.function}() is never called, and it would change the engine "
                    f"({mod.describe()}, line {mod.line})"
                )
            else:
                text = f"changes the engine{where} ({mod.describe()}, line {mod.line})"
            fn = self.functions.get(mod.function or "")
            span = (
                (self.src.line(fn), self.src.end_line(fn))
                if fn is not None and not where
                else (mod.line, mod.end_line)
            )
            row = next((r for r in self.rows if r.start <= span[0] <= r.end), None)
            self.done.add(id(mod))
            self.record(
                span,
                Context(),
                "unconverted",
                text,
                row=row,
                hint="import the script it is in, or convert it by hand",
            )

    def followed_python(self) -> None:
        """The edits of a ``.py`` patcher the script runs (``python3 tools/fix.py "$F"``): one
        ``replace`` draft per file, made at the line of the statement that runs it, when its
        edits are literal ``.replace()`` calls (:func:`.patches.python_edits`, as for a
        here-document); otherwise they stay listed by :meth:`leftovers`."""
        by_file: dict[str, list[Modification]] = {}
        for mod in self.analysis.modifications:
            if id(mod) in self.done or not mod.called or "python" not in mod.details:
                continue
            if len(mod.chain) > 1 and mod.chain[-1].endswith(".py"):  # a file it runs
                by_file.setdefault(mod.chain[-1], []).append(mod)
        for rel, mods in by_file.items():
            call = next((line for line, path in self.analysis.sourced if path == rel), None)
            if call is None:
                via = mods[0].details.get("via")
                call = int(via[0]) if isinstance(via, list) and via else None
            if call is None:
                continue
            row = next((r for r in self.rows if r.start <= call <= r.end), None)
            if row is None:
                continue
            saved, self.row = self.row, row
            before, outcomes = len(self.drafts), len(self.outcomes)
            try:
                patches.python_edits(self, mods, Context(self.comments_of_line(call)))
            finally:
                self.row = saved
            notes = _python_comments(self.script.parent / rel, [m.line for m in mods])
            for draft in self.drafts[before:]:
                draft.spans = [(call, call)]  # the statement of the script that runs it
                draft.comments.extend(c for c in notes if c not in draft.comments)
                found = find_refs("\n".join(draft.comments), self.projects)
                draft.refs = list(dict.fromkeys([*draft.refs, *found.refs]))
                draft.unknown_refs = list(dict.fromkeys([*draft.unknown_refs, *found.unknown]))
            for outcome in self.outcomes[outcomes:]:
                outcome.start = outcome.end = call
            for mod in mods:
                self.done.add(id(mod))

    # ------------------------------------------------------------------ statements

    def covered(self, line: int, ctx: Context) -> bool:
        return bool(self.by_key.get((ctx.via, line)))

    def statement(self, node: Node, ctx: Context) -> None:
        t = node.type
        start, end = self.src.line(node), self.src.end_line(node)
        if t == "function_definition":
            name = node.child_by_field_name("name")
            self.consumed((start, end), ctx, f"defines the helper function {self.src.text(name)}")
        elif t in ("variable_assignment", "variable_assignments"):
            self.consumed((start, end), ctx, "sets a variable")
        elif t == "declaration_command":
            kind = node.children[0].type if node.children else ""
            self.consumed(
                (start, end), ctx, "exports a variable" if kind == "export" else "sets a variable"
            )
        elif t == "for_statement":
            self.for_loop(node, ctx)
        elif t in ("while_statement", "c_style_for_statement"):
            kind = "until" if self.src.text(node).startswith("until") else "while"
            if t == "c_style_for_statement":
                self.block(
                    start,
                    end,
                    ctx,
                    "a C-style for loop: its items are known only at run time",
                    "unroll it by hand",
                )
            else:
                self.block(
                    start,
                    end,
                    ctx,
                    f"a {kind} loop: what it does depends on values known only at run time",
                    "unroll it by hand into patches, or keep it as a `command` patch",
                )
        elif t == "case_statement":
            self.block(
                start,
                end,
                ctx,
                "a case statement: which branch runs is known only at run time",
                "keep the branch the target image takes and import it again",
            )
        elif t == "command":
            self.command(node, ctx)
        elif t == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is not None and body.type == "command":
                self.command(body, ctx, outer=node)
            elif body is not None:
                self.statement(body, ctx)
            for r in node.children:
                if r.type == "heredoc_redirect":
                    for c in r.children:
                        if c.type in ("pipeline", "list", "command"):
                            self.statement(c, ctx)
        else:
            for child in node.named_children:
                if child.type in ("comment", "test_command"):
                    if child.type == "test_command" and not self.covered(self.src.line(child), ctx):
                        self.consumed(
                            (self.src.line(child), self.src.end_line(child)), ctx, "a test"
                        )
                    continue
                self.statement(child, ctx)

    def block(self, start: int, end: int, ctx: Context, text: str, hint: str) -> None:
        self.blocked.append((ctx.via, start, end))
        self.unconverted((start, end), ctx, text, hint=hint)

    def for_loop(self, node: Node, ctx: Context) -> None:
        start, end = self.src.line(node), self.src.end_line(node)
        loop = self.analysis.loops.get(start)
        computed = list(loop["computed"]) if loop else ["$@"]  # type: ignore[call-overload]
        if computed:
            raw = computed[0]
            what = (
                "a loop over the arguments: its items are known only at run time"
                if raw == "$@"
                else f"a loop over {raw}, a list computed at run time"
            )
            self.block(
                start, end, ctx, what, "list the items in the script, or unroll the loop by hand"
            )
            return
        items = loop["items"] if loop else 0
        what = (
            "checked-in file(s), listed now,"
            if loop and loop.get("globbed")
            else "literal item(s),"
        )
        self.consumed((start, end), ctx, f"a loop over {items} {what} unrolled")
        body = node.child_by_field_name("body")
        if body is not None:
            self.statement(body, ctx)

    def command(self, node: Node, ctx: Context, outer: Node | None = None) -> None:
        where = outer or node
        start, end = self.src.line(where), self.src.end_line(where)
        name_node = node.child_by_field_name("name")
        if name_node is None:
            self.consumed((start, end), ctx, "sets a variable")
            return
        raw = self.src.text(name_node)
        name = raw.strip("\"'").rsplit("/", 1)[-1]
        args = [self.src.text(a).strip("\"'") for a in node.children_by_field_name("argument")]
        while name in ("sudo", "env", "time", "nohup", "nice", "stdbuf", "command") and args:
            if name == "command" and args[0] in ("-v", "-V"):
                self.consumed((start, end), ctx, "checks that a command exists")
                return
            rest = [a for a in args if not a.startswith("-") and "=" not in a]
            if not rest:
                break
            name, args = rest[0].rsplit("/", 1)[-1], rest[1:]
        fn = self.functions.get(name)
        if fn is not None:
            self.call(name, fn, start, end, ctx)
            return
        if self.covered(self.src.line(node), ctx):
            return  # its modifications are its outcomes
        redirects = [
            r
            for r in (outer.children if outer is not None else node.children)
            if r.type == "file_redirect" and ">" in self.src.text(r)
        ]
        dest = None
        if redirects and redirects[0].named_children:
            dest = self.src.text(redirects[0].named_children[-1])
        kind, what, hint = describe(name, raw, args, dest)
        if kind == "unconverted":
            self.unconverted((start, end), ctx, what, hint=hint)
        else:
            self.consumed((start, end), ctx, what)

    def call(self, name: str, fn: Node, start: int, end: int, ctx: Context) -> None:
        body = fn.child_by_field_name("body")
        self.consumed(
            (start, end), ctx, f"calls {name} (lines {self.src.line(fn)}-{self.src.end_line(fn)})"
        )
        if name in self.called and ctx.via is not None:
            return
        self.called.add(name)
        if body is not None and (ctx.via is None):
            self.statement(body, replace(ctx, via=start))


def _python_comments(path: Path, lines: list[int]) -> list[str]:
    """The ``#`` comments of a Python patcher that describe its edits: the file's leading
    comment block and the block just above each line that changes the engine."""
    try:
        rows = path.read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return []
    out: list[str] = []
    starts = [1, *lines]
    for line in starts:
        k = line - 2 if line > 1 else 0
        block: list[str] = []
        while 0 <= k < len(rows) and (rows[k].strip().startswith("#") or (line == 1 and k == 0)):
            text = rows[k].strip()
            if text.startswith("#") and not text.startswith("#!"):
                block.insert(0, text.lstrip("#").strip())
            k = k - 1 if line > 1 else k + 1
            if line == 1 and (k >= len(rows) or not rows[k].strip().startswith("#")):
                break
        out.extend(t for t in block if t and t not in out)
    return out


def convert(
    analysis: ScriptAnalysis, source: Source, script: Path, projects: dict[str, str]
) -> WalkResult:
    """The drafts and outcomes of one analysed script (see :class:`Converter`)."""
    return Converter(analysis, source, script, projects).run()
