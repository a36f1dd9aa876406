"""The one path gate: every path a patch names is unquoted once, checked, and only then used.

Case 011 (a rename whose quoted target climbs out of the root) and its variants for every
header a diff can carry a path in, and every way a path can be spelled.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import CASES, Result, snapshot, write_patchset
from inprocess import run_main
from patchbay.diff.parse import parse_diff
from patchbay.environment.paths import (
    PathRejected,
    check_relative,
    contained,
    quote_c,
    resolve_under,
    unquote_c,
)
from patchbay.environment.tree import Tree
from patchbay.errors import InputError, RefusedError


def cli(*args: str | Path) -> Result:
    """The CLI in-process (the same code path as the console script, without a process)."""
    res = run_main(*args)
    return Result(res.code, res.out, res.err)


def _engine_tree(tmp_path: Path) -> Path:
    """An unpacked image folder two levels below ``tmp_path`` (room for ``../..`` to land)."""
    root = tmp_path / "image" / "site"
    (root / "demo_engine").mkdir(parents=True)
    (root / "demo_engine" / "worker.py").write_text("def work():\n    return 1\n")
    return root


def _everything(tmp_path: Path) -> set[str]:
    return {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")}


def test_011_hostile_rename_refused_by_validate_status_and_apply(tmp_path: Path) -> None:
    root = _engine_tree(tmp_path)
    patch = (CASES / "011-hostile-rename" / "rename.patch").read_bytes()
    ps = write_patchset(
        tmp_path / "ps", [{"id": "move", "kind": "diff", "file": "rename.patch"}],
        files={"rename.patch": patch},
    )  # fmt: skip
    before, listing = snapshot(root), _everything(tmp_path)
    for args in (["validate", ps], ["status", ps, "--root", root], ["apply", ps, "--root", root]):
        res = cli(*args)
        assert res.code == 2, (args, res.out, res.err)
        first = res.err.splitlines()[0]
        assert f"{ps / 'rename.patch'}:4:" in first  # the `rename to` line
        assert "patch move" in first and "refused path" in first
        assert "Traceback" not in res.err
    assert snapshot(root) == before
    assert _everything(tmp_path) == listing  # nothing written inside or outside the root


HEADERS = {
    "---/+++": (
        "--- {p}\n+++ {p}\n@@ -1 +1 @@\n-a\n+b\n",
        1,
    ),
    "diff --git a/": (
        "diff --git {p} b/demo_engine/worker.py\nold mode 100644\nnew mode 100755\n",
        1,
    ),
    "diff --git b/": (
        "diff --git a/demo_engine/worker.py {p}\nold mode 100644\nnew mode 100755\n",
        1,
    ),
    "rename from": (
        "diff --git a/x b/y\nsimilarity index 100%\nrename from {r}\nrename to demo_engine/y.py\n",
        3,
    ),
    "rename to": (
        "diff --git a/x b/y\nsimilarity index 100%\nrename from demo_engine/worker.py\n"
        "rename to {r}\n",
        4,
    ),
    "copy from": ("diff --git a/x b/y\ncopy from {r}\ncopy to demo_engine/y.py\n", 2),
    "copy to": ("diff --git a/x b/y\ncopy from demo_engine/worker.py\ncopy to {r}\n", 3),
}
# (spelling with the a/ b/ prefix, the same without it, what the message says)
SPELLINGS = {
    "dotdot": ("a/../../OUTSIDE.py", "../../OUTSIDE.py", "escapes its folder"),
    "octal dots": (r'"a/\056\056/\056\056/OUTSIDE.py"', r'"\056\056/\056\056/OUTSIDE.py"', "..'"),
    "dot-slash dotdot": ("a/./../OUTSIDE.py", "./../OUTSIDE.py", "escapes its folder"),
    "double slash dotdot": ("a/x//../../OUTSIDE.py", "x//../../OUTSIDE.py", "escapes"),
    "trailing slash": ("a/../", "../", "escapes its folder"),
    # -p1 strips the first component of a/ b/ names: "//etc" is what stays absolute
    "absolute": ("//etc/OUTSIDE.py", "/etc/OUTSIDE.py", "absolute"),
    "octal absolute": (r'"\057\057etc/OUTSIDE.py"', r'"\057etc/OUTSIDE.py"', "absolute"),
    "octal NUL": (r'"a/x\000.py"', r'"x\000.py"', "NUL"),
    "short NUL": (r'"a/x\0.py"', r'"x\0.py"', "invalid escape"),
    "octal 777": (r'"a/x\777.py"', r'"x\777.py"', "invalid escape"),
    "unknown escape": (r'"a/x\q.py"', r'"x\q.py"', "invalid escape"),
    "unterminated": ('"a/x.py', '"x.py', "no closing quote"),
    "quoted twice": (r'"\"a/\\056\\056/OUTSIDE.py\""', r'"\"\\056\\056/OUTSIDE.py\""', "backslash"),
    "git folder": ("a/.git/config", ".git/config", ".git folder"),
    "control char": (r'"a/x\n.py"', r'"x\n.py"', "control character"),
}


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("header", HEADERS)
def test_every_header_and_spelling_goes_through_the_gate(header: str, spelling: str) -> None:
    template, line = HEADERS[header]
    prefixed, bare, message = SPELLINGS[spelling]
    text = template.format(p=prefixed, r=bare)
    with pytest.raises(InputError) as exc:
        parse_diff(text.encode(), source=Path("x.patch"))
    assert exc.value.line == line, (text, str(exc.value))
    assert message in str(exc.value), (text, str(exc.value))


@pytest.mark.parametrize(
    ("raw", "clean"),
    [("./a/b.py", "a/b.py"), ("a//b.py", "a/b.py"), ("a/./b.py", "a/b.py"), ("a/b/", "a/b")],
)
def test_harmless_spellings_are_normalised(raw: str, clean: str) -> None:
    assert check_relative(raw, folder=True) == clean


def test_a_file_path_with_a_trailing_slash_is_refused() -> None:
    with pytest.raises(PathRejected, match="names a folder"):
        check_relative("a/b.py/")
    with pytest.raises(InputError, match="names a folder") as exc:
        parse_diff(b"--- a/x/\n+++ b/x/\n@@ -1 +1 @@\n-a\n+b\n", source=Path("x.patch"))
    assert exc.value.line == 1


@pytest.mark.parametrize(
    "name", ["plain.py", "with space.py", 'quote".py', "naïve.py", "tab\tname.py", "back\\slash"]
)
def test_quote_c_round_trips_through_unquote_c(name: str) -> None:
    quoted = quote_c(f"a/{name}")
    if quoted.startswith('"'):
        assert unquote_c(quoted) == (f"a/{name}", "")
    else:
        assert quoted == f"a/{name}"


def test_git_is_given_the_checked_names_quoted_by_its_rules(tmp_path: Path) -> None:
    """A name git must unquote (non-ASCII, a space, a double quote) is patched at exactly that
    name; git sees patchbay's rendering of it, never the patch file's spelling."""
    root = _engine_tree(tmp_path)
    name = 'demo_engine/naïve "x" y.py'
    (root / name).write_text("a = 1\n")
    diff = f"--- {quote_c('a/' + name)}\n+++ {quote_c('b/' + name)}\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    ps = write_patchset(
        tmp_path / "ps", [{"id": "q", "kind": "diff", "file": "q.patch"}], files={"q.patch": diff}
    )
    listing = _everything(tmp_path)
    res = cli("apply", ps, "--root", root)
    assert res.code == 0, res.err
    assert (root / name).read_text() == "a = 2\n"
    assert _everything(tmp_path) - listing <= {
        str(p.relative_to(tmp_path)) for p in (root / ".patchbay").rglob("*")
    } | {str((root / ".patchbay").relative_to(tmp_path))}


def test_a_binary_payload_cannot_smuggle_file_patches_to_git(tmp_path: Path) -> None:
    text = (
        "diff --git a/k.co b/k.co\nindex 1234567..89abcde 100644\nGIT binary patch\n"
        "literal 3\nKcmZ?wU|;|M00aO5\n--- a/k.co\n+++ b/../../OUTSIDE.py\n@@ -0,0 +1 @@\n+x\n"
    )
    with pytest.raises(InputError, match="base85") as exc:
        parse_diff(text.encode(), source=Path("x.patch"))
    assert exc.value.line == 6


def test_header_names_that_disagree_are_refused_as_git_refuses_them() -> None:
    text = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/y.py\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(InputError, match="inconsistent new file name") as exc:
        parse_diff(text.encode(), source=Path("x.patch"))
    assert exc.value.line == 3


@pytest.mark.parametrize(
    "lines", ["rename from demo_engine/x.py\n", "rename to demo_engine/y.py\n", ""]
)
def test_a_git_header_that_does_not_say_which_file_is_refused_as_git_does(lines: str) -> None:
    """git apply: "git diff header lacks filename information"."""
    text = f"diff --git a/demo_engine/x.py b/demo_engine/y.py\nsimilarity index 90%\n{lines}"
    with pytest.raises(InputError, match=r"rename needs both|lacks filename") as exc:
        parse_diff(text.encode(), source=Path("x.patch"))
    assert exc.value.line == 1


def test_rename_paths_are_stripped_one_level_less_as_git_does() -> None:
    text = "diff --git a/p/x.py b/p/y.py\nrename from p/x.py\nrename to p/y.py\n"
    (fp,) = parse_diff(text.encode(), source=Path("x.patch"), strip=2).files
    assert (fp.old_path, fp.new_path) == ("x.py", "y.py")


def test_a_file_patched_twice_in_one_diff_is_refused_at_load(tmp_path: Path) -> None:
    """git would apply the second file patch on the result of the first while status judges
    both on the file as it is: refused with the line, by validate, status and apply alike."""
    root = _engine_tree(tmp_path)
    twice = (
        "--- a/demo_engine/worker.py\n+++ b/demo_engine/worker.py\n@@ -1 +1 @@\n"
        "-def work():\n+def work(n=1):\n"
        "--- a/demo_engine/worker.py\n+++ b/demo_engine/worker.py\n@@ -2 +2 @@\n"
        "-    return 1\n+    return n\n"
    )
    ps = write_patchset(
        tmp_path / "ps", [{"id": "t", "kind": "diff", "file": "t.patch"}], files={"t.patch": twice}
    )
    before = snapshot(root)
    for args in (["validate", ps], ["status", ps, "--root", root], ["apply", ps, "--root", root]):
        res = cli(*args)
        assert res.code == 2, (args, res.err)
        assert f"{ps / 't.patch'}:6:" in res.err and "patched twice" in res.err
    assert snapshot(root) == before


def test_nul_in_a_replace_file_is_bad_input_with_its_line(tmp_path: Path) -> None:
    edit = {"file": "demo_engine/x\0.py", "old": "a", "new": "b"}
    ps = write_patchset(tmp_path / "ps", [{"id": "r", "kind": "replace", "edits": [edit]}])
    res = cli("validate", ps)
    assert res.code == 2
    assert f"{ps / 'patchset.yaml'}:" in res.err.splitlines()[0] and "NUL" in res.err
    assert "Traceback" not in res.err


def test_a_target_file_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    root = _engine_tree(tmp_path)
    os.mkfifo(root / "demo_engine" / "pipe.py")
    edit = {"file": "demo_engine/pipe.py", "old": "a", "new": "b"}
    ps = write_patchset(tmp_path / "ps", [{"id": "r", "kind": "replace", "edits": [edit]}])
    res = cli("apply", ps, "--root", root)
    assert res.code == 1 and "not a regular file" in res.err


def test_a_command_output_turned_into_a_link_out_of_the_target_is_refused(
    tmp_path: Path,
) -> None:
    root = _engine_tree(tmp_path)
    outside = tmp_path / "outside.so"
    outside.write_text("outside\n")
    ps = write_patchset(
        tmp_path / "ps",
        [
            {
                "id": "build",
                "kind": "command",
                "argv": ["ln", "-s", str(outside), "demo_engine/module.so"],
                "output": "demo_engine/module.so",
                "upstream_status": {"status": "Inappropriate", "reason": "a rebuild step"},
            }
        ],
    )
    before = snapshot(root)
    res = cli("apply", ps, "--root", root)
    assert res.code == 1, res.err
    assert "declared output refused" in res.err and "symbolic link" in res.err
    assert "every file patchbay journaled was restored, but not what command" in res.err
    assert not os.path.lexists(root / "demo_engine" / "module.so")
    assert snapshot(root) == before and outside.read_text() == "outside\n"


def test_a_read_only_file_keeps_its_mode_through_apply_and_revert(tmp_path: Path) -> None:
    root = _engine_tree(tmp_path)
    worker = root / "demo_engine" / "worker.py"
    worker.chmod(0o444)
    diff = (
        "--- a/demo_engine/worker.py\n+++ b/demo_engine/worker.py\n@@ -1,2 +1,2 @@\n"
        " def work():\n-    return 1\n+    return 2\n"
    )
    ps = write_patchset(
        tmp_path / "ps", [{"id": "d", "kind": "diff", "file": "d.patch"}], files={"d.patch": diff}
    )
    assert cli("apply", ps, "--root", root).code == 0
    assert "return 2" in worker.read_text()
    assert worker.stat().st_mode & 0o7777 == 0o444
    assert cli("revert", ps, "--root", root).code == 0
    assert worker.stat().st_mode & 0o7777 == 0o444


def test_recovery_never_touches_a_path_outside_the_environment(tmp_path: Path) -> None:
    """A journal entry naming a file outside the roots (hand-edited, or hostile) is refused:
    recovery neither deletes nor replaces it, restores the rest, and says so in one line."""
    root = _engine_tree(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    journal = root / ".patchbay" / "journal"
    journal.mkdir(parents=True)
    created = root / "demo_engine" / "left_over.py"
    created.write_text("half\n")
    lines = [
        {"journal": 1, "id": "0badc0de"},
        {"n": 0, "path": str(victim), "existed": False, "created_dirs": []},
        {"n": 1, "path": str(root / "demo_engine" / ".." / ".." / ".." / "victim.txt"),
         "existed": False},
        {"n": 2, "path": str(created), "existed": False, "created_dirs": []},
        {"n": 3, "path": str(root / "demo_engine" / "worker.py")},  # a key missing
        {"n": 4, "path": str(root / "demo_engine" / "new.py"), "existed": False,
         "created_dirs": [str(tmp_path)]},
    ]  # fmt: skip
    (journal / "journal.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    ps = write_patchset(tmp_path / "ps", [{"id": "r", "kind": "replace", "edits": [
        {"file": "demo_engine/worker.py", "old": "return 1", "new": "return 2"}]}])  # fmt: skip
    res = cli("apply", ps, "--root", root)
    assert res.code == 1, res.err
    assert victim.read_text() == "keep me\n"
    assert not created.exists()  # the entry inside the root was rolled back
    assert tmp_path.is_dir()
    first = res.err.splitlines()[0]
    assert f"{journal / 'journal.jsonl'}:" in first
    assert "could not be rolled back completely" in first
    assert ":2: entry names" in res.err and ":3: entry names" in res.err
    assert ":5: entry for" in res.err and "lacks 'existed'" in res.err
    assert ":6: entry for" in res.err and "folders outside" in res.err
    assert "Traceback" not in res.err
    assert "return 1" in (root / "demo_engine" / "worker.py").read_text()  # nothing applied
    shutil.rmtree(journal)
    assert cli("apply", ps, "--root", root).code == 0


def test_contained_is_the_gate_for_absolute_journal_paths(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "link").symlink_to(tmp_path)
    assert contained(str(root / "a" / "x.py"), [root]) == root
    assert contained(str(root / "link"), [root]) == root  # the link itself: replaced, not followed
    for bad in [
        str(tmp_path / "x"),
        str(root) + "/a/../../x",
        str(root) + "//a/x",
        str(root / "link" / "x"),
        "relative/x",
        str(root / ".git" / "config"),
        str(root),
    ]:
        assert contained(bad, [root]) is None, bad


def test_the_folder_cache_of_resolve_under_refuses_what_the_walk_refuses(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("a\n")
    (root / "pkg" / "plain").write_text("not a folder\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "pkg" / "away").symlink_to(outside)
    (root / "pkg" / "link.py").symlink_to(root / "pkg" / "a.py")
    folders: dict[str, str] = {}
    assert resolve_under(root, "pkg/a.py", folders=folders) == root / "pkg" / "a.py"
    assert folders == {str(root / "pkg"): os.path.realpath(root / "pkg")}
    # the folder is known now: its files' own checks still hold
    with pytest.raises(PathRejected, match="symbolic link"):
        resolve_under(root, "pkg/link.py", folders=folders)
    with pytest.raises(PathRejected, match="is a file, not a folder"):
        resolve_under(root, "pkg/plain/b.py", folders=folders)
    for _ in range(2):  # the linked folder is refused every time, never cached
        with pytest.raises(PathRejected, match="outside target root"):
            resolve_under(root, "pkg/away/b.py", folders=folders)
    assert str(root / "pkg" / "away") not in folders
    # a missing folder is not cached: once it exists as a link out, it is refused
    assert resolve_under(root, "new/c.py", folders=folders) == root / "new" / "c.py"
    assert str(root / "new") not in folders
    (root / "new").symlink_to(outside)
    with pytest.raises(PathRejected, match="outside target root"):
        resolve_under(root, "new/c.py", folders=folders)


def test_a_tree_forgets_its_folders_when_told(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    tree = Tree({"engine": root})
    assert tree.fork().resolve("engine", "pkg/a.py") == root / "pkg" / "a.py"
    # what a command could do: the folder becomes a link out of the root
    shutil.rmtree(root / "pkg")
    (root / "pkg").symlink_to(outside)
    tree.forget_folders()
    with pytest.raises(RefusedError, match="outside target root"):
        tree.resolve("engine", "pkg/b.py")


def test_the_gate_finds_the_real_path_realpath_finds(tmp_path: Path) -> None:
    """The gate's own walk down the folders (one lstat a folder, a realpath at a link only)
    gives each path the real path ``os.path.realpath`` gives it, with or without the folder
    cache, through linked folders inside the root, links to links and folders not made yet."""
    from patchbay.environment.paths import resolve_real_under

    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.py").write_text("f\n")
    (root / "inner").symlink_to(root / "a")
    (root / "a" / "again").symlink_to(root / "inner" / "b")
    (root / "a" / "dangling").symlink_to(root / "a" / "not-yet")
    rels = [
        "a/b/f.py",
        "inner/b/f.py",
        "a/again/f.py",
        "inner/again/new.py",
        "a/b/c/d/new.py",
        "new/x/y.py",
        "a/dangling/z.py",
        "top.py",
    ]
    folders: dict[str, str] = {}
    for _ in range(2):  # the second time from the cache
        for rel in rels:
            path, real = resolve_real_under(root, rel, folders=folders)
            assert path == root / rel
            assert real == os.path.realpath(root / rel), rel
            assert resolve_real_under(root, rel)[1] == real
