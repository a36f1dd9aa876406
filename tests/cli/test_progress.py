"""Progress of long steps: a real ``patchbay apply`` with a slow download (a delaying server on
127.0.0.1) and a slow command patch, run in a terminal (a pty: live progress, the log named from
the start), off one (plain lines on stderr) and with ``--quiet`` (nothing); forge retries are
announced."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from conftest import PATCHBAY, run_in_pty, write_patchset
from inprocess import run_main
from patchbay import progress
from patchbay.upstream.queries import GitHubClient
from servers import Response, Server

KERNEL = b"\x7fELF" + bytes(range(256)) * 64  # 16 KiB
BIG_KERNEL = KERNEL * 32  # 512 KiB


def _slow_patchset(tmp_path: Path, url: str, body: bytes = KERNEL) -> tuple[Path, Path]:
    root = tmp_path / "tree"
    (root / "demo_engine").mkdir(parents=True)
    (root / "demo_engine" / "worker.py").write_text("X = 1\n")
    script = "echo compiling kernels; sleep 1; echo linking module_mla; sleep 1; touch built.so"
    patches = [
        {
            "id": "kernel",
            "kind": "artifact",
            "files": [
                {
                    "url": url,
                    "dest": "demo_engine/k.co",
                    "sha256": hashlib.sha256(body).hexdigest(),
                    "insecure_http": True,
                }
            ],
        },
        {
            "id": "rebuild",
            "kind": "command",
            "after": ["kernel"],
            "shell": True,
            "argv": [script],
            "cwd": "demo_engine",
            "output": "demo_engine/built.so",
        },
    ]
    return root, write_patchset(tmp_path / "ps", patches)


def test_progress_in_a_terminal_session(tmp_path: Path) -> None:
    with Server() as server:
        # 512 KiB over ~2 s: the bar advances and shows a rate while it runs
        server.add("/k.co", Response(body=BIG_KERNEL, chunk=32 << 10, chunk_delay=0.12))
        root, ps = _slow_patchset(tmp_path, f"{server.url}/k.co", BIG_KERNEL)
        env = {**os.environ, "COLUMNS": "120", "TERM": "xterm-256color"}
        env.pop("NO_COLOR", None)
        args = [str(PATCHBAY), "apply", str(ps), "--root", str(root),
                "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
        code, screen = run_in_pty(args, env)
    assert code == 0, screen
    assert "\x1b[" in screen  # drawn live (rich), not only plain lines
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    log = root / ".patchbay" / "logs" / "rebuild.log"
    assert "patchbay: rebuild: echo compiling" in plain
    assert f"log: {log}" in plain  # named while the step runs, before its end line
    assert plain.index(f"log: {log}") < plain.rindex("done in")  # the rebuild's end
    assert "linking module_mla" in plain  # the last line of output, shown live
    # the download's bar was drawn part-way (bytes so far of the total) with a rate
    done = [float(x) for x in re.findall(r"([\d.]+)/524\.4 kB", plain)]
    assert any(0 < x < 524.4 for x in done), plain
    assert re.search(r"/524\.4 kB [\d.]+ kB/s", plain)
    assert re.search(r"download .*/k\.co: 512\.1 KiB done in [\d.]+ s \([\d.]+ KiB/s\)", plain)
    assert "applied rebuild" in plain


def test_a_long_step_title_leaves_the_elapsed_time_and_last_line_on_a_narrow_terminal(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tree"
    (root / "demo_engine").mkdir(parents=True)
    long_argv = "echo pass-one-of-the-kernel-build; sleep 2; touch built.so # " + "x" * 120
    ps = write_patchset(tmp_path / "ps", [
        {"id": "rebuild", "kind": "command", "shell": True, "argv": [long_argv],
         "cwd": "demo_engine", "output": "demo_engine/built.so"},
    ])  # fmt: skip
    env = {**os.environ, "COLUMNS": "60", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    code, screen = run_in_pty([str(PATCHBAY), "apply", str(ps), "--root", str(root)], env)
    assert code == 0, screen
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    drawn = [ln for ln in re.split(r"[\r\n]+", plain) if "rebuild: echo" in ln and "\u2026" in ln]
    # the live line: the title cut with an ellipsis, then the elapsed time and the start of
    # the last line of output, all within the terminal's 60 columns
    live = [ln for ln in drawn if re.search(r"\d:\d\d:\d\d pass-one", ln)]
    assert live, plain
    assert all(len(ln.rstrip()) <= 60 for ln in live), live


def test_plain_progress_lines_off_a_terminal_and_quiet(tmp_path: Path) -> None:
    with Server() as server:
        server.add("/k.co", Response(body=KERNEL, delay=0.5))
        root, ps = _slow_patchset(tmp_path, f"{server.url}/k.co")
        cache = tmp_path / "cache"
        res = run_main("apply", ps, "--root", root, "--cache-dir", cache)
        assert res.code == 0, res.err
        lines = res.err.splitlines()
        log = root / ".patchbay" / "logs" / "rebuild.log"
        start = next(i for i, ln in enumerate(lines) if ln.endswith(f"started (log: {log})"))
        end = next(i for i, ln in enumerate(lines) if "rebuild" in ln and "done in" in ln)
        assert start < end and all(ln.startswith("patchbay: ") for ln in lines)
        assert any(
            re.search(r"download .*: 16\.0 KiB done in [\d.]+ s \(.*/s\)", ln) for ln in lines
        )
        assert "\x1b[" not in res.err
        assert "patchbay:" not in res.out  # stdout has the command's own lines only
        # again, quiet: the command runs (its output was removed), nothing on stderr
        assert run_main("revert", ps, "--root", root).code == 0
        res = run_main("apply", ps, "--root", root, "--cache-dir", cache, "--quiet")
        assert res.code == 0 and res.err == ""
        assert "applied rebuild" in res.out


def test_forge_retries_are_announced(capsys: pytest.CaptureFixture[str]) -> None:
    with Server() as server:
        server.add("/repos/o/r/pulls/1", Response(status=502), Response(body=b'{"number": 1}'))
        client = GitHubClient(server.url, retries=2, backoff=0.01, sleep=lambda s: None)
        try:
            assert client.get("/repos/o/r/pulls/1").data == {"number": 1}
        finally:
            client.close()
    err = capsys.readouterr().err
    assert "HTTP 502; retry 1 of 2 in 0.01 s" in err and "/repos/o/r/pulls/1" in err


def test_a_step_reports_n_of_m_and_the_last_line_of_a_failure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with progress.count("3 forge request(s)", total=3) as c:
        for _ in range(3):
            c.advance()
    with pytest.raises(RuntimeError), progress.step("pip install x==1") as s:
        s.line("Building wheel for x\n")
        s.line("error: command 'gcc' failed\n")
        raise RuntimeError
    err = capsys.readouterr().err.splitlines()
    assert err[1].startswith("patchbay: 3 forge request(s): 3 of 3 done in ")
    assert err[-1].endswith("last line: error: command 'gcc' failed")
    assert "failed after" in err[-1]
    proc = progress.run(["sh", "-c", "echo making; echo 'ld: missing -lhip' >&2; exit 3"],
                        title="rebuild")  # fmt: skip
    assert proc.returncode == 3 and b"ld: missing -lhip" in proc.stdout
    end = capsys.readouterr().err.splitlines()[-1]
    assert re.fullmatch(r"patchbay: rebuild: exited with status 3 after [\d.]+ s; "
                        r"last line: ld: missing -lhip", end), end  # fmt: skip
