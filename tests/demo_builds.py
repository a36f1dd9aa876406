"""Builds of the demo engine for the capture, refresh and rebase tests: the "new" version as
upstream would ship it, and a real git repository of a source tree."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new))


def new_demo_source(dest: Path) -> Path:
    """demo/engine as its next release: one fix of the demo patchset landed upstream
    (envs-asm-padding), one patched file refactored so that a hunk's context moved
    (mla.py: mla-large-cache merges cleanly), one change on the very lines a patch edits
    (scheduler.py: scheduler-padding conflicts); the rest untouched."""
    shutil.copytree(REPO / "demo" / "engine", dest)
    pkg = dest / "src" / "demo_engine"
    _edit(dest / "pyproject.toml", 'version = "0.4.1+g1a2b3c4"', 'version = "0.5.0"')
    _edit(
        pkg / "envs.py",
        'KV_CACHE_DTYPE = os.environ.get("DEMO_KV_CACHE_DTYPE", "auto")\n',
        'KV_CACHE_DTYPE = os.environ.get("DEMO_KV_CACHE_DTYPE", "auto")\n'
        'ASM_PADDING = os.environ.get("DEMO_ASM_PADDING", "none")\n',
    )
    _edit(
        pkg / "attention" / "mla.py",
        "WITHIN_2GB = True\n\n\ndef kv_offsets(start, end, stride_kv, stride_pe):\n"
        '    """Byte offsets of the kv rows in [start, end)."""\n',
        "WITHIN_2GB = True\nKV_ALIGN = 16\n\n\ndef aligned(n):\n"
        '    """n rounded up to KV_ALIGN."""\n    return -(-n // KV_ALIGN) * KV_ALIGN\n\n\n'
        "def kv_offsets(start, end, stride_kv, stride_pe):\n"
        '    """Byte offsets of the kv rows in the half-open range [start, end)."""\n',
    )
    _edit(
        pkg / "scheduler.py",
        "    limit = envs.MAX_BATCH\n    return requests[:limit]\n",
        "    limit = min(envs.MAX_BATCH, 512)\n    return list(requests)[:limit]\n",
    )
    return dest


def git_repository(source: Path, dest: Path) -> tuple[Path, str]:
    """``source`` committed into a new git repository at ``dest``; returns it and the commit."""
    shutil.copytree(source, dest)
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
