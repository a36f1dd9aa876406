# ruff: noqa: RUF001  (pip prints the multiplication sign in its error blocks)
"""Package pins are undone whole: every distribution an install changed comes back, on
``revert`` and on a rollback; what cannot be restored is named, and pip's own error lines are
quoted. Real engine environments with their own pip, real wheels, a real index on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import Engine, run_cli, write_patchset
from inprocess import run_main
from patchbay.kinds.pipcall import pip_failure, unreachable
from servers import Server, make_wheel


@pytest.fixture(autouse=True)
def _isolated_pip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")  # no machine-wide index or find-links
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")


@pytest.fixture
def links(tmp_path: Path) -> Path:
    """A find-links folder: a protected ``torchx`` 1.0 and 2.0, and ``torchrec`` 1.0, which
    needs ``torchx>=2``."""
    out = tmp_path / "links"
    make_wheel(out, "torchx", "1.0")
    make_wheel(out, "torchx", "2.0")
    make_wheel(out, "torchrec", "1.0", requires=["torchx>=2"])
    return out


def _versions(engine: Engine) -> dict[str, str]:
    script = "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"  # noqa: E501
    proc = subprocess.run(
        [str(engine.python), "-c", script], capture_output=True, text=True, check=True
    )
    found = json.loads(proc.stdout)
    return {k: v for k, v in found.items() if k in ("torchx", "torchrec", "badpkg")}


def _install(engine: Engine, links: Path, req: str) -> None:
    subprocess.run(
        [str(engine.python), "-m", "pip", "install", "-q", "--no-index", "-f", str(links), req],
        check=True,
    )


def _patchset(tmp_path: Path, index: str, links: Path, *later: dict[str, object]) -> Path:
    pin = {
        "id": "torchrec",
        "kind": "pip",
        "requirement": "torchrec==1.0",
        "index_url": index,  # an index that has nothing: every wheel comes from links
        "find_links": [str(links)],
        "allow": ["torchx"],
    }
    ps = write_patchset(tmp_path / "ps", [pin, *later])
    text = (ps / "patchset.yaml").read_text()
    (ps / "patchset.yaml").write_text(text + "protect: [torchx]\n")
    return ps


def _failing_command(script: str) -> dict[str, object]:
    return {"id": "rebuild", "kind": "command", "after": ["torchrec"], "shell": True,
            "argv": [script], "target": "engine"}  # fmt: skip


def _from_the_error(err: str) -> list[str]:
    """stderr from the error line on (the progress lines of the pip steps come before it)."""
    lines = err.splitlines()
    return lines[next(i for i, ln in enumerate(lines) if ln.startswith("patchbay: error: ")) :]


def test_revert_restores_every_distribution_the_install_changed(
    tmp_path: Path, pengine: Engine, links: Path
) -> None:
    _install(pengine, links, "torchx==1.0")
    with Server() as empty:
        ps = _patchset(tmp_path, f"{empty.url}/simple/", links)
        res = run_main("apply", ps, "--python", pengine.python)
        assert res.code == 0, res.err
        assert _versions(pengine) == {"torchx": "2.0", "torchrec": "1.0"}
        ledger = json.loads((pengine.state_dir / "ledger.json").read_text())
        changes = ledger["patchsets"]["test"]["entries"][0]["extra"]["changes"]
        assert sorted((c["name"], c["from"], c["to"]) for c in changes) == [
            ("torchrec", None, "1.0"),
            ("torchx", "1.0", "2.0"),
        ]
        res = run_main("revert", ps, "--python", pengine.python)
        assert res.code == 0, res.err
    assert _versions(pengine) == {"torchx": "1.0"}


def test_a_failed_run_rolls_back_every_distribution(
    tmp_path: Path, pengine: Engine, links: Path
) -> None:
    _install(pengine, links, "torchx==1.0")
    with Server() as empty:
        ps = _patchset(tmp_path, f"{empty.url}/simple/", links, _failing_command("exit 3"))
        res = run_main("apply", ps, "--python", pengine.python)
    assert res.code == 1 and res.crash is None
    assert "command exited with status 3" in res.err
    assert "every file patchbay journaled was restored, but not what command" in res.err
    assert "nor everything else" not in res.err
    assert _versions(pengine) == {"torchx": "1.0"}
    assert (
        not (pengine.state_dir / "ledger.json").exists()
        or "torchrec" not in (pengine.state_dir / "ledger.json").read_text()
    )


def test_a_rollback_that_cannot_restore_a_pin_says_so(
    tmp_path: Path, pengine: Engine, links: Path
) -> None:
    _install(pengine, links, "torchx==1.0")
    wheel = links / "torchx-1.0-py3-none-any.whl"
    with Server() as empty:
        ps = _patchset(
            tmp_path, f"{empty.url}/simple/", links, _failing_command(f"rm {wheel}; exit 3")
        )
        res = run_main("apply", ps, "--python", pengine.python)
    assert res.code == 1 and res.crash is None
    head = _from_the_error(res.err)[0]
    assert "command exited with status 3" in head
    assert "nor everything else (below)" in head
    assert "could not restore torchx==1.0 (torchx 2.0 stays installed)" in res.err
    assert "ERROR: No matching distribution found for torchx==1.0" in res.err
    # what could be restored was: the added distribution is gone again
    assert _versions(pengine) == {"torchx": "2.0"}


def test_a_run_killed_after_the_install_is_undone_by_the_next_run_pins_included(
    tmp_path: Path, pengine: Engine, links: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL takes the process's own rollback with it: the install's undo is journaled
    before pip runs, and the next run's recovery puts the distributions back, in the
    interpreter of that run only."""
    _install(pengine, links, "torchx==1.0")
    with Server() as empty:
        ps = _patchset(tmp_path, f"{empty.url}/simple/", links)
        # killed at the last moment before the commit: the ledger says applied, the
        # journal is still open
        monkeypatch.setenv("PATCHBAY_TEST_FAULT", "kill@ledger-written")
        killed = run_cli("apply", ps, "--python", pengine.python)
        monkeypatch.delenv("PATCHBAY_TEST_FAULT")
        assert killed.code == -9, killed.err
        assert _versions(pengine) == {"torchx": "2.0", "torchrec": "1.0"}
        journal = pengine.state_dir / "journal"
        # a run without the interpreter cannot undo it: the journal does not choose what runs
        bare = ("--root", pengine.site, "--state-dir", pengine.state_dir)
        res = run_main("revert", ps, *bare)
        assert res.code == 1 and res.crash is None, res.err
        assert f"run again with --python {pengine.python} to undo that install" in res.err
        assert journal.exists()
        assert _versions(pengine) == {"torchx": "2.0", "torchrec": "1.0"}
        # the next apply undoes the killed run's install, then judges the packages as they
        # are now (not as read before the recovery: "redundant"), and installs the pin
        res = run_main("apply", ps, "--python", pengine.python)
        assert res.code == 0, res.err
        assert "pip uninstall torchrec" in res.err and "applied torchrec" in res.out, res.out
        assert not journal.exists()
        assert _versions(pengine) == {"torchx": "2.0", "torchrec": "1.0"}
        assert run_main("revert", ps, "--python", pengine.python).code == 0
    assert _versions(pengine) == {"torchx": "1.0"}


