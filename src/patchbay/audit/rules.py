"""The rules of ``patchbay audit``: stable codes, default severities, one-line summaries.

Codes are grouped by what they look at, in the style of linters (ruff, flake8): a code never
changes meaning and is never reused, so configuration and in-source annotations stay valid.

- ``PB1xx`` patches and the waivers that cover them;
- ``PB2xx`` the content of waiver documents;
- ``PB3xx`` patchsets and their patch files;
- ``PB4xx`` engine patching in scripts and Dockerfiles that no patchset declares (the scanner);
- ``PB5xx`` what the forge says about the patches' upstream fixes (``--upstream``).

Severities are the three levels of SARIF 2.1.0 (``error``, ``warning``, ``note``; §3.27.10), which
GitHub workflow commands also have (``error``, ``warning``, ``notice``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path


class Severity(str, Enum):
    """How much a finding matters; ``--fail-on`` picks the lowest level that fails the run."""

    NOTE = "note"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"note": 0, "warning": 1, "error": 2}[self.value]


@dataclass(frozen=True)
class Rule:
    """One audit rule.

    Attributes:
        code: stable code, ``PB`` and three digits.
        name: kebab-case name (SARIF ``reportingDescriptor.name``).
        severity: default severity (configurable per rule).
        summary: one line saying what the rule finds.
    """

    code: str
    name: str
    severity: Severity
    summary: str


_E, _W, _N = Severity.ERROR, Severity.WARNING, Severity.NOTE

RULES: dict[str, Rule] = {
    rule.code: rule
    for rule in (
        # patches and waivers
        Rule("PB101", "patch-without-waiver", _E, "a patch that no waiver covers"),
        Rule("PB102", "unknown-waiver", _E, "a patch names a waiver id that does not exist"),
        Rule("PB103", "orphan-waiver", _E, "a waiver that covers no existing patch"),
        Rule(
            "PB104",
            "waiver-lists-unknown-patch",
            _W,
            "a waiver lists a patch id that no "
            "patchset has (the waiver also covers existing patches)",
        ),
        Rule(
            "PB105",
            "waiver-link-mismatch",
            _W,
            "a patch names a waiver whose `patches` list does not include it",
        ),
        Rule(
            "PB106",
            "ambiguous-patch-reference",
            _E,
            "a waiver lists a bare patch id that several patchsets have (it covers none of them; "
            "write `patchset/id`)",
        ),
        Rule(
            "PB107",
            "patching-without-change-waiver",
            _E,
            "patching that a change adds (`--changed-since`: new patches, new script lines "
            "that patch the engine) and no waiver added or changed in the same change covers",
        ),
        Rule(
            "PB108",
            "duplicate-patchset-name",
            _E,
            "two patchsets of the repository have the same `name:` (a `patchset/id` reference "
            "and the ledger cannot tell them apart)",
        ),
        # waiver documents
        Rule(
            "PB201",
            "waiver-missing-field",
            _E,
            "a waiver without a required field (what, why, "
            "upstream, removal plan; owner, filed, review date, status, approval)",
        ),
        Rule(
            "PB202",
            "waiver-placeholder",
            _E,
            "a required waiver field still holds placeholder text (<...>, TODO, TBD, 'pending')",
        ),
        Rule("PB203", "waiver-expired", _E, "a waiver whose review_by/expires date has passed"),
        Rule(
            "PB204",
            "waiver-expiring",
            _W,
            "a waiver whose review_by/expires date is within the warning window",
        ),
        Rule("PB205", "waiver-not-approved", _W, "a waiver whose status is still requested"),
        Rule(
            "PB206",
            "waiver-without-front-matter",
            _W,
            "a legacy waiver without YAML front "
            "matter (owner, dates, status and covered patches unknown)",
        ),
        Rule(
            "PB207",
            "unresolved-upstream-reference",
            _N,
            "an upstream reference `project #N` with no repository mapped to the project",
        ),
        Rule("PB208", "duplicate-waiver-id", _E, "two waiver documents with the same id"),
        # patchsets and patch files
        Rule(
            "PB301",
            "patch-without-upstream",
            _E,
            "a patch with no upstream reference and no explicit upstream status with a real reason",
        ),
        Rule(
            "PB302",
            "missing-patch-file",
            _E,
            "a patchset references a patch file that does not exist",
        ),
        Rule(
            "PB303",
            "unreferenced-patch-file",
            _W,
            "a patch file in a patchset folder that the patchset does not reference",
        ),
        Rule(
            "PB304",
            "unlocked-remote-source",
            _W,
            "a remote patch source or artifact without a pinned hash (`apply` refuses it until "
            "`patchbay vendor` locks it)",
        ),
        # the scanner: undeclared engine patching
        Rule(
            "PB401",
            "undeclared-diff-apply",
            _E,
            "git apply / patch run against an installed engine package or an engine source tree",
        ),
        Rule(
            "PB402",
            "undeclared-in-place-edit",
            _E,
            "sed -i, perl -i or awk -i inplace editing an installed engine file",
        ),
        Rule(
            "PB403",
            "undeclared-rewrite-script",
            _E,
            "an inline script (heredoc, python -c) that rewrites an installed engine file",
        ),
        Rule(
            "PB404",
            "undeclared-file-write",
            _E,
            "cp, install, mv, ln, rsync, tar, unzip, "
            "curl -o, wget -O, a redirection, rm or a Dockerfile COPY/ADD writing into an "
            "installed engine location",
        ),
        Rule(
            "PB405",
            "engine-from-unpinned-source",
            _E,
            "pip install of an engine package from "
            "a VCS URL, a fork, an archive URL, a local wheel or a local source tree",
        ),
        Rule(
            "PB406",
            "engine-clone-at-moving-ref",
            _E,
            "git clone of an engine component at a "
            "moving ref (no commit pinned), then built or installed",
        ),
        Rule(
            "PB407",
            "module-injection",
            _E,
            "PYTHONPATH, sitecustomize, usercustomize or .pth "
            "injection that can shadow or monkey-patch engine modules",
        ),
        Rule(
            "PB408",
            "engine-version-replaced",
            _W,
            "pip install of an engine package over the image's version from an index",
        ),
        Rule(
            "PB409",
            "engine-patch-failure-ignored",
            _E,
            "the failure of an engine modification is swallowed (|| true, || :, || echo)",
        ),
        Rule(
            "PB410",
            "review-annotation-without-reason",
            _E,
            "a `patchbay-reviewed` annotation without a reason",
        ),
        Rule(
            "PB411",
            "unreadable-script",
            _E,
            "a script the analyser cannot read (an unterminated here-document): nothing after "
            "the error is judged",
        ),
        Rule(
            "PB412",
            "analysis-incomplete",
            _E,
            "the analyser stopped before the end of a script (a bound of the walk, or a fault "
            "of the analyser): nothing after the line reached is judged",
        ),
        Rule(
            "PB413",
            "script-not-analysed",
            _N,
            "a file the scripts' globs name that is not analysed: not a regular file (a FIFO, "
            "a socket, a device) or not readable",
        ),
        Rule(
            "PB414",
            "execution-unresolved",
            _W,
            "a script that names an engine runs code the analyser cannot see (`eval` of a "
            "string known only at run time, a command whose name is computed, a script of its "
            "own folder that is not in the repository): what that code changes is not judged",
        ),
        # upstream (patchbay audit --upstream)
        Rule(
            "PB501",
            "patch-fixed-upstream",
            _E,
            "a patch whose upstream fix is already in the pinned image (verdict `remove`)",
        ),
    )
}

RESERVED: dict[str, str] = {}
"""Codes set aside for rules not implemented yet; configuration may not name them."""

SCANNER_RULES = frozenset(code for code in RULES if code.startswith("PB4"))


@dataclass(frozen=True)
class Suppression:
    """Why a finding is not counted: an in-source review annotation or a configured ignore.

    ``kind`` is SARIF's ``suppression.kind``: ``inSource`` or ``external``.
    """

    kind: str
    justification: str


@dataclass(frozen=True)
class WaivedBy:
    """The waiver that covers a script finding (adoption before migration: a waiver that names
    the patch script, or a benchmark script that runs it, covers the script's findings).

    Attributes:
        id: the waiver id.
        path: the waiver file, relative to the audited root.
        status: the waiver's ``requested`` / ``approved`` status, or None when it has none.
        script: the linked script that covers the finding (its file, or a script of its chain).
    """

    id: str
    path: str
    status: str | None
    script: str


@dataclass
class Finding:
    """One problem found by the audit.

    Attributes:
        code: the rule code (``PB101``...).
        severity: the effective severity (the rule's default, or the configured one).
        path: file, relative to the audited root, with ``/`` separators.
        line: 1-based line, or None when the problem is the whole file.
        message: one line, without the location.
        end_line: last line of a multi-line construct (a heredoc), when there is one.
        suppression: set when an annotation or a configured ignore covers the finding.
        chain: for a script finding, the repository-relative paths of the scripts through
            which it was reached (``bash path`` / ``source``), outermost first, without
            ``path`` itself (``("run.sh",)`` for a statement of ``lib.sh`` that ``run.sh``
            sources); empty when the finding is in the script that was scanned.
        waived_by: set when a waiver that links the script (or one of its chain) covers the
            finding; the audit then lowers its severity to ``note`` and does not count it.
    """

    code: str
    severity: Severity
    path: str
    line: int | None
    message: str
    end_line: int | None = None
    suppression: Suppression | None = field(default=None)
    chain: tuple[str, ...] = ()
    waived_by: WaivedBy | None = None

    @classmethod
    def of(
        cls, code: str, path: str, line: int | None, message: str, end_line: int | None = None
    ) -> Finding:
        """A finding with the rule's default severity (the audit applies the configured one)."""
        return cls(code, RULES[code].severity, path, line, message, end_line)

    @property
    def rule(self) -> Rule:
        return RULES[self.code]

    def location(self) -> str:
        """``path:line`` (or ``path``)."""
        return f"{self.path}:{self.line}" if self.line else self.path

    def sort_key(self) -> tuple[str, int, str]:
        return (self.path, self.line or 0, self.code)


def relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` with ``/`` separators (as findings name files), as
    :func:`os.path.relpath` gives it."""
    text, base = os.fspath(path), os.fspath(root)
    # the common case without relpath's normalising of both (most of an audit's calls): an
    # absolute path below the root with no `..` (pathlib leaves no `.` or doubled separator)
    if (
        isinstance(path, Path)
        and isinstance(root, Path)
        and os.path.isabs(base)
        and text.startswith(base)
        and text[len(base) : len(base) + 1] == os.sep
        and base != os.sep
        and ".." not in text
    ):
        return text[len(base) + 1 :].replace(os.sep, "/")
    return os.path.relpath(path, root).replace(os.sep, "/")
