"""A diff patch whose source is a here-document of a script at a commit: ``vendor`` cuts it
from a local copy (``--from``, checked against the lock, no network) or from the forge's
contents API (a real HTTP server on 127.0.0.1), locks both hashes, and ``apply`` uses it;
a copy that is not the locked script, a missing or doubled delimiter, an expanding
here-document and a lock without its vendored file are each named."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

from conftest import write_patchset
from inprocess import run_main
from servers import Response, Server

COMMIT = "1" * 40
DIFF_A = (
    "--- a/demo_engine/envs.py\n+++ b/demo_engine/envs.py\n"
    "@@ -1,2 +1,3 @@\n A = 1\n B = 2\n+C = 3\n"
)
SCRIPT = (
    "#!/bin/sh\nset -e\n"
    f"cat > /tmp/a.diff <<'DIFF_A'\n{DIFF_A}DIFF_A\n"
    'git apply -p1 --directory="$ROOT" /tmp/a.diff\n'
    "python - <<'PY'\nprint('a step that is no diff')\nPY\n"
)
SOURCE = {"repo": "ops-org/scripts", "commit": COMMIT, "file": "ops/patch.sh", "heredoc": "DIFF_A"}


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _setup(
    tmp_path: Path, script: str = SCRIPT, heredoc: str = "DIFF_A"
) -> tuple[Path, Path, Path]:
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "envs-c", "kind": "diff", "source": {**SOURCE, "heredoc": heredoc}}],
    )
    copy = tmp_path / "copy" / "patch.sh"
    copy.parent.mkdir()
    copy.write_text(script)
    root = tmp_path / "root"
    (root / "demo_engine").mkdir(parents=True)
    (root / "demo_engine" / "envs.py").write_text("A = 1\nB = 2\n")
    return ps, copy, root


def test_vendor_from_a_local_copy_locks_the_here_document_and_asks_nothing_of_the_forge(
    tmp_path: Path,
) -> None:
    ps, copy, root = _setup(tmp_path)
    with Server() as forge:
        res = run_main("vendor", ps, "--from", copy, "--api-url", forge.url)
        assert res.code == 0, res.err
        assert forge.log == []
    assert f"locked envs-c (from {copy})" in res.out
    entry = json.loads((ps / "patchbay.lock").read_text())["sources"]["envs-c"]
    assert entry["sha256"] == _sha(DIFF_A)
    assert entry["origin_sha256"] == _sha(SCRIPT)
    assert entry["ref"] == f"ops-org/scripts@{COMMIT}:ops/patch.sh<<DIFF_A"
    assert (ps / "vendor" / "envs-c.patch").read_text() == DIFF_A
    res = run_main("apply", ps, "--root", root, "--state-dir", tmp_path / "state")
    assert res.code == 0, res.err
    assert (root / "demo_engine" / "envs.py").read_text() == "A = 1\nB = 2\nC = 3\n"


def test_a_copy_that_is_not_the_locked_script_is_refused_and_nothing_changes(
    tmp_path: Path,
) -> None:
    ps, copy, _ = _setup(tmp_path)
    assert run_main("vendor", ps, "--from", copy).code == 0
    lock_before = (ps / "patchbay.lock").read_bytes()
    other = tmp_path / "elsewhere" / "patch.sh"
    other.parent.mkdir()
    other.write_text(SCRIPT.replace("+C = 3", "+C = 4"))
    res = run_main("vendor", ps, "--from", other)
    assert res.code == 1
    assert f"the local copy {other} (sha256 {_sha(other.read_bytes())})" in res.err
    assert f"as locked (sha256 {_sha(SCRIPT)})" in res.err
    assert (ps / "patchbay.lock").read_bytes() == lock_before
    assert (ps / "vendor" / "envs-c.patch").read_text() == DIFF_A
    # a copy of another name is not taken for the script at all; the locked one still is
    (tmp_path / "elsewhere" / "other.sh").write_text(SCRIPT)
    res = run_main("vendor", ps, "--offline", "--from", tmp_path / "elsewhere" / "other.sh")
    assert "not locked (offline): envs-c: no --from copy named patch.sh" in res.out


def _contents(data: bytes) -> Response:
    body = {"type": "file", "encoding": "base64", "content": base64.b64encode(data).decode()}
    return Response(
        body=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "ETag": f'"{_sha(data)[:16]}"'},
    )


def test_vendor_reads_the_script_from_the_forge_at_the_commit_and_refuses_other_bytes(
    tmp_path: Path,
) -> None:
    ps, copy, _ = _setup(tmp_path)
    route = "/repos/ops-org/scripts/contents/ops/patch.sh"
    with Server() as forge:
        forge.add(route, _contents(SCRIPT.encode()))
        res = run_main("vendor", ps, "--api-url", forge.url)
        assert res.code == 0, res.err
        assert [p for p, _ in forge.log] == [f"{route}?ref={COMMIT}"]
    entry = json.loads((ps / "patchbay.lock").read_text())["sources"]["envs-c"]
    assert (entry["sha256"], entry["origin_sha256"]) == (_sha(DIFF_A), _sha(SCRIPT))
    # the local copy is the same file: vendor --from agrees with the forge
    assert run_main("vendor", ps, "--from", copy).code == 0
    lock_before = (ps / "patchbay.lock").read_bytes()
    with Server() as forge:
        forge.add(route, _contents(SCRIPT.replace("B = 2", "B = 3").encode()))
        res = run_main("vendor", ps, "--api-url", forge.url)
    assert res.code == 1
    assert "serves other bytes" in res.err and _sha(SCRIPT) in res.err
    assert (ps / "patchbay.lock").read_bytes() == lock_before


def test_a_missing_a_doubled_and_an_expanding_here_document_are_named(tmp_path: Path) -> None:
    ps, copy, _ = _setup(tmp_path / "missing", heredoc="DIFF_B")
    res = run_main("vendor", ps, "--from", copy)
    assert res.code == 2
    assert f"{copy}: patch envs-c: no here-document <<DIFF_B in the script" in res.err
    assert not (ps / "patchbay.lock").exists()

    doubled = SCRIPT + f"cat > /tmp/b.diff <<'DIFF_A'\n{DIFF_A}DIFF_A\n"
    ps, copy, _ = _setup(tmp_path / "doubled", script=doubled)
    res = run_main("vendor", ps, "--from", copy)
    assert res.code == 2
    assert "2 here-documents <<DIFF_A in the script (lines 3, 15)" in res.err

    expanding = SCRIPT.replace("<<'DIFF_A'", "<<DIFF_A").replace("+C = 3", "+C = $HOME")
    ps, copy, _ = _setup(tmp_path / "expanding", script=expanding)
    res = run_main("vendor", ps, "--from", copy)
    assert res.code == 2
    assert f"{copy}:3: patch envs-c: here-document <<DIFF_A is unquoted" in res.err
    assert not (ps / "vendor").exists()


def test_a_locked_source_whose_diff_is_not_vendored_here_is_listed_not_failed(
    tmp_path: Path,
) -> None:
    ps, copy, root = _setup(tmp_path)
    assert run_main("vendor", ps, "--from", copy).code == 0
    (ps / "vendor" / "envs-c.patch").unlink()
    res = run_main("validate", ps)
    assert res.code == 0, res.err
    assert "NOT LOCKED: envs-c: upstream source ops-org/scripts@" in res.out
    assert f"is locked (sha256 {_sha(DIFF_A)[:12]}) but not vendored here" in res.out
    assert "`patchbay vendor --from <a copy of ops/patch.sh>" in res.out
    res = run_main("apply", ps, "--root", root, "--state-dir", tmp_path / "state")
    assert res.code == 1
    assert (root / "demo_engine" / "envs.py").read_text() == "A = 1\nB = 2\n"


def test_offline_vendor_locks_what_local_copies_give_and_lists_the_rest(tmp_path: Path) -> None:
    ps, copy, _ = _setup(tmp_path)
    pr = {"id": "from-a-pr", "kind": "diff", "source": {"repo": "o/r", "pr": 7}}
    write_patchset(ps, [{"id": "envs-c", "kind": "diff", "source": SOURCE}, pr])
    res = run_main("vendor", ps, "--offline", "--from", copy, "--api-url", "http://127.0.0.1:9")
    assert res.code == 0, res.err
    assert "locked envs-c" in res.out
    assert "not locked (offline): from-a-pr: the diff of o/r#7 is asked of the forge" in res.out
    assert set(json.loads((ps / "patchbay.lock").read_text())["sources"]) == {"envs-c"}


def test_a_here_document_source_is_a_file_at_a_commit(tmp_path: Path) -> None:
    for source, message in [
        ({**SOURCE, "heredoc": None}, "`file` and `heredoc` go together"),
        ({**SOURCE, "pr": 3}, "a here-document source is a file at a commit"),
        ({**SOURCE, "file": "../patch.sh"}, "source.file"),
        ({**SOURCE, "paths": ["demo_engine"]}, "`paths` filters a PR's or commit's diff"),
    ]:
        source = {k: v for k, v in source.items() if v is not None}
        ps = write_patchset(
            tmp_path / str(len(message)), [{"id": "a", "kind": "diff", "source": source}]
        )
        res = run_main("validate", ps)
        assert res.code == 2, source
        assert f"{ps / 'patchset.yaml'}:" in res.err and message in res.err, res.err


PROGRAM = (
    "#!/bin/sh\n"
    "python - \"$ROOT/demo_engine/envs.py\" <<'PY'\n"
    "import sys\n"
    "F = sys.argv[1]\n"
    "src = open(F).read()\n"
    'OLD = "B = 2\\n"\n'
    'NEW = (OLD\n    + "C = 3\\n")\n'
    "assert src.count(OLD) == 1\n"
    "open(F, 'w').write(src.replace(OLD, NEW, 1))\n"
    "PY\n"
)


def test_a_replace_patch_takes_its_texts_from_the_constants_of_a_script_s_program(
    tmp_path: Path,
) -> None:
    source = {**SOURCE, "heredoc": "PY"}
    edit = {"file": "demo_engine/envs.py", "old_from": "OLD", "new_from": "NEW"}
    ps = write_patchset(
        tmp_path / "ps", [{"id": "edit", "kind": "replace", "source": source, "edits": [edit]}]
    )
    copy = tmp_path / "copy" / "patch.sh"
    copy.parent.mkdir()
    copy.write_text(PROGRAM)
    root = tmp_path / "root"
    (root / "demo_engine").mkdir(parents=True)
    (root / "demo_engine" / "envs.py").write_text("A = 1\nB = 2\n")
    res = run_main("validate", ps)
    assert "NOT LOCKED: edit: upstream source ops-org/scripts@" in res.out
    res = run_main("vendor", ps, "--from", copy)
    assert res.code == 0, res.err
    vendored = json.loads((ps / "vendor" / "edit.json").read_text())
    assert vendored == {"OLD": "B = 2\n", "NEW": "B = 2\nC = 3\n"}
    entry = json.loads((ps / "patchbay.lock").read_text())["sources"]["edit"]
    assert entry["sha256"] == _sha((ps / "vendor" / "edit.json").read_bytes())
    assert entry["origin_sha256"] == _sha(PROGRAM)
    state = tmp_path / "state"
    assert run_main("apply", ps, "--root", root, "--state-dir", state).code == 0
    assert (root / "demo_engine" / "envs.py").read_text() == "A = 1\nB = 2\nC = 3\n"
    assert "nothing to do" in run_main("apply", ps, "--root", root, "--state-dir", state).out
    assert run_main("revert", ps, "--root", root, "--state-dir", state).code == 0
    assert (root / "demo_engine" / "envs.py").read_text() == "A = 1\nB = 2\n"
    # a name the program does not define as a string constant is named, nothing is written
    (ps / "vendor" / "edit.json").unlink()
    bad = write_patchset(
        tmp_path / "bad",
        [{"id": "edit", "kind": "replace", "source": source, "edits": [{**edit, "new_from": "F"}]}],
    )
    res = run_main("vendor", bad, "--from", copy)
    assert res.code == 2
    assert f"{copy}: patch edit: the here-document <<PY defines no string constant F" in res.err
    assert not (bad / "vendor").exists()
    # texts named without a source, or a source with literal texts: refused at their line
    for edits, src in [([edit], None), ([{"file": "a.py", "old": "x", "new": "y"}], source)]:
        patch = {"id": "edit", "kind": "replace", "edits": edits}
        if src:
            patch["source"] = src
        ps = write_patchset(tmp_path / f"mixed{len(str(src))}", [patch])
        res = run_main("validate", ps)
        assert res.code == 2 and "`old_from`/`new_from` name constants" in res.err, res.err
