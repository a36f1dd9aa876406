"""The upstream report: one row per carried patch, what changed, and where it is published.

:func:`build_report` assesses patchsets (:mod:`patchbay.upstream.status`), adds how long each
patch has been carried (its first appearance in the git history of its patchset file, read with
GitPython) and how long ago upstream merged it, compares with the last run in a JSON-lines
history file (one line per run), and, given a candidate image, lists the patches
:func:`patchbay.apply.check.check_patchset` says the bump makes unnecessary.

Renderings: Markdown (for an issue or chat), JSON, and one self-contained HTML page with an
inline SVG chart of carried patches by verdict over time (no scripts, no external assets).

:func:`publish` keeps one tracking issue per repository: it finds the issue by a hidden marker
in its body, compares a fingerprint of the report's content (verdicts, states, reasons; not the
day counts, which change daily), and edits only when that changed. The body stays within
GitHub's limit on an issue body (65,536 characters): detail sections go first, then table rows,
never the summary, and a note says what was cut.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from .. import __version__
from ..diff.hunkview import counts_text
from ..errors import InputError, PatchbayError
from ..patchset.model import PATCHSET_FILENAMES, Patchset, load_patchset
from ..printable import dumps
from ..redaction import redact
from .github import GitHubClient, GitHubError, RequestStats
from .status import assess
from .verdicts import VERDICTS, Assessment, ContentEvidence, Verdict, WaiverReview

MARKER = "<!-- patchbay:upstream-report -->"
_NO_EVIDENCE = ContentEvidence("candidate", "the candidate", "")
ISSUE_BODY_LIMIT = 65536  # characters GitHub accepts in an issue body
DEFAULT_TITLE = "patchbay: carried patches and their upstream state"
HISTORY_VERSION = 1
_FINGERPRINT = re.compile(r"<!-- patchbay:fingerprint=([0-9a-f]{64}) -->")
_ORDER = {
    Verdict.ATTENTION: 0,
    Verdict.REMOVE: 1,
    Verdict.REFRESH: 2,
    Verdict.BUMP: 3,
    Verdict.KEEP: 4,
}
COLOURS = {
    "remove": "#2e7d32",
    "bump": "#1565c0",
    "refresh": "#6a1b9a",
    "keep": "#8a8a8a",
    "attention": "#d84315",
}


# -- finding patchsets --------------------------------------------------------------------------


def find_patchsets(repo: Path, names: Sequence[str] = ()) -> list[Patchset]:
    """The patchsets a report covers.

    Args:
        repo: the repository holding ``patchsets/`` (and ``waivers/``).
        names: PATCHSET arguments (a folder, a YAML file, or a name under
            ``<repo>/patchsets``); empty: every ``<repo>/patchsets/*/patchset.yaml``.

    Raises:
        InputError: a named patchset does not exist, any patchset does not load, or there is
            no patchset at all.
    """
    from ..patchset.inputfiles import patchset_location  # the rule of every command

    paths = [Path(patchset_location(name, os.fspath(repo))) for name in names]
    if not names:
        folder = repo / "patchsets"
        if folder.is_dir():
            paths = [
                sub
                for sub in sorted(p for p in folder.iterdir() if p.is_dir())
                if any((sub / n).is_file() for n in PATCHSET_FILENAMES)
            ]
        if not paths:
            raise InputError("no patchsets here (looked for patchsets/*/patchset.yaml)", file=repo)
    return [load_patchset(p) for p in paths]


# -- days carried -------------------------------------------------------------------------------


def first_appearances(yaml_path: Path) -> dict[str, datetime]:
    """When each patch id first appeared in the git history of a patchset file.

    Walks the commits that touched the file, oldest first (``git rev-list --reverse -- FILE``
    through GitPython), parses the file at each and records the committer date of the first
    commit holding each id. A file moved to another path starts a new history (renames are
    not followed).

    Returns:
        patch id -> committer date (timezone-aware); empty when the file is not in a git
        repository, not committed, or git is missing.
    """
    import git
    import yaml

    try:
        repo = git.Repo(yaml_path.resolve().parent, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, git.GitCommandNotFound):
        return {}
    try:
        top = Path(repo.working_tree_dir or "").resolve()
        rel = yaml_path.resolve().relative_to(top).as_posix()
        found: dict[str, datetime] = {}
        for commit in repo.iter_commits(paths=rel, reverse=True):
            try:
                blob = commit.tree / rel
                data = yaml.safe_load(blob.data_stream.read())
            except (KeyError, yaml.YAMLError, ValueError):
                continue
            patches = data.get("patches") if isinstance(data, dict) else None
            for patch in patches if isinstance(patches, list) else []:
                pid = patch.get("id") if isinstance(patch, dict) else None
                if isinstance(pid, str) and pid not in found:
                    found[pid] = commit.committed_datetime
        return found
    except (ValueError, git.GitCommandError):
        return {}
    finally:
        repo.close()


