"""The ``patchbay`` command line: argument wiring only; the work is in the library.

Expected failures (:class:`~patchbay.errors.PatchbayError`) print one line (plus detail lines),
with secrets redacted, and exit 1 or 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from . import __version__
from .errors import PatchbayError

app = typer.Typer(
    name="patchbay",
    help="Declarative, idempotent, all-or-nothing patches on a pinned inference-engine image.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PatchsetArg = Annotated[
    str,
    typer.Argument(
        metavar="PATCHSET", help="Patchset folder or YAML file (or a name under ./patchsets)."
    ),
]
PythonOpt = Annotated[
    str | None,
    typer.Option("--python", metavar="PATH", help="Engine interpreter (default: python3 on PATH)."),
]
RootOpt = Annotated[
    Path | None,
    typer.Option(
        "--root",
        metavar="DIR",
        help="Unpacked tree standing in for site-packages, instead of --python.",
    ),
]
StateOpt = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        metavar="DIR",
        help="Ledger folder (default: <sys.prefix>/share/patchbay, or <root>/.patchbay).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
ProbeTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--probe-timeout",
        metavar="SECONDS",
        envvar="PATCHBAY_PROBE_TIMEOUT",
        min=0.1,
        help="Longest wait for the engine interpreter's probe (default: 120, and 10 for one "
        "that prints nothing).",
    ),
]
RecordOpt = Annotated[
    Path | None,
    typer.Option("--record", metavar="FILE", help="Write a provenance JSON record to FILE."),
]
LockOpt = Annotated[
    float,
    typer.Option(
        "--lock-timeout", metavar="SECONDS", min=0, help="Wait this long for another run's lock."
    ),
]
OfflineOpt = Annotated[
    bool, typer.Option("--offline", help="Use only the bundle and the cache; never the network.")
]
BundleOpt = Annotated[
    Path | None,
    typer.Option("--bundle", metavar="DIR", help="A folder made by `patchbay bundle`."),
]
CacheOpt = Annotated[
    Path | None,
    typer.Option("--cache-dir", metavar="DIR", help="Download cache (default ~/.cache/patchbay)."),
]
MirrorOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--mirror",
        metavar="FROM=TO",
        help="Fetch URLs starting with FROM from TO instead (repeatable).",
    ),
]


def _options(
    offline: bool = False,
    bundle: Path | None = None,
    cache_dir: Path | None = None,
    mirrors: list[str] | None = None,
) -> Any:
    from .errors import InputError
    from .options import RunOptions

    pairs = []
    for item in mirrors or []:
        prefix, sep, replacement = item.partition("=")
        if not sep or not prefix or not replacement:
            raise InputError(f"--mirror {item!r}: expected FROM=TO")
        pairs.append((prefix, replacement))
    options = RunOptions(offline=offline, bundle=bundle, mirrors=pairs)
    if cache_dir is not None:
        options.cache_dir = cache_dir
    return options


@app.command()
def apply(
    patchset: PatchsetArg,
    python: PythonOpt = None,
    root: RootOpt = None,
    state_dir: StateOpt = None,
    upgrade: Annotated[
        bool,
        typer.Option(
            "--upgrade",
            help="Revert recorded versions of edited or removed patches, then apply, in one step.",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the unified diff apply would write; write nothing."),
    ] = False,
    lock_timeout: LockOpt = 0.0,
    record: RecordOpt = None,
    offline: OfflineOpt = False,
    bundle: BundleOpt = None,
    cache_dir: CacheOpt = None,
    mirror: MirrorOpt = None,
    probe_timeout: ProbeTimeoutOpt = None,
) -> None:
    """Apply the pending patches; all or nothing; a re-run is a no-op."""
    from .commands import apply as cmd

    _run(
        cmd.run,
        patchset,
        python=python,
        root=root,
        state_dir=state_dir,
        upgrade=upgrade,
        dry_run=dry_run,
        lock_timeout=lock_timeout,
        record=record,
        options=lambda: _options(offline, bundle, cache_dir, mirror),
        probe_timeout=probe_timeout,
    )


@app.command()
def status(
    patchset: PatchsetArg,
    python: PythonOpt = None,
    root: RootOpt = None,
    state_dir: StateOpt = None,
    as_json: JsonOpt = False,
    record: RecordOpt = None,
    probe_timeout: ProbeTimeoutOpt = None,
) -> None:
    """Show every patch's state (pending, applied, redundant, outdated, partial, conflict)."""
    from .commands import status as cmd

    _run(
        cmd.run,
        patchset,
        python=python,
        root=root,
        state_dir=state_dir,
        as_json=as_json,
        record=record,
        probe_timeout=probe_timeout,
    )


