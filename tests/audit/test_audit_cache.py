"""The audit's cache of script findings (``patchbay.audit.cache``), in-process on real files.

A cached entry is reused only while the script, every repository file its analysis looked at,
the engine names and the analyser are the same; a broken cache file is ignored and replaced.
Each test compares the findings with a fresh analysis of the same tree (no cache), so a stale
entry shows up as a difference. Entries are keyed by repository-relative path and content (a
clone in another folder is warm), sealed with the user's key (an edited one is not believed),
and the folder and its files are trusted only as ssh trusts its keys (``patchbay.audit.store``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import dedent, write_patchset
from inprocess import run_main
from patchbay.analysis import EngineNames
from patchbay.analysis.inputs import Inputs, portable, unchanged
from patchbay.audit import cache as cache_module
from patchbay.audit import run_audit, store
from patchbay.audit.cache import ScriptCache
from patchbay.audit.rules import Finding
from patchbay.audit.scanner import scan_tree
from patchbay.audit.store import CacheFolder
from test_audit_changes import git

ENGINES = EngineNames.build()
SITE_LINE = "SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"

RUN_SH = dedent(
    f"""
    #!/usr/bin/env bash
    set -e
    {SITE_LINE}
    sed -i 's/MAX = 1/MAX = 2/' "$SITE/vllm/envs.py"
    source "$(dirname "$0")/lib/helpers.sh"
    for p in "$(dirname "$0")"/patches/*.patch; do
      git -C "$SITE" apply "$p"
    done
    """
)
HELPERS_SH = 'cp overrides/rocm.py "$SITE/vllm/attention/rocm.py"\n'


def _tree(root: Path) -> Path:
    (root / "bench" / "lib").mkdir(parents=True)
    (root / "bench" / "patches").mkdir()
    (root / "bench" / "run.sh").write_text(RUN_SH)
    (root / "bench" / "lib" / "helpers.sh").write_text(HELPERS_SH)
    (root / "bench" / "patches" / "a.patch").write_text("--- a/vllm/x.py\n+++ b/vllm/x.py\n")
    (root / "bench" / "harness.sh").write_text("#!/bin/sh\npip install tabulate\n")
    return root


def _key(findings: list[Finding]) -> list[tuple]:
    return sorted(
        (f.code, f.path, f.line, f.end_line, f.message, f.chain, f.suppression) for f in findings
    )


def _scan(root: Path, folder: Path | None, engines: EngineNames = ENGINES) -> tuple:
    """(findings, hits, misses) of one scan with a cache in ``folder`` (None: no cache)."""
    cache = ScriptCache(folder, root, engines) if folder is not None else None
    found = scan_tree(root, ["**/*.sh"], [], engines, cache)
    return _key(found), (cache.hits if cache else 0), (cache.misses if cache else 0)