def test_a_journaled_undo_runs_only_pips_index_options(tmp_path: Path) -> None:
    from patchbay.errors import RefusedError
    from patchbay.kinds.piprestore import journaled_undo, undo_journaled

    good = journaled_undo("/e/bin/python", {"torchx": "1.0"}, ["--no-index"], {"PIP_X": "1"})[1]
    for bad in (
        {**good, "options": ["--no-index", "--target", "/etc"]},
        {**good, "env": {"LD_PRELOAD": "/tmp/x.so"}},
        {**good, "snapshot": {"torchx": 1}},
        {**good, "python": None},
    ):
        with pytest.raises(RefusedError, match="malformed"):
            undo_journaled(bad, "/e/bin/python", tmp_path / "log")
    with pytest.raises(RefusedError, match="run again with --python /e/bin/python"):
        undo_journaled(good, "/other/bin/python", tmp_path / "log")


def _failing_sdist(links: Path) -> None:
    src = links.parent / "badpkg-1.0"
    src.mkdir()
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )
    (src / "backend.py").write_text(
        "def get_requires_for_build_wheel(config_settings=None):\n"
        "    raise RuntimeError('hipcc not found: set CXX')\n"
    )
    with tarfile.open(links / "badpkg-1.0.tar.gz", "w:gz") as tar:
        tar.add(src, arcname="badpkg-1.0")
    shutil.rmtree(src)


