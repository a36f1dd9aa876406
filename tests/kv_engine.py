"""A small engine, ``acme/kv``, as a real git repository whose history has the shapes real
upstream history has (issue 12), and a patchset carried on top of its release 2.0.

``main``, oldest first::

    B0    base                                        2026-07-01
    S31   Widen KV strides to int64 (#31)    squash   2026-07-02  the int64 block in decode.py
    R32   Move the early return up (#32)     refactor 2026-07-03  moves S31's trailing context
    P     Release 2.0                        <- the pinned image  2026-07-04
    S33   Attention: clamp heads (#33)       squash   2026-07-05  hunk 1 of attn-three only
    R34   Attention: accept no window (#34)           2026-07-06  hunk 3's context changes
    S35   Cap batch size (#35)               squash   2026-07-07
    T36   Revert "Cap batch size (#35)"               2026-07-08  ("This reverts commit S35")
    S37   Late fix (#37)                     squash   2026-07-09
    H     Release 2.1                        <- the candidate     2026-07-10

PR #38 is open. The branch ``attn`` (off B0) holds the whole three-hunk attention fix that #33
only partly landed. The patchset ``kv`` carries, against 2.0:

=============== ======================================= ========== ========== ==========
patch           what                                    pinned     candidate  report
=============== ======================================= ========== ========== ==========
int64-strides   #31, merged, context moved by #32       redundant  upstream   remove
attn-three      #33: 1 hunk landed, 1 pending, 1 broke  pending    conflict   refresh
sched-cap       #35, merged then reverted               pending    applies    attention
late            #37, merged after the pin               pending    upstream   bump
open-work       #38, still open                         pending    applies    keep
=============== ======================================= ========== ========== ==========
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

from github_standin import GitHubStandIn, Pull, git

DECODE = """import math


def plan_splits(seq_lens, block_n, within_2gb, stride_kv, stride_pe):
    num_blocks = math.ceil(max(seq_lens) / block_n)
    start = 0

    # early return for an empty batch
    if not seq_lens:
        return []

    return [(start + i * block_n, stride_kv, stride_pe) for i in range(num_blocks)]
"""
INT64 = """    # >2GB KV cache: widen strides to int64 so offsets don't overflow int32.
    if not within_2gb:
        stride_kv = int(stride_kv)
        stride_pe = int(stride_pe)

"""
EARLY = """    # early return for an empty batch
    if not seq_lens:
        return []

"""
ATTN = '''"""Attention helpers."""


def heads(n):
    """Heads per group."""
    n = int(n)
    if n < 0:
        raise ValueError("negative heads")
    return n


def scale(d):
    """Softmax scale."""
    d = float(d)
    if d <= 0:
        raise ValueError("non-positive head size")
    return 1.0 / d


def window(w):
    """Sliding window, in tokens."""
    w = int(w)
    if w < 0:
        raise ValueError("negative window")
    return w
'''
HEADS = ("    return n\n", "    return max(1, n)\n")
SCALE = ("    return 1.0 / d\n", "    return d**-0.5\n")
WINDOW = ("    return w\n", "    return min(w, 4096)\n")
SCHED = '''def cap(batch):
    """Largest batch the scheduler takes."""
    limit = 256
    return min(batch, limit)
'''
PYPROJECT = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "kvengine"
version = "2.0"

[tool.setuptools]
packages = ["kvengine"]
"""


@dataclass
class KvEngine:
    """The repository, its commits by name, and the two images unpacked as folders."""

    repo: Path
    ids: dict[str, str]
    pinned: Path
    candidate: Path
    patchset: Path


def _commit(root: Path, ids: dict[str, str], name: str, message: str, when: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message, date=when)
    ids[name] = git(root, "rev-parse", "HEAD")


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    text = (root / rel).read_text()
    assert text.count(old) == 1, (rel, old)
    (root / rel).write_text(text.replace(old, new))


def _unpack(repo: Path, commit: str, dest: Path) -> Path:
    data = git_bytes(repo, "archive", "--format=tar", commit)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def git_bytes(cwd: Path, *args: str) -> bytes:
    import os
    import subprocess

    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=True).stdout