def _scripts_file(folder: Path) -> Path:
    (path,) = folder.glob("scripts-*.json")
    return path


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file of the folder (links not followed): bytes (or link target), mode, mtime."""
    out = {}
    for path in sorted(folder.iterdir()):
        st = path.lstat()
        data = os.fsencode(os.readlink(path)) if path.is_symlink() else path.read_bytes()
        out[path.name] = (data, st.st_mode, st.st_mtime_ns)
    return out


def test_a_warm_scan_reuses_every_entry_and_agrees(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, None)
    assert {code for code, *_ in fresh} >= {"PB401", "PB402", "PB404"}
    # run.sh and lib/helpers.sh are analysed; harness.sh fails the gate
    assert _scan(root, folder) == (fresh, 0, 2)
    written = _scripts_file(folder)
    before = written.stat().st_mtime_ns
    assert _scan(root, folder) == (fresh, 2, 0)
    assert written.stat().st_mtime_ns == before  # nothing changed: nothing written


@pytest.mark.parametrize(
    ("change", "hits", "misses"),
    [
        ("script", 1, 1),  # run.sh again, lib/helpers.sh reused
        ("sourced helper", 0, 2),  # both: run.sh read it
        ("new glob match", 1, 1),
        ("removed helper", 0, 1),  # run.sh looked for it; it is no longer listed
    ],
)
def test_a_change_of_the_script_or_a_file_it_looked_at_invalidates(
    tmp_path: Path, change: str, hits: int, misses: int
) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    before, _, _ = _scan(root, folder)
    if change == "script":
        (root / "bench" / "run.sh").write_text(RUN_SH + 'rm -rf "$SITE/vllm/_C.so"\n')
    elif change == "sourced helper":
        (root / "bench" / "lib" / "helpers.sh").write_text(
            HELPERS_SH + 'echo x > "$SITE/vllm/hook.pth"\n'
        )
    elif change == "new glob match":
        (root / "bench" / "patches" / "b.patch").write_text("--- a/vllm/y.py\n+++ b/vllm/y.py\n")
    else:
        (root / "bench" / "lib" / "helpers.sh").unlink()
    fresh, _, _ = _scan(root, None)
    if change != "new glob match":  # (a second patch applied by the same line: same finding)
        assert fresh != before
    assert _scan(root, folder) == (fresh, hits, misses)
    assert _scan(root, folder) == (fresh, hits + misses, 0)  # the new answers are cached


def test_other_engine_names_or_another_analyser_do_not_reuse_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    _scan(root, folder)
    others = EngineNames.build(packages=["demo_engine"])
    fresh, _, _ = _scan(root, None, others)
    assert _scan(root, folder, others) == (fresh, 0, 2)
    monkeypatch.setattr(cache_module, "_code_digest", lambda: "another analyser")
    assert _scan(root, folder, others)[1:] == (0, 2)


@pytest.mark.parametrize(
    "content",
    [
        b"not json {",
        b"\xff\xfe\x00garbage",
        b"[]",
        b'{"format": 1}',
        "forged",
    ],
)
def test_a_corrupt_cache_file_is_ignored_and_replaced(tmp_path: Path, content: bytes | str) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, folder)
    path = _scripts_file(folder)
    if content == "forged":  # the right header, entries of the wrong shape (sealed or not)
        doc = json.loads(path.read_text())
        for entry in doc["entries"].values():
            entry["p"]["findings"] = [["PB999", "x", 1, "m", None, [], None], "nonsense"]
            entry["p"]["inputs"] = [["file", 3, True]]
        path.write_text(json.dumps(doc))
    else:
        assert isinstance(content, bytes)
        path.write_bytes(content)
    assert _scan(root, folder) == (fresh, 0, 2)
    assert _scan(root, folder) == (fresh, 2, 0)
    assert json.loads(path.read_text())["format"] == store.FORMAT


def test_a_wrongly_shaped_entry_with_a_good_seal_is_dropped(tmp_path: Path) -> None:
    """The shape is checked after the seal: an entry this user's patchbay would never write
    (sealed here by the store itself) is dropped, not used."""
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, folder)
    cache = ScriptCache(folder, root, ENGINES)
    for key in [k for k in cache.store if not k.startswith("gate:")]:
        cache.store.put(key, {"findings": [["PB999", "x", 1, "m", None, [], None]], "inputs": []})
    cache.store.save()
    assert _scan(root, folder) == (fresh, 0, 2)
    assert _scan(root, folder) == (fresh, 2, 0)


def test_inputs_record_what_was_seen_and_notice_each_change(tmp_path: Path) -> None:
    """Each kind of look (a file's existence, its content, a glob, a folder's entries) is
    answered again on reuse; any other answer, or a probe of an unknown kind, is a change."""
    (tmp_path / "d").mkdir()
    (tmp_path / "f.txt").write_text("one\r\n")
    inputs = Inputs()
    assert inputs.isfile(str(tmp_path / "f.txt")) and not inputs.isfile(str(tmp_path / "g"))
    assert inputs.read_text(tmp_path / "f.txt") == "one\n"
    assert inputs.glob(str(tmp_path / "*.txt")) == [str(tmp_path / "f.txt")]
    assert inputs.folder(tmp_path / "d") == (True, [])
    probes = json.loads(json.dumps(inputs.probes))  # as the cache file stores them
    assert unchanged(probes)
    changes = [
        lambda: (tmp_path / "g").write_text(""),
        lambda: (tmp_path / "f.txt").write_text("two\n"),
        lambda: (tmp_path / "d" / "x.py").write_text(""),
    ]
    for change in changes:
        change()
        assert not unchanged(probes)
        inputs = Inputs()
        inputs.isfile(str(tmp_path / "f.txt"))
        inputs.isfile(str(tmp_path / "g"))
        inputs.read_text(tmp_path / "f.txt")
        inputs.glob(str(tmp_path / "*.txt"))
        inputs.folder(tmp_path / "d")
        probes = json.loads(json.dumps(inputs.probes))
        assert unchanged(probes)
    assert not unchanged([("socket", str(tmp_path), True)])
    assert not unchanged([("file", "f.txt", True)])  # relative, and no root to ask it below


def test_portable_inputs_are_relative_to_the_root_and_asked_below_another(tmp_path: Path) -> None:
    """Paths below the root (resolved, or as given; a glob with the root escaped) become
    relative to it and are asked again below the root given to :func:`unchanged`; a path
    outside stays absolute; a path relative to the working folder cannot be kept."""
    root = tmp_path / "a[1]"  # a glob character in the root: the walk escapes it
    (root / "d").mkdir(parents=True)
    (root / "f.txt").write_text("one\n")
    (tmp_path / "outside.txt").write_text("x\n")
    inputs = Inputs()
    inputs.isfile(str(root / "f.txt"))
    inputs.read_text(root / "f.txt")
    inputs.glob(str(tmp_path / "a[[]1]" / "*.txt"))
    inputs.folder(root / "d" / ".." / "d")
    inputs.isfile(str(tmp_path / "outside.txt"))
    rel = portable(inputs.probes, root)
    assert rel is not None
    assert [(kind, path) for kind, path, _ in rel] == [
        ("file", "f.txt"),
        ("read", "f.txt"),
        ("glob", "*.txt"),
        ("folder", "d/../d"),  # kept as the walk wrote it
        ("file", str(tmp_path / "outside.txt")),
    ]
    assert rel[2][2] == ["f.txt"]
    probes = json.loads(json.dumps(rel))
    assert unchanged(probes, root)
    other = tmp_path / "b"
    shutil.copytree(root, other)
    assert unchanged(probes, other)  # the same answers below another root
    (other / "f.txt").write_text("two\n")
    assert unchanged(probes, root) and not unchanged(probes, other)
    assert portable([("file", "f.txt", True)], root) is None


def test_run_audit_uses_the_cache_folder_and_can_be_told_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "xdg"
    off = run_audit(root, cache_dir=folder, script_cache=False)
    assert not folder.exists()
    monkeypatch.setenv("PATCHBAY_NO_CACHE", "1")
    run_audit(root, cache_dir=folder)
    assert not folder.exists()
    monkeypatch.delenv("PATCHBAY_NO_CACHE")
    cold = run_audit(root, cache_dir=folder)
    assert sorted(p.name for p in (folder / "audit").iterdir() if p.name != "key") == [
        _scripts_file(folder / "audit").name
    ]  # (no patchset nor waiver: no documents file)
    assert (folder / "audit" / "key").stat().st_mode & 0o777 == 0o600
    written = _scripts_file(folder / "audit")
    before = written.stat().st_mtime_ns
    warm = run_audit(root, cache_dir=folder)
    assert written.stat().st_mtime_ns == before  # every entry reused: nothing to write
    assert _key(off.findings) == _key(cold.findings) == _key(warm.findings)


def test_a_script_the_gate_rejected_is_judged_again_when_what_it_runs_appears(
    tmp_path: Path,
) -> None:
    """The gate's verdict on a script is cached with the answers it rested on: ``bash
    helper.sh`` counts only when helper.sh exists, so a warm scan skips run.sh while it does
    not, and judges (and follows) it again once it does."""
    root = tmp_path / "repo"
    (root / "bench").mkdir(parents=True)
    (root / "bench" / "run.sh").write_text("#!/bin/bash\ncd bench\nbash helper.sh\n")
    (root / "bench" / "notes.sh").write_text("#!/bin/bash\necho hello\n")
    folder = tmp_path / "cache"
    assert _scan(root, folder) == ([], 0, 0)
    cache = ScriptCache(folder, root, ENGINES)
    assert len(cache.harmless) == 2 and ("bench", "helper.sh") in cache.gate_probes
    assert cache.harmless_verdicts(lambda folder, word: False)
    assert _scan(root, folder) == ([], 0, 0)
    (root / "bench" / "helper.sh").write_text(f"{SITE_LINE}\n{HELPERS_SH}")
    fresh, _, _ = _scan(root, None)
    assert any(chain for _code, path, *_, chain, _s in fresh if path == "bench/helper.sh")
    assert _scan(root, folder) == (fresh, 0, 2)  # run.sh and helper.sh analysed
    assert _scan(root, folder) == (fresh, 2, 0)


def test_a_warm_scan_judges_no_script_at_the_gate_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate's verdicts on the scripts it let through are kept like those on the scripts
    it rejected (same key, same answers): a warm scan of an unchanged tree judges none of
    them again, and a changed script is judged (and analysed) again."""
    from patchbay.audit import scanner

    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, folder)
    cache = ScriptCache(folder, root, ENGINES)
    assert len(cache.worthy) == 2 and len(cache.harmless) == 1  # run.sh, helpers.sh; harness.sh
    judged: list[str] = []
    gate = scanner._Gate.__call__

    def judging(self: object, data: bytes, rel: str, kind: str) -> bool:
        judged.append(rel)
        return gate(self, data, rel, kind)  # type: ignore[arg-type]

    monkeypatch.setattr(scanner._Gate, "__call__", judging)
    assert _scan(root, folder) == (fresh, 2, 0)
    assert judged == []
    (root / "bench" / "run.sh").write_text(RUN_SH + "# a comment\n")
    assert _scan(root, folder) == (fresh, 1, 1)
    assert judged == ["bench/run.sh"]