# -- the report ---------------------------------------------------------------------------------


@dataclass
class Row:
    """One patch in the report.

    Attributes:
        assessment: upstream states and the verdict.
        first_seen: first appearance in git history (None: not committed, or no repository).
        days_carried: whole days from ``first_seen`` to the report's date.
        days_since_merged: whole days from the latest upstream merge of its fixes.
        candidate: the patch's verdict on the candidate image (``patchbay check``), if given.
        candidate_hunks: its hunks per state there (``{"upstream": 1, "pending": 1}``).
    """

    assessment: Assessment
    first_seen: datetime | None
    days_carried: int | None
    days_since_merged: int | None
    candidate: str | None = None
    candidate_hunks: dict[str, int] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.assessment.key

    @property
    def candidate_label(self) -> str:
        """The candidate cell: ``check``'s verdict, with the hunk counts of a mixed patch
        (``conflict (1 upstream, 1 pending, 1 conflict)``)."""
        if self.candidate is None:
            return "—"
        if len(self.candidate_hunks) > 1:
            return f"{self.candidate} ({counts_text(self.candidate_hunks)})"
        return self.candidate

    def to_json(self) -> dict[str, Any]:
        out = self.assessment.to_json()
        out["first_seen"] = self.first_seen.isoformat() if self.first_seen else None
        out["days_carried"] = self.days_carried
        out["days_since_merged"] = self.days_since_merged
        out["candidate"] = self.candidate
        out["candidate_hunks"] = self.candidate_hunks
        return out


@dataclass
class CandidateResult:
    """One patchset checked against a candidate image.

    Attributes:
        droppable: ids of the patches the candidate already carries (``check`` verdict
            ``upstream``).
        verdicts: patch id -> ``check`` verdict.
        problem: why the check could not run, if it did not.
        refresh: ids of the patches ``patchbay rebase`` would refresh by a 3-way merge.
        evidence: patch id -> the content evidence of the candidate (hunks upstream and
            still needed), which bends the report's verdicts.
    """

    patchset: str
    droppable: list[str] = field(default_factory=list)
    verdicts: dict[str, str] = field(default_factory=dict)
    problem: str | None = None
    refresh: list[str] = field(default_factory=list)
    evidence: dict[str, ContentEvidence] = field(default_factory=dict)


