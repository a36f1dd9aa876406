"""Import by observation, second half: what a run changed (:class:`~.observe.Changes`) becomes
patches, labelled by the static reading of the same script (issue 22).

Every observed change is a patch, by capture's rules: a changed, new or deleted text file is a
``diff`` against the bytes it had before the run (written by git, strip level 1, paths relative
to site-packages); a new or changed binary file is an ``artifact`` with the observed SHA-256
(its URL from the statement that downloaded it; without one the URL is a blank to fill and the
bytes are kept in the download cache, see :func:`~.observe.keep_bytes`); a deleted file of
the engine's RECORD, binary too, is a ``diff`` that deletes it (git's binary patch), so that
revert gives it back; files no RECORD lists that the run deleted (caches, build products) are
the ``remove`` of a ``command`` patch (the rebuild the static
reading found, or a no-op command); a distribution the run installed or
replaced is a ``pip`` pin of the observed version, with the index options of the statement that
installed it; a ``.pth`` file or ``sitecustomize`` module the run wrote (environment
injection) is a patch of its own, whichever statement wrote it.

The static reading (:func:`~.convert.convert`) labels them: a change that a statement of the
script predicted gets that statement's lines, comments, upstream references and name; one no
statement predicted is kept and said to be "found only by running"; a statement that predicted
a change the run did not make (a branch not taken, an alternative that failed, a step that
failed) is listed with its line and whether the run reached it. Those lists are the static
analyser's misses made visible.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from ..analysis.handlers.installs import split_install
from ..analysis.model import Mechanism, Modification, ScriptAnalysis
from ..analysis.values import Val
from ..diff.gitdiff import FileVersions, write_diff
from .drafts import (
    ArtifactDraft,
    CommandDraft,
    DiffDraft,
    Draft,
    Outcome,
    PipDraft,
    Row,
    WalkResult,
)
from .observe import Changes, FileState, RunResult
from .patches import (
    computed_url,
    index_options,
    one_package_source,
    runtime_pattern,
    site_rel,
    url_pattern,
)
from .refs import find_refs

_DIFF_PATH = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.M)
BY_RUNNING = "found only by running the script: no statement the static reading judged makes it"
"""The note of a patch no statement predicted (the static analyser's miss, made visible)."""
INJECTION = (
    "environment injection: Python's site module runs this file at every start of the "
    "engine's interpreter, whatever the engine does; it is a patch of its own so that its "
    "waiver can say why"
)
"""The note of a ``.pth`` or ``sitecustomize`` patch (:func:`is_injection`)."""
NOT_OBSERVED = "predicted by the static reading but not observed"
"""The start of the note of a predicted change the run did not make."""


@dataclass
class _Predicted:
    """A statement of the static reading and the site-relative files it names. ``line`` and
    ``end`` are the script's own statement: the call of the helper function the change was
    made in (``apply_one x.py marker x.diff``), or the statement itself."""

    mod: Modification
    files: set[str]
    observed: bool = False

    @property
    def line(self) -> int:
        via = self.mod.details.get("via")
        return int(via[0]) if isinstance(via, list) and via else self.mod.line

    @property
    def end(self) -> int:
        return self.line if self.line != self.mod.line else self.mod.end_line


def files_of(mod: Modification) -> set[str]:
    """Site-relative files (or folders, ending in ``/``) a modification names."""
    target = mod.target
    if target is None:
        return set()
    base = site_rel(target.path)
    if base is None:
        return set()
    if mod.mechanism is Mechanism.DIFF and mod.content:
        strip = int(str(mod.details.get("strip", "1")) or 1)
        out = set()
        for path in _DIFF_PATH.findall(mod.content):
            parts = path.split("/")[strip - 1 :] if path != "/dev/null" else []
            if parts:
                out.add(posixpath.normpath(posixpath.join(base, *parts)))
        return out
    if mod.tool.startswith("find") and "/" in base:  # `find DIR -name PAT`: at any depth
        return {base.rsplit("/", 1)[0] + "/"}
    if mod.mechanism in (Mechanism.REMOVE, Mechanism.REBUILD) or "*" in base:
        return {base.rstrip("/") + "/"} if base else set()
    return {base}


def _path_pattern(item: str) -> re.Pattern[str]:
    """A predicted path as a pattern: a glob's ``*`` stands for any name, and a part known only
    at run time (``$(...)``, ``${...}``, ``$NAME``) for one or more characters of one name; a
    folder (``/`` at the end) for everything below it."""
    below = "(?:/.*)?" if item.endswith("/") else ""
    return re.compile(runtime_pattern(item.rstrip("/"), "[^/]+", glob=True) + below)


def _names(path: str, wanted: set[str]) -> bool:
    """``path`` is a file of ``wanted`` (files, folders ending in ``/``, patterns)."""
    for item in wanted:
        if path == item or (item.endswith("/") and (path + "/").startswith(item)):
            return True
        if ("*" in item or "$" in item) and _path_pattern(item).fullmatch(path):
            return True
    return False


def is_text(data: bytes | None) -> bool:
    """Bytes a diff can carry: UTF-8 with no NUL in the first 8 KiB (None: not read)."""
    if data is None or b"\0" in data[:8192]:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _executable(state: FileState | None) -> bool:
    return bool(state is not None and state.mode & 0o111)


def observed_result(
    changes: Changes,
    run: RunResult,
    analysis: ScriptAnalysis,
    static: WalkResult,
    comments: Callable[[int], list[str]],
    projects: dict[str, str],
) -> WalkResult:
    """The drafts of every observed change (see the module docstring), with the outcomes the
    notes list: the static drafts' labels carried over, "found only by running", and the
    predictions the run did not bear out.

    Args:
        changes: what the run changed.
        run: the run (its exit status and the lines it reached).
        analysis: the static analysis of the same script.
        static: the static conversion of it (its drafts give names, comments and references).
        comments: the comments before the top-level statement that holds a line.
        projects: project name -> ``owner/repo`` for ``name #N`` in those comments.
    """
    predicted = [_Predicted(m, files_of(m)) for m in [*analysis.modifications, *analysis.installs]]
    drafts: list[Draft] = []
    outcomes: list[Outcome] = []

    def label(draft: Draft, paths: list[str]) -> Draft:
        hits = [p for p in predicted if any(_names(path, p.files) for path in paths)]
        for p in hits:
            p.observed = True
        if not hits:
            draft.spans = [(0, 0)]
            draft.notes.append(BY_RUNNING)
            stem = posixpath.basename(paths[0]).split(".", 1)[0] if paths else ""
            draft.names = [f"{stem}-observed"] if stem else []
            return draft
        draft.spans = sorted({(p.line, p.end) for p in hits})
        for sd in static.drafts:
            if any(a <= line <= b for line, _ in draft.spans for a, b in sd.spans):
                draft.comments = list(sd.comments)
                draft.refs = list(sd.refs)
                draft.unknown_refs = list(sd.unknown_refs)
                draft.names = list(sd.names)
                break
        else:  # no static draft: the comments next to the statement say what it is
            for line, _ in draft.spans:
                for text in comments(line):
                    if text not in draft.comments:
                        draft.comments.append(text)
            found = find_refs("\n".join(draft.comments), projects)
            draft.refs, draft.unknown_refs = list(found.refs), list(found.unknown)
        return draft

    texts = [(r, b, a) for r, b, a in changes.modified if is_text(b.data) and is_text(a.data)]
    binaries = [(r, a) for r, b, a in changes.modified if (r, b, a) not in texts]
    new_text = [(r, a) for r, a in changes.added if is_text(a.data)]
    new_binary = [(r, a) for r, a in changes.added if not is_text(a.data)]
    groups: dict[tuple[object, ...], list[FileVersions]] = {}
    for rel, was, now in texts:
        key = _group_key(rel, predicted)
        groups.setdefault(key, []).append(
            FileVersions(rel, was.data, now.data, _executable(was), _executable(now))
        )
    for rel, now in new_text:
        key = _group_key(rel, predicted)
        groups.setdefault(key, []).append(
            FileVersions(rel, None, now.data, False, _executable(now))
        )
    for rel, was in changes.deleted:
        if was.sha256 is None:  # outside the scope: nothing could bring it back
            outcomes.append(
                Outcome(
                    0,
                    0,
                    "unconverted",
                    f"the run deleted {rel}, outside the packages observed closely: its bytes "
                    "were not kept, so no patch can delete it and give it back on revert",
                    hint="import again with --scope naming its package",
                )
            )
    kept = [(r, b) for r, b in changes.deleted if b.sha256 is not None]
    # a deleted source file, or a file of the engine's RECORD (a shipped kernel): a diff that
    # deletes it (git's binary patch for a binary), so that revert gives it back
    gone_text = [
        (r, b) for r, b in kept if is_text(b.data) or (r in changes.recorded and b.data is not None)
    ]
    for rel, was in gone_text:
        key = _group_key(rel, predicted)
        groups.setdefault(key, []).append(
            FileVersions(rel, was.data, None, _executable(was), False)
        )
    for key, versions in groups.items():
        paths = [v.path for v in versions]
        content = write_diff(sorted(versions, key=lambda v: v.path))
        draft = label(DiffDraft([(0, 0)], content=content, root="", paths=paths), paths)
        if key[0] == "injection":
            draft.notes.append(INJECTION)
        elif len(draft.spans) > 1:  # one observed change of a file cannot be split by statement
            lines = ", ".join(str(a) for a, _ in draft.spans)
            draft.notes.append(
                f"the statements at lines {lines} changed the same file(s); the run shows only "
                "their sum, so they are one patch"
            )
        drafts.append(draft)
    built = _built(binaries + new_binary, predicted, static)
    for command, outputs in built:
        drafts.append(label(command, outputs))
    made = {rel for _, outputs in built for rel in outputs}
    for rel, now in [*binaries, *new_binary]:
        if rel in made:
            continue
        written, url = _download_url(rel, predicted, run)
        draft = ArtifactDraft([(0, 0)], files=[(url or "", rel)], hashes={rel: now.sha256 or ""})
        if url is not None and url != written:
            draft.notes.append(
                f"the script computes this URL ({written}); the run fetched {url}: keep it if "
                "that host serves every machine that applies the patchset"
            )
        if url is None:
            draft.notes.append(
                "the run wrote this file but no statement says where it comes from: give "
                "its url (the sha256 is the one observed)"
            )
        drafts.append(label(draft, [rel]))
    gone = [(r, b) for r, b in kept if (r, b) not in gone_text]
    if gone:  # caches and build products no RECORD lists: removed, as the script did
        removed = sorted(rel for rel, _ in gone)
        rebuild = next((d for d in static.drafts if isinstance(d, CommandDraft)), None)
        command = CommandDraft([(0, 0)], argv=list(rebuild.argv) if rebuild else [])
        if not command.argv:
            command.argv = ["{python}", "-c", "pass"]
        command.remove = removed
        drafts.append(label(command, removed))
    static_pins = {d.name.lower(): d for d in static.drafts if isinstance(d, PipDraft)}
    for was, now in changes.installed:
        pin = PipDraft([(0, 0)], requirement=f"{now.name}=={now.version}", name=now.name.lower())
        if now.url:
            pin.requirement = f"{now.name} @ {now.url}"
        by = [p for p in predicted if _installs(p.mod, now.name)]
        known = static_pins.get(now.name.lower())
        if known is None and by:  # the static reading could not say (a computed folder)
            known = _traced_pip(run, by[0].mod.line)
        if known is not None:
            pin.index_url = known.index_url
            pin.extra_index_urls = list(known.extra_index_urls)
            pin.find_links = list(known.find_links)
            pin.no_deps = known.no_deps
            pin.no_index = known.no_index
            pin.harness = known.harness
            pin.notes.extend(known.notes)
        one_package_source(pin)  # one source: pip's best match of several is not a pin
        if was is not None:
            pin.notes.append(f"replaces {was.name} {was.version} of the engine")
        for p in by:
            p.observed = True
        if by:
            pin.spans = sorted({(p.line, p.end) for p in by})
        else:
            pin.notes.append(BY_RUNNING)
        drafts.append(pin)
    for rel, was, now in changes.links:
        change = f"made a symbolic link {rel} -> {now}" if was is None else (
            f"removed the symbolic link {rel} (to {was})" if now is None
            else f"pointed the symbolic link {rel} at {now} (was {was})"
        )  # fmt: skip
        by = [p for p in predicted if _names(rel, p.files)]
        for p in by:  # predicted, and observed: listed at the statement's line
            p.observed = True
        outcomes.append(
            Outcome(
                by[0].line if by else 0,
                by[0].end if by else 0,
                "unconverted",
                f"the run {change}: no patch kind makes links",
                hint="make the link's target a file of its own, or do it where the engine is built",
            )
        )
    for rel in changes.outside:
        outcomes.append(
            Outcome(
                0,
                0,
                "unconverted",
                f"the run changed {rel} of the environment, outside its site-packages: "
                "not a file a patch of the engine's packages can change",
                hint="leave it to the image, or say in the waiver why it is needed",
            )
        )
    for dist in changes.removed:
        outcomes.append(
            Outcome(
                0,
                0,
                "unconverted",
                f"the run uninstalled {dist.name} {dist.version}: a patchset pins packages, it "
                "does not remove them",
                hint="leave it out if the engine works with it installed, or say why in the waiver",
            )
        )
    if run.exit_code != 0:
        last = max((line for _, line in run.reached), default=0)
        outcomes.append(
            Outcome(
                last,
                last,
                "unconverted",
                f"the script failed (exit status {run.exit_code}) at or after line {last}: "
                "what it would have done after that was not observed",
                hint="fix the script or the scratch engine and import again",
            )
        )
    for rel in changes.unknown_before:
        outcomes.append(
            Outcome(
                0,
                0,
                "unconverted",
                f"the run changed {rel}, outside the packages observed closely: its bytes "
                "before the run were not kept",
                hint="import again with --scope naming its package",
            )
        )
    after = {rel: now.data for rel, _, now in changes.modified}
    after.update({rel: now.data for rel, now in changes.added})
    untaken = [p for p in predicted if p.observed and _not_taken(p, after)]
    for p in untaken:  # `apply_one_of A B`: the files changed, but as B says, not as A
        p.observed = False
    for p in predicted:
        if p.observed or p.mod.mechanism is Mechanism.INJECT or not p.files:
            continue
        if p.mod in analysis.installs:
            continue
        reached = any(line == p.line for _, line in run.reached)
        why = "the run reached it" if reached else "the run never reached it"
        why += ": a branch not taken, an alternative that failed, or a failed step"
        if p in untaken:
            why = (
                "an alternative the run did not take: the file(s) it names changed, but "
                "not with the lines this diff adds (another statement's diff applied)"
            )
        outcomes.append(
            Outcome(
                p.line,
                p.end,
                "review",
                f"{NOT_OBSERVED} ({p.mod.describe()}); {why}",
            )
        )
    drafts.sort(key=lambda d: d.first_line)
    return WalkResult(
        drafts=drafts,
        outcomes=outcomes,
        rows=_rows(static, drafts, run),
        packages=list(static.packages),
        header=static.header,
        remarks=list(static.remarks),
    )


def _not_taken(p: _Predicted, after: dict[str, bytes | None]) -> bool:
    """A predicted diff whose files changed but which holds a line that the files, as the
    run left them, do not: the run applied another one (an alternative of the same call)."""
    if p.mod.mechanism is not Mechanism.DIFF or not p.mod.content:
        return False
    texts = [after[rel] for rel in p.files if after.get(rel) is not None]
    if not texts:
        return False
    joined = b"\n".join(t for t in texts if t is not None).decode("utf-8", "replace")
    added = [
        line[1:]
        for line in p.mod.content.splitlines()
        if line.startswith("+") and not line.startswith("+++") and line[1:].strip()
    ]
    return any(line not in joined for line in added)


def _rows(static: WalkResult, drafts: list[Draft], run: RunResult) -> list[Row]:
    """The script's top-level statements, each with the observed patches it made (or what
    the run did there: reached and changed nothing observed, or never reached)."""
    rows = []
    reached = {line for _, line in run.reached}
    for row in static.rows:
        made = [
            Outcome(row.start, row.end, "converted", "observed", draft=d)
            for d in drafts
            if any(row.start <= a <= row.end for a, _ in d.spans)
        ]
        if not made:
            ran = any(row.start <= line <= row.end for line in reached)
            text = "ran; changed nothing in the engine" if ran else "not run"
            made = [Outcome(row.start, row.end, "consumed", text)]
        rows.append(Row(row.start, row.end, made))
    return rows


def _installs(mod: Modification, name: str) -> bool:
    """A ``pip install`` statement that names distribution ``name``."""
    if mod.mechanism is not Mechanism.PIP:
        return False
    key = name.lower().replace("_", "-")
    named = [str(mod.details.get("engine") or ""), str(mod.details.get("requirement") or "")]
    named.append(mod.content or "")
    for text in named:
        head = re.split(r"[\s=<>!~\[;@]", text.strip(), maxsplit=1)[0]
        if head.lower().replace("_", "-") == key:
            return True
    return False


def is_injection(rel: str) -> bool:
    """A file Python's ``site`` module runs at every start of the interpreter: a ``.pth`` file
    at the top of site-packages (its ``import`` lines are executed) or a top-level
    ``sitecustomize``/``usercustomize`` module (the ``site`` module's documented hooks)."""
    top = "/" not in rel
    return top and (rel.endswith(".pth") or rel in ("sitecustomize.py", "usercustomize.py"))


def _group_key(rel: str, predicted: list[_Predicted]) -> tuple[object, ...]:
    """Files one statement changed are one patch; a file no statement names is its own, and
    so is environment injection (:func:`is_injection`), whatever statement wrote it."""
    if is_injection(rel):
        return ("injection", rel)
    lines = tuple(sorted({p.line for p in predicted if _names(rel, p.files)}))
    return lines or (-1, hash(rel))


def _built(
    files: list[tuple[str, FileState]], predicted: list[_Predicted], static: WalkResult
) -> list[tuple[CommandDraft, list[str]]]:
    """Binary files a rebuild statement of the script made (predicted by a ``rebuild`` of the
    static reading, whose command it converted): that command, with the first of them as its
    ``output`` (a missing output makes ``apply`` run it), instead of artifacts of build
    products. Each with the files it made."""
    out: list[tuple[CommandDraft, list[str]]] = []
    commands = [d for d in static.drafts if isinstance(d, CommandDraft)]
    for p in predicted:
        if p.mod.mechanism is not Mechanism.REBUILD:
            continue
        outputs = [rel for rel, _ in files if _names(rel, p.files)]
        command = next(
            (c for c in commands if any(a <= p.mod.line <= b or a <= p.line <= b
                                        for a, b in [*c.spans, (p.mod.line, p.mod.end_line)])),
            None,
        )  # fmt: skip
        if not outputs or command is None:
            continue
        made = CommandDraft(
            list(command.spans),
            argv=list(command.argv),
            remove=list(command.remove),
            output=command.output if command.output in outputs else outputs[0],
            env=dict(command.env),
            cwd=command.cwd,
            names=list(command.names),
        )
        out.append((made, outputs))
    return out


def _traced(run: RunResult, line: int, *, elsewhere: bool = False) -> list[list[str]]:
    """The words of each command the run traced at ``line`` (then, with ``elsewhere``, at
    every other line), as bash printed them once expanded (xtrace quotes a word as the shell
    would read it back)."""
    out = []
    for _, at, text in sorted(run.traced, key=lambda t: t[1] != line):
        if at != line and not elsewhere:
            break
        try:
            out.append(shlex.split(text))
        except ValueError:  # a line of a multi-line word
            continue
    return out


def _traced_pip(run: RunResult, line: int) -> PipDraft | None:
    """pip's index options as the run's trace shows the ``pip install`` at ``line`` once
    bash expanded it (``--find-links "$WHEELHOUSE"`` with the folder it named), read as the
    static reading reads them (:func:`~patchbay.analysis.handlers.installs.split_install`,
    :func:`~.patches.index_options`); None when the run traced no such command there."""
    for words in _traced(run, line):
        if "install" in words:
            rest = [Val(w) for w in words[words.index("install") + 1 :]]
            _, options, flags = split_install(rest)
            return PipDraft([(0, 0)], **index_options(options, flags))
    return None


def _download_url(
    rel: str, predicted: list[_Predicted], run: RunResult
) -> tuple[str | None, str | None]:
    """The URL of the statement that downloaded ``rel`` as the script wrote it, and the URL
    the run fetched: the same, or, when the script computed it
    (:func:`~.patches.computed_url`), as the run's trace shows it expanded (the statement's
    own line first). ``(None, None)`` when no statement names the file."""
    for p in predicted:
        if not (p.mod.url and _names(rel, p.files)):
            continue
        if not computed_url(p.mod.url):
            return p.mod.url, p.mod.url
        pattern = url_pattern(p.mod.url)
        for words in _traced(run, p.mod.line, elsewhere=True):
            for word in words:
                if pattern.fullmatch(word):
                    return p.mod.url, word
        return p.mod.url, None
    return None, None


__all__ = [
    "BY_RUNNING",
    "INJECTION",
    "NOT_OBSERVED",
    "files_of",
    "is_injection",
    "is_text",
    "observed_result",
]