def test_gate_verdicts_of_the_wrong_shape_are_dropped(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, folder)
    cache = ScriptCache(folder, root, ENGINES)
    harmless = set(cache.harmless)
    assert harmless  # harness.sh
    (gate,) = (k for k in cache.store if k.startswith("gate:"))
    cache.store.put(gate, {"harmless": sorted(harmless), "probes": [["bench", "x.sh", "yes"]]})
    cache.store.save()
    assert ScriptCache(folder, root, ENGINES).harmless == set()
    assert _scan(root, folder) == (fresh, 2, 0)
    assert ScriptCache(folder, root, ENGINES).harmless == harmless  # written again


# -- another clone ------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["cp -r", "git clone"])
def test_another_clone_of_the_same_tree_is_warm(tmp_path: Path, how: str) -> None:
    """Entries are keyed by repository-relative path and content, and their inputs are
    relative to the root: a copy or a clone in another folder reuses every entry (and the
    gate's verdicts), and its inputs are asked below its own root."""
    root = _tree(tmp_path / "repo")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "tree")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, folder)
    clone = tmp_path / "elsewhere" / "clone"
    if how == "cp -r":
        shutil.copytree(root, clone, symlinks=True)
    else:
        clone.parent.mkdir()
        git(tmp_path, "clone", "-q", str(root), str(clone))
    before = _scripts_file(folder).stat().st_mtime_ns
    assert ScriptCache(folder, clone, ENGINES).harmless  # the root audited last: harness.sh
    assert _scan(clone, None) == (fresh, 0, 0)
    assert _scan(clone, folder) == (fresh, 2, 0)
    assert _scan(clone, folder) == (fresh, 2, 0)
    assert _scan(root, folder) == (fresh, 2, 0)
    assert _scripts_file(folder).stat().st_mtime_ns != before  # the clone's gate record
    # an input that differs in the clone only: the clone's run.sh is analysed again
    (clone / "bench" / "lib" / "helpers.sh").write_text(HELPERS_SH + 'rm -rf "$SITE/vllm/x"\n')
    changed, _, _ = _scan(clone, None)
    assert changed != fresh
    assert _scan(clone, folder) == (changed, 0, 2)
    assert _scan(clone, folder) == (changed, 2, 0)