def test_a_build_error_in_the_dry_run_quotes_pip(
    tmp_path: Path, pengine: Engine, links: Path
) -> None:
    _failing_sdist(links)
    with Server() as empty:
        patch = {
            "id": "badpkg",
            "kind": "pip",
            "requirement": "badpkg==1.0",
            # credentials in the index URL: pip echoes the URL; neither log nor message may
            "index_url": f"{empty.url}/simple/".replace("://", "://ci:pw-4c5d6e7f@"),
            "find_links": [str(links)],
        }
        ps = write_patchset(tmp_path / "ps", [patch])
        res = run_main("apply", ps, "--python", pengine.python)
    assert res.code == 1 and res.crash is None
    lines = _from_the_error(res.err)
    log = pengine.state_dir / "logs" / "badpkg.log"
    assert "pip cannot resolve badpkg==1.0: RuntimeError: hipcc not found: set CXX" in lines[0]
    assert f"(log: {log})" in lines[0]
    assert any("Getting requirements to build wheel did not run successfully" in ln for ln in lines)
    assert not any("See above" in ln for ln in lines)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert "Traceback" in log.read_text()
    assert "pw-4c5d6e7f" not in log.read_text() + res.err + res.out
    assert "ci:***@127.0.0.1" in log.read_text()
    assert _versions(pengine) == {}


PIP_RESOLVER_OUTPUT = """\
Looking in indexes: http://127.0.0.1:9/simple/
ERROR: Could not find a version that satisfies the requirement nope==9 (from versions: none)
ERROR: No matching distribution found for nope==9
"""

PIP_BUILD_OUTPUT = """\
Processing ./links/badpkg-1.0.tar.gz
  Installing build dependencies: started
  error: subprocess-exited-with-error

  × Getting requirements to build wheel did not run successfully.
  │ exit code: 1
  ╰─> [9 lines of output]
      Traceback (most recent call last):
        File "a.py", line 1, in <module>
        File "b.py", line 2, in <module>
        File "c.py", line 3, in <module>
        File "d.py", line 4, in <module>
        File "backend.py", line 2, in get_requires_for_build_wheel
          raise RuntimeError('hipcc not found')
      RuntimeError: hipcc not found
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: subprocess-exited-with-error

× Getting requirements to build wheel did not run successfully.
│ exit code: 1
╰─> See above for output.

note: This error originates from a subprocess, and is likely not a problem with pip.
hint: See above for details.
"""


def test_pip_failure_reads_resolver_and_build_errors() -> None:
    resolver = pip_failure(PIP_RESOLVER_OUTPUT, 1)
    assert resolver.headline == "ERROR: No matching distribution found for nope==9"
    assert len(resolver.lines) == 2
    build = pip_failure(PIP_BUILD_OUTPUT, 1)
    assert build.headline == "RuntimeError: hipcc not found"
    assert build.lines[:3] == [
        "error: subprocess-exited-with-error",
        "× Getting requirements to build wheel did not run successfully.",
        "│ exit code: 1",
    ]
    assert build.lines[-1] == "RuntimeError: hipcc not found"
    assert "..." in build.lines  # the head of a long traceback is cut, its tail kept
    assert not any(ln.startswith(("note:", "hint:")) or "See above" in ln for ln in build.lines)
    assert pip_failure("", 2).headline == "pip exited with status 2"


