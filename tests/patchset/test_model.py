"""Loading patchsets: schema errors, malformed YAML and consistency problems name file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import REPO, dedent, run_cli
from inprocess import run_main
from patchbay.errors import InputError
from patchbay.patchset.loading import load_patchset
from patchbay.patchset.schema import json_schema

HEAD = dedent(
    """
    schema: 1
    name: t
    image: {reference: example.invalid/engine:1}
    targets:
      engine: {package: demo_engine}
    patches:
    """
)


def load(tmp_path: Path, text: str):
    (tmp_path / "patchset.yaml").write_text(text)
    return load_patchset(tmp_path)


def error(tmp_path: Path, text: str) -> InputError:
    with pytest.raises(InputError) as exc:
        load(tmp_path, text)
    return exc.value


def test_demo_patchset_is_valid() -> None:
    ps = load_patchset(REPO / "patchsets" / "demo")
    assert [p.kind for p in ps.patches] == ["diff", "diff", "diff", "replace", "diff"]
    assert ps.spec.targets["meta"].path == "demo_engine_meta"


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    err = error(tmp_path, HEAD + "  - id: a\n    kind: [diff\n")
    assert err.file == str(tmp_path / "patchset.yaml")
    assert err.line == 9
    assert "invalid YAML" in err.reason


def test_schema_errors_all_listed_with_lines(tmp_path: Path) -> None:
    text = HEAD + (
        "  - id: a\n"
        "    kind: diff\n"
        "    target: engine\n"
        "    description: d\n"
        "    file: a.patch\n"
        "    upstream: [not a reference]\n"
        "  - id: b\n"
        "    kind: replace\n"
        "    target: engine\n"
        "    description: d\n"
        "    colour: blue\n"
        "    upstream: [o/r#1]\n"
        "    edits: [{file: x.py, old: a, new: b}]\n"
    )
    err = str(error(tmp_path, text))
    assert f"{tmp_path / 'patchset.yaml'}:12: patches.0.upstream" in err
    assert "is not an upstream reference" in err
    assert f"{tmp_path / 'patchset.yaml'}:17: patches.1.colour: unknown key" in err


def test_a_wrong_value_under_a_mapping_key_names_the_key_and_its_line(tmp_path: Path) -> None:
    """The schema's messages name the key the YAML author wrote: a target's name, a field's
    allowed values, the kinds; a value of the wrong type says which types."""
    path = tmp_path / "patchset.yaml"
    text = HEAD.replace("  engine: {package: demo_engine}\n", "  engine: {package: demo_engine}\n"
                        "  meta:\n    package: demo_engine\n    path: [a]\n")  # fmt: skip
    err = error(tmp_path, text)
    assert (err.line, err.reason) == (8, "targets.meta.path: expected a string or null, got a list")
    err = error(tmp_path, HEAD + _replace_patch("p", extra="    kind: sed\n").replace(
        "    kind: replace\n", ""))  # fmt: skip
    assert err.reason == (
        "patches.0.kind: must be 'diff', 'replace', 'pip', 'artifact' or 'command', not 'sed'"
    )
    assert str(path) == err.file


def test_an_id_or_hash_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    """Patterns match the whole value: ``id: "a\\n"`` is not the id ``a`` (Python's ``$``
    would let a final newline through; the schema's patterns end at the end of the text)."""
    err = error(tmp_path, HEAD + _replace_patch('"p\\n"', extra="    upstream: [o/r#1]\n"))
    assert err.reason.startswith("patches.0.id: expected a string matching '^[A-Za-z0-9]")
    assert err.reason.endswith("$'")


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    err = error(tmp_path, HEAD.replace("name: t\n", "name: t\nname: u\n"))
    assert err.line == 3 and "duplicate key" in err.reason


def _replace_patch(pid: str, target: str = "engine", extra: str = "") -> str:
    return (
        f"  - id: {pid}\n"
        "    kind: replace\n"
        f"    target: {target}\n"
        "    description: d\n"
        "    edits: [{file: x.py, old: a, new: b}]\n" + extra
    )


def test_duplicate_patch_ids_and_unknown_target(tmp_path: Path) -> None:
    refs = "    upstream: [o/r#1]\n"
    err = str(
        error(
            tmp_path,
            HEAD + _replace_patch("same", extra=refs) + _replace_patch("same", "nope", refs),
        )
    )
    assert "duplicate patch id 'same'" in err
    assert "unknown target 'nope'" in err


def test_patch_without_upstream_needs_a_status_with_reason(tmp_path: Path) -> None:
    assert "needs `upstream` references" in str(error(tmp_path, HEAD + _replace_patch("p")))
    ok = "    upstream_status: {status: Inappropriate, reason: benchmark-only knob}\n"
    status = load(tmp_path, HEAD + _replace_patch("p", extra=ok)).patches[0].upstream_status
    assert status.status == "Inappropriate"
    bad = "    upstream_status: {status: Merged, reason: whatever}\n"
    assert "upstream_status.status" in str(error(tmp_path, HEAD + _replace_patch("p", extra=bad)))


def test_escaping_paths_in_the_patchset_are_refused(tmp_path: Path) -> None:
    text = HEAD + _replace_patch("p", extra="    upstream: [o/r#1]\n").replace(
        "file: x.py", "file: ../../outside.py"
    )
    assert "escapes its folder" in str(error(tmp_path, text))


def test_json_schema_in_docs_is_current() -> None:
    on_disk = json.loads((REPO / "docs" / "patchset.schema.json").read_text())
    assert on_disk == json_schema(), "run: patchbay schema > docs/patchset.schema.json"
    # and that command writes the file as it is
    res = run_main("schema")
    assert res.code == 0 and res.out == (REPO / "docs" / "patchset.schema.json").read_text()


def test_json_schema_rejects_what_the_loader_rejects() -> None:
    schema = json_schema()
    assert schema["required"] == ["schema", "name", "image"]
    assert schema["additionalProperties"] is False


def test_a_patchset_of_pins_needs_no_target_and_a_patch_naming_one_is_refused(
    tmp_path: Path,
) -> None:
    head = "schema: 1\nname: t\nimage: {reference: example.invalid/engine:1}\npatches:\n"
    pin = "  - {id: p, kind: pip, description: d, upstream: [o/r#1], requirement: x==1}\n"
    (tmp_path / "patchset.yaml").write_text(head + pin)
    assert run_cli("validate", tmp_path).code == 0
    diff = "  - {id: a, kind: diff, target: engine, description: d, upstream: [o/r#1], file: x}\n"
    (tmp_path / "patchset.yaml").write_text(head + pin + diff)
    res = run_cli("validate", tmp_path)
    assert res.code == 2
    assert "patch a: unknown target 'engine' (no target is declared)" in res.err


def test_validate_command(tmp_path: Path) -> None:
    assert run_cli("validate", REPO / "patchsets" / "demo").code == 0
    (tmp_path / "patchset.yaml").write_text(HEAD + "  - id: a\n    kind: diff\n")
    res = run_cli("validate", tmp_path)
    assert res.code == 2
    assert res.err.startswith(f"patchbay: error: {tmp_path / 'patchset.yaml'}:7:")
    assert "Traceback" not in res.err


def test_corrupt_diff_reported_by_validate(tmp_path: Path) -> None:
    (tmp_path / "bad.patch").write_text("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n")
    (tmp_path / "patchset.yaml").write_text(
        HEAD + "  - {id: a, kind: diff, target: engine, description: d, upstream: [o/r#1], "
        "file: bad.patch}\n"
    )
    res = run_cli("validate", tmp_path)
    assert res.code == 2
    assert f"{tmp_path / 'bad.patch'}:3: patch a: corrupt diff" in res.err


def test_kimi_k3_patchset_validates_offline_with_unlocked_content_marked(tmp_path: Path) -> None:
    # as a fresh clone has it: the lock is committed, the vendored diffs are not
    import shutil

    ps = tmp_path / "kimik3-mi355x-vllm"
    shutil.copytree(
        REPO / "patchsets" / "kimik3-mi355x-vllm", ps, ignore=shutil.ignore_patterns("vendor")
    )
    res = run_cli("validate", ps)
    assert res.code == 0, res.err
    unlocked = [line for line in res.out.splitlines() if line.startswith("NOT LOCKED:")]
    doc = yaml.safe_load((ps / "patchset.yaml").read_text())
    assert [line.split(":")[1].strip() for line in unlocked] == [
        p["id"] for p in doc["patches"] if p.get("source")
    ]
    not_vendored = [line for line in unlocked if "but not vendored here" in line]
    assert len(not_vendored) == 12  # the script's ten diffs and its edit program, locked
    loaded = load_patchset(ps)
    assert {p.kind for p in loaded.patches} == {"diff", "replace", "artifact", "command", "pip"}
    assert loaded.spec.protected == ["vllm", "torch", "amd-aiter"]


def test_a_patch_deep_in_the_list_is_named_at_its_line_after_loading(tmp_path: Path) -> None:
    # the loaded patchset keeps the YAML's lines, not its data: a problem found later (a
    # patch file missing at load_patches) still names file:line of the key, for every shape
    from patchbay.apply.plan import load_patches
    from patchbay.patchset.yamlfile import load_yaml

    (tmp_path / "ok.patch").write_text("--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-a\n+b\n")
    text = HEAD
    for n in range(40):
        name = "missing.patch" if n == 34 else "ok.patch"
        if n % 3 == 0:  # flow style, one line
            text += (
                f"  - {{id: p{n}, kind: diff, target: engine, description: d, "
                f"upstream: [o/r#{n}], file: {name}}}\n"
            )
        else:
            text += f"  - id: p{n}\n    kind: diff\n    target: engine\n    description: d\n"
            text += "    upstream:\n      - o/r#1\n      - o/r#2\n" if n % 3 == 1 else ""
            text += "    upstream: [o/r#3]\n    after: [p0]\n" if n % 3 == 2 else ""
            text += f"    file: {name}\n"
    ps = load(tmp_path, text)
    lines = text.splitlines()
    with pytest.raises(InputError) as exc:
        load_patches(ps)
    assert exc.value.file == str(tmp_path / "patchset.yaml")
    assert lines[exc.value.line - 1] == "    file: missing.patch"
    assert exc.value.patch_id == "p34"
    assert lines[ps.patch_line(34, "upstream", 1) - 1] == "      - o/r#2"
    assert lines[ps.patch_line(35, "after", 0) - 1] == "    after: [p0]"
    # a key the patch does not have: the line of the patch itself, as before
    assert lines[ps.patch_line(35, "waiver") - 1] == "  - id: p35"
    assert lines[ps.document.line_of(("image", "reference")) - 1].startswith("image:")
    assert dict(ps.document.lines) == load_yaml(tmp_path / "patchset.yaml").lines


def test_yaml_aliases_build_every_copy_whole(tmp_path: Path) -> None:
    # the node tree is let go of while its values are built; what an alias names is kept
    # until its last copy is built
    import yaml

    from patchbay.patchset.yamlfile import parse_yaml

    text = dedent(
        """
        base: &base {package: demo_engine, path: [a, &leaf b]}
        list: &list [x, {y: *leaf}]
        targets:
          one: *base
          two: {inner: *base, more: *list}
        again: [*list, *list, *leaf]
        """
    )
    doc = parse_yaml(text, tmp_path / "p.yaml")
    assert doc.data == yaml.safe_load(text)
    lines = text.splitlines()
    assert lines[doc.lines[("targets", "two", "inner", "path", 1)] - 1].startswith("base:")
    assert lines[doc.lines[("again", 1, 1, "y")] - 1].startswith("list:")