@app.command()
def revert(
    patchset: PatchsetArg,
    patch_ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[ID]...",
            help="Revert these patches and those applied after them (default: all).",
        ),
    ] = None,
    python: PythonOpt = None,
    root: RootOpt = None,
    state_dir: StateOpt = None,
    lock_timeout: LockOpt = 0.0,
    offline: OfflineOpt = False,
    bundle: BundleOpt = None,
    probe_timeout: ProbeTimeoutOpt = None,
) -> None:
    """Undo what the ledger says patchbay applied, newest first."""
    from .commands import revert as cmd

    _run(
        cmd.run,
        patchset,
        patch_ids=patch_ids or None,
        python=python,
        root=root,
        state_dir=state_dir,
        lock_timeout=lock_timeout,
        options=lambda: _options(offline, bundle),
        probe_timeout=probe_timeout,
    )


@app.command()
def vendor(
    patchset: PatchsetArg,
    api_url: Annotated[
        str | None,
        typer.Option(
            "--api-url",
            metavar="URL",
            envvar="PATCHBAY_GITHUB_API",
            help="GitHub API base (default https://api.github.com).",
        ),
    ] = None,
    cache_dir: CacheOpt = None,
    mirror: MirrorOpt = None,
    update: Annotated[
        bool,
        typer.Option("--update", help="Accept upstream content that differs from the lock."),
    ] = False,
) -> None:
    """Download remote diffs and unhashed artifacts, and pin them in patchbay.lock."""
    from .commands import vendor as cmd

    _run(
        cmd.run,
        patchset,
        api_url=api_url,
        options=lambda: _options(False, None, cache_dir, mirror),
        update=update,
    )


@app.command("bundle")
def bundle_command(
    patchset: PatchsetArg,
    out: Annotated[Path, typer.Argument(metavar="OUT", help="New folder for the bundle.")],
    python: PythonOpt = None,
    cache_dir: CacheOpt = None,
    mirror: MirrorOpt = None,
    without_patchbay: Annotated[
        bool,
        typer.Option(
            "--without-patchbay",
            help="Do not carry patchbay itself (its wheels and install-patchbay.sh).",
        ),
    ] = False,
) -> None:
    """Gather everything apply needs (wheels, artifacts, vendored diffs, patchbay itself)
    for an offline run."""
    from .commands import bundle as cmd

    _run(
        cmd.run,
        patchset,
        out=out,
        python=python,
        options=lambda: _options(False, None, cache_dir, mirror),
        with_patchbay=not without_patchbay,
    )


@app.command()
def verify(
    patchset: PatchsetArg,
    python: PythonOpt = None,
    root: RootOpt = None,
    state_dir: StateOpt = None,
    as_json: JsonOpt = False,
    installed: Annotated[
        bool,
        typer.Option(
            "--installed",
            help="Check every installed file of the engine's distributions against its RECORD; "
            "differences must be declared patches.",
        ),
    ] = False,
    dist: Annotated[
        list[str] | None,
        typer.Option("--dist", metavar="NAME", help="Distribution to check (default: components)."),
    ] = None,
    record: RecordOpt = None,
    probe_timeout: ProbeTimeoutOpt = None,
) -> None:
    """Check every patch is present and every touched Python file compiles."""
    from .commands import verify as cmd

    _run(
        cmd.run,
        patchset,
        python=python,
        root=root,
        state_dir=state_dir,
        as_json=as_json,
        installed=installed,
        dists=dist,
        record=record,
        probe_timeout=probe_timeout,
    )


@app.command()
def check(
    patchset: PatchsetArg,
    python: PythonOpt = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
    probe_timeout: ProbeTimeoutOpt = None,
) -> None:
    """Judge every patch against a candidate image (applies, upstream, partial, conflict)."""
    from .commands import check as cmd

    _run(cmd.run, patchset, python=python, root=root, as_json=as_json, probe_timeout=probe_timeout)


@app.command()
def validate(patchset: PatchsetArg) -> None:
    """Check a patchset's schema, consistency and patch files, offline."""
    from .commands import validate as cmd

    _run(cmd.run, patchset)


@app.command()
def schema() -> None:
    """Print the JSON Schema of patchset.yaml."""
    from .commands import schema as cmd

    _run(
        cmd.run,
    )


class AuditFormat(str, Enum):
    table = "table"
    json = "json"
    github = "github"
    sarif = "sarif"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    note = "note"