def test_an_entry_whose_findings_name_the_root_is_bound_to_it(tmp_path: Path) -> None:
    """Findings that spell the root's absolute path would be wrong in another clone: such an
    entry is kept for its root only."""
    root = tmp_path / "repo"
    root.mkdir()
    data = b"#!/bin/sh\n"
    folder = tmp_path / "cache"
    finding = Finding.of("PB404", "x.sh", 1, f"cp writes into {root / 'site' / 'vllm'}")
    cache = ScriptCache(folder, root, ENGINES)
    cache.put("x.sh", "shell", data, [finding], [])
    cache.put("y.sh", "shell", data, [Finding.of("PB404", "y.sh", 1, "cp into $SITE")], [])
    cache.save()
    clone = tmp_path / "clone"
    clone.mkdir()
    assert ScriptCache(folder, root, ENGINES).get("x.sh", "shell", data) is not None
    elsewhere = ScriptCache(folder, clone, ENGINES)
    assert elsewhere.get("x.sh", "shell", data) is None
    assert elsewhere.get("y.sh", "shell", data) is not None


def test_a_patchset_change_that_keeps_the_engine_names_keeps_the_script_entries(
    tmp_path: Path,
) -> None:
    """The analysis is told of the patchsets only through the engine names: renaming a
    patch, adding one, renaming a target leave every entry valid (the same file, not
    written again); another target package is another analyser digest."""
    root = _tree(tmp_path / "repo")
    patches = [{"id": "p-one", "kind": "diff", "file": "x.patch"}]
    write_patchset(root / "patchsets" / "main", patches, files={"x.patch": "diff\n"})
    folder = tmp_path / "xdg"
    run_audit(root, cache_dir=folder)
    written = _scripts_file(folder / "audit")
    before = written.stat().st_mtime_ns
    renamed = [{"id": "p-renamed", "kind": "diff", "file": "x.patch"}, {**patches[0], "id": "b"}]
    write_patchset(
        root / "patchsets" / "main",
        renamed,
        targets={"engine-renamed": {"package": "demo_engine"}},
        files={"x.patch": "diff\n"},
    )
    yaml_file = root / "patchsets" / "main" / "patchset.yaml"
    yaml_file.write_text(
        yaml_file.read_text().replace("target: engine\n", "target: engine-renamed\n")
    )
    run_audit(root, cache_dir=folder)
    assert _scripts_file(folder / "audit") == written
    assert written.stat().st_mtime_ns == before
    write_patchset(
        root / "patchsets" / "main",
        patches,
        targets={"engine": {"package": "other_engine"}},
        files={"x.patch": "diff\n"},
    )
    run_audit(root, cache_dir=folder)
    assert len(list((folder / "audit").glob("scripts-*.json"))) == 2


