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

from conftest import Engine, write_patchset
from inprocess import run_main
from patchbay.kinds.pip import pip_failure
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
    head = res.err.splitlines()[0]
    assert "command exited with status 3" in head
    assert "nor everything else (below)" in head
    assert "could not restore torchx==1.0 (torchx 2.0 stays installed)" in res.err
    assert "ERROR: No matching distribution found for torchx==1.0" in res.err
    # what could be restored was: the added distribution is gone again
    assert _versions(pengine) == {"torchx": "2.0"}


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
    lines = res.err.splitlines()
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
