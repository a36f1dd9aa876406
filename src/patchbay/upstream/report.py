"""The upstream report's data: one row per carried patch, the runs' history, what changed.

:func:`build_report` assesses patchsets (:mod:`patchbay.upstream.status`), adds how long each
patch has been carried (its first appearance in the git history of its patchset file, read with
GitPython) and how long ago upstream merged it, compares with the last run in a JSON-lines
history file (one line per run), and, given a candidate image, lists the patches
:func:`patchbay.apply.check.check_patchset` says the bump makes unnecessary. The formats it is
rendered in are in :mod:`.report_formats`; the tracking issue is :mod:`.tracking_issue`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from .. import __version__
from ..diff.hunkview import counts_text
from ..errors import InputError, PatchbayError
from ..patchset.inputfiles import PATCHSET_FILENAMES
from ..patchset.loading import load_patchset
from ..patchset.model import Patchset
from ..printable import dumps
from ..redaction import redact
from .github import RequestStats
from .queries import GitHubClient
from .status import assess
from .verdicts import VERDICTS, Assessment, ContentEvidence, Verdict, WaiverReview

_NO_EVIDENCE = ContentEvidence("candidate", "the candidate", "")
HISTORY_VERSION = 1
_ORDER = {
    Verdict.ATTENTION: 0,
    Verdict.REMOVE: 1,
    Verdict.REFRESH: 2,
    Verdict.BUMP: 3,
    Verdict.KEEP: 4,
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
    """Everything one run found; rendered by :func:`.report_formats.render`.

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
            "time": iso_time(self.generated),
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
            "generated": iso_time(self.generated),
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


def iso_time(when: datetime | None) -> str | None:
    """``when`` in UTC as ISO 8601 to the second, with ``Z`` (None stays None)."""
    if when is None:
        return None
    return when.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
