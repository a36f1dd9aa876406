"""A bundle's compiled plan: each diff patch's judgement on the pinned image's files, so that a
cold apply from the bundle checks hashes instead of searching hunks, and anything that differs
is judged in full with the same states and messages as without the bundle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import Engine, copy_engine, diff_patch, run_cli, snapshot, write_patchset
from patchbay import __version__
from patchbay.apply.compiled import PLAN_FILE, load_compiled
from patchbay.apply.plan import make_plan
from patchbay.environment.targets import resolve_environment
from patchbay.errors import InputError
from patchbay.options import RunOptions
from patchbay.patchset.loading import load_patchset


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def _patchset(tmp_path: Path, engine: Engine) -> Path:
    """Three edits of two engine files (two stacked on envs.py) and one new file: the two
    in-place edit patches are compiled, the stack's second judged on the first's result."""
    envs = (engine.pkg / "envs.py").read_text()
    sched = (engine.pkg / "scheduler.py").read_text()
    first = envs.splitlines(keepends=True)
    one = "".join([*first[:2], "FIRST_FLAG = 1\n", *first[2:]])
    two = one + "SECOND_FLAG = 2\n"
    files = {
        "patches/one.patch": diff_patch("demo_engine/envs.py", envs, one),
        "patches/two.patch": diff_patch("demo_engine/envs.py", one, two),
        "patches/sched.patch": diff_patch(
            "demo_engine/scheduler.py", sched, sched + "# scheduled\n"
        ),
        "patches/new.patch": diff_patch("demo_engine/added.py", "", "NEW = 1\n").replace(
            "--- a/demo_engine/added.py", "--- /dev/null"
        ),
    }
    return write_patchset(
        tmp_path / "ps",
        [
            {"id": "one", "kind": "diff", "file": "patches/one.patch"},
            {"id": "two", "kind": "diff", "file": "patches/two.patch"},
            {"id": "sched", "kind": "diff", "file": "patches/sched.patch"},
            {"id": "new", "kind": "diff", "file": "patches/new.patch"},
        ],
        files=files,
    )


@pytest.fixture
def bundled(tmp_path: Path, engine: Engine) -> tuple[Path, Path]:
    """(the bundle made on the pristine ``engine``, a pristine copy of that engine's folder)."""
    ps = _patchset(tmp_path, engine)
    pristine = tmp_path / "pristine-engine"
    shutil.copytree(engine.prefix, pristine, symlinks=True)
    out = tmp_path / "bundle"
    res = run_cli("bundle", ps, out, "--python", engine.python, "--without-patchbay")
    assert res.code == 0, res.err
    assert "compiled plan: 3 of 4 diff patch(es)" in res.out
    return out, pristine


def _plan(bundle: Path, engine: Engine, *, with_bundle: bool = True):  # type: ignore[no-untyped-def]
    patchset = load_patchset(bundle / "patchset")
    env = resolve_environment(patchset, python=str(engine.python))
    options = RunOptions(bundle=bundle if with_bundle else None, offline=True)
    return make_plan(patchset, env, options=options)


def test_a_cold_apply_from_the_bundle_takes_the_compiled_judgement_and_writes_what_git_would(
    tmp_path: Path, bundled: tuple[Path, Path]
) -> None:
    out, pristine = bundled
    doc = json.loads((out / PLAN_FILE).read_text())
    assert set(doc["patches"]) == {"one", "two", "sched"}  # the new file is judged in full
    assert doc["patchbay"] == __version__
    # the manifest lists the plan and its post-images, so the bundle check covers them
    manifest = json.loads((out / "manifest.json").read_text())["files"]
    assert PLAN_FILE in manifest and any(k.startswith("plan/blobs/") for k in manifest)

    container = copy_engine(pristine, tmp_path / "container")
    plan = _plan(out, container)
    assert plan.compiled == 3
    assert [r.status.value for r in plan.reports] == ["pending"] * 4
    without = _plan(out, container, with_bundle=False)
    assert without.compiled is None
    for a, b in zip(plan.reports, without.reports, strict=True):
        assert a.inspection.hunks == b.inspection.hunks
        assert a.inspection.changes == b.inspection.changes

    res = run_cli(
        "apply", out / "patchset", "--python", container.python, "--bundle", out, "--offline"
    )
    assert res.code == 0, res.err
    reference = copy_engine(pristine, tmp_path / "reference")
    res = run_cli("apply", out / "patchset", "--python", reference.python)
    assert res.code == 0, res.err
    for rel in ("envs.py", "scheduler.py", "added.py"):
        assert (container.pkg / rel).read_bytes() == (reference.pkg / rel).read_bytes()
    assert "FIRST_FLAG" in (container.pkg / "envs.py").read_text()
    res = run_cli(
        "apply", out / "patchset", "--python", container.python, "--bundle", out, "--offline"
    )
    assert res.code == 0 and "nothing to do" in res.out


def test_a_file_of_another_image_is_judged_in_full_and_refused_as_without_the_bundle(
    tmp_path: Path, bundled: tuple[Path, Path]
) -> None:
    out, pristine = bundled
    outputs = []
    for name, extra in (("with", ["--bundle", out, "--offline"]), ("without", [])):
        other = copy_engine(pristine, tmp_path / f"other-{name}")
        envs = other.pkg / "envs.py"
        # another build of the image: the line the first patch's context needs is gone
        lines = envs.read_text().splitlines(keepends=True)
        envs.write_text("".join([lines[0], "# rebuilt\n", *lines[2:]]))
        if name == "with":
            plan = _plan(out, other)
            assert plan.compiled == 1  # only scheduler.py still reads as compiled
        before = snapshot(other.prefix)
        res = run_cli("apply", out / "patchset", "--python", other.python, *extra)
        outputs.append((res.code, res.out.replace(str(other.prefix), "ENV")))
        assert snapshot(other.prefix) == before  # refused, nothing written
    assert outputs[0][0] == 1
    assert outputs[0] == outputs[1]


def test_an_edited_patch_is_not_taken_from_the_plan(
    tmp_path: Path, bundled: tuple[Path, Path]
) -> None:
    out, pristine = bundled
    container = copy_engine(pristine, tmp_path / "container")
    plan_doc = json.loads((out / PLAN_FILE).read_text())
    plan_doc["patches"]["sched"]["sha256"] = "0" * 64  # as if the patch file had changed
    (out / PLAN_FILE).write_text(json.dumps(plan_doc))
    plan = _plan(out, container)
    assert plan.compiled == 2
    assert all(r.status.value == "pending" for r in plan.reports)


def test_a_plan_of_another_release_or_patchset_is_not_used(
    tmp_path: Path, bundled: tuple[Path, Path]
) -> None:
    out, _ = bundled
    doc = json.loads((out / PLAN_FILE).read_text())
    assert load_compiled(out, "test") is not None
    assert load_compiled(out, "another-patchset") is None
    (out / PLAN_FILE).write_text(json.dumps({**doc, "patchbay": "0.0.0-other"}))
    assert load_compiled(out, "test") is None


def test_a_damaged_plan_or_post_image_is_an_error_naming_the_file(
    tmp_path: Path, bundled: tuple[Path, Path]
) -> None:
    out, pristine = bundled
    container = copy_engine(pristine, tmp_path / "container")
    blob = next((out / "plan" / "blobs").iterdir())
    blob.write_bytes(b"damaged")
    with pytest.raises(InputError) as err:
        _plan(out, container)
    assert err.value.file == str(blob) and "does not match its name" in str(err.value)
    # through the command line, the manifest check names it first, and nothing is written
    before = snapshot(container.prefix)
    res = run_cli(
        "apply", out / "patchset", "--python", container.python, "--bundle", out, "--offline"
    )
    assert res.code == 2 and blob.name in res.err
    assert snapshot(container.prefix) == before
    (out / PLAN_FILE).write_text("{not json")
    with pytest.raises(InputError) as err:
        load_compiled(out, "test")
    assert err.value.file == str(out / PLAN_FILE) and "not a compiled plan" in str(err.value)


def test_a_patch_file_the_plan_judged_is_not_parsed_and_an_edited_one_is(
    tmp_path: Path, bundled: tuple[Path, Path]
) -> None:
    from patchbay.apply.plan import load_patches
    from patchbay.diff.parse import ParsedDiff
    from patchbay.kinds.diff import DeferredDiff

    out, _ = bundled
    patchset = load_patchset(out / "patchset")
    compiled = load_compiled(out, "test")
    loaded = dict(
        zip((p.id for p in patchset.patches), load_patches(patchset, compiled), strict=True)
    )
    assert isinstance(loaded["one"].data, DeferredDiff)
    assert isinstance(loaded["new"].data, ParsedDiff)  # not in the plan
    full = dict(zip((p.id for p in patchset.patches), load_patches(patchset), strict=True))
    for pid in ("one", "two", "sched"):
        assert (loaded[pid].sha256, loaded[pid].identity) == (full[pid].sha256, full[pid].identity)
        assert loaded[pid].notes == full[pid].notes
        # asked for more than the plan knows, it parses as a load would
        assert loaded[pid].data.files == full[pid].data.files
    sched = out / "patchset" / "patches" / "sched.patch"
    sched.write_text(sched.read_text() + "# trailing words after the last hunk\n")
    again = load_patches(patchset, compiled)[2]
    assert isinstance(again.data, ParsedDiff) and again.sha256 != loaded["sched"].sha256


def test_a_bundle_from_an_unpacked_tree_is_refused_for_pins_and_for_carrying_patchbay(
    tmp_path: Path, engine: Engine
) -> None:
    ps = _patchset(tmp_path, engine)
    res = run_cli("bundle", ps, tmp_path / "b1", "--root", engine.site)
    assert res.code == 1 and "to carry patchbay" in res.err
    assert not (tmp_path / "b1").exists()
    pins = write_patchset(
        tmp_path / "pins", [{"id": "pin", "kind": "pip", "requirement": "tinypkg==2.0"}]
    )
    res = run_cli("bundle", pins, tmp_path / "b2", "--root", engine.site, "--without-patchbay")
    assert res.code == 1 and "for the wheels of its package pins" in res.err
    res = run_cli("bundle", ps, tmp_path / "b3", "--root", engine.site, "--without-patchbay")
    assert res.code == 0, res.err
    assert "compiled plan: 3 of 4" in res.out