# -- a pin whose options changed, not its version, across `apply --upgrade` -----------------

_BACKEND = """\
import os, zipfile

NAME, VERSION = "cxxpkg", "1.0"
INFO = f"{NAME}-{VERSION}.dist-info"
META = f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n"


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    os.makedirs(os.path.join(metadata_directory, INFO))
    with open(os.path.join(metadata_directory, INFO, "METADATA"), "w") as fh:
        fh.write(META)
    return INFO


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    files = {
        f"{NAME}.py": f"CXX = {os.environ.get('CXX')!r}\\n",  # the compiler it was built with
        f"{INFO}/METADATA": META,
        f"{INFO}/WHEEL": "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    }
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{INFO}/RECORD", "".join(f"{p},,\\n" for p in [*files, f"{INFO}/RECORD"]))
    return name
"""


def _compiler_sdist(links: Path) -> None:
    """``cxxpkg`` 1.0 as an sdist whose build records ``$CXX`` in the installed module."""
    src = links.parent / "cxxpkg-1.0"
    src.mkdir()
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )
    (src / "backend.py").write_text(_BACKEND)
    with tarfile.open(links / "cxxpkg-1.0.tar.gz", "w:gz") as tar:
        tar.add(src, arcname="cxxpkg-1.0")
    shutil.rmtree(src)