# -- never trusted blindly ----------------------------------------------------------------------


def test_an_entry_edited_by_hand_is_not_believed(tmp_path: Path) -> None:
    """Findings emptied to call a patching script clean: the seal does not check, the entry
    is dropped, the findings come back and the audit says why, once."""
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, folder)
    path = _scripts_file(folder)
    doc = json.loads(path.read_text())
    (edited,) = (e for e in doc["entries"].values() if e["p"].get("findings"))  # run.sh's
    edited["p"]["findings"] = []
    path.write_text(json.dumps(doc))
    cache = ScriptCache(folder, root, ENGINES)
    assert _key(scan_tree(root, ["**/*.sh"], [], ENGINES, cache)) == fresh
    assert (cache.hits, cache.misses) == (1, 1)  # lib/helpers.sh's entry is untouched
    (note,) = cache.notes
    assert str(path) in note and "1 entry not sealed with your key" in note
    assert _scan(root, folder) == (fresh, 2, 0)


def test_an_entry_of_another_analyser_or_another_key_is_not_believed(tmp_path: Path) -> None:
    """The seal binds an entry to the analyser digest (the file's): moved into the file of
    another engine list it does not check. Another user's key (a cache copied from them, a
    key made anew) checks none."""
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, folder)
    others = EngineNames.build(packages=["demo_engine"])
    other_fresh, _, _ = _scan(root, None, others)
    _scan(root, folder, others)
    ours = json.loads(_scripts_file_of(folder, ENGINES).read_text())
    theirs_path = _scripts_file_of(folder, others)
    theirs = json.loads(theirs_path.read_text())
    theirs["entries"] = ours["entries"]
    theirs_path.write_text(json.dumps(theirs))
    assert _scan(root, folder, others) == (other_fresh, 0, 2)
    (folder / "key").write_text(os.urandom(32).hex() + "\n")
    assert _scan(root, folder) == (fresh, 0, 2)
    assert _scan(root, folder) == (fresh, 2, 0)


