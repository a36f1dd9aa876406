"""What every command needs: the patchset argument, the environment, the console."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from ..model import Patchset, load_patchset
from ..redaction import RedactedStream, redact
from ..targets import Environment, resolve_environment

# soft_wrap: one message is one line, whatever the width (paths stay greppable in CI logs);
# whatever a command prints passes through the redaction (a URL with a password, a token)
console = Console(file=RedactedStream("stdout"), highlight=False, soft_wrap=True)
err_console = Console(file=RedactedStream("stderr"), highlight=False, soft_wrap=True)


def patchset_path(arg: str) -> Path:
    """A PATCHSET argument: a folder holding ``patchset.yaml``, a YAML file, or a bare name
    under ``./patchsets`` (tried when ``arg`` itself is no patchset)."""
    path = Path(arg)
    is_patchset = path.is_file() or (path / "patchset.yaml").is_file()
    named = Path("patchsets") / arg
    if not is_patchset and "/" not in arg and (named / "patchset.yaml").is_file():
        return named
    return path


def load(arg: str) -> Patchset:
    """Load the patchset named by a PATCHSET argument (see :func:`patchset_path`)."""
    return load_patchset(patchset_path(arg))


def environment(
    patchset: Patchset,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    extra_distributions: list[str] | None = None,
    *,
    writable: bool = False,
    probe_timeout: float | None = None,
) -> Environment:
    """Resolve the engine environment from the common options (``writable``: the command
    writes the state folder; see :func:`~patchbay.targets.resolve_environment`)."""
    return resolve_environment(
        patchset,
        python=python,
        root=root,
        state_dir=state_dir,
        extra_distributions=extra_distributions,
        writable=writable,
        probe_timeout=probe_timeout,
    )


def print_json(data: Any) -> None:
    """JSON to stdout, for machines."""
    sys.stdout.write(redact(json.dumps(data, indent=2)) + "\n")