@dataclass
class Report:
    """Everything one run found; rendered by :func:`render`.

    Attributes:
        generated: when the run ended (UTC).
        today: the date day counts and waiver dates are judged against.
        rows: one per patch, attention first, then remove, bump, keep.
        patchsets: names of the patchsets covered.
        previous: the last history entry before this run (None: first run, or no history).
        history: earlier history entries and this run's, oldest first (the chart's series).
        candidate: per patchset, the check against the candidate image (None: not asked).
        stats: requests the forge client sent.
    """

    generated: datetime
    today: date
    rows: list[Row]
    patchsets: list[str]
    previous: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    candidate: list[CandidateResult] | None = None
    stats: RequestStats | None = None

    @property
    def counts(self) -> dict[str, int]:
        """Patches per verdict (every verdict present, zero included)."""
        out = {v.value: 0 for v in VERDICTS}
        for row in self.rows:
            out[row.assessment.verdict.value] += 1
        return out

    @property
    def droppable(self) -> list[str]:
        """``patchset/id`` of every patch the candidate image makes unnecessary."""
        return [f"{c.patchset}/{pid}" for c in self.candidate or [] for pid in c.droppable]

    @property
    def to_refresh(self) -> list[str]:
        """``patchset/id`` of every patch ``patchbay rebase`` would refresh on the candidate."""
        return [f"{c.patchset}/{pid}" for c in self.candidate or [] for pid in c.refresh]

    def entry(self) -> dict[str, Any]:
        """This run as one history line."""
        return {
            "version": HISTORY_VERSION,
            "time": _iso(self.generated),
            "date": self.today.isoformat(),
            "counts": self.counts,
            "fingerprint": self.fingerprint(),
            "patches": {
                row.key: {
                    "verdict": row.assessment.verdict.value,
                    "refs": {r.ref.short: r.state.value for r in row.assessment.refs},
                    "needed": row.assessment.needed_commits,
                }
                for row in self.rows
            },
        }

    def fingerprint(self) -> str:
        """sha256 of what the report says, without day counts and times: equal fingerprints
        mean nothing worth an edit changed."""
        content = [
            [
                row.key,
                row.assessment.verdict.value,
                row.assessment.reason,
                row.assessment.needed_commits,
                row.assessment.warnings,
                row.candidate,
                [
                    [r.ref.text, r.state.value, r.verdict.value, r.reason]
                    for r in row.assessment.refs
                ],
            ]
            for row in self.rows
        ]
        candidate = [[c.patchset, c.droppable, c.problem] for c in self.candidate or []]
        text = json.dumps([content, candidate], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def changes(self) -> list[str]:
        """What changed since the previous run, one line each (empty: nothing, or first run)."""
        if self.previous is None:
            return []
        before: Mapping[str, Any] = self.previous.get("patches") or {}
        now = self.entry()["patches"]
        lines = []
        for key in sorted(set(before) | set(now)):
            old, new = before.get(key), now.get(key)
            if old is None:
                lines.append(f"new: `{key}` ({new['verdict']})")
            elif new is None:
                lines.append(f"gone: `{key}` (was {old.get('verdict')})")
            else:
                if old.get("verdict") != new["verdict"]:
                    lines.append(f"`{key}`: {old.get('verdict')} → {new['verdict']}")
                old_refs = old.get("refs") or {}
                for ref, state in new["refs"].items():
                    if ref in old_refs and old_refs[ref] != state:
                        lines.append(f"`{key}`: {ref} {old_refs[ref]} → {state}")
        return lines

    def to_json(self) -> dict[str, Any]:
        """The document of ``--format json`` (``schema_version`` 1, the key of every patchbay
        document; ``version`` is its old name, kept)."""
        return {
            "schema_version": 1,
            "version": 1,
            "generated": _iso(self.generated),
            "today": self.today.isoformat(),
            "patchbay": __version__,
            "patchsets": self.patchsets,
            "counts": self.counts,
            "fingerprint": self.fingerprint(),
            "previous": None
            if self.previous is None
            else {"time": self.previous.get("time"), "counts": self.previous.get("counts")},
            "changes": self.changes(),
            "candidate": None
            if self.candidate is None
            else {
                "droppable": self.droppable,
                "refresh": self.to_refresh,
                "patchsets": [
                    {
                        "patchset": c.patchset,
                        "droppable": c.droppable,
                        "refresh": c.refresh,
                        "verdicts": c.verdicts,
                        "problem": c.problem,
                    }
                    for c in self.candidate
                ],
            },
            "requests": self.stats.to_json() if self.stats else None,
            "rows": [row.to_json() for row in self.rows],
        }


def build_report(
    patchsets: Sequence[Patchset],
    client: GitHubClient,
    *,
    today: date | None = None,
    waivers_dir: Path | None = None,
    history: Sequence[dict[str, Any]] = (),
    pinned: Mapping[str, dict[str, ContentEvidence]] | None = None,
    candidate: list[CandidateResult] | None = None,
    max_pages: int = 30,
) -> Report:
    """Assess ``patchsets`` and assemble the report (nothing is written).

    Args:
        patchsets: the patchsets to cover.
        client: the forge client (its ``stats`` end up in the report).
        today: the report's date (default: today, UTC).
        waivers_dir: the waiver folder, for review dates (None: waivers are not consulted).
        history: earlier history entries, oldest first (see :func:`read_history`).
        pinned: patchset name -> patch id -> content evidence of the pinned image (see
            :func:`patchbay.upstream.evidence.pinned_evidence`).
        candidate: the check against a candidate image (see :func:`check_candidate`).

    Verdicts use the content evidence whenever it is there (:mod:`patchbay.upstream.evidence`):
    a merged fix whose candidate still conflicts or is partly upstream is ``refresh``, not
    ``bump`` or ``remove``.
        max_pages: bound on compare pages per comparison.

    Raises:
        RateLimitError: the forge's rate limit outlasts the client's wait bound.
    """
    today = today or datetime.now(timezone.utc).date()
    waivers: dict[tuple[str, str], WaiverReview] = {}
    if waivers_dir is not None:
        from .status import waiver_reviews

        waivers = waiver_reviews(waivers_dir, patchsets)
    evidence: dict[tuple[str, str], list[ContentEvidence]] = {}
    for name, by_id in (pinned or {}).items():
        for pid, ev in by_id.items():
            evidence.setdefault((name, pid), []).append(ev)
    for c in candidate or []:
        for pid, ev in c.evidence.items():
            evidence.setdefault((c.patchset, pid), []).append(ev)
    assessed = assess(
        patchsets, client, today=today, waivers=waivers, evidence=evidence, max_pages=max_pages
    )
    seen: dict[Path, dict[str, datetime]] = {}
    by_candidate = {c.patchset: c.verdicts for c in candidate or []}
    by_evidence = {c.patchset: c.evidence for c in candidate or []}
    rows = []
    for a in assessed:
        if a.patchset_path not in seen:
            seen[a.patchset_path] = first_appearances(a.patchset_path)
        first = seen[a.patchset_path].get(a.patch_id)
        rows.append(
            Row(
                assessment=a,
                first_seen=first,
                days_carried=_days(first, today),
                days_since_merged=_days(a.merged_at, today),
                candidate=by_candidate.get(a.patchset, {}).get(a.patch_id),
                candidate_hunks=dict(
                    by_evidence.get(a.patchset, {}).get(a.patch_id, _NO_EVIDENCE).counts
                ),
            )
        )
    rows.sort(
        key=lambda r: (_ORDER[r.assessment.verdict], r.assessment.patchset, r.assessment.index)
    )
    report = Report(
        generated=datetime.now(timezone.utc),
        today=today,
        rows=rows,
        patchsets=[ps.name for ps in patchsets],
        previous=history[-1] if history else None,
        candidate=candidate,
        stats=client.stats,
    )
    report.history = [*history, report.entry()]
    return report


def _days(when: datetime | None, today: date) -> int | None:
    if when is None:
        return None
    return max(0, (today - when.astimezone(timezone.utc).date()).days)


# -- images: content already present, candidate ------------------------------------------------


def check_candidate(
    patchsets: Sequence[Patchset], *, python: str | None, root: Path | None
) -> list[CandidateResult]:
    """Check every patchset against a candidate image with
    :func:`patchbay.apply.check.check_patchset`; a patchset the candidate cannot host (its target
    packages are missing) gets a ``problem`` instead of failing the report."""
    from ..apply.check import Verdict as CheckVerdict
    from ..apply.check import check_patchset
    from ..authoring.rebase import patches_to_refresh
    from ..environment.targets import resolve_environment
    from .evidence import candidate_evidence

    out = []
    for ps in patchsets:
        try:
            env = resolve_environment(ps, python=python, root=root)
            result = check_patchset(ps, env)
        except PatchbayError as exc:
            out.append(CandidateResult(ps.name, problem=str(exc).split("\n", 1)[0]))
            continue
        out.append(
            CandidateResult(
                ps.name,
                droppable=[i.report.id for i in result.items if i.verdict is CheckVerdict.UPSTREAM],
                verdicts={i.report.id: i.verdict.value for i in result.items},
                refresh=patches_to_refresh(result),
                evidence=candidate_evidence(result),
            )
        )
    return out


# -- history ------------------------------------------------------------------------------------


def read_history(path: Path) -> list[dict[str, Any]]:
    """The entries of a history file, oldest first (a missing file has none).

    Raises:
        InputError: a line is not a JSON object (named with its line number).
    """
    if not path.is_file():
        return []
    out = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the report history: {exc}", file=path) from None
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise InputError(f"not a JSON line: {exc}", file=path, line=n) from None
        if not isinstance(entry, dict):
            raise InputError("a history line must be a JSON object", file=path, line=n)
        out.append(entry)
    return out


def append_history(path: Path, entry: Mapping[str, Any]) -> None:
    """Append one entry as one line (the file and its folder are created when missing), with
    secrets redacted.

    Raises:
        InputError: the file cannot be written.
    """
    line = redact(dumps(entry, sort_keys=True, separators=(",", ":"))) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise InputError(f"cannot write the report history: {exc}", file=path) from None


# -- Markdown -----------------------------------------------------------------------------------


def _cell(text: str) -> str:
    text = text.replace("\n", " ").replace("|", "\\|")
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _refs_markdown(row: Row) -> str:
    parts = []
    for r in row.assessment.refs:
        name = _cell(r.ref.short)
        parts.append(f"[{name}]({r.url})" if r.url else name)
    return "<br>".join(parts) or "—"


def _states_markdown(row: Row) -> str:
    return "<br>".join(_cell(r.label) for r in row.assessment.refs) or "—"


def _num(value: int | None) -> str:
    return "—" if value is None else str(value)


def _summary_line(report: Report) -> str:
    counts = report.counts
    total = len(report.rows)
    sets = len(report.patchsets)
    parts = [
        f"**{counts[v.value]} {v.value}**"
        if v is Verdict.REMOVE and counts[v.value]
        else f"{counts[v.value]} {v.value}"
        for v in VERDICTS
    ]
    return (
        f"As of {report.today.isoformat()}: {total} carried patch{'es' if total != 1 else ''} "
        f"in {sets} patchset{'s' if sets != 1 else ''}: " + " · ".join(parts) + "."
    )


def _changes_markdown(report: Report) -> list[str]:
    if report.previous is None:
        return ["First report: there is no earlier run to compare with."]
    when = report.previous.get("date") or report.previous.get("time") or "?"
    lines = report.changes()
    if not lines:
        return [f"No change since the last run ({when})."]
    return [f"Since the last run ({when}):", "", *(f"- {line}" for line in lines)]


def _candidate_markdown(report: Report) -> list[str]:
    if report.candidate is None:
        return []
    out = ["## The candidate image", ""]
    n = len(report.droppable)
    if n:
        names = ", ".join(f"`{k}`" for k in report.droppable)
        out.append(
            f"These {n} patch{'es' if n != 1 else ''} can be dropped with this bump: {names}."
        )
    else:
        out.append("No patch can be dropped with this bump.")
    if report.to_refresh:
        names = ", ".join(f"`{k}`" for k in report.to_refresh)
        out.append(f"`patchbay rebase` would refresh (3-way merge) {names}.")
    for c in report.candidate:
        if c.problem:
            out.append(f"- `{c.patchset}`: not checked: {_cell(c.problem)}")
    out.append("")
    return out


def _table_markdown(rows: Sequence[Row], with_candidate: bool) -> list[str]:
    head = (
        "| patchset | patch | upstream | state | verdict | carried (days) | since merged (days) |"
    )
    rule = "|---|---|---|---|---|---:|---:|"
    if with_candidate:
        head += " candidate |"
        rule += "---|"
    lines = [head, rule]
    for row in rows:
        a = row.assessment
        verdict = f"**{a.verdict.value}**" if a.verdict is not Verdict.KEEP else a.verdict.value
        line = (
            f"| {_cell(a.patchset)} | `{_cell(a.patch_id)}` | {_refs_markdown(row)} | "
            f"{_states_markdown(row)} | {verdict} | {_num(row.days_carried)} | "
            f"{_num(row.days_since_merged)} |"
        )
        if with_candidate:
            line += f" {_cell(row.candidate_label)} |"
        lines.append(line)
    return lines


def _details_markdown(rows: Sequence[Row], verdict: Verdict) -> list[str]:
    chosen = [r for r in rows if r.assessment.verdict is verdict]
    if not chosen:
        return []
    titles = {
        Verdict.ATTENTION: "Needs attention",
        Verdict.REMOVE: "Remove: the fix is in the pinned image",
        Verdict.BUMP: "Bump: a newer image removes the patch",
        Verdict.REFRESH: "Refresh: part of the patch is upstream, or it conflicts",
        Verdict.KEEP: "Keep: upstream is still open",
    }
    out = [f"### {titles[verdict]}", ""]
    for row in chosen:
        a = row.assessment
        line = f"- `{a.key}`: {_cell(a.reason)}"
        if a.needed_commits:
            line += "; needed: " + ", ".join(f"`{c}`" for c in a.needed_commits)
        out.append(line)
        for w in a.warnings:
            out.append(f"  - warning: {_cell(w)}")
        if a.upstream_status and a.upstream_status not in a.reason:
            out.append(f"  - Upstream-Status: {_cell(a.upstream_status)}")
    out.append("")
    return out


def render_markdown(report: Report, *, issue: bool = False, limit: int | None = None) -> str:
    """The report as Markdown.

    Args:
        report: the report.
        issue: add the hidden marker and fingerprint of the tracking issue.
        limit: maximum length in characters; detail sections are cut first (keep, bump,
            remove, then attention), then table rows from the end, and a note says so. The
            summary is never cut.
    """
    head = [MARKER, ""] if issue else []
    head += ["# Carried patches: upstream report", "", _summary_line(report), ""]
    head += ["## Changes", "", *_changes_markdown(report), ""]
    head += _candidate_markdown(report)
    with_candidate = report.candidate is not None
    table = _table_markdown(report.rows, with_candidate)
    details = {v: _details_markdown(report.rows, v) for v in VERDICTS}
    detail_order = [Verdict.ATTENTION, Verdict.REMOVE, Verdict.REFRESH, Verdict.BUMP, Verdict.KEEP]
    tail = [f"<!-- patchbay:fingerprint={report.fingerprint()} -->"] if issue else []
    footer = [
        f"<sub>patchbay {__version__}, {_iso(report.generated)}; days are counted to "
        f"{report.today.isoformat()}.</sub>",
        "",
    ]

    def assemble(kept_details: list[Verdict], rows: int, note: str | None) -> str:
        parts = [*head, "## Patches", "", *table[: 2 + rows], ""]
        if rows < len(report.rows):
            parts += [f"… and {len(report.rows) - rows} more rows (cut, see below).", ""]
        kept = [line for v in detail_order if v in kept_details for line in details[v]]
        if kept:
            parts += ["## Details", "", *kept]
        if note:
            parts += [f"> **Note:** {note}", ""]
        parts += [*footer, *tail]
        return "\n".join(parts).rstrip("\n") + "\n"

    kept_details = [v for v in detail_order if details[v]]
    text = assemble(kept_details, len(report.rows), None)
    if limit is None or len(text) <= limit:
        return text
    cut: list[str] = []
    while kept_details:
        dropped = kept_details.pop()
        cut.append(dropped.value)
        note = _cut_note(cut, 0)
        text = assemble(kept_details, len(report.rows), note)
        if len(text) <= limit:
            return text
    rows = len(report.rows)
    while rows > 0:
        rows -= 1
        text = assemble([], rows, _cut_note(cut, len(report.rows) - rows))
        if len(text) <= limit:
            return text
    return text[:limit]


def _cut_note(sections: list[str], rows: int) -> str:
    what = []
    if sections:
        what.append("the detail sections (" + ", ".join(sections) + ")")
    if rows:
        what.append(f"the last {rows} table rows")
    return (
        "to stay under GitHub's limit of 65,536 characters for an issue body, "
        + " and ".join(what)
        + " were cut; the JSON or HTML report has everything."
    )


# -- HTML ---------------------------------------------------------------------------------------


def _svg_chart(entries: Sequence[Mapping[str, Any]], width: int = 760, height: int = 260) -> str:
    """Stacked bars of patches per verdict, one bar per run (the last 52), as inline SVG."""
    entries = list(entries)[-52:]
    left, right, top, bottom = 40, 130, 16, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    totals = [sum(int((e.get("counts") or {}).get(v.value, 0)) for v in VERDICTS) for e in entries]
    peak = max([*totals, 1])
    step = plot_w / max(len(entries), 1)
    bar = max(2.0, min(40.0, step * 0.7))
    esc = html.escape
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        'aria-label="Carried patches by verdict over time">'
    ]
    ticks = sorted({0, round(peak / 2), peak})
    for value in ticks:
        y = top + plot_h * (1 - value / peak)
        out.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">'
            f"{value}</text>"
        )
    label_every = max(1, len(entries) // 8)
    for i, e in enumerate(entries):
        x = left + step * i + (step - bar) / 2
        y = top + plot_h
        when = str(e.get("date") or e.get("time") or "")
        for v in reversed(VERDICTS):  # attention at the bottom, remove on top
            n = int((e.get("counts") or {}).get(v.value, 0))
            if not n:
                continue
            h = plot_h * n / peak
            y -= h
            out.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{COLOURS[v.value]}"><title>{esc(when)}: {n} {v.value}</title></rect>'
            )
        if i % label_every == 0 or i == len(entries) - 1:
            out.append(
                f'<text x="{x + bar / 2:.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
                f'font-size="11">{esc(when[:10])}</text>'
            )
    for k, v in enumerate(VERDICTS):
        y = top + 10 + 18 * k
        out.append(
            f'<rect x="{width - right + 16}" y="{y - 9}" width="12" height="12" '
            f'fill="{COLOURS[v.value]}"/><text x="{width - right + 34}" y="{y + 1}" '
            f'font-size="12">{v.value}</text>'
        )
    out.append("</svg>")
    return "".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem;color:#222}
