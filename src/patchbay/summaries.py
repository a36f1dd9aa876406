"""Long lists in the detail of ``status`` and ``validate`` (and a waiver's patch table),
summarised for people.

A detail line can hold a whole list: the packages pip's dry run would install (seventy, for a
pin that pulls in a framework), or every URL of an artifact patch that has no sha256 yet. In
a table cell, or on a ``concise`` line, such a list is a wall of text that hides the rest.

The rule (:func:`summarise`): in a line longer than :data:`LINE_LIMIT` characters, each run of
at least :data:`MIN_RUN` items of one shape, one after the other with the same separator
(``", "`` or ``"; "``) between them, is replaced by the count and

- for URLs (``scheme://...``): their longest common prefix, without the scheme and any user
  information, cut after its last ``/``:
  ``8 URLs under raw.githubusercontent.com/ROCm/aiter/0cbedbb/… (-v lists them)``; URLs with
  no host in common name the first instead (``6 URLs, the first a.example/k.co (-v ...)``);
- for packages (pip's ``name upgraded 1.0 -> 2.0``, ``name would be added at 1.0``,
  ``name downgraded ...``, ``name changed ...``, or a pin ``name==1.0``): the first
  :data:`SHOWN` of them as written:
  ``70 packages (torch upgraded 2.4 -> 2.5; triton would be added at 3.1; numpy upgraded
  1.26 -> 2.0; and 67 more: -v lists them)``.

The text around a run, shorter lines, shorter runs and items of any other shape are kept as
they are. The summary is for the human formats only: ``--format json`` always carries the
whole text, and ``-v``/``--verbose`` prints it in full (:func:`shown` with ``full``).
"""

from __future__ import annotations

from .patterns import pattern

LINE_LIMIT = 120  # a line up to this long is never summarised
MIN_RUN = 5  # fewer items than this are listed as they are
SHOWN = 3  # packages named in a summary
SEPARATORS = (", ", "; ")
HINT = "-v lists them"

_URL = pattern(r"(?<![\w+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s,;()<>\"']+")
_SCHEME_AND_USER = pattern(r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/@\s]*@)?")
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_VERSION = r"[^\s,;()]+"
_PACKAGE = pattern(
    rf"(?<![\w.+/-]){_NAME}(?: would be added at {_VERSION}"
    rf"| (?:upgraded|downgraded|changed) {_VERSION} -> {_VERSION}"
    rf"|(?:===|==|~=|!=|>=|<=)[^\s,;()]+)"
)


def shown(lines: list[str], *, full: bool = False) -> list[str]:
    """``lines`` as the human formats print them: each one :func:`summarise` d, or all of them
    as they are when ``full`` (``-v``)."""
    return list(lines) if full else [summarise(line) for line in lines]


def summarise(line: str, hint: str = HINT) -> str:
    """``line`` with each long run of URLs or packages replaced by its summary (the rule is in
    the module docstring); a line of :data:`LINE_LIMIT` characters or fewer is returned as it
    is. ``hint``: where the whole list is (``-v lists them`` on the command line; a waiver's
    table says the patchset lists them)."""
    if len(line) <= LINE_LIMIT:
        return line
    urls = [(m.start(), m.end()) for m in _URL.finditer(line)]
    packages = [
        (m.start(), m.end())
        for m in _PACKAGE.finditer(line)
        if not any(start < m.end() and m.start() < end for start, end in urls)
    ]
    spans = [(run, _url_summary) for run in _runs(line, urls)]
    spans += [(run, _package_summary) for run in _runs(line, packages)]
    out = line
    for run, summary in sorted(spans, key=lambda s: s[0][0][0], reverse=True):
        items = [line[start:end] for start, end in run]
        sep = line[run[0][1] : run[1][0]]
        out = out[: run[0][0]] + summary(items, sep, hint) + out[run[-1][1] :]
    return out


def _runs(line: str, spans: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The runs of :data:`MIN_RUN` or more of ``spans`` (sorted ``(start, end)`` of items in
    ``line``) with one separator of :data:`SEPARATORS` between each and the next."""
    runs: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    separator = None
    for span in spans:
        between = line[current[-1][1] : span[0]] if current else None
        if current and between in SEPARATORS and separator in (None, between):
            separator = between
            current.append(span)
            continue
        if len(current) >= MIN_RUN:
            runs.append(current)
        current, separator = [span], None
    if len(current) >= MIN_RUN:
        runs.append(current)
    return runs


def _url_summary(urls: list[str], separator: str, hint: str = HINT) -> str:
    """``N URLs under PREFIX…`` (see the module docstring)."""
    bare = [_SCHEME_AND_USER.sub("", url) for url in urls]
    common = _common_prefix(bare)
    head = common[: common.rfind("/") + 1]
    if not head.strip("/"):
        return f"{len(urls)} URLs, the first {bare[0]} ({hint})"
    return f"{len(urls)} URLs under {head}\u2026 ({hint})"


def _package_summary(items: list[str], separator: str, hint: str = HINT) -> str:
    """``N packages (first; second; third; and M more: -v lists them)``."""
    first = separator.join(items[:SHOWN])
    return f"{len(items)} packages ({first}{separator}and {len(items) - SHOWN} more: {hint})"


def _common_prefix(texts: list[str]) -> str:
    """The longest text every one of ``texts`` starts with."""
    low, high = min(texts), max(texts)
    n = 0
    while n < len(low) and low[n] == high[n]:
        n += 1
    return low[:n]