def _scripts_file_of(folder: Path, engines: EngineNames) -> Path:
    return ScriptCache(folder, Path("/nonexistent"), engines).path


def test_a_cache_folder_that_is_a_link_is_ignored_and_never_written_through(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path / "repo")
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    (xdg / "audit").symlink_to(target)
    fresh = run_audit(root, script_cache=False)
    result = run_audit(root, cache_dir=xdg)
    assert _key(result.findings) == _key(fresh.findings)
    (note,) = result.notes
    assert f"{xdg / 'audit'} is a symbolic link: ignored" in note
    assert list(target.iterdir()) == []
    # a link that points to a cache a run made: not read either
    real = tmp_path / "real"
    run_audit(root, cache_dir=real)
    (xdg / "audit").unlink()
    (xdg / "audit").symlink_to(real / "audit")
    before = _snapshot(real / "audit")
    assert len(run_audit(root, cache_dir=xdg).notes) == 1
    assert _snapshot(real / "audit") == before
    assert CacheFolder(xdg / "audit").secret(create=True) is None


@pytest.mark.parametrize("what", ["scripts file", "key", "folder"])
def test_a_cache_writable_by_group_or_others_is_ignored(tmp_path: Path, what: str) -> None:
    """As ssh with its keys: a file or folder others may write (a key others may read) is
    ignored with a note, once, and left as it is."""
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    _scan(root, folder)
    path = {"scripts file": _scripts_file(folder), "key": folder / "key", "folder": folder}[what]
    path.chmod(0o640 if what == "key" else 0o777 if what == "folder" else 0o666)
    (root / "bench" / "run.sh").write_text(RUN_SH + "# a change: an entry to write\n")
    changed, _, _ = _scan(root, None)
    before = _snapshot(folder)
    cache = ScriptCache(folder, root, ENGINES)
    assert _key(scan_tree(root, ["**/*.sh"], [], ENGINES, cache)) == changed
    assert (cache.hits, cache.misses) == (0, 2)
    (note,) = cache.notes
    assert f"the audit's cache {path} is " in note and "ignored" in note
    assert ("readable" if what == "key" else "writable") + " by group or others" in note
    assert _snapshot(folder) == before  # nothing written to it, nor over it


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
@pytest.mark.parametrize("what", ["scripts file", "key", "folder"])
def test_a_cache_of_another_user_is_ignored(tmp_path: Path, what: str) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, folder)
    path = {"scripts file": _scripts_file(folder), "key": folder / "key", "folder": folder}[what]
    os.chown(path, 4242, -1)
    before = _snapshot(folder)
    cache = ScriptCache(folder, root, ENGINES)
    assert _key(scan_tree(root, ["**/*.sh"], [], ENGINES, cache)) == fresh
    assert (cache.hits, cache.misses) == (0, 2)
    (note,) = cache.notes
    assert f"{path} is owned by uid 4242, not by you (uid 0)" in note
    assert _snapshot(folder) == before