body{max-width:72rem}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f5f5}td.n{text-align:right}
.v{display:inline-block;padding:0 .45rem;border-radius:.6rem;color:#fff;font-size:.8rem}
.remove{background:#2e7d32}.bump{background:#1565c0}.keep{background:#8a8a8a}
.refresh{background:#6a1b9a}
.attention{background:#d84315}.reason{color:#444;font-size:.85rem}
.warn{color:#8a4b00;font-size:.85rem}code{font-size:.85rem}
"""


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page: inline CSS and SVG, no scripts, no links to
    other assets (it opens from a file, offline)."""
    esc = html.escape
    counts = report.counts
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Carried patches: upstream report, {esc(report.today.isoformat())}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Carried patches: upstream report</h1>",
        f"<p>As of {esc(report.today.isoformat())}: {len(report.rows)} carried patches in "
        f"{len(report.patchsets)} patchset(s): "
        + ", ".join(
            f'<span class="v {v.value}">{counts[v.value]} {v.value}</span>' for v in VERDICTS
        )
        + "</p>",
        "<h2>Carried patches by verdict over time</h2>",
        _svg_chart(report.history or [report.entry()]),
        "<h2>Changes</h2>",
    ]
    if report.previous is None:
        parts.append("<p>First report: there is no earlier run to compare with.</p>")
    else:
        when = esc(str(report.previous.get("date") or report.previous.get("time") or "?"))
        changes = report.changes()
        if changes:
            parts.append(f"<p>Since the last run ({when}):</p><ul>")
            parts += [f"<li>{_md_code_to_html(esc(c))}</li>" for c in changes]
            parts.append("</ul>")
        else:
            parts.append(f"<p>No change since the last run ({when}).</p>")
    if report.candidate is not None:
        n = len(report.droppable)
        parts.append("<h2>The candidate image</h2>")
        if n:
            parts.append(
                f"<p>These {n} patches can be dropped with this bump: "
                + ", ".join(f"<code>{esc(k)}</code>" for k in report.droppable)
                + ".</p>"
            )
        else:
            parts.append("<p>No patch can be dropped with this bump.</p>")
        if report.to_refresh:
            parts.append(
                "<p><code>patchbay rebase</code> would refresh (3-way merge) "
                + ", ".join(f"<code>{esc(k)}</code>" for k in report.to_refresh)
                + ".</p>"
            )
        for c in report.candidate:
            if c.problem:
                parts.append(f"<p>{esc(c.patchset)}: not checked: {esc(c.problem)}</p>")
    parts += [
        "<h2>Patches</h2>",
        "<table><thead><tr><th>patchset</th><th>patch</th><th>upstream</th><th>state</th>"
        "<th>verdict</th><th>carried (days)</th><th>since merged (days)</th>"
        + ("<th>candidate</th>" if report.candidate is not None else "")
        + "</tr></thead><tbody>",
    ]
    for row in report.rows:
        a = row.assessment
        refs = (
            "<br>".join(
                f'<a href="{esc(r.url)}">{esc(r.ref.short)}</a>' if r.url else esc(r.ref.short)
                for r in a.refs
            )
            or "—"
        )
        states = "<br>".join(esc(r.label) for r in a.refs) or "—"
        detail = f'<div class="reason">{esc(a.reason)}</div>'
        if a.needed_commits:
            detail += (
                '<div class="reason">needed: '
                + ", ".join(f"<code>{esc(c)}</code>" for c in a.needed_commits)
                + "</div>"
            )
        detail += "".join(f'<div class="warn">warning: {esc(w)}</div>' for w in a.warnings)
        parts.append(
            f"<tr><td>{esc(a.patchset)}</td><td><code>{esc(a.patch_id)}</code></td>"
            f"<td>{refs}</td><td>{states}</td>"
            f'<td><span class="v {a.verdict.value}">{a.verdict.value}</span>{detail}</td>'
            f'<td class="n">{_num(row.days_carried)}</td>'
            f'<td class="n">{_num(row.days_since_merged)}</td>'
            + (f"<td>{esc(row.candidate_label)}</td>" if report.candidate is not None else "")
            + "</tr>"
        )
    parts += [
        "</tbody></table>",
        f'<p class="reason">patchbay {esc(__version__)}, {esc(_iso(report.generated) or "")}'
        f"; days are counted to {esc(report.today.isoformat())}.</p>",
        "</body></html>",
        "",
    ]
    return "\n".join(parts)


def _md_code_to_html(text: str) -> str:
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def render(report: Report, output_format: str) -> str:
    """The report in ``markdown``, ``json`` or ``html``.

    Forge answers and URLs may carry a credential (a token echoed back, ``--api-url`` with a
    password): the text passes through :func:`patchbay.redaction.redact`.

    Raises:
        InputError: an unknown format.
    """
    if output_format == "markdown":
        return redact(render_markdown(report))
    if output_format == "json":
        return redact(dumps(report.to_json(), indent=2) + "\n")
    if output_format == "html":
        return redact(render_html(report))
    raise InputError(f"unknown report format {output_format!r} (markdown, json, html)")


# -- publishing ---------------------------------------------------------------------------------


@dataclass
class PublishResult:
    """What :func:`publish` did: ``created``, ``updated`` or ``unchanged`` issue ``number``."""

    action: str
    repository: str
    number: int
    url: str | None = None


_REPOSITORY = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def check_publish_target(repository: str, client: GitHubClient) -> None:
    """Check, before any work, that :func:`publish` can run.

    Raises:
        InputError: ``repository`` is not ``owner/name``, or the client has no token.
    """
    if not _REPOSITORY.match(repository):
        raise InputError(f"--publish {repository!r}: expected owner/name")
    if not client.authenticated:
        raise InputError("--publish needs a token in GITHUB_TOKEN or GH_TOKEN")


def publish(
    report: Report,
    client: GitHubClient,
    repository: str,
    *,
    title: str = DEFAULT_TITLE,
    limit: int = ISSUE_BODY_LIMIT,
    max_pages: int = 10,
    number: int | None = None,
) -> PublishResult:
    """Create or update the one tracking issue of ``repository``.

    The issue is ``number`` (the one the last run published to, from the history) when it is
    still open and still holds :data:`MARKER`; else the first open issue whose body holds the
    marker (``GET /repos/{o}/{r}/issues?state=open``, up to ``max_pages`` pages of 100). When its
    fingerprint equals the report's, nothing is sent; else its body is replaced (``PATCH``).
    Without such an issue, one is created (``POST``).

    Raises:
        InputError: ``repository`` is not ``owner/name``, or there is no token.
        GitHubError: the forge refused (e.g. the token may not write issues).
    """
    check_publish_target(repository, client)
    body = redact(render_markdown(report, issue=True, limit=limit))
    existing = _known_issue(client, repository, number) if number is not None else None
    if existing is None:
        existing = _find_issue(client, repository, max_pages)
    if existing is not None:
        number = int(existing["number"])
        m = _FINGERPRINT.search(existing.get("body") or "")
        if m and m.group(1) == report.fingerprint():
            return PublishResult("unchanged", repository, number, existing.get("html_url"))
        data = client.write("PATCH", f"/repos/{repository}/issues/{number}", {"body": body})
        url = (data or {}).get("html_url") or existing.get("html_url")
        return PublishResult("updated", repository, number, url)
    data = client.write("POST", f"/repos/{repository}/issues", {"title": title, "body": body})
    return PublishResult("created", repository, int(data["number"]), data.get("html_url"))


def _known_issue(client: GitHubClient, repository: str, number: int) -> dict[str, Any] | None:
    try:
        issue = client.get(f"/repos/{repository}/issues/{number}").data
    except GitHubError as exc:
        if exc.status in (404, 410):  # deleted or transferred: look for the marker instead
            return None
        raise
    if (
        isinstance(issue, dict)
        and issue.get("state") == "open"
        and "pull_request" not in issue
        and MARKER in (issue.get("body") or "")
    ):
        return dict(issue)
    return None


def last_published(history: Sequence[Mapping[str, Any]], repository: str) -> int | None:
    """The issue number the latest run published to in ``repository``, from the history."""
    for entry in reversed(history):
        done = entry.get("published")
        if isinstance(done, dict) and str(done.get("repository", "")).lower() == repository.lower():
            number = done.get("number")
            return number if isinstance(number, int) else None
    return None


def _find_issue(client: GitHubClient, repository: str, max_pages: int) -> dict[str, Any] | None:
    for page in range(1, max_pages + 1):
        issues = client.get(
            f"/repos/{repository}/issues", {"state": "open", "per_page": 100, "page": page}
        ).data
        for issue in issues:
            if "pull_request" not in issue and MARKER in (issue.get("body") or ""):
                return dict(issue)
        if len(issues) < 100:
            return None
    return None


def _iso(when: datetime | None) -> str | None:
    if when is None:
        return None
    return when.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
