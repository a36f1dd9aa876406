"""Parse unified and git-style diffs into file patches and hunks.

What is accepted follows ``git apply`` and GNU ``patch``:

- text before the first file header (a commit message, DEP-3 headers) is ignored;
- ``diff --git`` extended headers: new/deleted file mode, old/new mode, rename from/to,
  similarity index, index, and ``GIT binary patch`` payloads;
- inside a hunk, an empty line is an empty context line (editors and heredocs strip the single
  space that marks it; git and GNU patch accept such lines, and so do we);
- ``\\ No newline at end of file`` marks the line before it as having no final newline;
- a file whose every line ends in CRLF is read as LF, and the caller is told (a checkout
  conversion, not the author's change); the target file's own endings are restored on apply.

Hunk line counts in the ``@@`` header decide where a hunk ends; a hunk that ends early or holds
a line of unknown type is a corrupt diff, reported with the patch file and line.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path

import msgspec

from ..environment.paths import PathRejected, check_relative, unquote_c
from ..errors import InputError
from ..patterns import pattern

_HUNK = pattern(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_INDEX = pattern(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)(?: 1[0-7]{5})?$")
_BINARY_BLOCK = pattern(r"^(literal|delta) \d+\r?\n?$")
_BASE85_LINE = pattern(r"^[A-Za-z][0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]+$")
NULL_PATH = "/dev/null"
# what str.splitlines splits on besides "\n"
_OTHER_LINE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


class Hunk(msgspec.Struct, frozen=True, dict=True):
    """One hunk of a file patch; immutable, so what is derived from its lines is computed once.

    Attributes:
        index: 1-based position among the hunks of its file patch.
        old_start, old_count, new_start, new_count: the ``@@`` header numbers.
        lines: ``(tag, text)`` pairs; tag is ``' '``, ``'-'`` or ``'+'``; text includes its
            line ending, or has none for a line marked "No newline at end of file".
        line: 1-based line of the ``@@`` header in the patch file.
    """

    index: int
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: list[tuple[str, str]]
    line: int

    @cached_property
    def preimage(self) -> list[str]:
        """The lines the hunk expects (context and removed), in order."""
        return [text for tag, text in self.lines if tag != "+"]

    @cached_property
    def postimage(self) -> list[str]:
        """The lines the hunk leaves (context and added), in order."""
        return [text for tag, text in self.lines if tag != "-"]

    def render(self) -> str:
        """The hunk as it reads in a patch file (header and lines)."""
        out = [f"@@ -{self.old_start},{self.old_count} +{self.new_start},{self.new_count} @@\n"]
        for tag, text in self.lines:
            out.append(
                tag + text
                if text.endswith("\n")
                else f"{tag}{text}\n\\ No newline at end of file\n"
            )
        return "".join(out)

    @cached_property
    def leading_context(self) -> int:
        n = 0
        for tag, _ in self.lines:
            if tag != " ":
                break
            n += 1
        return n

    @cached_property
    def trailing_context(self) -> int:
        n = 0
        for tag, _ in reversed(self.lines):
            if tag != " ":
                break
            n += 1
        return n


class FilePatch(msgspec.Struct):
    """The changes a diff makes to one file.

    Paths are relative to the target root after the strip level was applied; ``old_path`` is
    None for a new file and ``new_path`` None for a deleted one.
    """

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = msgspec.field(default_factory=list)
    line: int = 0
    old_mode: str | None = None
    new_mode: str | None = None
    binary: list[str] | None = None
    index_old: str | None = None
    index_new: str | None = None

    @property
    def path(self) -> str:
        """The path the patch is about (the new one, or the old one for a deletion)."""
        return self.new_path or self.old_path or ""

    @property
    def is_new(self) -> bool:
        return self.old_path is None

    @property
    def is_delete(self) -> bool:
        return self.new_path is None

    @property
    def is_rename(self) -> bool:
        return (
            self.old_path is not None
            and self.new_path is not None
            and (self.old_path != self.new_path)
        )


class ParsedDiff(msgspec.Struct):
    """A parsed diff file: its file patches, and whether it had to be read as LF."""

    files: list[FilePatch]
    crlf_normalised: bool = False


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split on ``\n`` only (as git and patch do; ``str.splitlines``
    would also split on form feeds and other characters that are content in a diff)."""
    if not any(c in text for c in _OTHER_LINE_BREAKS):  # one memchr-like scan each
        return text.splitlines(keepends=True)  # the same split, done in one pass in C
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def parse_diff(data: bytes, *, source: Path, strip: int = 1) -> ParsedDiff:
    """Parse a diff.

    Args:
        data: the diff file's bytes (any encoding; lines are kept byte-exact through
            UTF-8 with surrogateescape).
        source: the diff file, for error messages.
        strip: strip level, as ``-p`` of git apply / patch.

    Returns:
        The :class:`ParsedDiff`.

    Raises:
        InputError: no file patch at all, a truncated or corrupt hunk, header names that
            disagree (as ``git apply`` reports them), a binary payload that is not git's, one
            file patched twice, a symlink, a strip level deeper than the path, or a path the
            path gate refuses (:mod:`patchbay.environment.paths`: unquoted once by git's rules, then
            no absolute path, ``..``, NUL, invalid escape, ``.git``, backslash...), with the
            patch file's line.
    """
    text = data.decode("utf-8", "surrogateescape")
    lines = split_lines(text)
    crlf = bool(lines) and all(line.endswith("\r\n") for line in lines)
    if crlf:
        lines = [line[:-2] + "\n" for line in lines]
    parser = _Parser(lines, source, strip)
    files = parser.parse()
    if not files:
        raise InputError("no file patches found: not a unified or git diff", file=source)
    _check_unique(files, parser)
    return ParsedDiff(files=files, crlf_normalised=crlf)


