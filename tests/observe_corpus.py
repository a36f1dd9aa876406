"""The self-written corpus of import by observation (``tests/corpus/observe``), its labels and
the one run of a case that the test and the benchmark share.

Each ``oNN-*.sh`` is a legacy patch script for the demo engine, written in the style of the
real ones (``sed -i``, here-documents, a ``.py`` patcher, ``apply_one_of`` alternatives, a
loop, downloads, a rebuild, a ``.pth``, a link, a failing step). Its ``.observed`` sidecar says,
by reading the script, what the run changes; one line each, ``#`` starts a comment:

- ``diff FILE [FILE...]``, ``artifact FILE``, ``command OUTPUT``, ``remove FILE...``,
  ``pin NAME``: one patch of that kind over those site-relative files (several files on one
  line: one patch);
- ``listed WHAT [FILE]``: a change no patch can make, listed in IMPORT-NOTES.md (``link``,
  ``failed``, ``uninstall``, ``outside``);
- ``unobserved LINE``: a statement the static reading predicts a change for that the run
  does not make (a branch not taken, a step after the failure).

A script reads ``$WHEELHOUSE`` (a folder holding the wheel of ``tinypkg`` 1.2.3) and
``$DOWNLOADS`` (a local HTTP server over ``tests/corpus/observe/downloads``).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from conftest import build_wheel
from patchbay.importer import import_script
from patchbay.importer.observed import BY_RUNNING, NOT_OBSERVED
from real_labels import SHARED

OBSERVE = Path(__file__).resolve().parent / "corpus" / "observe"
SCRIPT = SHARED / "mission" / "apply_k3_container_patches.sh"
"""The real Kimi-K3 container script (see ``../shared/mission/README.md``)."""
FILES = SHARED / "mission" / "engine-files"
PINS = {"triton": "3.7.0", "tabulate": "0.9.0", "lm_eval": "0.4.12"}
"""The packages the K3 script pins, as the stand-in index serves them."""
KINDS = ("diff", "artifact", "command", "remove", "pin")
LISTED = {
    "link": "symbolic link",
    "failed": "the script failed",
    "uninstall": "uninstalled",
    "outside": "outside its site-packages",
}


@dataclass(frozen=True)
class ObserveCase:
    """A script of the corpus and its labels (see the module docstring)."""

    script: Path
    patches: frozenset[tuple[str, frozenset[str]]]
    listed: tuple[str, ...]
    unobserved: tuple[int, ...]

    @property
    def name(self) -> str:
        return self.script.name


def load_cases() -> list[ObserveCase]:
    """Every script of the corpus with its sidecar, in name order.

    Raises:
        ValueError: a sidecar line of an unknown kind (naming the file and line).
    """
    cases = []
    for script in sorted(OBSERVE.glob("o*.sh")):
        patches, listed, unobserved = set(), [], []
        side = script.with_name(script.name + ".observed")
        for n, raw in enumerate(side.read_text().splitlines(), 1):
            words = raw.split("#", 1)[0].split()
            if not words:
                continue
            kind, rest = words[0], words[1:]
            if kind in KINDS and rest:
                patches.add((kind, frozenset(rest)))
            elif kind == "listed" and rest and rest[0] in LISTED:
                listed.append(rest[0])
            elif kind == "unobserved" and len(rest) == 1 and rest[0].isdigit():
                unobserved.append(int(rest[0]))
            else:
                raise ValueError(f"{side}:{n}: not a label: {raw!r}")
        cases.append(ObserveCase(script, frozenset(patches), tuple(listed), tuple(unobserved)))
    return cases


@dataclass
class CaseRun:
    """What an observed import of a case gave.

    Attributes:
        patches: (label kind, site-relative files) of each patch written.
        listed: the label of each change listed as not converted (``other`` when none fits).
        unobserved: first lines of the predictions the run did not bear out.
        by_running: how many patches no statement predicted (the static reading's misses).
        mismatched: paths whose bytes differ between the script's tree and the imported
            patchset applied to a fresh copy (None: not compared, a change was listed).
        reapply_noop: a second apply did nothing (None: not compared).
        reverted: revert gave the pristine tree back (None: not compared).
    """

    patches: set[tuple[str, frozenset[str]]] = field(default_factory=set)
    listed: list[str] = field(default_factory=list)
    unobserved: list[int] = field(default_factory=list)
    by_running: int = 0
    mismatched: list[str] | None = None
    reapply_noop: bool | None = None
    reverted: bool | None = None


def tree_hashes(site: Path) -> dict[str, str]:
    """Every file and link below ``site`` (byte code, dist-info and patchbay's state aside) ->
    sha256 of its bytes (a link: of its target text)."""
    out = {}
    for folder, dirs, files in os.walk(site):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not d.endswith(".dist-info")]
        for name in files:
            path = Path(folder, name)
            rel = path.relative_to(site).as_posix()
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            out[rel] = hashlib.sha256(data).hexdigest()
    return out


@contextmanager
def _environ(values: dict[str, str]):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _files(patch: dict, targets: dict, folder: Path) -> tuple[str, frozenset[str]]:
    """A patch of patchset.yaml as (label kind, site-relative files)."""
    kind = patch["kind"]
    target = targets.get(patch.get("target")) or {}
    base = target.get("path", "") if isinstance(target, dict) else ""

    def site(paths: list[str]) -> frozenset[str]:
        return frozenset(posixpath.normpath(posixpath.join(base, p)) for p in paths)

    if kind == "diff":
        text = (folder / patch["file"]).read_text()
        found = re.findall(r"^(?:\+\+\+|---) (?:[ab]/)?(\S+)", text, re.M)
        found += re.findall(r"^diff --git a/(\S+) b/", text, re.M)  # a binary patch has no ---
        return "diff", site(sorted(set(found) - {"/dev/null"}))
    if kind == "artifact":
        return "artifact", site([f["dest"] for f in patch["files"]])
    if kind == "pip":
        name = re.split(r"[\s=<>!~\[;@]", patch["requirement"], maxsplit=1)[0]
        return "pin", frozenset([name.lower()])
    if kind == "command" and patch.get("output"):
        return "command", site([patch["output"]])
    if kind == "command":
        return "remove", site(patch.get("remove") or [])
    return kind, frozenset()


def run_case(
    case: ObserveCase,
    template: Path,
    work: Path,
    env: dict[str, str],
    cli,
    *,
    keep_listed: bool = False,
) -> CaseRun:
    """Import ``case`` by observing a copy of the engine ``template`` (a venv folder), then,
    when nothing was listed (or ``keep_listed``: whatever was), apply the patchset to a fresh
    copy and compare every file, apply again and revert.

    Args:
        case: the corpus case.
        template: a venv with the demo engine and pip installed.
        work: an empty folder for the copies and the patchset.
        env: ``WHEELHOUSE`` and ``DOWNLOADS`` for the script.
        cli: a callable running ``patchbay ARGS...`` and returning an object with ``code``,
            ``out`` and ``err`` (the tests' ``run_cli``).
    """
    from conftest import copy_engine

    scratch = copy_engine(template, work / "scratch")
    pristine = tree_hashes(scratch.site)
    out = work / "imported"
    with _environ(env):
        result = import_script(case.script, out, observe=str(scratch.python))
    run = CaseRun()
    doc = yaml.safe_load((out / "patchset.yaml").read_text())
    for patch in doc["patches"]:
        run.patches.add(_files(patch, doc.get("targets") or {}, out))
    run.by_running = sum(BY_RUNNING in " ".join(d.notes) for d in result.patches)
    for outcome in result.unconverted:
        run.listed.append(next((k for k, v in LISTED.items() if v in outcome.text), "other"))
    for where, text in result.review:
        if text.startswith(NOT_OBSERVED):
            run.unobserved.append(int(where.split()[1].split("-")[0]))
    if run.listed and not keep_listed:
        return run
    fresh = copy_engine(template, work / "fresh")
    applied = cli("apply", out, "--python", fresh.python)
    if applied.code != 0:
        run.mismatched = [f"apply failed: {applied.out}{applied.err}"]
        return run
    want, got = tree_hashes(scratch.site), tree_hashes(fresh.site)
    run.mismatched = sorted(p for p in want.keys() | got.keys() if want.get(p) != got.get(p))
    again = cli("apply", out, "--python", fresh.python)
    run.reapply_noop = again.code == 0 and "nothing to do" in again.out
    back = cli("revert", out, "--python", fresh.python)
    run.reverted = back.code == 0 and tree_hashes(fresh.site) == pristine
    shutil.rmtree(work / "scratch", ignore_errors=True)
    return run


def _project(root: Path, name: str, version: str, source: Path | None) -> Path:
    project = root / f"{name}-project"
    (project / name).mkdir(parents=True)
    if source is not None:
        shutil.copytree(source, project / name, dirs_exist_ok=True)
        for folder, _dirs, _files in os.walk(project / name):
            Path(folder, "__init__.py").touch()  # every folder a package, as in the wheel
    else:
        (project / name / "__init__.py").write_text(f"__version__ = {version!r}\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\n'
        f'[tool.setuptools.packages.find]\ninclude = ["{name}*"]\n'
        '[tool.setuptools.package-data]\n"*" = ["*"]\n'
    )
    return project


def build_k3_engine(root: Path) -> dict[str, Path]:
    """The scratch engine of the real Kimi-K3 script, under ``root``: a venv (with pip) where
    real files of vLLM 0.27.0 and aiter 044f906a8d (``../shared/mission/engine-files``) are
    installed from wheels by pip, and ``index``, a folder of wheels standing in for the
    indexes the script's ``pip install`` lines name. Returns ``{"template", "index"}``."""
    wheels, index = root / "wheels", root / "index"
    build_wheel(_project(root, "vllm", "0.27.0", FILES / "vllm-0.27.0" / "vllm"), wheels)
    build_wheel(_project(root, "aiter", "0.1.5", FILES / "aiter-044f906a8d" / "aiter"), wheels)
    for name, version in PINS.items():
        build_wheel(_project(root, name, version, None), index)
    template = root / "engine"
    subprocess.run([sys.executable, "-m", "venv", str(template)], check=True)
    subprocess.run(
        [template / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-index",
         "--no-deps", *map(str, sorted(wheels.glob("*.whl")))],
        check=True,
    )  # fmt: skip
    return {"template": template, "index": index}


def tinypkg_wheels(base: Path, version: str = "1.2.3") -> Path:
    """A folder under ``base`` holding the wheel of ``tinypkg`` ``version`` (a one-module
    package built by pip), for the scripts' ``$WHEELHOUSE`` and the pin tests."""
    project = base / "tinypkg"
    (project / "tinypkg").mkdir(parents=True)
    (project / "tinypkg" / "__init__.py").write_text("VALUE = 1\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "tinypkg"\nversion = "{version}"\n'
    )
    wheels = base / "wheels"
    build_wheel(project, wheels)
    return wheels
