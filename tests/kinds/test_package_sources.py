"""A pin has one package source, never a race between indexes (dependency confusion): an extra
index, or links next to the primary index, are refused by ``validate`` with the key's
``file:line``; ``index_url`` alone and ``find_links`` with ``no_index`` pass. The safe form
works with real pip: the primary index (a real one on 127.0.0.1, set as pip's
``PIP_INDEX_URL``) is never asked, and ``bundle`` carries the pinned wheel like any other."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import Engine, write_patchset
from inprocess import run_main
from servers import Server, make_wheel

AMD = "https://pypi.amd.com/triton/release/rocm-7.2.0/simple/"
ASSETS = "https://github.com/LMCache/LMCache/releases/expanded_assets/v0.5.3-rocm"


def _pin(tmp_path: Path, **fields: object) -> Path:
    pin = {"id": "pin", "kind": "pip", "requirement": "triton==3.7.0", **fields}
    return write_patchset(tmp_path / "ps", [pin])


REFUSED = [
    ({"extra_index_urls": [AMD]}, "extra_index_urls", f"triton==3.7.0 from an extra index ({AMD})"),
    ({"index_url": AMD, "extra_index_urls": [AMD]}, "extra_index_urls", "dependency-confusion"),
    ({"find_links": [ASSETS]}, "find_links", f"from links ({ASSETS}) and the primary index"),
    ({"no_index": True}, "no_index", "`no_index: true` without `find_links`"),
    ({"no_index": True, "find_links": [ASSETS], "index_url": AMD}, "no_index", "drops `index_url`"),
]


@pytest.mark.parametrize(("fields", "key", "message"), REFUSED)
def test_a_pin_that_pip_could_take_from_two_sources_is_refused(
    tmp_path: Path, fields: dict[str, object], key: str, message: str
) -> None:
    ps = _pin(tmp_path, **fields)
    res = run_main("validate", ps)
    assert res.code == 2
    text = (ps / "patchset.yaml").read_text().splitlines()
    line = int(res.err.split(f"{ps / 'patchset.yaml'}:", 1)[1].split(":", 1)[0])
    assert text[line - 1].strip().startswith(f"{key}:")
    assert f"patches.0.{key}: " in res.err and message in res.err, res.err


@pytest.mark.parametrize(
    "fields",
    [
        {"index_url": AMD, "no_deps": True},
        {"find_links": [ASSETS], "no_index": True},
        {"index_url": AMD, "find_links": [ASSETS]},
        {},
    ],
)
def test_one_source_is_valid(tmp_path: Path, fields: dict[str, object]) -> None:
    res = run_main("validate", _pin(tmp_path, **fields))
    assert res.code == 0, res.err


def _lmcache_patchset(tmp_path: Path, links: Path) -> Path:
    pin = {
        "id": "lmcache-0.5.3-rocm",
        "kind": "pip",
        "requirement": "lmcache==0.5.3",
        "find_links": [str(links)],
        "no_index": True,
        "no_deps": True,
    }
    return write_patchset(tmp_path / "ps", [pin])


def test_links_with_no_index_never_ask_the_primary_index(
    tmp_path: Path, pengine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    links = tmp_path / "rocm-assets"
    make_wheel(links, "lmcache", "0.5.3")
    other = make_wheel(tmp_path / "public", "lmcache", "0.5.3")  # the public index's build
    with Server() as index:
        monkeypatch.setenv("PIP_INDEX_URL", index.serve_index([other]))
        ps = _lmcache_patchset(tmp_path, links)
        res = run_main("apply", ps, "--python", pengine.python)
        assert res.code == 0, res.err
        assert index.log == []
    installed = subprocess.run(
        [str(pengine.python), "-c", "import lmcache; print(lmcache.VERSION)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert installed.stdout.strip() == "0.5.3"


def test_bundle_carries_the_pinned_wheel_and_applies_it_offline(
    tmp_path: Path, pengine: Engine
) -> None:
    links = tmp_path / "rocm-assets"
    wheel = make_wheel(links, "lmcache", "0.5.3")
    ps = _lmcache_patchset(tmp_path, links)
    out = tmp_path / "bundle"
    res = run_main("bundle", ps, out, "--python", pengine.python, "--without-patchbay")
    assert res.code == 0, res.err
    assert (out / "wheels" / wheel.name).read_bytes() == wheel.read_bytes()
    manifest = json.loads((out / "manifest.json").read_text())["files"]
    assert f"wheels/{wheel.name}" in manifest
    shipped = yaml.safe_load((out / "patchset" / "patchset.yaml").read_text())
    assert shipped["patches"][0]["no_index"] is True
    wheel.unlink()  # offline, only the bundle has it
    res = run_main(
        "apply", out / "patchset", "--bundle", out, "--offline", "--python", pengine.python
    )
    assert res.code == 0, res.err
    res = run_main("status", out / "patchset", "--python", pengine.python, "--json")
    assert json.loads(res.out)["patches"][0]["status"] == "applied"