def test_a_store_file_that_is_a_link_is_ignored_and_not_written_over(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh, _, _ = _scan(root, folder)
    path = _scripts_file(folder)
    planted = tmp_path / "planted.json"
    planted.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(planted)
    before = (_snapshot(folder), planted.read_bytes())
    cache = ScriptCache(folder, root, ENGINES)
    assert _key(scan_tree(root, ["**/*.sh"], [], ENGINES, cache)) == fresh
    assert (cache.hits, cache.misses) == (0, 2)
    assert [f"the audit's cache {path} is a symbolic link: ignored, nothing is written to it"] == [
        n for n in cache.notes
    ]
    assert (_snapshot(folder), planted.read_bytes()) == before


def test_the_clean_up_follows_no_link_and_removes_only_the_users_files(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.json").write_text("{}")
    (outside / "scripts-x.json").write_text("{}")
    old = 1_000_000_000  # 2001: older than any KEEP_DAYS
    for name in ("scripts-old.json", "documents-old.json", ".tmp-1-killed", "scripts-new.json"):
        (folder / name).write_text("{}")
        if name != "scripts-new.json":
            os.utime(folder / name, (old, old))
    (folder / "scripts-link.json").symlink_to(outside / "victim.json")
    (folder / "documents-dir.json").symlink_to(outside)
    os.utime(folder / "scripts-link.json", (old, old), follow_symlinks=False)
    os.utime(outside / "victim.json", (old, old))
    (folder / "key").write_text("k")
    os.utime(folder / "key", (old, old))
    others = []
    if os.geteuid() == 0:
        (folder / "scripts-theirs.json").write_text("{}")
        os.utime(folder / "scripts-theirs.json", (old, old))
        os.chown(folder / "scripts-theirs.json", 4242, -1)
        others = ["scripts-theirs.json"]
    CacheFolder(folder).prune()
    left = sorted(p.name for p in folder.iterdir())
    assert left == sorted(
        ["key", "scripts-new.json", "scripts-link.json", "documents-dir.json", *others]
    )
    assert (outside / "victim.json").read_text() == "{}" and (outside / "scripts-x.json").exists()


def test_no_cache_neither_reads_nor_writes_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``patchbay audit --no-cache`` (a gate job): the folder is not looked at (a link there
    gets no note) and nothing is written, also when a script changed since the last run."""
    root = _tree(tmp_path / "repo")
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    warm = run_main("audit", "--repo", root, "--format", "json")
    assert warm.code == 1 and warm.crash is None, warm.err
    folder = xdg / "patchbay" / "audit"
    (root / "bench" / "run.sh").write_text(RUN_SH + 'rm -rf "$SITE/vllm/_C.so"\n')
    before = _snapshot(folder)
    gate = run_main("audit", "--repo", root, "--format", "json", "--no-cache")
    assert gate.code == 1 and "patchbay: note" not in gate.err
    assert _snapshot(folder) == before
    cached = run_main("audit", "--repo", root, "--format", "json")
    assert json.loads(cached.out)["findings"] == json.loads(gate.out)["findings"]
    assert _snapshot(folder) != before  # without --no-cache the new entry is written
    shutil.rmtree(folder)
    folder.symlink_to(tmp_path)
    gate = run_main("audit", "--repo", root, "--format", "json", "--no-cache")
    assert "patchbay: note" not in gate.err
    noted = run_main("audit", "--repo", root, "--format", "json")
    notes = [line for line in noted.err.splitlines() if line.startswith("patchbay: note:")]
    assert notes == [f"patchbay: note: the audit's cache {folder} is a symbolic link: ignored, "
                     "nothing is written to it"]  # fmt: skip
    assert json.loads(noted.out)["findings"] == json.loads(gate.out)["findings"]
