"""Fault injection: kill a real ``patchbay apply`` (or ``revert``) at a named point, then judge
what is left.

A killed run is a subprocess started with ``PATCHBAY_TEST_FAULT=kill@<point>:<n>`` (see
``patchbay/apply/journal.py``: the process sends itself SIGKILL the n-th time it reaches the
point; ``fail@...`` raises an OSError there instead, so ``fail@A,kill@B`` kills a run inside
its own rollback). Points are listed by a clean run with ``PATCHBAY_TEST_FAULT_LOG``. A timed
kill (SIGKILL to the whole process group after a delay) reaches places no named point marks,
such as the middle of ``git apply``.

After each kill the scenario judges, with the library and the CLI:

- right after recovery (the first thing every apply and revert does) the tree is exactly the
  pristine one with an empty ledger, or exactly the applied one with a ledger that records every
  patch and matches every file; anything else is a *half tree*;
- the next ``apply`` exits 0 and leaves the applied tree, ``status`` calls every patch applied,
  and ``revert`` leaves the pristine tree, with no journal and no kept original left behind
  (after a killed revert: the next revert, then an apply); any miss is *unrecovered*;
- no output holds a traceback; no run outlives its timeout (a *hang*).

Used by ``tests/apply/test_faults.py`` (a sample of the points) and ``benchmarks/fault_matrix.py``
(all of them).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from inprocess import run_main
from patchbay.apply.ledger import Ledger, sha256_bytes
from patchbay.apply.recovery import recover

PATCHSET_NAME = "faults"
TIMEOUT = 60.0

TREE = {
    "demo_engine/__init__.py": "",
    "demo_engine/envs.py": "import os\n\nPADDING = os.environ.get('PADDING', 'none')\n",
    "demo_engine/scheduler.py": "def limit(n):\n    return n\n\n\ndef batch(n):\n    return n\n",
    "demo_engine/worker.py": "def work():\n    return 1\n",
    "demo_engine/a.py": "A = 1\nB = 2\nC = 3\n",
    "demo_engine/old.py": "OLD = True\n",
    "demo_engine/plugins/only.py": "ONLY = 1\n",
    "demo_engine/build/stale.so": "stale build\n",
    "demo_engine/__pycache__/envs.cpython-311.pyc": "not really bytecode\n",
}

D1 = """\
diff --git a/demo_engine/envs.py b/demo_engine/envs.py
--- a/demo_engine/envs.py
+++ b/demo_engine/envs.py
@@ -1,3 +1,3 @@
 import os

-PADDING = os.environ.get('PADDING', 'none')
+PADDING = os.environ.get('PADDING', 'asm')
diff --git a/demo_engine/ops/new.py b/demo_engine/ops/new.py
new file mode 100644
--- /dev/null
+++ b/demo_engine/ops/new.py
@@ -0,0 +1 @@
+NEW = 1
diff --git a/demo_engine/old.py b/demo_engine/old.py
deleted file mode 100644
--- a/demo_engine/old.py
+++ /dev/null
@@ -1 +0,0 @@
-OLD = True
diff --git a/demo_engine/plugins b/demo_engine/plugins
new file mode 100644
--- /dev/null
+++ b/demo_engine/plugins
@@ -0,0 +1 @@
+PLUGINS = 'in one file'
diff --git a/demo_engine/plugins/only.py b/demo_engine/plugins/only.py
deleted file mode 100644
--- a/demo_engine/plugins/only.py
+++ /dev/null
@@ -1 +0,0 @@
-ONLY = 1
"""

D2 = """\
diff --git a/demo_engine/a.py b/demo_engine/b.py
similarity index 80%
rename from demo_engine/a.py
rename to demo_engine/b.py
--- a/demo_engine/a.py
+++ b/demo_engine/b.py
@@ -1,3 +1,3 @@
 A = 1
-B = 2
+B = 20
 C = 3
diff --git a/demo_engine/worker.py b/demo_engine/worker.py
--- a/demo_engine/worker.py
+++ b/demo_engine/worker.py
@@ -1,2 +1,2 @@
 def work():
