"""Bad and unusual input found by trying patchbay as a new user would: each must give a clear
answer and leave nothing half-changed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, Engine, diff_patch, run_cli, snapshot, write_patchset
from patchbay.diff.parse import parse_diff
from patchbay.errors import InputError


def _root(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    root = tmp_path / "root"
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


PKG = {"engine": {"package": "pkg"}}


@pytest.mark.parametrize(
    "body",
    [
        "@@ -1,3 +1,3 @@\n a\n b\n c\n+extra\n",  # an added line past the counts
        "@@ -1,2 +1,2 @@\n x\n-a\n+A\n-b\n+B\n",  # a second change past the counts
    ],
)
def test_hunk_lines_past_the_header_counts_are_a_corrupt_diff(body: str) -> None:
    with pytest.raises(InputError, match="more lines than its header"):
        parse_diff(f"--- a/f\n+++ b/f\n{body}".encode(), source=Path("x.patch"))


def test_format_patch_signature_after_the_last_hunk_is_fine() -> None:
    text = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n-- \n2.39.5\n\n"
    assert len(parse_diff(text.encode(), source=Path("x.patch")).files) == 1


def test_form_feed_lines_are_content_not_line_breaks(tmp_path: Path) -> None:
    root = _root(tmp_path, {"pkg/m.py": "a = 1\n\f\nc = 3\n"})
    patch = "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,3 +1,3 @@\n a = 1\n \f\n-c = 3\n+c = 4\n"
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "ff", "kind": "diff", "file": "f.patch"}],
        targets=PKG,
        files={"f.patch": patch},
    )
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 0, res.err
    assert "1 applied" in res.out
    assert (root / "pkg/m.py").read_text() == "a = 1\n\f\nc = 4\n"


def test_replace_whose_result_recreates_its_old_text_is_refused(tmp_path: Path) -> None:
    """Dedenting by removing leading spaces leaves the old text again: a re-run would apply
    it a second time. It must be refused before anything is written."""
    root = _root(tmp_path, {"pkg/m.py": "def f():\n        return 1\n"})
    ps = write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "dedent",
                "kind": "replace",
                "edits": [{"file": "pkg/m.py", "old": "    return 1\n", "new": "return 1\n"}],
            }
        ],
        targets=PKG,
    )
    before = snapshot(root)
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 1
    assert "not idempotent" in res.err
    assert "edit 1" in res.err
    assert snapshot(root) == before


def test_revert_restores_file_modes(tmp_path: Path) -> None:
    root = _root(tmp_path, {"pkg/run.sh": "echo hi\n", "pkg/gone.sh": "echo bye\n"})
    os.chmod(root / "pkg/gone.sh", 0o755)
    patch = (
        "diff --git a/pkg/run.sh b/pkg/run.sh\nold mode 100644\nnew mode 100755\n"
        "diff --git a/pkg/gone.sh b/pkg/gone.sh\ndeleted file mode 100755\n"
        "--- a/pkg/gone.sh\n+++ /dev/null\n@@ -1 +0,0 @@\n-echo bye\n"
    )
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "m", "kind": "diff", "file": "m.patch"}],
        targets=PKG,
        files={"m.patch": patch},
    )
    assert run_cli("apply", ps, "--root", root).code == 0
    assert os.stat(root / "pkg/run.sh").st_mode & 0o777 == 0o755
    assert not (root / "pkg/gone.sh").exists()
    assert run_cli("revert", ps, "--root", root).code == 0
    assert os.stat(root / "pkg/run.sh").st_mode & 0o777 == 0o644
    assert os.stat(root / "pkg/gone.sh").st_mode & 0o777 == 0o755


def test_an_interpreter_that_is_not_python(tmp_path: Path) -> None:
    res = run_cli("status", REPO / "patchsets" / "demo", "--python", "/bin/echo")
    assert res.code == 2
    assert "printed no probe answer" in res.err
    assert "Traceback" not in res.err


@pytest.mark.parametrize(
    "ledger", ['{"format": 1}', '{"format": 1, "patchsets": {"demo": {"entries": [{}]}}}']
)
def test_a_damaged_ledger_is_a_clear_error(engine: Engine, ledger: str) -> None:
    engine.state_dir.mkdir(parents=True)
    (engine.state_dir / "ledger.json").write_text(ledger)
    res = run_cli("status", REPO / "patchsets" / "demo", "--python", engine.python)
    assert res.code == 2
    assert f"{engine.state_dir / 'ledger.json'}: ledger is damaged" in res.err
    assert "Traceback" not in res.err


def test_file_names_with_markup_characters_are_printed_as_they_are(tmp_path: Path) -> None:
    name = "pkg/x[/bold]y[red].py"
    root = _root(tmp_path, {name: "a = 1\n"})
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "m", "kind": "diff", "file": "p.patch"}],
        targets=PKG,
        files={"p.patch": diff_patch(name, "b = 1\n", "b = 2\n")},
    )
    res = run_cli("status", ps, "--root", root)
    assert res.code == 1
    assert "Traceback" not in res.err
    assert "x[/bold]y[red].py" in res.out


def test_demo_patchset_by_name_from_the_repository_root() -> None:
    res = run_cli("validate", "demo", cwd=REPO)
    assert res.code == 0, res.err
    assert "patchsets/demo/patchset.yaml: valid" in res.out


def test_status_exits_1_when_apply_would_refuse_an_outdated_patch(tmp_path: Path) -> None:
    root = _root(tmp_path, {"pkg/m.py": "a = 1\n"})
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "p", "kind": "diff", "file": "p.patch"}],
        targets=PKG,
        files={"p.patch": diff_patch("pkg/m.py", "a = 1\n", "a = 2\n")},
    )
    assert run_cli("apply", ps, "--root", root).code == 0
    (ps / "p.patch").write_text(diff_patch("pkg/m.py", "a = 1\n", "a = 3\n"))
    res = run_cli("status", ps, "--root", root)
    assert res.code == 1
    assert "outdated" in res.out
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 1
    assert f"--root {root} --upgrade" in res.err  # the exact command to run


def test_unwritable_record_path_refused_before_anything_changes(engine: Engine) -> None:
    before = snapshot(engine.site)
    bad = Path(os.devnull) / "record.json"
    res = run_cli("apply", REPO / "patchsets" / "demo", "--python", engine.python, "--record", bad)
    assert res.code == 2
    assert f"--record cannot be created: {os.devnull} is not a folder" in res.err
    assert snapshot(engine.site) == before


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("strip: true", "strip"),
        ("strip: !!python/object:os.system 1", "YAML tag"),
    ],
)
def test_wrong_types_and_tags_are_not_coerced(tmp_path: Path, line: str, message: str) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "p", "kind": "diff", "file": "p.patch"}],
        targets=PKG,
        files={"p.patch": diff_patch("pkg/m.py", "a\n", "b\n")},
    )
    text = (ps / "patchset.yaml").read_text()
    indent = text[: text.index("file: p.patch")].rsplit("\n", 1)[1]
    text = text.replace("file: p.patch\n", f"file: p.patch\n{indent}{line}\n")
    (ps / "patchset.yaml").write_text(text)
    res = run_cli("validate", ps)
    assert res.code == 2
    assert message in res.err


def test_root_that_is_itself_a_git_work_tree_with_filters(tmp_path: Path) -> None:
    root = _root(tmp_path, {"pkg/m.py": "a = 1\n"})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitattributes").write_text("* filter=evil\n")
    subprocess.run(
        ["git", "-C", str(root), "config", "filter.evil.smudge", "sed s/a/EVIL/"], check=True
    )
    subprocess.run(["git", "-C", str(root), "config", "core.autocrlf", "true"], check=True)
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "p", "kind": "diff", "file": "p.patch"}],
        targets=PKG,
        files={"p.patch": diff_patch("pkg/m.py", "a = 1\n", "a = 2\n")},
    )
    res = run_cli("apply", ps, "--root", root)
    assert res.code == 0, res.err
    assert (root / "pkg/m.py").read_bytes() == b"a = 2\n"


def test_hunk_that_must_match_at_end_of_file_says_so(tmp_path: Path) -> None:
    root = _root(tmp_path, {"pkg/m.py": "x\na\nb\nc\ny\n"})
    patch = "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -2,3 +2,3 @@\n a\n b\n-c\n+C\n"
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "p", "kind": "diff", "file": "p.patch"}],
        targets=PKG,
        files={"p.patch": patch},
    )
    doc = json.loads(run_cli("status", ps, "--root", root, "--json").out)
    detail = doc["patches"][0]["hunks"][0]["detail"]
    assert "must match at the end of the file" in detail


def test_version_flag() -> None:
    res = run_cli("--version")
    assert res.code == 0
    assert res.out.strip() == "0.1.0"