def _set_pin(ps: Path, pin_id: str, **fields: object) -> None:
    import yaml

    doc = yaml.safe_load((ps / "patchset.yaml").read_text())
    next(p for p in doc["patches"] if p["id"] == pin_id).update(fields)
    (ps / "patchset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def _built_with(engine: Engine) -> str:
    proc = subprocess.run(
        [str(engine.python), "-c", "import cxxpkg; print(cxxpkg.CXX)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


def test_upgrade_reinstalls_a_pin_whose_build_env_changed(
    tmp_path: Path, pengine: Engine, links: Path
) -> None:
    _compiler_sdist(links)
    with Server() as empty:
        pin = {
            "id": "cxxpkg",
            "kind": "pip",
            "requirement": "cxxpkg==1.0",
            "index_url": f"{empty.url}/simple/",
            "find_links": [str(links)],
            "build_env": {"CXX": "g++"},
        }
        ps = write_patchset(tmp_path / "ps", [pin])
        res = run_main("apply", ps, "--python", pengine.python)
        assert res.code == 0, res.err
        assert _built_with(pengine) == "g++"
        _set_pin(ps, "cxxpkg", build_env={"CXX": "hipcc"})  # the same version, a new compiler
        res = run_main("status", ps, "--python", pengine.python, "--json")
        assert res.code == 1
        assert json.loads(res.out)["patches"][0]["status"] == "outdated"
        res = run_main("apply", ps, "--python", pengine.python, "--upgrade")
        assert res.code == 0, res.err
        assert "reverted cxxpkg" in res.out, res.out
        assert "patchset test: 1 applied, 0 already applied, 0 redundant" in res.out, res.out
        assert _built_with(pengine) == "hipcc"
        res = run_main("status", ps, "--python", pengine.python, "--json")
    assert res.code == 0, res.out
    assert json.loads(res.out)["patches"][0]["status"] == "applied"


def test_upgrade_reinstalls_a_pin_whose_no_deps_changed(
    tmp_path: Path, pengine: Engine, links: Path
) -> None:
    _install(pengine, links, "torchx==1.0")
    with Server() as empty:
        ps = _patchset(tmp_path, f"{empty.url}/simple/", links)
        assert run_main("apply", ps, "--python", pengine.python).code == 0
        assert _versions(pengine) == {"torchx": "2.0", "torchrec": "1.0"}
        _set_pin(ps, "torchrec", no_deps=True)
        res = run_main("apply", ps, "--python", pengine.python, "--upgrade")
        assert res.code == 0, res.err
        assert "reverted torchrec" in res.out, res.out
        assert "patchset test: 1 applied, 0 already applied, 0 redundant" in res.out, res.out
    # taken off (torchrec removed, torchx back), then installed again without its dependencies
    assert _versions(pengine) == {"torchx": "1.0", "torchrec": "1.0"}
    ledger = json.loads((pengine.state_dir / "ledger.json").read_text())
    (entry,) = ledger["patchsets"]["test"]["entries"]
    assert "--no-deps" in entry["extra"]["install_options"]
    assert [(c["name"], c["from"], c["to"]) for c in entry["extra"]["changes"]] == [
        ("torchrec", None, "1.0")
    ]


# -- status runs apply's dry run of a pending pin --------------------------------------------


def _refused_pin(tmp_path: Path, index: str, links: Path) -> Path:
    """torchrec 1.0 needs torchx>=2; torchx is protected and not allowed to move."""
    ps = _patchset(tmp_path, index, links)
    _set_pin(ps, "torchrec", allow=[])
    return ps


def test_status_says_a_pending_pin_would_be_refused_and_exits_1(
    tmp_path: Path, pengine: Engine, links: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # the table's detail on one line
    _install(pengine, links, "torchx==1.0")
    with Server() as empty:
        ps = _refused_pin(tmp_path, f"{empty.url}/simple/", links)
        res = run_main("status", ps, "--python", pengine.python, "--json", "--trial")
        assert res.code == 1, res.out
        (patch,) = json.loads(res.out)["patches"]
        assert patch["status"] == "conflict"
        assert patch["hunks"][0]["state"] == "conflict"
        reason = "would change protected distribution(s): torchx upgraded 1.0 -> 2.0"
        assert (
            f"apply would refuse it: installing torchrec==1.0 {reason}"
            in (patch["hunks"][0]["detail"])
        )
        table = run_main("status", ps, "--python", pengine.python, "--trial")
        assert table.code == 1
        assert reason in table.out
        assert not pengine.state_dir.exists()  # status kept no pip log: it writes nothing
        applied = run_main("apply", ps, "--python", pengine.python)
    assert applied.code == 1
    assert reason in applied.err  # what status said is what apply does
    assert _versions(pengine) == {"torchx": "1.0"}


def test_status_shows_what_the_dry_run_of_a_pending_pin_found(
    tmp_path: Path, pengine: Engine, links: Path
) -> None:
    _install(pengine, links, "torchx==1.0")
    with Server() as empty:
        ps = _patchset(tmp_path, f"{empty.url}/simple/", links)
        res = run_main("status", ps, "--python", pengine.python, "--json", "--trial")
    assert res.code == 0, res.out
    (patch,) = json.loads(res.out)["patches"]
    assert patch["status"] == "pending"
    assert (
        "pip's dry run: torchrec would be added at 1.0; torchx upgraded 1.0 -> 2.0"
        in (patch["notes"])
    )
    assert _versions(pengine) == {"torchx": "1.0"}
    # a read-only command announces no install: its progress lines name pip's dry run
    progress = [line for line in res.err.splitlines() if "pip" in line]
    assert progress and all("pip's dry run of " in line for line in progress), res.err
    assert "pip install" not in res.err, res.err


def test_plain_status_runs_no_dry_run_and_then_answers_from_the_kept_one(
    tmp_path: Path, pengine: Engine, links: Path
) -> None:
    _install(pengine, links, "torchx==1.0")
    with Server() as empty:
        ps = _refused_pin(tmp_path, f"{empty.url}/simple/", links)
        plain = run_main("status", ps, "--python", pengine.python, "--json")
        assert plain.code == 0, plain.out  # not tried: nothing is known to block
        (patch,) = json.loads(plain.out)["patches"]
        assert patch["status"] == "pending"
        assert any(n.startswith("not tried: pip's dry run") for n in patch["notes"]), patch
        assert "pip" not in plain.err, plain.err  # no dry run, no progress line of one
        assert empty.requests_for("/") == 0  # pip never asked the index
        tried = run_main("status", ps, "--python", pengine.python, "--json", "--trial")
        assert tried.code == 1, tried.out
        asked = empty.requests_for("/")
        assert asked > 0  # the dry run asked the index
        kept = run_main("status", ps, "--python", pengine.python, "--json")
        assert empty.requests_for("/") == asked
    # the same pin over the same environment: the dry run's outcome, without running it again
    assert kept.code == 1, kept.out
    assert "pip" not in kept.err, kept.err
    (patch,) = json.loads(kept.out)["patches"]
    assert patch["status"] == "conflict"
    assert "kept from an earlier `status --trial`" in patch["hunks"][0]["detail"]
    assert "torchx upgraded 1.0 -> 2.0" in patch["hunks"][0]["detail"]
    # the environment changed (torchx 2.0 installed): that outcome no longer answers
    _install(pengine, links, "torchx==2.0")
    moved = run_main("status", ps, "--python", pengine.python, "--json")
    assert moved.code == 0, moved.out
    (patch,) = json.loads(moved.out)["patches"]
    assert any(n.startswith("not tried: ") for n in patch["notes"]), patch
    # nor does it for the pin edited
    _install(pengine, links, "torchx==1.0")
    _set_pin(ps, "torchrec", allow=["torchx"])
    edited = run_main("status", ps, "--python", pengine.python, "--json")
    assert edited.code == 0, edited.out
    assert json.loads(edited.out)["patches"][0]["status"] == "pending"
    assert not pengine.state_dir.exists()  # status wrote nothing to the environment


def _tried(tmp_path: Path, engine: Engine, index: str, links: Path) -> tuple[Path, Path]:
    """The refused pin after one ``status --trial``: its patchset and the outcome kept."""
    _install(engine, links, "torchx==1.0")
    ps = _refused_pin(tmp_path, index, links)
    assert run_main("status", ps, "--python", engine.python, "--trial").code == 1
    (kept,) = (tmp_path / "xdg-cache" / "patchbay" / "trials").glob("*.json")
    return ps, kept


def test_status_trial_always_asks_pip_again_and_replaces_the_kept_outcome(
    tmp_path: Path, pengine: Engine, links: Path
) -> None:
    with Server() as empty:
        ps, kept = _tried(tmp_path, pengine, f"{empty.url}/simple/", links)
        asked = empty.requests_for("/")
        kept.write_text(json.dumps({"summary": "pip's dry run: an outcome kept before"}))
        again = run_main("status", ps, "--python", pengine.python, "--json", "--trial")
        assert empty.requests_for("/") > asked  # pip asked the index again
    assert again.code == 1, again.out  # pip's answer, not the kept one
    assert "an outcome kept before" not in again.out
    assert json.loads(kept.read_text())["refusal"].startswith("installing torchrec==1.0 would ")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{not json",
        "[]",
        "null",
        "{}",
        '{"refusal": null, "summary": null}',
        '{"summary": ["a"]}',
        '{"summary": 5}',
        '{"refusal": 5}',
        '{"refusal": "x", "details": "abc"}',
        '{"refusal": "x", "summary": "y"}',
    ],
    ids=["empty", "not-json", "list", "null", "no-fields", "nulls", "summary-list",
         "summary-number", "refusal-number", "details-string", "both"],
)  # fmt: skip
def test_a_kept_file_that_is_no_outcome_is_not_tried(
    tmp_path: Path, pengine: Engine, links: Path, text: str
) -> None:
    with Server() as empty:
        ps, kept = _tried(tmp_path, pengine, f"{empty.url}/simple/", links)
        kept.write_text(text)
        plain = run_main("status", ps, "--python", pengine.python, "--json")
    assert plain.code == 0, plain.out + plain.err
    (patch,) = json.loads(plain.out)["patches"]
    assert patch["status"] == "pending"
    assert any(n.startswith("not tried: ") for n in patch["notes"]), patch


def test_a_refusal_reached_without_the_index_is_shown_and_not_kept(
    tmp_path: Path, pengine: Engine, links: Path
) -> None:
    _install(pengine, links, "torchx==1.0")
    with Server() as gone:
        index = f"{gone.url}/simple/"
    ps = _refused_pin(tmp_path, index, links)  # resolved from find-links alone
    trials = tmp_path / "xdg-cache" / "patchbay" / "trials"
    trials.mkdir(parents=True)
    tried = run_main("status", ps, "--python", pengine.python, "--json", "--trial")
    assert tried.code == 1, tried.out
    (patch,) = json.loads(tried.out)["patches"]
    assert patch["status"] == "conflict"
    assert any(n.startswith(f"(pip could not reach {index} ") for n in patch["notes"]), patch
    assert list(trials.iterdir()) == []  # made without the index: no later status shows it
    plain = run_main("status", ps, "--python", pengine.python, "--json")
    assert plain.code == 0, plain.out
    assert "not tried: " in plain.out


def test_status_says_not_checked_when_the_index_is_unreachable(
    tmp_path: Path, pengine: Engine, links: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(pengine, links, "torchx==1.0")
    with Server() as gone:
        index = f"{gone.url}/simple/"
    ps = _refused_pin(tmp_path, index, links)
    _set_pin(ps, "torchrec", find_links=[])  # nothing but the index, which is not there
    res = run_main("status", ps, "--python", pengine.python, "--json", "--trial")
    assert res.code == 0, res.out
    (patch,) = json.loads(res.out)["patches"]
    assert patch["status"] == "pending"
    (note,) = [n for n in patch["notes"] if n.startswith("not checked")]
    assert note.startswith(f"not checked: index unreachable: {index} (NewConnectionError: ")
    assert note.endswith("Connection refused)")
    # an outcome that could not be checked is not kept: plain status has nothing to show
    plain = run_main("status", ps, "--python", pengine.python, "--json")
    (patch,) = json.loads(plain.out)["patches"]
    assert any(n.startswith("not tried: ") for n in patch["notes"]), patch
    monkeypatch.setenv("PIP_RETRIES", "1")  # apply's pip as configured, without the backoff
    res = run_main("apply", ps, "--python", pengine.python)
    assert res.code == 1
    assert f"{index} (NewConnectionError: " in res.err  # apply names it too
    assert "Connection refused) could not be reached" in res.err


OLD_URLLIB3 = """\
Looking in indexes: http://127.0.0.1:9/simple/, https://mirror.example/pypi/simple/
WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after \
connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object \
at 0x7f>: Failed to establish a new connection: [Errno 111] Connection refused')': /pypi/simple/x/
ERROR: No matching distribution found for x==1
"""

NEW_URLLIB3 = """\
WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after \
connection broken by 'ReadTimeoutError("HTTPSConnectionPool(host='files.example', port=443): \
Read timed out. (read timeout=15)")': /packages/x.whl
"""


def test_unreachable_names_the_index_or_the_host_pip_could_not_reach() -> None:
    assert unreachable(OLD_URLLIB3) == (
        "https://mirror.example/pypi/simple/ (NewConnectionError: [Errno 111] Connection refused)"
    )
    assert unreachable(NEW_URLLIB3) == (
        "files.example:443 (ReadTimeoutError: Read timed out. (read timeout=15))"
    )
    assert unreachable(PIP_RESOLVER_OUTPUT) is None  # an index that answers "none"
