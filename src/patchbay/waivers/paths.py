"""File paths a waiver names: the patch script it covers, the benchmark script that runs it.

Waivers of repositories that have not moved to patchsets point at the scripts they justify
("**Patch script:** `benchmarks/single_node/apply_demo3_patches.sh`", a Markdown link to the
script, "the heredoc in `benchmarks/demo4_h200.sh`"). This module collects every path-like
word of the text, as written; :mod:`patchbay.audit.waived` decides which of them are scripts
of the audited repository.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from .segments import Segment

# a relative or absolute path with at least one folder (`...` stands for elided folders), or a
# bare name with a script suffix (.sh, .bash, .zsh, .ksh, .py); not a URL, not `owner/repo#N`,
# not part of a longer word
_PATH = re.compile(
    r"(?<![\w/.~$@:-])(?:\.{1,2}/|/)?(?:[\w.+-]+/)+[\w.+-]*[\w+-](?![\w/#@-])"
    r"|(?<![\w/.~$@:-])[\w.+-]+(?:\.sh|\.bash|\.zsh|\.ksh|\.py)(?![\w/#@-])"
)
# web URLs of a file in a repository: GitHub blob/tree/raw, GitLab -/blob
_WEB_FILE = re.compile(r"^/[^/]+/[^/]+/(?:-/)?(?:blob|tree|raw)/[^/]+/(?P<path>.+)$")


@dataclass(frozen=True)
class NamedPath:
    """A file path as a waiver writes it.

    Attributes:
        text: the path (``benchmarks/x.sh``, ``../../benchmarks/x.sh``, ``x.sh``,
            ``benchmarks/.../x.sh``), without a trailing ``:line`` or ``#L12``.
        line: 1-based line in the waiver file.
        relative_to_file: True for a Markdown link target, which is relative to the waiver's
            folder (as GitHub renders it) unless it starts with ``/``.
    """

    text: str
    line: int
    relative_to_file: bool = False


def _clean(word: str) -> str:
    word = re.sub(r"(?::\d+(?:-\d+)?|#L\d+(?:-L?\d+)?)$", "", word)
    return word.rstrip(".,;:!?)'\"")


def named_paths(segments: list[Segment]) -> list[NamedPath]:
    """Every path the body names, in order, without duplicates (same text, first line).

    Looked for in code spans and code blocks (``bash benchmarks/x.sh``), in link targets
    (relative ones, and GitHub/GitLab ``blob``/``tree``/``raw`` URLs, whose path part is a
    repository path) and in the text.
    """
    out: list[NamedPath] = []
    seen: set[tuple[str, bool]] = set()

    def add(text: str, line: int, relative_to_file: bool = False) -> None:
        text = _clean(text)
        if text and text not in (".", "..", "/") and (text, relative_to_file) not in seen:
            seen.add((text, relative_to_file))
            out.append(NamedPath(text, line, relative_to_file))

    for seg in segments:
        if seg.code:  # a code block: one line of the block per line of the file
            for n, text in enumerate(seg.text.split("\n")):
                for m in _PATH.finditer(text):
                    add(m.group(0), seg.line + 1 + n)
            continue
        for span in seg.code_spans:
            for m in _PATH.finditer(span):
                add(m.group(0), seg.line)
        for href in seg.hrefs:
            parts = urlsplit(href)
            if parts.scheme in ("http", "https"):
                web = _WEB_FILE.match(parts.path)
                if web:
                    add(unquote(web.group("path")), seg.line)
            elif not parts.scheme and parts.path:
                add(unquote(parts.path), seg.line, relative_to_file=not href.startswith("/"))
        text = re.sub(r"https?://\S+", " ", seg.outside_links)
        for m in _PATH.finditer(text):
            add(m.group(0), seg.line)
    return out
