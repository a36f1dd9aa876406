"""Import by observation over the self-written corpus (``tests/corpus/observe``, labelled by
reading each script; see :mod:`observe_corpus`): every labelled change is the patch of the
labelled kind over the labelled files, listed changes are listed, predictions the run did not
make are named by line, and where nothing was listed the patchset applied to a fresh engine
gives the script's tree byte for byte, re-applies as a no-op and reverts to the pristine tree.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_cli
from observe_corpus import (
    OBSERVE,
    ObserveCase,
    load_cases,
    run_case,
    tinypkg_wheels,
    tree_hashes,
)
from servers import Response, Server

CASES = load_cases()


@pytest.fixture(scope="module")
def script_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """``WHEELHOUSE`` (the wheel of tinypkg 1.2.3) and ``DOWNLOADS`` (a local HTTP server
    over the corpus's ``downloads`` folder)."""
    base = tmp_path_factory.mktemp("observe-corpus")
    wheels = tinypkg_wheels(base)
    with Server() as server:
        for path in (OBSERVE / "downloads").rglob("*"):
            if path.is_file():
                rel = path.relative_to(OBSERVE / "downloads").as_posix()
                server.routes[f"/{rel}"] = [Response(body=path.read_bytes())]
        yield {"WHEELHOUSE": str(wheels), "DOWNLOADS": server.url}


def test_the_corpus_has_every_class_of_change() -> None:
    kinds = {kind for case in CASES for kind, _ in case.patches}
    assert kinds == {"diff", "artifact", "command", "pin"}
    assert {what for case in CASES for what in case.listed} >= {"link", "failed"}
    assert any(case.unobserved for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_an_observed_import_makes_the_labelled_patches_and_reproduces_the_tree(
    case: ObserveCase, tmp_path: Path, pip_template: Path, script_env: dict[str, str]
) -> None:
    template = tree_hashes(next((pip_template / "lib").glob("python3*/site-packages")))
    run = run_case(case, pip_template, tmp_path, script_env, run_cli)
    # the scratch copy's console scripts name the template's python: the run used the copy's
    assert tree_hashes(next((pip_template / "lib").glob("python3*/site-packages"))) == template
    assert run.patches == set(case.patches)
    assert sorted(run.listed) == sorted(case.listed)
    assert sorted(run.unobserved) == sorted(case.unobserved)
    if not case.listed:
        assert run.mismatched == []
        assert run.reapply_noop and run.reverted