-    return 1
+    return 2
"""


def write_fixture(folder: Path) -> tuple[Path, Path]:
    """The pristine tree and the patchset (diff, replace, diff, command), under ``folder``."""
    tree = folder / "pristine"
    for rel, text in TREE.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    ps = folder / "ps"
    ps.mkdir(parents=True)
    (ps / "d1.patch").write_text(D1)
    (ps / "d2.patch").write_text(D2)
    common = {"target": "engine", "upstream": ["demo-org/demo-engine#1"]}
    patches = [
        {"id": "d1", "kind": "diff", "file": "d1.patch", "description": "envs, new, old, plugins"},
        {
            "id": "r1",
            "kind": "replace",
            "description": "scheduler limits",
            "edits": [
                {"file": "demo_engine/scheduler.py", "old": "    return n\n\n\n",
                 "new": "    return min(n, 8)\n\n\n"},
                {"file": "demo_engine/scheduler.py", "old": "def batch(n):\n    return n\n",
                 "new": "def batch(n):\n    return n * 2\n"},
            ],
        },
        {"id": "d2", "kind": "diff", "file": "d2.patch", "description": "rename and worker"},
        {
            "id": "c1",
            "kind": "command",
            "description": "rebuild",
            "after": ["d1"],
            "remove": ["demo_engine/build/stale.so"],
            "shell": True,
            "argv": ["mkdir -p demo_engine/build && echo built > demo_engine/build/mod.so"],
            "output": "demo_engine/build/mod.so",
        },
    ]  # fmt: skip
    doc = {
        "schema": 1,
        "name": PATCHSET_NAME,
        "image": {"reference": "example.invalid/faults:1"},
        "targets": {"engine": {"package": "demo_engine"}},
        "patches": [{**common, **p} for p in patches],
    }
    (ps / "patchset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return tree, ps


def tree_state(root: Path, *, bytecode: bool = True) -> dict[str, tuple[bytes, int]]:
    """Every file and link under ``root`` with its bytes and permission bits."""
    out = {}
    for path in sorted(root.rglob("*")):
        if not bytecode and "__pycache__" in path.parts:
            continue
        if path.is_symlink():
            out[str(path.relative_to(root))] = (os.readlink(path).encode(), -1)
        elif path.is_file():
            out[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mode & 0o7777)
    return out


def cli(*args: str | Path) -> tuple[int, str]:
    """The CLI in-process; returns the exit code and stdout + stderr."""
    res = run_main(*args)
    text = res.out + res.err
    if res.crash is not None:
        text += f"\nTraceback: {res.crash}"
    return res.code, text


@dataclass
class Fixture:
    """The inputs of every scenario, and the two trees a run may end in."""

    folder: Path
    pristine: Path
    patchset: Path
    patchbay: str
    pristine_state: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    applied_state: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    reverted_state: dict[str, tuple[bytes, int]] = field(default_factory=dict)

    @classmethod
    def create(cls, folder: Path, patchbay: str) -> Fixture:
        pristine, ps = write_fixture(folder)
        fx = cls(folder, pristine, ps, patchbay, tree_state(pristine))
        root, state = fx.fresh(folder / "reference", other_fs=False)
        code, text = cli("apply", ps, "--root", root, "--state-dir", state)
        if code != 0:
            raise RuntimeError(f"the fault fixture does not apply cleanly: {text}")
        fx.applied_state = tree_state(root)
        code, text = cli("revert", ps, "--root", root, "--state-dir", state)
        fx.reverted_state = tree_state(root, bytecode=False)
        # a revert restores every file the ledger recorded; what the command removed (a stale
        # build) and the bytecode patchbay dropped are not recorded, by design
        expected = {
            k: v
            for k, v in fx.pristine_state.items()
            if "__pycache__" not in k and k != "demo_engine/build/stale.so"
        }
        if code != 0 or fx.reverted_state != expected:
            raise RuntimeError(f"the fault fixture does not revert cleanly: {text}")
        return fx

    def fresh(self, work: Path, *, other_fs: bool, applied: bool = False) -> tuple[Path, Path]:
        """A pristine copy of the tree, and an empty state folder (on /dev/shm when
        ``other_fs``); with ``applied``, the patchset applied on them (to kill a revert)."""
        root = work / "site"
        shutil.copytree(self.pristine, root, symlinks=True)
        for src in self.pristine.rglob("*"):  # same mtimes, so "pristine" is exact
            dest = root / src.relative_to(self.pristine)
            os.utime(dest, ns=(src.stat().st_atime_ns, src.stat().st_mtime_ns))
        if other_fs:
            state = Path(tempfile.mkdtemp(prefix="patchbay-fault-", dir="/dev/shm"))
        else:
            state = work / "state"
        if applied:
            code, text = cli("apply", self.patchset, "--root", root, "--state-dir", state)
            if code != 0 or tree_state(root) != self.applied_state:
                raise RuntimeError(f"the fault fixture does not apply cleanly: {text}")
        return root, state

    def environment(self, fault: str = "", log: Path | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHBAY_TEST_")}
        if fault:
            env["PATCHBAY_TEST_FAULT"] = fault
        if log is not None:
            env["PATCHBAY_TEST_FAULT_LOG"] = str(log)
        return env

    def points(
        self, work: Path, *, other_fs: bool, fault: str = "", command: str = "apply"
    ) -> list[str]:
        """The fault points a run of ``command`` (``apply``, or ``revert`` of an applied
        tree) reaches, in order (``name:n``); with ``fault``, of a run that has that fault
        injected (e.g. ``fail@batch-written:2`` lists a rollback's)."""
        root, state = self.fresh(work, other_fs=other_fs, applied=command == "revert")
        log = work / "points.log"
        try:
            subprocess.run(
                [self.patchbay, command, self.patchset, "--root", root, "--state-dir", state],
                env=self.environment(fault, log),
                capture_output=True,
                timeout=TIMEOUT,
                check=False,
            )
            return log.read_text().split() if log.exists() else []
        finally:
            if other_fs:
                shutil.rmtree(state, ignore_errors=True)


@dataclass
class Outcome:
    """What one scenario found."""

    name: str
    killed: bool = False
    half_tree: str | None = None
    unrecovered: str | None = None
    traceback: str | None = None
    hang: bool = False

    @property
    def ok(self) -> bool:
        return not (self.half_tree or self.unrecovered or self.traceback or self.hang)


def run_scenario(
    fx: Fixture,
    work: Path,
    *,
    fault: str = "",
    delay: float | None = None,
    other_fs: bool = False,
    recover_first: bool | int = True,
    command: str = "apply",
) -> Outcome:
    """Kill one ``command`` run (``fault``, or SIGKILL to its process group after ``delay``
    seconds), then judge the recovery and the runs after it (see the module docstring).

    ``command``: ``apply`` on the pristine tree, or ``revert`` on the applied one (which must
    then end applied or reverted, and the next revert and apply must work).
    ``recover_first``: judge the tree right after the library's recovery; otherwise the next
    run recovers by itself (both paths are the one :func:`patchbay.apply.recovery.recover`).
    """
    name = f"{command} {fault or f'timed {delay:.3f}s'}"
    out = Outcome(name + (" (state on /dev/shm)" if other_fs else ""))
    root, state = fx.fresh(work, other_fs=other_fs, applied=command == "revert")
    try:
        args = [fx.patchbay, command, str(fx.patchset), "--root", str(root)]
        proc = subprocess.Popen(
            [*args, "--state-dir", str(state)],
            env=fx.environment(fault),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a kill takes git with it, as a container kill does
        )
        try:
            if delay is not None:
                try:
                    proc.wait(timeout=delay)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
            _, stderr = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            out.hang = True
            return out
        with_group_gone(proc.pid)
        out.killed = proc.returncode == -signal.SIGKILL
        text = stderr.decode("utf-8", "replace")
        if "Traceback" in text:
            out.traceback = text.strip().splitlines()[-1]
        elif not out.killed and proc.returncode not in (0, 1):
            out.unrecovered = f"the faulted run exited {proc.returncode}: {text.strip()}"
        if recover_first:
            out.half_tree = _judge_recovery(fx, root, state, command)
        order = ["apply", "revert"] if command == "apply" else ["revert", "apply"]
        for step in order:
            out.unrecovered = out.unrecovered or _judge_next_run(fx, root, state, out, step)
        return out
    finally:
        if other_fs:
            shutil.rmtree(state, ignore_errors=True)


def with_group_gone(pgid: int) -> None:
    """Wait until no process of the killed run's group is left (a git it started)."""
    for _ in range(200):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def _ledger_problem(fx: Fixture, root: Path, state: Path, *, applied: bool) -> str | None:
    ledger = Ledger(state)
    entries = ledger.entries(PATCHSET_NAME)
    if not applied:
        return f"pristine tree, ledger records {[e.patch_id for e in entries]}" if entries else None
    ids = [e.patch_id for e in entries]
    if ids != ["d1", "r1", "d2", "c1"]:
        return f"applied tree, ledger records {ids}"
    for entry in entries:
        for rec in entry.files:
            path = root / rec.path
            current = sha256_bytes(path.read_bytes()) if path.is_file() else None
            last = [r.after for e in entries for r in e.files if r.path == rec.path][-1]
            if current != last:
                return f"ledger says {rec.path} is {last}, the disk has {current}"
    return None


def _judge_recovery(fx: Fixture, root: Path, state: Path, command: str) -> str | None:
    outcome = recover(state / "journal", [root, state])
    if not outcome.complete:
        return f"recovery incomplete: {outcome.problems()}"
    now = tree_state(root)
    start = fx.pristine_state if command == "apply" else fx.applied_state
    end = fx.applied_state if command == "apply" else fx.reverted_state
    if now == fx.pristine_state or now == fx.reverted_state:
        return _ledger_problem(fx, root, state, applied=False)
    if now == fx.applied_state:
        return _ledger_problem(fx, root, state, applied=True)
    differ = sorted(
        k for k in set(now) | set(start) if now.get(k) != start.get(k) and now.get(k) != end.get(k)
    )
    return f"half tree after recovery: {differ or sorted(set(now) ^ set(start))}"


def _judge_next_run(fx: Fixture, root: Path, state: Path, out: Outcome, step: str) -> str | None:
    where = ["--root", root, "--state-dir", state]
    code, text = cli(step, fx.patchset, *where)
    if "Traceback" in text:
        out.traceback = out.traceback or text.strip().splitlines()[-1]
    if code != 0:
        return f"next {step} exited {code}: {text.strip()[-400:]}"
    if step == "revert":
        if tree_state(root, bytecode=False) != fx.reverted_state:
            return "revert did not leave the pristine tree"
        if (state / "journal").exists() or any(root.rglob(".patchbay-*")):
            return "a journal or a kept original was left behind"
        return None
    if tree_state(root) != fx.applied_state:
        return "next apply did not leave the applied tree"
    code, text = cli("status", fx.patchset, *where, "--json")
    statuses = {p["id"]: p["status"] for p in json.loads(text)["patches"]} if code == 0 else {}
    if set(statuses.values()) != {"applied"}:
        return f"status after the next apply: {statuses or text.strip()[-400:]}"
    return None


def kill_faults(points: list[str]) -> list[str]:
    """``kill@<point>`` for every point a run reaches."""
    return [f"kill@{p}" for p in points]


def rollback_faults(
    fx: Fixture, work: Path, *, other_fs: bool, command: str = "apply"
) -> list[str]:
    """Kills inside a rollback: the third batch of an apply (the third file a revert
    writes) fails, and the run is killed at each file its rollback restores."""
    fail = "fail@batch-written:3" if command == "apply" else "fail@file-written:3"
    points = fx.points(work, other_fs=other_fs, fault=fail, command=command)
    return [f"{fail},kill@{p}" for p in points if p.startswith("file-restored")]


def sample(items: list[str], k: int, seed: int) -> list[str]:
    """``k`` of ``items``, always with the commit points (a deterministic sample)."""
    must = [i for i in items if any(p in i for p in ("ledger-written", "journal-committed"))]
    rest = [i for i in items if i not in must]
    return must + random.Random(seed).sample(rest, min(len(rest), max(k - len(must), 0)))