class _Parser:
    def __init__(self, lines: list[str], source: Path, strip: int) -> None:
        self.lines = lines
        self.source = source
        self.strip = strip
        self.i = 0

    def error(self, msg: str, line: int | None = None, *, corrupt: bool = True) -> InputError:
        """An error at ``line`` (default: the current one); ``corrupt=False`` for a well-formed
        diff patchbay does not accept."""
        reason = f"corrupt diff: {msg}" if corrupt else msg
        return InputError(reason, file=self.source, line=line or self.i + 1)

    def peek(self, offset: int = 0) -> str | None:
        j = self.i + offset
        return self.lines[j] if j < len(self.lines) else None

    def parse(self) -> list[FilePatch]:
        files: list[FilePatch] = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.startswith("diff --git "):
                files.append(self.git_file())
            elif line.startswith("--- ") and (self.peek(1) or "").startswith("+++ "):
                files.append(self.plain_file())
            elif _HUNK.match(line):
                raise self.error("hunk header outside a file patch (missing ---/+++ lines)")
            else:
                self.i += 1
        return files

    def git_file(self) -> FilePatch:
        start = self.i + 1
        header = self.lines[self.i].rstrip("\r\n")
        try:
            halves = git_header_names(header[len("diff --git ") :], self.strip)
        except PathRejected as exc:
            raise self.path_error(exc, start) from None
        except ValueError:
            raise self.error("malformed 'diff --git' line") from None
        old_name: str | None = None
        if halves is not None:
            a = self.checked(halves[0], start, self.strip)
            b = self.checked(halves[1], start, self.strip)
            # like git's gitdiff_verify_name: the header names one file only when both
            # halves agree; rename/copy lines and ---/+++ lines must then agree with it
            old_name = a if a == b else None
        new_name: str | None = old_name
        fp = FilePatch(old_path=None, new_path=None, line=start)
        self.i += 1
        is_new = is_delete = False
        copy_line = 0
        renames: set[str] = set()
        while self.i < len(self.lines):
            line = self.lines[self.i].rstrip("\r\n")
            here = self.i + 1
            if line.startswith("diff --git ") or _HUNK.match(line):
                break
            if line.startswith("--- ") and (self.peek(1) or "").startswith("+++ "):
                new_line = self.lines[self.i + 1].rstrip("\r\n")
                old_name = self.verify_name(line[4:], here, old_name, is_new, "old")
                new_name = self.verify_name(new_line[4:], here + 1, new_name, is_delete, "new")
                self.i += 2
                break
            if line.startswith("new file mode "):
                old_name, fp.new_mode, is_new = None, self.mode(line, here), True
            elif line.startswith("deleted file mode "):
                new_name, fp.old_mode, is_delete = None, self.mode(line, here), True
            elif line.startswith("old mode "):
                fp.old_mode = self.mode(line, here)
            elif line.startswith("new mode "):
                fp.new_mode = self.mode(line, here)
            elif line.startswith("rename from "):
                old_name = self.name(line[len("rename from ") :], here, self.rename_strip)
                renames.add("from")
            elif line.startswith("rename to "):
                new_name = self.name(line[len("rename to ") :], here, self.rename_strip)
                renames.add("to")
            elif line.startswith(("copy from ", "copy to ")):
                self.name(line.split(" ", 2)[2], here, self.rename_strip)  # the gate first
                copy_line = copy_line or here
            elif line.startswith("index "):
                m_index = _INDEX.match(line)
                if not m_index:
                    raise self.error(f"malformed index line {line!r}")
                fp.index_old, fp.index_new = m_index.group(1), m_index.group(2)
            elif line == "GIT binary patch":
                fp.binary = self.binary_payload()
                continue
            elif line.startswith("Binary files ") and line.endswith(" differ"):
                raise self.error(
                    "binary change without its content (regenerate with 'git diff --binary')"
                )
            elif line.startswith(("similarity index", "dissimilarity index")):
                pass
            elif line.strip() == "":
                self.i += 1
                break
            else:
                break
            if not self.lines[self.i].endswith("\n"):
                raise self.error("truncated patch: the diff ends inside a file patch's header")
            self.i += 1
        if copy_line:
            raise self.error("copy patches are not supported", copy_line)
        if renames and renames != {"from", "to"}:
            raise self.error("a rename needs both 'rename from' and 'rename to' lines", start)
        if (old_name is None and not is_new) or (new_name is None and not is_delete):
            raise self.error(
                "the 'diff --git' line names two different files and no rename or ---/+++ "
                "lines say which is which (git: header lacks filename information)",
                line=start,
            )
        fp.old_path, fp.new_path = old_name, new_name
        for mode in (fp.old_mode, fp.new_mode):
            if mode == "120000":
                raise self.error("symlink patches are not supported", line=start, corrupt=False)
            if mode == "160000":
                raise self.error("submodule (gitlink) patches are not supported", line=start)
        self.hunks(fp)
        return fp

    @property
    def rename_strip(self) -> int:
        # git strips one component less from rename/copy paths, which carry no a/ b/ prefix
        return max(self.strip - 1, 0)

    def verify_name(
        self, text: str, line: int, known: str | None, absent: bool, side: str
    ) -> str | None:
        """A ``---``/``+++`` name of a git diff, checked against the name the header (or a
        rename line) gave, as git's ``gitdiff_verify_name`` does."""
        raw = _header_name(text, self, line)
        if raw == NULL_PATH:
            if known is not None:
                raise self.error(f"expected {known!r} on the {side} side, got /dev/null", line)
            return None
        name = self.checked(raw, line, self.strip)
        if known is not None and name != known:
            raise self.error(
                f"inconsistent {side} file name: {name!r} here, {known!r} in the header", line
            )
        if absent:
            what = "new file's '---'" if side == "old" else "deleted file's '+++'"
            raise self.error(f"a {what} line must be /dev/null, not {name!r}", line)
        return name

    def mode(self, line: str, number: int) -> str:
        mode = line.split()[-1]
        if not re.fullmatch(r"1[0-7]{5}", mode):
            raise self.error(f"malformed file mode {mode!r}", number)
        return mode

    def plain_file(self) -> FilePatch:
        start = self.i + 1
        old = _header_name(self.lines[self.i].rstrip("\r\n")[4:], self, start)
        new = _header_name(self.lines[self.i + 1].rstrip("\r\n")[4:], self, start + 1)
        old_path = None if old == NULL_PATH else self.checked(old, start, self.strip)
        new_path = None if new == NULL_PATH else self.checked(new, start + 1, self.strip)
        self.i += 2
        if old_path and new_path and old_path != new_path:
            # a plain diff never renames: like GNU patch, take the name with the fewest
            # components, then the shortest (``foo.py.orig`` vs ``foo.py`` -> ``foo.py``)
            old_path = new_path = min(old_path, new_path, key=lambda p: (p.count("/"), len(p)))
        fp = FilePatch(old_path=old_path, new_path=new_path, line=start)
        self.hunks(fp)
        if not fp.hunks:
            raise self.error("file patch without hunks", line=start)
        return fp

    def binary_payload(self) -> list[str]:
        """The lines of a ``GIT binary patch``: one or two ``literal``/``delta`` blocks of
        base85 lines, each ended by a blank line. Anything else is a corrupt diff (it is handed
        to git verbatim, so nothing but payload may pass)."""
        payload: list[str] = []
        self.i += 1
        for block in range(2):
            line = self.peek()
            if line is None or not _BINARY_BLOCK.match(line):
                if block == 0:
                    raise self.error("'GIT binary patch' without a literal or delta block")
                break
            payload.append(line if line.endswith("\n") else line + "\n")
            header = self.i + 1
            self.i += 1
            data = 0
            while True:
                line = self.peek()
                if line is None or line.strip() == "":
                    if not data:  # git: "No valid patches in input"
                        raise self.error("binary patch block without data", line=header)
                    payload.append("\n")
                    if line is not None:
                        self.i += 1
                    break
                if not _BASE85_LINE.match(line.rstrip("\r\n")):
                    raise self.error("binary patch data is not git's base85 encoding")
                payload.append(line if line.endswith("\n") else line + "\n")
                data += 1
                self.i += 1
        while payload and payload[-1].strip() == "":
            payload.pop()
        return payload

    def hunks(self, fp: FilePatch) -> None:
        while self.i < len(self.lines):
            m = _HUNK.match(self.lines[self.i])
            if not m:
                break
            header_line = self.i + 1
            old_start, new_start = int(m.group(1)), int(m.group(3))
            old_count = 1 if m.group(2) is None else int(m.group(2))
            new_count = 1 if m.group(4) is None else int(m.group(4))
            self.i += 1
            body: list[tuple[str, str]] = []
            old_seen = new_seen = 0
            while old_seen < old_count or new_seen < new_count:
                line = self.peek()
                if line is None:
                    raise self.error(
                        f"hunk {len(fp.hunks) + 1} of {fp.path} ends early: expected "
                        f"{old_count} old and {new_count} new lines, found {old_seen} and "
                        f"{new_seen}",
                        line=header_line,
                    )
                tag = line[0]
                if line in ("\n", "\r\n"):
                    tag, line = " ", " " + line  # empty context line that lost its space
                if tag == "\\":
                    self.no_newline(body)
                    self.i += 1
                    continue
                if tag not in " -+":
                    raise self.error(
                        f"hunk {len(fp.hunks) + 1} of {fp.path}: unexpected line (hunk "
                        f"header at line {header_line} promised {old_count - old_seen} more "
                        f"old and {new_count - new_seen} more new lines)"
                    )
                if tag in " -":
                    old_seen += 1
                if tag in " +":
                    new_seen += 1
                if old_seen > old_count or new_seen > new_count:
                    raise self.error(f"hunk {len(fp.hunks) + 1} of {fp.path} has too many lines")
                body.append((tag, line[1:]))
                self.i += 1
                if not line.endswith("\n"):
                    self.check_marked(fp, header_line)
            if (self.peek() or "").startswith("\\"):
                self.no_newline(body)
                self.i += 1
            self.check_hunk_end(fp, header_line, old_count, new_count)
            fp.hunks.append(
                Hunk(
                    index=len(fp.hunks) + 1,
                    old_start=old_start,
                    old_count=old_count,
                    new_start=new_start,
                    new_count=new_count,
                    lines=body,
                    line=header_line,
                )
            )

    def check_hunk_end(self, fp: FilePatch, header_line: int, old: int, new: int) -> None:
        """A hunk ends where its header's counts say; more hunk lines right after it mean the
        counts lie (git apply and GNU patch reject such a diff as corrupt, and so do we)."""
        j = self.i
        while j < len(self.lines) and self.lines[j] in ("\n", "\r\n"):
            j += 1  # blank lines after a hunk are harmless, unless hunk lines follow them
        if j >= len(self.lines):
            return
        line = self.lines[j]
        nxt = self.lines[j + 1] if j + 1 < len(self.lines) else ""
        if line.rstrip("\r\n") in ("--", "-- "):  # a format-patch signature ends the diff
            return
        if line.startswith("--- ") and nxt.startswith("+++ "):
            return
        if line[0] in "+- ":
            raise self.error(
                f"hunk {len(fp.hunks) + 1} of {fp.path} has more lines than its header "
                f"(line {header_line}) says: -{old} +{new}",
                line=j + 1,
            )

    def check_marked(self, fp: FilePatch, header_line: int) -> None:
        """A hunk line without a newline is the diff's last line: it is whole only when a
        ``\\ No newline at end of file`` marker follows it. Without the marker the diff was
        cut (git apply: "corrupt patch"; GNU patch: "malformed patch"), and applying it
        would write a cut line or strip the file's last newline."""
        if not (self.peek() or "").startswith("\\"):
            raise self.error(
                f"hunk {len(fp.hunks) + 1} of {fp.path} (header at line {header_line}) is "
                "truncated: its last line has no newline and no '\\ No newline at end of "
                "file' marker follows it",
                line=self.i,
            )

    def no_newline(self, body: list[tuple[str, str]]) -> None:
        if not body:
            raise self.error("'\\ No newline at end of file' before any line")
        tag, text = body[-1]
        body[-1] = (tag, text[:-1] if text.endswith("\n") else text)

    def name(self, text: str, line: int, strip: int) -> str:
        """A path from a ``diff --git`` half or a rename/copy line: unquoted once, stripped,
        checked."""
        if text.startswith('"'):
            try:
                raw, rest = unquote_c(text)
            except PathRejected as exc:
                raise self.path_error(exc, line) from None
            if rest.strip():
                raise self.error(f"text after the quoted path {text!r}", line)
        else:
            raw = text
        return self.checked(raw, line, strip)

    def checked(self, raw: str, line: int, strip: int) -> str:
        """``raw`` (already unquoted) with ``strip`` leading components removed, through the
        path gate (:func:`patchbay.environment.paths.check_relative`)."""
        comps = raw.split("/")
        if strip:
            if len(comps) <= strip:
                raise self.path_error(f"strip level {strip} removes the whole path {raw!r}", line)
            raw = "/".join(comps[strip:])
        try:
            return check_relative(raw)
        except PathRejected as exc:
            raise self.path_error(exc, line) from None

    def path_error(self, reason: object, line: int) -> InputError:
        return InputError(f"refused path: {reason}", file=self.source, line=line)


