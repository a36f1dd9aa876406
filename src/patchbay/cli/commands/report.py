"""``patchbay report``: every carried patch, its upstream state and verdict; optionally published
as one tracking issue."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from ...carry.provenance import check_record_path
from ...errors import InputError, RefusedError
from ...options import default_cache_dir
from ...outputfiles import write_output_file
from ...upstream.evidence import pinned_evidence
from ...upstream.queries import GitHubClient
from ...upstream.report import (
    Report,
    append_history,
    build_report,
    check_candidate,
    find_patchsets,
    read_history,
)
from ...upstream.report_formats import render
from ...upstream.tracking_issue import check_publish_target, last_published, publish
from ...upstream.verdicts import RefState
from .common import note, say

DEFAULT_HISTORY = Path(".patchbay") / "upstream-history.jsonl"
SUFFIXES = {".md": "markdown", ".markdown": "markdown", ".json": "json", ".html": "html"}


def run(
    patchsets: list[str],
    *,
    repo: Path = Path("."),
    output_format: str = "markdown",
    outputs: list[Path] | None = None,
    history: Path | None = None,
    no_history: bool = False,
    api_url: str | None = None,
    cache_dir: Path | None = None,
    publish_to: str | None = None,
    candidate_python: str | None = None,
    candidate_root: Path | None = None,
    python: str | None = None,
    root: Path | None = None,
    today: date | None = None,
    max_wait: float = 60.0,
    timeout: float = 20.0,
    workers: int = 8,
    graphql: bool | None = None,
) -> int:
    """Build the report, print or write it, append the run to the history, and publish.

    Args:
        patchsets: PATCHSET arguments; empty: every patchset under ``<repo>/patchsets``.
        repo: the repository (patchsets, ``waivers/``, the default history file).
        output_format: ``markdown``, ``json`` or ``html``.
        outputs: write the report to these files instead of stdout, in the format their
            suffix names (``.md``, ``.json``, ``.html``; any other: ``output_format``), so
            one run (one history line) gives every format.
        history: the JSON-lines history (default ``<repo>/.patchbay/upstream-history.jsonl``);
            ``no_history`` neither reads nor appends it.
        api_url: GitHub API base (default ``$PATCHBAY_GITHUB_API`` or api.github.com).
        cache_dir: cache folder (default ``~/.cache/patchbay``); the ETag cache is ``github/``.
        publish_to: ``owner/repo`` whose tracking issue is created or updated.
        candidate_python, candidate_root: a candidate image to check the patchsets against.
        python, root: the pinned image, to find patches whose content it already ships (one
            patchset only).
        today: the report's date (default today).
        max_wait: seconds the run may wait for rate limits in total.
        timeout: seconds per request.
        workers: concurrent requests.
        graphql: force GraphQL on or off (default: on with a token).

    Returns:
        0 (the verdicts are the report's content; ``patchbay audit --upstream`` fails CI).

    Raises:
        InputError: bad arguments, a patchset or history file that does not load (exit 2).
        RateLimitError: the forge's rate limit outlasts ``max_wait`` (exit 1).
        GitHubError: publishing failed (exit 1).
    """
    if candidate_python is not None and candidate_root is not None:
        raise InputError("give --candidate-python or --candidate-root, not both")
    if python is not None and root is not None:
        raise InputError("give --python or --root, not both")
    if workers < 1:
        raise InputError("--workers must be at least 1")
    client = GitHubClient.from_env(
        api_url,
        cache_dir=(cache_dir or default_cache_dir()) / "github",
        timeout=timeout,
        max_wait=max_wait,
        workers=workers,
        use_graphql=graphql,
    )
    for path in outputs or []:  # before asking the forge anything
        check_record_path(path, "-o/--output")
    if history is not None and history.is_dir():
        raise InputError("--history names a folder, not a file", file=history)
    if history is not None and history.exists() and not history.is_file():
        # a FIFO or a device would block or never end: only a regular file is a history
        raise InputError("--history names something that is not a regular file", file=history)
    try:
        if publish_to is not None:
            check_publish_target(publish_to, client)
        loaded = find_patchsets(repo, patchsets)
        pinned = None
        if python is not None or root is not None:
            if len(loaded) != 1:
                raise InputError(
                    "--python/--root describe one pinned image: name exactly one patchset"
                )
            pinned = {loaded[0].name: pinned_evidence(loaded[0], python=python, root=root)}
        candidate = None
        if candidate_python is not None or candidate_root is not None:
            candidate = check_candidate(loaded, python=candidate_python, root=candidate_root)
        history_path = None if no_history else (history or repo / DEFAULT_HISTORY)
        earlier = read_history(history_path) if history_path is not None else []
        report = build_report(
            loaded,
            client,
            today=today,
            waivers_dir=repo / "waivers",
            history=earlier,
            pinned=pinned,
            candidate=candidate,
        )
        _refuse_if_unanswered(report)
        if not outputs:
            print(render(report, output_format), end="")
        for path in outputs or []:
            text = render(report, SUFFIXES.get(path.suffix.lower(), output_format))
            try:
                write_output_file(path, text)
            except OSError as exc:
                raise InputError(f"cannot write the report: {exc}", file=path) from None
        counts = ", ".join(f"{n} {v}" for v, n in report.counts.items())
        stats = client.stats
        note(
            f"patchbay: {len(report.rows)} patches: {counts}; {stats.requests} requests to the "
            f"forge, {stats.not_modified} answered 304 from the cache",
            err=True,
        )
        entry = report.entry()
        if publish_to is not None:
            known = last_published(earlier, publish_to)
            result = publish(report, client, publish_to, number=known)
            entry["published"] = {"repository": result.repository, "number": result.number}
            what = {
                "created": "created",
                "updated": "updated",
                "unchanged": "is up to date; not edited",
            }[result.action]
            say(f"patchbay: tracking issue {result.repository}#{result.number} {what}", err=True)
        # after publishing: a run whose issue update failed is not the "last run" of the next one
        if history_path is not None:
            append_history(history_path, entry)
        return 0
    finally:
        client.close()


def _refuse_if_unanswered(report: Report) -> None:
    """A run in which the forge answered for no reference at all (an outage, a bad token, a
    wrong URL) is an error, not a report of "unknown" everywhere: nothing is written or
    published from it."""
    tracked = [ref for row in report.rows for ref in row.assessment.refs if ref.ref.kind != "other"]
    unanswered = [ref for ref in tracked if ref.state is RefState.UNKNOWN]
    if tracked and len(unanswered) == len(tracked):
        raise RefusedError(
            f"the forge answered for none of {len(tracked)} reference(s) "
            f"({unanswered[0].reason}); nothing was written or published"
        )
