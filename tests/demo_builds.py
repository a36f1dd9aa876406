"""Builds of the demo engine for the capture, refresh and rebase tests: the "new" version as
upstream would ship it, and a real git repository of a source tree."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def new_demo_source(dest: Path) -> Path:
    """A copy of demo/engine-next, the demo engine's next release: one fix of the demo
    patchset landed upstream (envs-asm-padding), one patched file refactored so that a hunk's
    context moved (mla.py: mla-large-cache merges cleanly), one change on the very lines a
    patch edits (scheduler.py: scheduler-padding conflicts); the rest untouched."""
    ignore = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    shutil.copytree(REPO / "demo" / "engine-next", dest, ignore=ignore)
    return dest


def git_repository(source: Path, dest: Path) -> tuple[Path, str]:
    """``source`` committed into a new git repository at ``dest``; returns it and the commit."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "demo",
        "GIT_AUTHOR_EMAIL": "demo@example.invalid",
        "GIT_COMMITTER_NAME": "demo",
        "GIT_COMMITTER_EMAIL": "demo@example.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "demo engine"]):
        subprocess.run(["git", *args], cwd=dest, env=env, check=True)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=dest, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    return dest, commit