def git_header_names(rest: str, strip: int) -> tuple[str, str] | None:
    """The two names of a ``diff --git`` line, unquoted once, before the strip level.

    Git's rule (``git_header_name`` in ``apply.c``): a half that starts with ``"`` is
    C-quoted; two unquoted halves are split at the space where both name the same path once
    ``strip`` leading components (``a/``, ``b/``) are removed, so ``a/x y b/x y`` is the file
    ``x y``. With one space only, the halves may differ (a rename, which its rename lines then
    name).

    Args:
        rest: the line after ``diff --git ``, without its line ending.
        strip: the strip level (``-p``) the halves are compared at.

    Returns:
        ``(a, b)``, or None when unquoted halves with several spaces name no one path (the
        ``---``/``+++`` or rename lines must then give the names, as git requires).

    Raises:
        ValueError: not two names (no space, or text after a quoted second name).
        PathRejected: a quoted half that git would not unquote.
    """
    if rest.startswith('"'):
        a, tail = unquote_c(rest)
        if not tail.startswith(" ") or not tail[1:]:
            raise ValueError(rest)
        tail = tail[1:]
        if not tail.startswith('"'):
            return a, tail
        b, after = unquote_c(tail)
        if after:
            raise ValueError(rest)
        return a, b
    if ' "' in rest:  # git quotes any name holding a '"': the quoted second half starts here
        at = rest.index(' "')
        b, after = unquote_c(rest[at + 1 :])
        if after:
            raise ValueError(rest)
        return rest[:at], b
    spaces = [i for i, c in enumerate(rest) if c == " "]
    if not spaces or rest.startswith(" ") or rest.endswith(" "):
        raise ValueError(rest)
    for at in spaces:
        left, right = rest[:at], rest[at + 1 :]
        stripped = [half.split("/")[strip:] for half in (left, right)]
        if stripped[0] and stripped[0] == stripped[1]:
            return left, right
    if len(spaces) == 1:
        return rest[: spaces[0]], rest[spaces[0] + 1 :]
    return None


def _header_name(text: str, parser: _Parser, line: int) -> str:
    """The name on a ``---``/``+++`` line, unquoted once (GNU diff appends a tab and a
    timestamp; git quotes unusual names)."""
    if text.startswith('"'):
        try:
            raw, rest = unquote_c(text)
        except PathRejected as exc:
            raise parser.path_error(exc, line) from None
        if rest.strip() and not rest.startswith("\t"):
            raise parser.error(f"text after the quoted path {text!r}", line)
        return raw
    return text.split("\t", 1)[0].rstrip()


def _check_unique(files: list[FilePatch], parser: _Parser) -> None:
    """A diff that patches one file twice is refused: git would apply the second file patch
    on the result of the first, while hunk states are judged on the tree as it is, so status
    and apply could disagree. One file patch per file keeps them the same judgement."""
    seen: dict[str, FilePatch] = {}
    for fp in files:
        for path in {p for p in (fp.old_path, fp.new_path) if p}:
            first = seen.get(path)
            if first is not None:
                raise parser.error(
                    f"{path} is patched twice in this diff (file patches at lines {first.line} "
                    f"and {fp.line}); merge them into one file patch",
                    line=fp.line,
                )
            seen[path] = fp
