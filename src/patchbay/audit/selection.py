"""Choosing what an audit reports, from the command line, as ruff does: ``--select`` and
``--ignore`` of rule codes or code prefixes, the files or folders named (``audit PATH...``, as
pre-commit passes the files of a change), and ``--statistics`` (one line per rule).

The checks still judge the whole repository (a waiver covers patches of other files, a patch
needs a waiver in another folder); the selection only chooses which findings are reported and
counted, so a run on one file says what the full audit says about that file.
"""

from __future__ import annotations

import difflib
from collections import Counter
from pathlib import Path, PurePosixPath

from ..errors import InputError
from .rules import RULES, Finding


def parse_codes(text: str, option: str) -> list[str]:
    """The codes of ``--select``/``--ignore`` (``option``): comma-separated rule codes or
    prefixes of them (``PB101``, ``PB4``, ``PB``), as ruff takes them.

    Raises:
        InputError: an item that is no code and no prefix of one, with the nearest codes.
    """
    items = [item.strip().upper() for item in text.split(",") if item.strip()]
    if not items:
        raise InputError(f"{option}: no rule code given (e.g. {option} PB101,PB4)")
    for item in items:
        if not any(code.startswith(item) for code in RULES):
            near = difflib.get_close_matches(item, list(RULES), n=3)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            raise InputError(
                f"{option}: {item!r} is no rule code or prefix of one{hint}; "
                f"codes: PB101-{max(RULES)} (docs/audit.md)"
            )
    return items


def _matches(code: str, prefixes: list[str]) -> bool:
    return any(code.startswith(p) for p in prefixes)


def selected(
    findings: list[Finding],
    *,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    paths: list[str] | None = None,
) -> list[Finding]:
    """The findings kept by the selection: a code matching a ``select`` prefix (all when None),
    no ``ignore`` prefix, and (with ``paths``, root-relative POSIX paths of files or folders)
    a file that is one of them or lies below one."""
    out = []
    for f in findings:
        if select is not None and not _matches(f.code, select):
            continue
        if ignore and _matches(f.code, ignore):
            continue
        if paths is not None and not any(_within(f.path, p) for p in paths):
            continue
        out.append(f)
    return out


def _within(path: str, named: str) -> bool:
    if named in ("", "."):
        return True
    return path == named or PurePosixPath(path).is_relative_to(PurePosixPath(named))


def relative_paths(paths: list[Path], root: Path) -> list[str]:
    """``paths`` as root-relative POSIX paths (how findings name files).

    Raises:
        InputError: a path that does not exist, or lies outside ``root``.
    """
    out = []
    top = root.resolve()
    for p in paths:
        if not p.exists():
            raise InputError("no such file or folder to audit", file=p)
        try:
            out.append(p.resolve().relative_to(top).as_posix())
        except ValueError:
            raise InputError(
                f"not inside the audited repository {root} (give --repo)", file=p
            ) from None
    return out


def statistics(findings: list[Finding]) -> list[tuple[int, str, str, str]]:
    """``(count, code, name, severity)`` of every rule among ``findings``, most frequent first
    (ruff's ``--statistics``)."""
    counted = Counter((f.code, f.severity.value) for f in findings)
    rows = [(n, code, RULES[code].name, sev) for (code, sev), n in counted.items()]
    return sorted(rows, key=lambda r: (-r[0], r[1]))
