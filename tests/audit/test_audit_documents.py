"""The audit's cache of parsed documents (``patchbay.audit.documents``), in-process on real files.

A patchset's YAML and a waiver are parsed once and reused while their text is the same; what
comes back must be what parsing gives (compared with a fresh parse, and whole audits with an
audit without the cache), a changed document is parsed again, bad input is never cached, and an
entry of the wrong shape or whose seal does not check (edited by hand) is ignored and replaced.
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest

from conftest import write_patchset
from patchbay.audit import run_audit, store
from patchbay.audit.documents import DocumentCache
from patchbay.errors import InputError
from patchbay.patchset.yamlfile import parse_yaml
from patchbay.waivers import parse_waiver
from test_audit import DATA, _rules_repo

TODAY = date(2030, 1, 1)
NAMES = {"vllm": "vllm-project/vllm", "Demo": "demo-org/demo-engine"}


def _documents_file(folder: Path) -> Path:
    (path,) = (folder / "audit").glob("documents-*.json")
    return path


def _audit(root: Path, **kwargs: object) -> dict:
    result = run_audit(root, today=TODAY, **kwargs)  # type: ignore[arg-type]
    return result.to_json()


def test_a_warm_audit_reuses_every_document_and_agrees(tmp_path: Path) -> None:
    root = _rules_repo(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh = _audit(root, script_cache=False)
    assert _audit(root, cache_dir=folder) == fresh
    path = _documents_file(folder)
    before = path.stat().st_mtime_ns
    assert _audit(root, cache_dir=folder) == fresh
    assert path.stat().st_mtime_ns == before  # every entry reused: nothing written
    cache = DocumentCache(folder / "audit", root)
    waivers = [p for p in (root / "waivers").glob("*.md") if p.name != "README.md"]
    assert len(cache.entries) == 1 + len(waivers)  # the patchset and every waiver


def test_a_changed_document_is_parsed_again(tmp_path: Path) -> None:
    root = _rules_repo(tmp_path / "repo")
    folder = tmp_path / "cache"
    _audit(root, cache_dir=folder)
    waiver = root / "waivers" / "w-ok.md"
    waiver.write_text(waiver.read_text().replace("## Removal plan", "## Rollout"))
    yaml_file = root / "patchsets" / "main" / "patchset.yaml"
    yaml_file.write_text(yaml_file.read_text().replace("p-nowaiver", "p-renamed"))
    fresh = _audit(root, script_cache=False)
    (w_ok,) = (w for w in fresh["waivers"] if w["path"] == "waivers/w-ok.md")
    assert w_ok["fields"]["removal"]["status"] == "missing"  # the documents did change
    assert "p-renamed" in json.dumps(fresh["findings"])
    assert _audit(root, cache_dir=folder) == fresh
    assert (
        len(DocumentCache(folder / "audit", root).entries)
        == 1 + len([p for p in (root / "waivers").glob("*.md") if p.name != "README.md"]) + 2
    )  # the two changed documents added; the old entries kept (another clone may use them)


def test_a_cached_waiver_is_what_parsing_gives(tmp_path: Path) -> None:
    """Every layout of the legacy waivers in tests/data and the front-matter ones of the audit
    tests come back equal to a fresh parse, with the same project names."""
    root = _rules_repo(tmp_path / "repo")
    for legacy in (DATA / "waivers-legacy").glob("1*.md"):
        shutil.copy(legacy, root / "waivers" / legacy.name)
    paths = sorted(p for p in (root / "waivers").glob("*.md") if p.name != "README.md")
    cold = DocumentCache(tmp_path / "cache", root)
    for path in paths:
        got = cold.waiver(path, path.read_text(), names=NAMES, projects=["vllm"])
        assert got == parse_waiver(path, names=NAMES, projects=["vllm"])
    cold.save()
    assert cold.misses == len(paths) and len(cold.entries) == len(paths)
    warm = DocumentCache(tmp_path / "cache", root)
    for path in paths:
        got = warm.waiver(path, path.read_text(), names=NAMES, projects=["vllm"])
        assert got == parse_waiver(path, names=NAMES, projects=["vllm"])
    assert (warm.hits, warm.misses) == (len(paths), 0)
    other = DocumentCache(tmp_path / "cache", root)  # other project names: parsed again
    path = paths[0]
    assert other.waiver(path, path.read_text(), names={}, projects=[]) == parse_waiver(path)
    assert (other.hits, other.misses) == (0, 1)


def test_a_document_without_a_json_form_is_parsed_every_time(tmp_path: Path) -> None:
    """YAML dates, number keys and NaN have no faithful JSON form: not cached, still right."""
    path = tmp_path / "x.yaml"
    text = "when: 2030-01-01\nmap: {1: one}\nnan: .nan\n"
    cache = DocumentCache(tmp_path / "cache", tmp_path)
    doc = cache.yaml_document(path, text)
    assert doc.data["when"] == date(2030, 1, 1) and doc.data["map"] == {1: "one"}
    assert doc.lines == parse_yaml(text, path).lines
    cache.save()
    assert cache.entries == {} and not (tmp_path / "cache").exists()


def test_bad_input_is_refused_every_time_and_never_cached(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write_patchset(root / "patchsets" / "main", [{"id": "p", "kind": "diff", "file": "x.patch"}])
    yaml_file = root / "patchsets" / "main" / "patchset.yaml"
    yaml_file.write_text(yaml_file.read_text() + "name: again\n")  # a duplicate key
    folder = tmp_path / "cache"
    for _ in range(2):
        with pytest.raises(InputError, match="duplicate key 'name'"):
            run_audit(root, cache_dir=folder)
    assert not list((folder / "audit").glob("documents-*.json"))


@pytest.mark.parametrize("content", [b"not json {", b"[]", b'{"format": 1}', "forged"])
def test_a_corrupt_documents_file_is_ignored_and_replaced(
    tmp_path: Path, content: bytes | str
) -> None:
    root = _rules_repo(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh = _audit(root, cache_dir=folder)
    path = _documents_file(folder)
    if content == "forged":  # the right header, entries of the wrong shape (and seal)
        doc = json.loads(path.read_text())
        for n, key in enumerate(doc["entries"]):
            entry = doc["entries"][key]["p"]
            if "lines" in entry:
                entry["lines"] = [[["patches", 0], "one"]]
            elif n % 2:
                entry["references"] = [["x", 1, "url", None, "not a number", None, None, None]]
            else:
                entry["fields"] = [["what", ["what", "done", 3, None, []]]]
        path.write_text(json.dumps(doc))
    else:
        assert isinstance(content, bytes)
        path.write_bytes(content)
    assert _audit(root, cache_dir=folder) == fresh
    cache = DocumentCache(folder / "audit", root)
    assert json.loads(path.read_text())["format"] == store.FORMAT and cache.entries
    assert _audit(root, cache_dir=folder) == fresh


def test_an_edited_document_entry_is_not_believed(tmp_path: Path) -> None:
    """A waiver's parsed fields rewritten in the cache file (a missing section made found):
    the seal does not check, the waiver is parsed again and the audit says so."""
    root = _rules_repo(tmp_path / "repo")
    folder = tmp_path / "cache"
    waiver = root / "waivers" / "w-ok.md"
    waiver.write_text(waiver.read_text().replace("## Removal plan", "## Rollout"))
    fresh = _audit(root, script_cache=False)
    assert _audit(root, cache_dir=folder) == fresh
    path = _documents_file(folder)
    doc = json.loads(path.read_text())
    edited = 0
    for entry in doc["entries"].values():
        for name, result in entry["p"].get("fields", []):
            if name == "removal" and result[1] == "missing":
                result[1:4] = ["found", 3, "heading 'Removal plan'"]
                edited += 1
    assert edited  # w-ok, and any other waiver without the section
    path.write_text(json.dumps(doc))
    result = run_audit(root, today=TODAY, cache_dir=folder)
    assert result.to_json() == fresh
    assert any(str(path) in note and "not sealed" in note for note in result.notes)


def test_no_cache_writes_no_documents_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _rules_repo(tmp_path / "repo")
    folder = tmp_path / "cache"
    fresh = _audit(root, cache_dir=folder, script_cache=False)
    monkeypatch.setenv("PATCHBAY_NO_CACHE", "1")
    assert _audit(root, cache_dir=folder) == fresh
    assert not folder.exists()


def test_a_cached_line_map_of_the_wrong_shape_is_taken_from_the_text(tmp_path: Path) -> None:
    """The line map of a cached YAML document is decoded when first asked for; one that is
    not what the cache writes gives way to a fresh parse."""
    path = tmp_path / "patchset.yaml"
    text = "schema: 1\npatches:\n  - id: a\n    file: x.patch\n"
    expected = parse_yaml(text, path)
    cold = DocumentCache(tmp_path / "cache", tmp_path)
    assert cold.yaml_document(path, text).lines == expected.lines
    cold.save()
    warm = DocumentCache(tmp_path / "cache", tmp_path)
    doc = warm.yaml_document(path, text)
    assert warm.hits == 1
    assert (doc.data, doc.lines, doc.line_of(("patches", 0, "file"))) == (
        expected.data,
        expected.lines,
        4,
    )
    for forged in ('[[["patches", 0], "one"]]', "not json", '{"a": 1}'):
        ((key, entry),) = warm.entries.items()
        assert isinstance(entry, dict)
        warm.store.put(key, {**entry, "lines": forged})  # sealed: as a bug would write it
        again = warm.yaml_document(path, text)
        assert again.lines == expected.lines and again.data == expected.data
    assert warm.hits == 4
