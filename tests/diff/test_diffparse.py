"""The diff parser: what git apply accepts, and corrupt diffs named by file and line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import write_patchset
from inprocess import run_main
from patchbay.diff.parse import git_header_names, parse_diff
from patchbay.errors import InputError

SRC = Path("x.patch")


def parse(text: str, strip: int = 1):
    return parse_diff(text.encode(), source=SRC, strip=strip)


def test_plain_unified_diff_with_timestamps_and_preamble() -> None:
    parsed = parse(
        "Description: DEP-3 headers and a commit message are ignored\n"
        "Origin: upstream\n"
        "--- a/pkg/mod.py\t2026-01-01 00:00:00.000000000 +0000\n"
        "+++ b/pkg/mod.py\t2026-01-02 00:00:00.000000000 +0000\n"
        "@@ -1,2 +1,2 @@\n"
        " a\n"
        "-b\n"
        "+c\n"
    )
    (fp,) = parsed.files
    assert (fp.old_path, fp.new_path) == ("pkg/mod.py", "pkg/mod.py")
    (h,) = fp.hunks
    assert h.preimage == ["a\n", "b\n"] and h.postimage == ["a\n", "c\n"]
    assert h.line == 5


def test_empty_line_inside_a_hunk_is_an_empty_context_line() -> None:
    parsed = parse("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-x\n+y\n\n z\n")
    assert parsed.files[0].hunks[0].preimage == ["x\n", "\n", "z\n"]


def test_no_newline_at_end_of_file() -> None:
    parsed = parse(
        "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+new\n"
        "\\ No newline at end of file\n"
    )
    h = parsed.files[0].hunks[0]
    assert h.preimage == ["old"] and h.postimage == ["new"]


def test_crlf_patch_is_read_as_lf_and_says_so() -> None:
    data = b"--- a/f\r\n+++ b/f\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n"
    parsed = parse_diff(data, source=SRC)
    assert parsed.crlf_normalised
    assert parsed.files[0].path == "f"
    assert parsed.files[0].hunks[0].postimage == ["b\n"]


def test_git_new_deleted_renamed_and_mode() -> None:
    parsed = parse(
        "diff --git a/new.py b/new.py\nnew file mode 100755\nindex 0000000..1111111\n"
        "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x = 1\n"
        "diff --git a/old.py b/old.py\ndeleted file mode 100644\n"
        "--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-y = 2\n"
        "diff --git a/a.py b/b.py\nsimilarity index 100%\nrename from a.py\nrename to b.py\n"
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    )
    new, deleted, renamed, mode = parsed.files
    assert new.is_new and new.new_mode == "100755" and new.path == "new.py"
    assert deleted.is_delete and deleted.path == "old.py"
    assert renamed.is_rename and (renamed.old_path, renamed.new_path) == ("a.py", "b.py")
    assert (mode.old_mode, mode.new_mode) == ("100644", "100755")


def test_binary_git_patch_keeps_its_payload() -> None:
    parsed = parse(
        "diff --git a/k.co b/k.co\nindex 1234567..89abcde 100644\nGIT binary patch\n"
        "literal 3\nKcmZ?wU|;|M00aO5\n\nliteral 0\nKcmV+b0RR6000031\n\n"
    )
    (fp,) = parsed.files
    assert fp.binary is not None and fp.binary[0] == "literal 3\n"
    assert (fp.index_old, fp.index_new) == ("1234567", "89abcde")


def test_strip_levels() -> None:
    text = "--- a/x/y/z.py\n+++ b/x/y/z.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert parse(text, strip=0).files[0].path == "a/x/y/z.py"
    assert parse(text, strip=2).files[0].path == "y/z.py"
    with pytest.raises(InputError, match="removes the whole path"):
        parse(text, strip=4)


@pytest.mark.parametrize(
    ("path", "strip", "message"),
    [
        ("a/../../etc/passwd", 1, "escapes its folder"),
        ("/etc/passwd", 0, "absolute"),
        ("a/pkg/.git/config", 1, ".git folder"),
    ],
)
def test_paths_that_escape_the_root_are_refused(path: str, strip: int, message: str) -> None:
    with pytest.raises(InputError, match=message) as exc:
        parse(f"--- {path}\n+++ {path}\n@@ -1 +1 @@\n-a\n+b\n", strip=strip)
    assert exc.value.file == "x.patch" and exc.value.line == 1


def test_truncated_hunk_names_file_and_line() -> None:
    with pytest.raises(InputError) as exc:
        parse("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n")
    assert exc.value.line == 3
    assert "ends early" in str(exc.value)
    assert str(exc.value).startswith("x.patch:3: corrupt diff")


def test_garbage_line_inside_a_hunk() -> None:
    with pytest.raises(InputError) as exc:
        parse("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n*b\n+c\n")
    assert exc.value.line == 5
    assert "unexpected line" in exc.value.reason


def test_not_a_diff_at_all() -> None:
    with pytest.raises(InputError, match="no file patches found"):
        parse("just some text\n")


def test_binary_without_content_is_rejected() -> None:
    with pytest.raises(InputError, match="--binary"):
        parse(
            "diff --git a/k.co b/k.co\nindex 1..2 100644\nBinary files a/k.co and b/k.co differ\n"
        )


CUT_DIFF = (
    "diff --git a/pkg/w.py b/pkg/w.py\nindex 307e3fb..70c0fe0 100644\n"
    "--- a/pkg/w.py\n+++ b/pkg/w.py\n"
    "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    "@@ -9,2 +9,2 @@\n x\n-return [r * 2 for r in batch]\n+return [r * 3 for r in batch]\n"
)


@pytest.mark.parametrize(
    ("cut", "line"),
    [
        (len(CUT_DIFF) - 12, 13),  # mid-line: the target would end "return [r * 3 fo"
        (len(CUT_DIFF) - 1, 13),  # only the last newline missing: it would strip the file's
        (CUT_DIFF.index("+B\n") + 2, 8),  # mid-hunk, the line cut before its newline
    ],
)
def test_a_last_line_without_newline_or_marker_is_a_truncated_patch(cut: int, line: int) -> None:
    with pytest.raises(InputError) as exc:
        parse(CUT_DIFF[:cut])
    assert exc.value.line == line
    assert str(exc.value).startswith(f"x.patch:{line}: corrupt diff: hunk")
    assert "truncated" in exc.value.reason


def test_a_header_line_without_newline_is_a_truncated_patch() -> None:
    text = "diff --git a/e.py b/e.py\nnew file mode 100644"  # would create an empty file
    with pytest.raises(InputError, match="truncated patch") as exc:
        parse(text)
    assert exc.value.line == 2


def test_a_marker_makes_a_last_line_without_newline_whole() -> None:
    whole = parse("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file")
    assert whole.files[0].hunks[0].postimage == ["b"]


def test_every_cut_of_a_diff_is_refused_or_keeps_only_whole_hunks() -> None:
    """git's rule: a hunk whose counts are not met, or whose last line is cut, is corrupt. A
    cut between two hunks is a shorter valid diff; no cut may yield a changed hunk."""
    full = {h.line: h.lines for h in parse(CUT_DIFF).files[0].hunks}
    accepted = []
    for cut in range(len(CUT_DIFF) + 1):
        try:
            parsed = parse(CUT_DIFF[:cut])
        except InputError as exc:
            assert exc.file == "x.patch" and (exc.line or "no file patches" in exc.reason)
            continue
        for fp in parsed.files:
            for hunk in fp.hunks:
                assert hunk.lines == full[hunk.line], f"cut at {cut} changed hunk {hunk.index}"
        accepted.append(cut)
    # the cuts before the first hunk (kinds refuse a file patch without hunks), after the
    # first hunk, and the whole diff
    assert CUT_DIFF.index("@@ -9") in accepted and len(CUT_DIFF) in accepted


def _git(repo: Path, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout


def test_a_real_git_diff_of_names_with_spaces_is_read_and_applied(tmp_path: Path) -> None:
    """git writes ``diff --git a/x y b/x y`` unquoted; git's rule splits it where both halves
    name one path, and the ``---``/``+++`` lines (which git ends with a tab) decide."""
    repo = tmp_path / "tree"
    (repo / "demo_engine").mkdir(parents=True)
    (repo / "demo_engine" / "my kernels.csv").write_text("a\nb\n")
    (repo / "demo_engine" / "b x b.py").write_text("x = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    (repo / "demo_engine" / "my kernels.csv").write_text("a\nB\n")
    (repo / "demo_engine" / "b x b.py").write_text("x = 2\n")
    (repo / "demo_engine" / "new one.py").write_text("y = 1\n")
    _git(repo, "add", "-N", ".")
    diff = _git(repo, "diff")
    assert "diff --git a/demo_engine/my kernels.csv b/demo_engine/my kernels.csv\n" in diff
    parsed = parse(diff)
    assert sorted(fp.path for fp in parsed.files) == [
        "demo_engine/b x b.py",
        "demo_engine/my kernels.csv",
        "demo_engine/new one.py",
    ]
    assert [fp.path for fp in parsed.files if fp.is_new] == ["demo_engine/new one.py"]
    _git(repo, "checkout", "-q", "--", ".")
    (repo / "demo_engine" / "new one.py").unlink()
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "spaces", "kind": "diff", "file": "patches/s.patch"}],
        files={"patches/s.patch": diff},
    )
    res = run_main("apply", ps, "--root", repo, "--state-dir", tmp_path / "state")
    assert res.code == 0, res.err
    assert (repo / "demo_engine" / "my kernels.csv").read_text() == "a\nB\n"
    assert (repo / "demo_engine" / "new one.py").read_text() == "y = 1\n"
    assert run_main("revert", ps, "--root", repo, "--state-dir", tmp_path / "state").code == 0
    assert (repo / "demo_engine" / "b x b.py").read_text() == "x = 1\n"


@pytest.mark.parametrize(
    ("rest", "names"),
    [
        ("a/x y b/x y", ("a/x y", "b/x y")),
        ("a/b b/c b/b b/c", ("a/b b/c", "b/b b/c")),
        ("a/old.py b/new.py", ("a/old.py", "b/new.py")),  # a rename: its rename lines decide
        ("a/p q b/r s", None),  # no split names one path: ---/+++ must say
        ('"a/t\\tb" b/t\tb', ("a/t\tb", "b/t\tb")),
        ('a/x y "b/x y"', ("a/x y", "b/x y")),
    ],
)
def test_git_header_halves_follow_gits_split_rule(rest: str, names: tuple[str, str] | None) -> None:
    assert git_header_names(rest, 1) == names


def test_a_header_with_spaces_and_no_agreeing_split_takes_the_plus_minus_names() -> None:
    parsed = parse("diff --git a/p q b/r s\n--- a/p q\t\n+++ b/p q\t\n@@ -1 +1 @@\n-a\n+b\n")
    assert parsed.files[0].path == "p q"
    with pytest.raises(InputError, match="names two different files"):
        parse("diff --git a/p q b/r s\nold mode 100644\nnew mode 100755\n")


def test_an_upstream_diffs_sections_are_chosen_by_names_with_spaces_too() -> None:
    """``vendor`` keeps the sections of an upstream diff under a source's ``paths``: the
    section names come from the same header rule (a section with spaces was dropped)."""
    from patchbay.carry.vendor import split_paths

    def section(name: str) -> str:
        return (
            f"diff --git a/{name} b/{name}\n--- a/{name}\t\n+++ b/{name}\t\n@@ -1 +1 @@\n-a\n+b\n"
        )

    diff = section("csrc/my kernel.cu") + section("docs/a b.md") + section("csrc/k.cu")
    kept, left = split_paths(diff, ["csrc"])
    assert kept == section("csrc/my kernel.cu") + section("csrc/k.cu")
    assert left == ["docs/a b.md"]


def test_a_symlink_diff_is_refused_as_unsupported_not_as_corrupt(tmp_path: Path) -> None:
    text = (
        "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n"
        "@@ -0,0 +1 @@\n+target\n\\ No newline at end of file\n"
    )
    with pytest.raises(InputError) as err:
        parse_diff(text.encode(), source=tmp_path / "x.patch", strip=1)
    assert err.value.reason == "symlink patches are not supported"
    assert err.value.line == 1


def test_a_dangling_link_and_an_unreadable_patch_file_say_so(tmp_path: Path) -> None:
    from patchbay.patchset.inputfiles import read_input

    (tmp_path / "a.patch").symlink_to("gone.patch")
    with pytest.raises(InputError) as err:
        read_input(tmp_path / "a.patch", what="patch file")
    assert err.value.reason == "patch file is a dangling symlink (to gone.patch)"
    (tmp_path / "b.patch").symlink_to("b.patch")
    with pytest.raises(InputError) as err:
        read_input(tmp_path / "b.patch", what="patch file")
    assert err.value.reason == "patch file is a symlink loop"