@app.command()
def audit(
    root: Annotated[
        Path, typer.Argument(metavar="[ROOT]", help="Repository to audit (default: .).")
    ] = Path("."),
    output_format: Annotated[
        AuditFormat,
        typer.Option("--format", "-f", help="table (people), json, github (annotations), sarif."),
    ] = AuditFormat.table,
    fail_on: Annotated[
        FailOn | None,
        typer.Option(
            "--fail-on", help="Lowest severity that makes the run exit 1 (default: config, error)."
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", metavar="FILE", help="patchbay.toml or pyproject.toml (default: in ROOT)."
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write the report to FILE."),
    ] = None,
    today: Annotated[
        datetime | None,
        typer.Option("--today", formats=["%Y-%m-%d"], help="Judge review dates as of this date."),
    ] = None,
    upstream: Annotated[
        bool,
        typer.Option(
            "--upstream",
            help="Ask GitHub about every patch's upstream fix: PB501 when it is in the pin.",
        ),
    ] = False,
    api_url: Annotated[
        str | None,
        typer.Option(
            "--api-url",
            metavar="URL",
            envvar="PATCHBAY_GITHUB_API",
            help="GitHub API base for --upstream (default https://api.github.com).",
        ),
    ] = None,
    image_python: Annotated[
        str | None,
        typer.Option(
            "--python",
            metavar="PATH",
            help="With --upstream: the pinned image's interpreter; its files are content "
            "evidence for PB501, as in `patchbay report --python`.",
        ),
    ] = None,
    image_root: Annotated[
        Path | None,
        typer.Option(
            "--image-root",
            metavar="DIR",
            help="With --upstream: the pinned image as an unpacked folder (as --root elsewhere).",
        ),
    ] = None,
    changed_since: Annotated[
        str | None,
        typer.Option(
            "--changed-since",
            metavar="REF",
            help="Audit the change since the merge base of REF and HEAD (a pull request): "
            "script findings of its files, and a waiver of its own for the patching it adds.",
        ),
    ] = None,
    pull_request: Annotated[
        int | None,
        typer.Option(
            "--pr",
            metavar="N",
            min=1,
            help="The pull request's number, for change-waiver (default: from GitHub Actions).",
        ),
    ] = None,
) -> None:
    """Audit patchsets, waivers and scripts (undeclared engine patching); exit 1 on findings."""
    from .commands import audit as cmd

    _run(
        cmd.run,
        root,
        output_format=output_format.value,
        fail_on=fail_on.value if fail_on else None,
        config=config,
        output=output,
        today=today.date() if today else None,
        upstream=upstream,
        image_python=image_python,
        image_root=image_root,
        api_url=api_url,
        changed_since=changed_since,
        pull_request=pull_request,
    )


waiver_app = typer.Typer(
    help="Waiver documents: why a patch may be carried, and until when.", no_args_is_help=True
)
app.add_typer(waiver_app, name="waiver")


@waiver_app.command("new")
def waiver_new(
    patchset: PatchsetArg,
    patch_ids: Annotated[
        list[str] | None,
        typer.Argument(metavar="[PATCH_ID]...", help="Patches to cover (default: all)."),
    ] = None,
    waiver_id: Annotated[
        str | None,
        typer.Option("--id", help="Waiver id (default: the patch id, or the patchset name)."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Where to write (default: waivers/<id>.md)."
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a waiver prefilled from the patchset, with <TODO: ...> blanks to fill."""
    from .commands import waiver as cmd

    _run(cmd.new, patchset, patch_ids or [], waiver_id=waiver_id, output=output, force=force)


WheelOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--wheel",
        metavar="FILE",
        help="A wheel of the installed version: pristine copies of edited files (repeatable).",
    ),
]
FromGitOpt = Annotated[
    str | None,
    typer.Option(
        "--from-git",
        metavar="DIR|URL",
        help="The component's repository, read at the commit `components` pins.",
    ),
]


@app.command()
def capture(
    patchset: PatchsetArg,
    patch_id: Annotated[str, typer.Argument(metavar="ID", help="Id of the new patch.")],
    files: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[FILE]...",
            help="Edited files (default: every file that differs from RECORD, undeclared).",
        ),
    ] = None,
    python: PythonOpt = None,
    state_dir: StateOpt = None,
    target: Annotated[
        str | None,
        typer.Option("--target", metavar="NAME", help="Target of the patch (default: deepest)."),
    ] = None,
    wheel: WheelOpt = None,
    from_git: FromGitOpt = None,
    description: Annotated[
        str | None, typer.Option("--description", metavar="TEXT", help="What the patch does.")
    ] = None,
    upstream: Annotated[
        list[str] | None,
        typer.Option("--upstream", metavar="REF", help="Upstream PR/issue/commit (repeatable)."),
    ] = None,
) -> None:
    """Write edits made to the installed engine as a new diff patch of the patchset."""
    from .commands import capture as cmd

    _run(
        cmd.run,
        patchset,
        patch_id,
        files or [],
        python=python,
        state_dir=state_dir,
        target=target,
        wheels=wheel or [],
        from_git=from_git,
        description=description,
        upstream=upstream or [],
    )


PatchIdArg = Annotated[str, typer.Argument(metavar="ID", help="The patch's id.")]


@app.command()
def edit(
    patchset: PatchsetArg,
    patch_id: PatchIdArg,
    python: PythonOpt = None,
    root: RootOpt = None,
    state_dir: StateOpt = None,
) -> None:
    """Bring the tree to the state just after patch ID (later patches taken off) to edit it."""
    from .commands import refresh as cmd

    _run(cmd.edit, patchset, patch_id, python=python, root=root, state_dir=state_dir)


@app.command()
def refresh(
    patchset: PatchsetArg,
    patch_id: PatchIdArg,
    files: Annotated[
        list[str] | None,
        typer.Argument(metavar="[FILE]...", help="More files to take into the patch."),
    ] = None,
    python: PythonOpt = None,
    root: RootOpt = None,
    state_dir: StateOpt = None,
    wheel: WheelOpt = None,
    from_git: FromGitOpt = None,
) -> None:
    """Rewrite patch ID's diff from the tree, keeping its metadata; the ledger follows."""
    from .commands import refresh as cmd

    _run(
        cmd.refresh,
        patchset,
        patch_id,
        files or [],
        python=python,
        root=root,
        state_dir=state_dir,
        wheels=wheel or [],
        from_git=from_git,
    )


@app.command()
def rebase(
    patchset: PatchsetArg,
    python: PythonOpt = None,
    root: RootOpt = None,
    state_dir: StateOpt = None,
    onto_python: Annotated[
        str | None,
        typer.Option("--onto-python", metavar="PATH", help="The candidate image's interpreter."),
    ] = None,
    onto_root: Annotated[
        Path | None,
        typer.Option("--onto-root", metavar="DIR", help="The candidate image as an unpacked tree."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="DIR", help="New folder for the rebased patchset."),
    ] = None,
    write: Annotated[
        bool, typer.Option("--write", help="Rewrite the patchset itself instead of --out.")
    ] = False,
    conflicts: Annotated[
        Path | None,
        typer.Option(
            "--conflicts",
            metavar="DIR",
            help="Side folder for merged files with conflict markers (default: OUT/conflicts, "
            "or rebase-conflicts/NAME with --write).",
        ),
    ] = None,
    wheel: WheelOpt = None,
    from_git: FromGitOpt = None,
    resolved: Annotated[
        Path | None,
        typer.Option(
            "--resolved",
            metavar="DIR",
            help="A conflicts folder of an earlier run, merged by hand: take its files.",
        ),
    ] = None,
) -> None:
    """Carry the patchset onto a new image: drop what is upstream, 3-way merge conflicts."""
    from .commands import rebase as cmd

    _run(
        cmd.run,
        patchset,
        python=python,
        root=root,
        state_dir=state_dir,
        onto_python=onto_python,
        onto_root=onto_root,
        out=out,
        write=write,
        conflicts=conflicts,
        wheels=wheel or [],
        from_git=from_git,
        resolved=resolved,
    )


@app.command()
def version() -> None:
    """Print patchbay's version."""
    print(__version__)


def _version_flag(value: bool) -> None:
    if value:
        print(__version__)
        raise typer.Exit(0)


@app.callback()
def _main(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_flag, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Declarative, idempotent, all-or-nothing patches on a pinned inference-engine image."""
    return 0


class ReportFormat(str, Enum):
    markdown = "markdown"
    json = "json"
    html = "html"


@app.command()
def report(
    patchsets: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[PATCHSET]...", help="Patchsets to cover (default: all under patchsets/)."
        ),
    ] = None,
    repo: Annotated[
        Path,
        typer.Option(
            "--repo", metavar="DIR", help="Repository with patchsets/ and waivers/ (default: .)."
        ),
    ] = Path("."),
    output_format: Annotated[
        ReportFormat,
        typer.Option("--format", "-f", help="markdown (issue, chat), json, html (one page)."),
    ] = ReportFormat.markdown,
    output: Annotated[
        list[Path] | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the report to FILE (repeatable; .md, .json, .html pick the format).",
        ),
    ] = None,
    history: Annotated[
        Path | None,
        typer.Option(
            "--history",
            metavar="FILE",
            help="JSON-lines history of runs (default: REPO/.patchbay/upstream-history.jsonl).",
        ),
    ] = None,
    no_history: Annotated[
        bool, typer.Option("--no-history", help="Neither read nor append the history.")
    ] = False,
    api_url: Annotated[
        str | None,
        typer.Option(
            "--api-url",
            metavar="URL",
            envvar="PATCHBAY_GITHUB_API",
            help="GitHub API base (default https://api.github.com).",
        ),
    ] = None,
    cache_dir: CacheOpt = None,
    publish: Annotated[
        str | None,
        typer.Option(
            "--publish",
            metavar="OWNER/REPO",
            help="Create or update the tracking issue there (needs GITHUB_TOKEN or GH_TOKEN).",
        ),
    ] = None,
    candidate_python: Annotated[
        str | None,
        typer.Option(
            "--candidate-python",
            metavar="PATH",
            help="A candidate image's interpreter: list the patches the bump drops.",
        ),
    ] = None,
    candidate_root: Annotated[
        Path | None,
        typer.Option(
            "--candidate-root", metavar="DIR", help="A candidate image as an unpacked tree."
        ),
    ] = None,
    python: Annotated[
        str | None,
        typer.Option(
            "--python",
            metavar="PATH",
            help="The pinned image's interpreter: a patch it already ships is `remove`.",
        ),
    ] = None,
    root: RootOpt = None,
    today: Annotated[
        datetime | None,
        typer.Option("--today", formats=["%Y-%m-%d"], help="Count days and judge waivers as of."),
    ] = None,
    max_wait: Annotated[
        float,
        typer.Option(
            "--max-wait", metavar="SECONDS", min=0, help="Longest total wait for rate limits."
        ),
    ] = 60.0,
    timeout: Annotated[
        float,
        typer.Option("--timeout", metavar="SECONDS", min=0.1, help="Seconds per request."),
    ] = 20.0,
    workers: Annotated[
        int, typer.Option("--workers", metavar="N", min=1, help="Concurrent requests.")
    ] = 8,
    graphql: Annotated[
        bool | None,
        typer.Option(
            "--graphql/--no-graphql", help="Batch look-ups with GraphQL (default: with a token)."
        ),
    ] = None,
) -> None:
    """Upstream state and verdict (remove, bump, keep, attention) of every carried patch."""
    from .commands import report as cmd

    _run(
        cmd.run,
        patchsets or [],
        repo=repo,
        output_format=output_format.value,
        outputs=output,
        history=history,
        no_history=no_history,
        api_url=api_url,
        cache_dir=cache_dir,
        publish_to=publish,
        candidate_python=candidate_python,
        candidate_root=candidate_root,
        python=python,
        root=root,
        today=today.date() if today else None,
        max_wait=max_wait,
        timeout=timeout,
        workers=workers,
        graphql=graphql,
    )


@app.command("import")
def import_command(
    script: Annotated[
        Path, typer.Argument(metavar="SCRIPT", help="The shell patch script to convert.")
    ],
    out: Annotated[
        Path,
        typer.Option("--out", metavar="DIR", help="The new patchset folder, e.g. patchsets/NAME."),
    ],
    python: Annotated[
        str | None,
        typer.Option(
            "--python", metavar="PATH", help="Also show `status` of the result in this engine."
        ),
    ] = None,
    project: Annotated[
        list[str] | None,
        typer.Option(
            "--project",
            metavar="NAME=OWNER/REPO",
            help="Read `NAME #N` in comments as OWNER/REPO#N (repeatable; vllm, aiter, sglang, "
            "triton and flashinfer are known).",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Write into a folder that is not empty (replaces patches/)."),
    ] = False,
) -> None:
    """Turn a shell patch script into a draft patchset; exit 1 when part of it was not
    converted (IMPORT-NOTES.md lists it with the script's lines)."""
    from .commands import importer as cmd

    _run(cmd.run, script, out=out, python=python, projects=project or [], force=force)


def _run(command: Callable[..., int], *args: Any, **kwargs: Any) -> NoReturn:
    """Run a command function; expected failures become one line and their exit code."""
    try:
        code = command(*args, **kwargs)
    except PatchbayError as exc:
        from .redaction import redact

        print(redact(f"patchbay: error: {exc}"), file=sys.stderr)
        code = exc.exit_code
    except KeyboardInterrupt:
        print("patchbay: interrupted; every change of this run was rolled back", file=sys.stderr)
        code = 130
    raise typer.Exit(code)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="patchbay")


if __name__ == "__main__":
    main()
