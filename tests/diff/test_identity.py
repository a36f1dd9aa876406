"""Patch identity: a canonical form of the parsed diff, not the file's bytes.

The same diff with 7- and 12-digit ``index`` lines, with hunk-header section text, with mail
headers and a signature has one identity; ``status`` keeps calling it applied, ``vendor``
re-locks it with a note; a ledger written before identities keeps working.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli, write_patchset
from patchbay.diff.identity import diff_identity
from patchbay.diff.parse import parse_diff
from servers import Response, Server

PLAIN = (
    "diff --git a/demo_engine/decode.py b/demo_engine/decode.py\n"
    "index 1a2b3c4..5d6e7f8 100644\n"
    "--- a/demo_engine/decode.py\n"
    "+++ b/demo_engine/decode.py\n"
    "@@ -1,3 +1,3 @@\n"
    " def plan(n):\n"
    "-    return n\n"
    "+    return n * 2\n"
    " # end\n"
)
LONG_INDEX = PLAIN.replace("1a2b3c4..5d6e7f8", "1a2b3c4d5e6f..5d6e7f8a9b0c")
SECTION = PLAIN.replace("@@ -1,3 +1,3 @@\n", "@@ -1,3 +1,3 @@ def plan(n):\n")
MAIL = (
    "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"
    "From: A Developer <dev@example.invalid>\n"
    "Date: Tue, 1 Dec 2026 10:00:00 +0000\n"
    "Subject: [PATCH] decode: double the plan\n"
    "\n"
    "---\n"
    " demo_engine/decode.py | 2 +-\n"
    " 1 file changed, 1 insertion(+), 1 deletion(-)\n"
    "\n" + PLAIN + "-- \n2.39.0\n"
)
TREE = "def plan(n):\n    return n\n# end\n"


def _identity(text: str) -> str:
    return diff_identity(parse_diff(text.encode(), source=Path("p.patch")))


@pytest.mark.parametrize("form", [LONG_INDEX, SECTION, MAIL])
def test_the_same_diff_in_another_form_has_the_same_identity(form: str) -> None:
    assert form.encode() != PLAIN.encode()
    assert _identity(form) == _identity(PLAIN)


@pytest.mark.parametrize(
    "other",
    [
        PLAIN.replace("n * 2", "n * 3"),  # another change
        PLAIN.replace("return n\n+", "return  n\n+"),  # whitespace counts: zero fuzz
        PLAIN.replace("decode.py", "encode.py"),  # another file
        PLAIN.replace("index 1a2b3c4..5d6e7f8 100644\n", "old mode 100644\nnew mode 100755\n"),
    ],
)
def test_another_diff_has_another_identity(other: str) -> None:
    assert _identity(other) != _identity(PLAIN)


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "demo_engine").mkdir(parents=True)
    (root / "demo_engine" / "decode.py").write_text(TREE)
    return root


def _patchset(tmp_path: Path) -> Path:
    patches = [{"id": "plan", "kind": "diff", "file": "p.patch"}]
    return write_patchset(tmp_path / "ps", patches, files={"p.patch": PLAIN})


def _status(ps: Path, root: Path) -> dict:
    res = run_cli("status", ps, "--root", root, "--json")
    return json.loads(res.out)["patches"][0]


def test_an_applied_patch_rewritten_in_another_form_stays_applied(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    ps = _patchset(tmp_path)
    assert run_cli("apply", ps, "--root", root).code == 0
    for form in (LONG_INDEX, MAIL):
        (ps / "p.patch").write_text(form)
        patch = _status(ps, root)
        assert patch["status"] == "applied", patch
        assert patch["applied_by"] == "patchbay"
        assert any("bytes changed" in n and "not its content" in n for n in patch["notes"])
        assert "nothing to do" in run_cli("apply", ps, "--root", root).out
    (ps / "p.patch").write_text(PLAIN.replace("n * 2", "n * 3"))
    assert _status(ps, root)["status"] == "outdated"


def test_a_ledger_written_before_identities_keeps_working(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    ps = _patchset(tmp_path)
    assert run_cli("apply", ps, "--root", root).code == 0
    (ledger,) = root.rglob("ledger.json")  # the state folder of a --root tree is inside it
    data = json.loads(ledger.read_text())
    for entries in data["patchsets"].values():
        for entry in entries["entries"]:
            assert entry.pop("patch_identity")  # the new ledger has it; an older one did not
    ledger.write_text(json.dumps(data))
    patch = _status(ps, root)
    assert patch["status"] == "applied"
    assert patch["ledger"]["patch_identity"] is None
    assert "nothing to do" in run_cli("apply", ps, "--root", root).out
    assert run_cli("revert", ps, "--root", root).code == 0
    assert (root / "demo_engine" / "decode.py").read_text() == TREE


def test_vendor_relocks_the_same_diff_served_in_another_form(tmp_path: Path) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "d", "kind": "diff", "source": {"repo": "o/r", "commit": "c" * 40}}],
    )
    root = _tree(tmp_path)
    path = "/repos/o/r/commits/" + "c" * 40
    with Server() as server:
        server.add(path, Response(body=PLAIN.encode()))
        assert run_cli("vendor", ps, "--api-url", server.url).code == 0
        assert run_cli("apply", ps, "--root", root).code == 0
        lock = json.loads((ps / "patchbay.lock").read_text())
        # a lock written before identities: the identity comes from the vendored file
        del lock["sources"]["d"]["identity"]
        (ps / "patchbay.lock").write_text(json.dumps(lock))
        server.add(path, Response(body=LONG_INDEX.encode()))
        res = run_cli("vendor", ps, "--api-url", server.url)
        assert res.code == 0, res.err
        assert "same identity" in res.out and "re-locked" in res.out
        assert (ps / "vendor" / "d.patch").read_text() == LONG_INDEX
        assert _status(ps, root)["status"] == "applied"
        server.add(path, Response(body=PLAIN.replace("n * 2", "n * 3").encode()))
        res = run_cli("vendor", ps, "--api-url", server.url)
        assert res.code == 1 and "now serves other content" in res.err