def build_kv_engine(path: Path) -> KvEngine:
    """Build the repository, unpack 2.0 and 2.1, and write the patchset (see the module
    docstring); the patch files are what git writes (``git diff``)."""
    root = path / "kv"
    root.mkdir(parents=True)
    ids: dict[str, str] = {}
    git(root, "init", "-q", "-b", "main")
    _write(root, "pyproject.toml", PYPROJECT)
    _write(root, "kvengine/__init__.py", "")
    _write(root, "kvengine/decode.py", DECODE)
    _write(root, "kvengine/attn.py", ATTN)
    _write(root, "kvengine/sched.py", SCHED)
    _write(root, "kvengine/late.py", "LATE = 1\n")
    _write(root, "kvengine/open.py", "OPEN = 1\n")
    _commit(root, ids, "B0", "base", "2026-07-01T10:00:00Z")
    git(root, "checkout", "-q", "-b", "attn")
    for old, new in (HEADS, SCALE, WINDOW):
        _edit(root, "kvengine/attn.py", old, new)
    _commit(root, ids, "A3", "Attention fixes", "2026-07-01T12:00:00Z")
    git(root, "checkout", "-q", "main")
    _edit(root, "kvengine/decode.py", "    start = 0\n\n", "    start = 0\n\n" + INT64)
    _commit(root, ids, "S31", "Widen KV strides to int64 (#31)", "2026-07-02T10:00:00Z")
    text = (root / "kvengine/decode.py").read_text().replace(EARLY, "")
    (root / "kvengine/decode.py").write_text(text.replace(INT64, EARLY + INT64))
    _commit(root, ids, "R32", "Move the early return up (#32)", "2026-07-03T10:00:00Z")
    _write(root, "VERSION", "2.0\n")
    _commit(root, ids, "P", "Release 2.0", "2026-07-04T10:00:00Z")
    _edit(root, "kvengine/attn.py", *HEADS)
    _commit(root, ids, "S33", "Attention: clamp heads (#33)", "2026-07-05T10:00:00Z")
    _edit(root, "kvengine/attn.py", "    w = int(w)\n", "    w = int(w or 0)\n")
    _commit(root, ids, "R34", "Attention: accept no window (#34)", "2026-07-06T10:00:00Z")
    _edit(root, "kvengine/sched.py", "    limit = 256\n", "    limit = 128\n")
    _commit(root, ids, "S35", "Cap batch size (#35)", "2026-07-07T10:00:00Z")
    _edit(root, "kvengine/sched.py", "    limit = 128\n", "    limit = 256\n")
    message = f'Revert "Cap batch size (#35)"\n\nThis reverts commit {ids["S35"]}.'
    _commit(root, ids, "T36", message, "2026-07-08T10:00:00Z")
    _edit(root, "kvengine/late.py", "LATE = 1\n", "LATE = 2\n")
    _commit(root, ids, "S37", "Late fix (#37)", "2026-07-09T10:00:00Z")
    _write(root, "VERSION", "2.1\n")
    _commit(root, ids, "H", "Release 2.1", "2026-07-10T10:00:00Z")

    pinned = _unpack(root, ids["P"], path / "image-2.0")
    candidate = _unpack(root, ids["H"], path / "image-2.1")
    engine = KvEngine(root, ids, pinned, candidate, path / "project" / "patchsets" / "kv")
    _write_patchset(engine)
    return engine


def _write_patchset(engine: KvEngine) -> None:
    ids, repo = engine.ids, engine.repo
    folder = engine.patchset
    (folder / "patches").mkdir(parents=True)
    diff = {
        # five lines of context, as the shared case 012 (with three, the moved early return
        # is the hunk's whole trailing context and the hunk applies again: ambiguous)
        "int64-strides": git_bytes(repo, "diff", "-U5", ids["B0"], ids["S31"]),
        "attn-three": git_bytes(repo, "diff", ids["B0"], ids["A3"]),
        "sched-cap": git_bytes(repo, "diff", "--abbrev=7", ids["R34"], ids["S35"]),
    }
    for pid, data in diff.items():
        (folder / "patches" / f"{pid}.patch").write_bytes(data)
    yaml = f"""schema: 1
name: kv
image: {{reference: example.invalid/kv:2.0}}
components:
  - {{distribution: kvengine, repository: acme/kv, commit: {ids["P"]}}}
targets:
  engine: {{package: kvengine}}
patches:
  - id: int64-strides
    kind: diff
    target: engine
    file: patches/int64-strides.patch
    description: 64-bit KV strides on the large-cache path.
    upstream: [acme/kv#31]
  - id: attn-three
    kind: diff
    target: engine
    file: patches/attn-three.patch
    description: Clamp heads, rsqrt scale, cap the window.
    upstream: [acme/kv#33]
  - id: sched-cap
    kind: diff
    target: engine
    file: patches/sched-cap.patch
    description: Cap the batch at 128.
    upstream: [acme/kv#35]
  - id: late
    kind: replace
    target: engine
    description: The late fix.
    upstream: [acme/kv#37]
    edits: [{{file: kvengine/late.py, old: "LATE = 1", new: "LATE = 2"}}]
  - id: open-work
    kind: replace
    target: engine
    description: Work still under review.
    upstream: [acme/kv#38]
    edits: [{{file: kvengine/open.py, old: "OPEN = 1", new: "OPEN = 2"}}]
"""
    (folder / "patchset.yaml").write_text(yaml)


def serve_kv(standin: GitHubStandIn, engine: KvEngine) -> None:
    """Serve the repository as ``acme/kv`` with its pull requests (#31-#37 merged, #38 open)."""
    repo = standin.add_repo("acme/kv", str(engine.repo))
    ids = engine.ids
    merged = {
        31: ("Widen KV strides to int64", "S31", "2026-07-02T10:00:00Z"),
        32: ("Move the early return up", "R32", "2026-07-03T10:00:00Z"),
        33: ("Attention: clamp heads", "S33", "2026-07-05T10:00:00Z"),
        34: ("Attention: accept no window", "R34", "2026-07-06T10:00:00Z"),
        35: ("Cap batch size", "S35", "2026-07-07T10:00:00Z"),
        37: ("Late fix", "S37", "2026-07-09T10:00:00Z"),
    }
    for n, (title, name, when) in merged.items():
        repo.pulls[n] = Pull(
            n, title, "closed", merged=True, merge_commit_sha=ids[name], merged_at=when
        )
    repo.pulls[38] = Pull(38, "Work still under review")
