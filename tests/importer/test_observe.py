"""Import by observation (issue 22): run a legacy script against a scratch engine (a real venv
with the demo engine installed by pip) and import what it really changed.

The measure of an observed import is exact reproduction: the imported patchset, applied to a
fresh copy of the same engine, gives the tree the script left, byte for byte (every file
hashed); a second apply is a no-op, and revert gives back the pristine tree.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import Engine, build_wheel, copy_engine, run_cli
from observe_corpus import OBSERVE

PROJECT = ["--project", "demo_engine=example/demo-engine"]

# the corpus script with an edit of every kind (tests/corpus/observe; its labels there)
LEGACY = (OBSERVE / "o01-edits.sh").read_text()


def _tree(engine: Engine) -> dict[str, str]:
    """Every file below site-packages (byte code and dist-info aside) -> its sha256."""
    out = {}
    for folder, dirs, files in os.walk(engine.site):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not d.endswith(".dist-info")]
        for name in files:
            path = Path(folder, name)
            out[path.relative_to(engine.site).as_posix()] = hashlib.sha256(
                path.read_bytes()
            ).hexdigest()
    return out


@pytest.fixture
def observed(tmp_path: Path, engine_template: Path) -> tuple[Path, Engine, dict[str, str]]:
    """The legacy script imported by observing a scratch engine: (patchset, that engine after
    the run, the pristine tree)."""
    script = tmp_path / "legacy.sh"
    script.write_text(LEGACY)
    scratch = copy_engine(engine_template, tmp_path / "scratch")
    pristine = _tree(scratch)
    out = tmp_path / "imported"
    res = run_cli("import", script, "--out", out, "--observe", "--python", scratch.python,
                  *PROJECT)  # fmt: skip
    assert res.code in (0, 1), res.out + res.err
    return out, scratch, pristine


def test_the_observed_patchset_reproduces_the_scripts_tree_byte_for_byte(
    observed: tuple[Path, Engine, dict[str, str]], tmp_path: Path, engine_template: Path
) -> None:
    out, scratch, pristine = observed
    after_script = _tree(scratch)
    assert after_script != pristine
    fresh = copy_engine(engine_template, tmp_path / "fresh")
    res = run_cli("apply", out, "--python", fresh.python)
    assert res.code == 0, res.out + res.err
    assert _tree(fresh) == after_script
    again = run_cli("apply", out, "--python", fresh.python)
    assert again.code == 0 and "nothing to do" in again.out, again.out + again.err
    back = run_cli("revert", out, "--python", fresh.python)
    assert back.code == 0, back.out + back.err
    assert _tree(fresh) == pristine


def test_each_change_is_a_patch_labelled_by_the_statement_that_made_it(
    observed: tuple[Path, Engine, dict[str, str]],
) -> None:
    out, _, _ = observed
    doc = yaml.safe_load((out / "patchset.yaml").read_text())
    kinds = [p["kind"] for p in doc["patches"]]
    # envs, scheduler, the new file, the deletion, worker, and mla (by a decoded command)
    assert kinds.count("diff") == 6
    assert kinds.count("artifact") == 1
    (artifact,) = [p for p in doc["patches"] if p["kind"] == "artifact"]
    (entry,) = artifact["files"]
    assert entry["sha256"] == hashlib.sha256(b"\x00\x01kernel").hexdigest()
    by_file = {
        p["id"]: (out / p["file"]).read_text() for p in doc["patches"] if p["kind"] == "diff"
    }
    (envs,) = [p for p in doc["patches"] if "demo_engine/envs.py" in by_file.get(p["id"], "")]
    assert any(str(u).endswith("#12345") for u in envs["upstream"]), envs  # its own comment
    assert envs["id"] == "envs-edit", envs  # named as the static reading names the statement
    notes = (out / "IMPORT-NOTES.md").read_text()
    # the mla.py edit is decoded at run time: no statement predicted it
    assert "found only by running" in notes
    # the branch the run did not take is listed with its line
    assert "line" in notes and "never reached" in notes
    assert "__init__.py" in notes


def test_a_distribution_the_script_installs_is_a_pin_of_the_observed_version(
    tmp_path: Path, pip_template: Path
) -> None:
    project = tmp_path / "tinypkg"
    (project / "tinypkg").mkdir(parents=True)
    (project / "tinypkg" / "__init__.py").write_text("VALUE = 1\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tinypkg"\nversion = "1.2.3"\n'
    )
    wheels = tmp_path / "wheels"
    build_wheel(project, wheels)
    script = tmp_path / "pins.sh"
    script.write_text(
        "#!/bin/bash\nset -e\n"
        f'python3 -m pip install --quiet --no-index --find-links "{wheels}" tinypkg==1.2.3\n'
    )
    scratch = copy_engine(pip_template, tmp_path / "scratch")
    out = tmp_path / "imported"
    res = run_cli("import", script, "--out", out, "--observe", "--python", scratch.python)
    assert res.code in (0, 1), res.out + res.err
    doc = yaml.safe_load((out / "patchset.yaml").read_text())
    (pin,) = [p for p in doc["patches"] if p["kind"] == "pip"]
    assert pin["requirement"] == "tinypkg==1.2.3"
    assert pin["find_links"] == [str(wheels)]


def test_observe_needs_the_engine_interpreter(tmp_path: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/bash\ntrue\n")
    res = run_cli("import", script, "--out", tmp_path / "out", "--observe")
    assert res.code == 2
    assert "--observe needs --python" in res.err
    assert not (tmp_path / "out").exists()


def test_a_failing_script_still_imports_what_it_changed_and_says_it_failed(
    tmp_path: Path, engine_template: Path
) -> None:
    script = tmp_path / "fails.sh"
    script.write_text(
        "#!/bin/bash\n"
        "SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')\n"
        'sed -i \'s/"256"/"128"/\' "$SITE/demo_engine/envs.py"\nexit 3\n'
    )
    scratch = copy_engine(engine_template, tmp_path / "scratch")
    out = tmp_path / "imported"
    res = run_cli("import", script, "--out", out, "--observe", "--python", scratch.python,
                  *PROJECT)  # fmt: skip
    assert res.code in (0, 1), res.out + res.err
    assert "exit status 3" in (out / "IMPORT-NOTES.md").read_text()
    doc = yaml.safe_load((out / "patchset.yaml").read_text())
    assert [p["kind"] for p in doc["patches"]] == ["diff"]


def test_the_trace_records_the_lines_the_run_reached(tmp_path: Path) -> None:
    """bash ignores PS4 from the environment when run as root: the trace still names lines."""
    from patchbay.importer.observe import run_script

    script = tmp_path / "t.sh"
    script.write_text("#!/bin/bash\necho one\nif false; then\n  echo two\nfi\necho three\n")
    run = run_script(script, sys.executable, tmp_path / "t.log")
    lines = {line for _, line in run.reached}
    assert {2, 3, 6} <= lines and 4 not in lines
    assert run.exit_code == 0
    assert subprocess.run(["cat", str(tmp_path / "t.log")], capture_output=True).stdout


def test_the_engine_state_names_changed_added_and_deleted_files(
    tmp_path: Path, engine_template: Path
) -> None:
    from patchbay.importer.observe import compare, take_state

    scratch = copy_engine(engine_template, tmp_path / "scratch")
    before = take_state(str(scratch.python), ["demo_engine"])
    (scratch.site / "demo_engine" / "envs.py").write_text("X = 1\n")
    (scratch.site / "demo_engine" / "new.py").write_text("Y = 2\n")
    (scratch.site / "demo_engine" / "worker.py").unlink()
    changes = compare(before, take_state(str(scratch.python), ["demo_engine"]))
    assert [r for r, _, _ in changes.modified] == ["demo_engine/envs.py"]
    assert [r for r, _ in changes.added] == ["demo_engine/new.py"]
    assert [r for r, _ in changes.deleted] == ["demo_engine/worker.py"]


def test_a_rebuild_that_made_files_is_its_command_with_the_output_declared(
    tmp_path: Path, engine_template: Path
) -> None:
    """The build here-document is the command (not an artifact of its product), its output
    declared; applied to a fresh copy it builds the same bytes, and a re-run is a no-op."""
    script = tmp_path / "build.sh"
    shutil.copy(OBSERVE / "o05-rebuild.sh", script)
    scratch = copy_engine(engine_template, tmp_path / "scratch")
    out = tmp_path / "imported"
    res = run_cli("import", script, "--out", out, "--observe", "--python", scratch.python,
                  *PROJECT)  # fmt: skip
    assert res.code in (0, 1), res.out + res.err
    doc = yaml.safe_load((out / "patchset.yaml").read_text())
    (command,) = [p for p in doc["patches"] if p["kind"] == "command"]
    assert command["argv"][:2] == ["{python}", "-c"]
    assert 'build_module("mla_a16w16_qh128")' in command["argv"][2]
    assert command["output"] == "demo_engine_meta/kernels/gfx950/mla_a16w16_qh128.co"
    assert not [p for p in doc["patches"] if p["kind"] == "artifact"]
    fresh = copy_engine(engine_template, tmp_path / "fresh")
    assert run_cli("apply", out, "--python", fresh.python).code == 0
    assert _tree(fresh) == _tree(scratch)
    again = run_cli("apply", out, "--python", fresh.python)
    assert again.code == 0 and "nothing to do" in again.out, again.out + again.err


def test_a_bad_out_is_refused_before_the_script_runs(tmp_path: Path, engine_template: Path) -> None:
    """The script changes the engine: --out is checked first, so a refusal leaves it as it was."""
    script = tmp_path / "legacy.sh"
    script.write_text(LEGACY)
    scratch = copy_engine(engine_template, tmp_path / "scratch")
    pristine = _tree(scratch)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine\n")
    res = run_cli("import", script, "--out", busy, "--observe", "--python", scratch.python)
    assert res.code == 2 and "not empty" in res.err, res.err
    assert _tree(scratch) == pristine
    assert sorted(p.name for p in busy.iterdir()) == ["keep.txt"]
    res = run_cli("import", script, "--out", "/proc/patchbay-out", *PROJECT)
    assert res.code == 2 and "/proc/patchbay-out" in res.err, res.err
    res = run_cli("import", script, "--out", tmp_path / "o", "--scope", "demo_engine")
    assert res.code == 2 and "--scope is for --observe" in res.err, res.err


def test_what_the_run_did_that_no_patch_can_undo_is_listed_not_converted(
    tmp_path: Path, engine_template: Path
) -> None:
    """A file deleted outside the scope (its bytes were not kept) and a failed run make the
    import partial (exit 1), each listed."""
    script = tmp_path / "rm.sh"
    script.write_text(
        "#!/bin/bash\nSITE=$(python3 -c 'import sysconfig; "
        'print(sysconfig.get_paths()["purelib"])\')\n'
        # the folder's name is decoded at run time: not a package the static reading can name
        'rm -f "$SITE/$(echo b3RoZXJwa2c= | base64 -d)/data.txt"\nfalse\nexit 4\n'
    )
    scratch = copy_engine(engine_template, tmp_path / "scratch")
    (scratch.site / "otherpkg").mkdir()
    (scratch.site / "otherpkg" / "data.txt").write_text("not watched closely\n")
    out = tmp_path / "imported"
    res = run_cli("import", script, "--out", out, "--observe", "--python", scratch.python,
                  "--scope", "demo_engine")  # fmt: skip
    assert res.code == 1, res.out + res.err
    notes = (out / "IMPORT-NOTES.md").read_text()
    assert "the run deleted otherpkg/data.txt" in notes
    assert "the script failed (exit status 4)" in notes


def test_observe_a_tree_given_as_root(tmp_path: Path, engine_template: Path) -> None:
    """``--observe --root TREE``: the tree stands in for site-packages (first on the script's
    PYTHONPATH, so find_spec finds it); applied with --root to a fresh copy it gives the
    script's tree."""
    site = next((engine_template / "lib").glob("python3*/site-packages"))
    tree = tmp_path / "tree"
    shutil.copytree(site, tree)
    fresh = tmp_path / "fresh"
    shutil.copytree(site, fresh)
    script = tmp_path / "root.sh"
    script.write_text(
        "#!/bin/bash\nset -e\n"
        "PKG=$(python3 -c 'import importlib.util as u, os; "
        'print(os.path.dirname(u.find_spec("demo_engine").origin))\')\n'
        'sed -i \'s/"256"/"384"/\' "$PKG/envs.py"\n'
    )
    out = tmp_path / "imported"
    res = run_cli("import", script, "--out", out, "--observe", "--root", tree, *PROJECT)
    assert res.code in (0, 1), res.out + res.err
    assert '"384"' in (tree / "demo_engine" / "envs.py").read_text()
    applied = run_cli("apply", out, "--root", fresh)
    assert applied.code == 0, applied.out + applied.err
    assert (fresh / "demo_engine" / "envs.py").read_bytes() == (
        tree / "demo_engine" / "envs.py"
    ).read_bytes()
    res = run_cli("import", script, "--out", tmp_path / "o2", "--root", tree)
    assert res.code == 2 and "--root is for --observe" in res.err


def test_links_and_files_outside_site_packages_are_listed_not_dropped(
    tmp_path: Path, engine_template: Path
) -> None:
    script = tmp_path / "links.sh"
    script.write_text(
        "#!/bin/bash\nset -e\n"
        "SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')\n"
        'ln -s envs.py "$SITE/demo_engine/envs_link.py"\n'
        'echo "# touched" >> "$(dirname "$(command -v python3)")/activate"\n'
    )
    scratch = copy_engine(engine_template, tmp_path / "scratch")
    out = tmp_path / "imported"
    res = run_cli("import", script, "--out", out, "--observe", "--python", scratch.python,
                  *PROJECT)  # fmt: skip
    assert res.code == 1, res.out + res.err
    notes = (out / "IMPORT-NOTES.md").read_text()
    assert "made a symbolic link demo_engine/envs_link.py -> envs.py" in notes
    assert "the run changed bin/activate of the environment" in notes
