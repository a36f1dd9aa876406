"""The ``patchbay`` command line: argument wiring only; the work is in the library.

Expected failures (:class:`~patchbay.errors.PatchbayError`) print one line (plus detail lines)
and exit 1 or 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
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
RecordOpt = Annotated[
    Path | None,
    typer.Option("--record", metavar="FILE", help="Write a provenance JSON record to FILE."),
]
LockOpt = Annotated[
    float,
    typer.Option(
        "--lock-timeout", metavar="SECONDS", help="Wait this long for another run's lock."
    ),
]


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
    lock_timeout: LockOpt = 0.0,
    record: RecordOpt = None,
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
        lock_timeout=lock_timeout,
        record=record,
    )


@app.command()
def status(
    patchset: PatchsetArg,
    python: PythonOpt = None,
    root: RootOpt = None,
    state_dir: StateOpt = None,
    as_json: JsonOpt = False,
    record: RecordOpt = None,
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
    )


@app.command()
def revert(
    patchset: PatchsetArg,
    python: PythonOpt = None,
    root: RootOpt = None,
    state_dir: StateOpt = None,
    lock_timeout: LockOpt = 0.0,
) -> None:
    """Undo what the ledger says patchbay applied, newest first."""
    from .commands import revert as cmd

    _run(
        cmd.run, patchset, python=python, root=root, state_dir=state_dir, lock_timeout=lock_timeout
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
    )


@app.command()
def check(
    patchset: PatchsetArg,
    python: PythonOpt = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Judge every patch against a candidate image (applies, upstream, partial, conflict)."""
    from .commands import check as cmd

    _run(cmd.run, patchset, python=python, root=root, as_json=as_json)


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


def _run(command: Callable[..., int], *args: Any, **kwargs: Any) -> NoReturn:
    """Run a command function; expected failures become one line and their exit code."""
    try:
        code = command(*args, **kwargs)
    except PatchbayError as exc:
        print(f"patchbay: error: {exc}", file=sys.stderr)
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
