"""Long lists in the human formats are summarised (patchbay.summaries): a patch naming many
packages or URLs reads as a count and a prefix in ``status`` and ``validate`` (table and
concise), the whole list stays in JSON and is printed with ``-v``; a verified no-op ``apply``
counts the notes of the last apply in its one line instead of printing them again, and prints
them with ``-v``. Real patchsets, a real engine with its own pip, real wheels, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import (
    Engine,
    count_inspections,
    patchset_with_notes,
    run_cli,
    write_patchset,
)
from inprocess import run_main
from patchbay.apply import noop
from patchbay.summaries import LINE_LIMIT, summarise
from servers import Server, make_wheel

BASE = "https://raw.githubusercontent.com/ROCm/aiter/0cbedbb/hsa/gfx942/fmha_v3_bwd"
URLS = [f"{BASE}/bwd_hd128_bf16_a16_rtne_kernel_{n}.co" for n in range(8)]
URL_SUMMARY = (
    "8 URLs under raw.githubusercontent.com/ROCm/aiter/0cbedbb/hsa/gfx942/fmha_v3_bwd/\u2026 "
    "(-v lists them)"
)
DEPS = [f"dep{n:02d}" for n in range(1, 13)]


def _detail(table: str) -> str:
    """The text of a status table's detail column, its wrapped lines joined by spaces."""
    cells = [line.split("\u2502")[-2].strip() for line in table.splitlines() if "\u2502" in line]
    return " ".join(cell for cell in cells if cell)


# -- the rule --------------------------------------------------------------------------------


def test_a_long_run_of_urls_becomes_its_count_and_common_prefix() -> None:
    line = f"8 artifact(s) have no sha256 yet ({', '.join(URLS)}): run `patchbay vendor ps`"
    assert summarise(line) == (
        f"8 artifact(s) have no sha256 yet ({URL_SUMMARY}): run `patchbay vendor ps`"
    )


def test_a_long_run_of_packages_names_the_first_three_and_counts_the_rest() -> None:
    moved = [f"{name} would be added at 1.{n}" for n, name in enumerate(DEPS)]
    line = f"pip's dry run: torch upgraded 2.4 -> 2.5; {'; '.join(moved)} (kept earlier)"
    assert summarise(line) == (
        "pip's dry run: 13 packages (torch upgraded 2.4 -> 2.5; dep01 would be added at 1.0; "
        "dep02 would be added at 1.1; and 10 more: -v lists them) (kept earlier)"
    )
    pins = ", ".join(f"{name}==2.{n}" for n, name in enumerate(DEPS))
    assert summarise(f"Cannot install {pins} together") == (
        "Cannot install 12 packages (dep01==2.0, dep02==2.1, dep03==2.2, and 9 more: "
        "-v lists them) together"
    )


def test_short_lines_short_runs_and_other_text_are_kept_as_they_are() -> None:
    four = "; ".join(f"{name} upgraded 1.0 -> 2.0.post{'1' * 12}" for name in DEPS[:4])
    assert len(four) > LINE_LIMIT and summarise(four) == four  # four items: listed
    short = ", ".join(f"https://h.example/{n}.co" for n in range(5))
    assert len(short) <= LINE_LIMIT and summarise(short) == short  # not longer than the limit
    words = "; ".join(["a hunk applied at line 3, offset +1"] * 8)
    assert summarise(words) == words  # no URL, no package


def test_urls_with_no_common_host_name_the_first_and_never_its_credentials() -> None:
    urls = [f"https://ci:pw-4c5d6e7f@h{n}.example/kernel_{n}.co" for n in range(6)]
    line = "fetch " + ", ".join(urls) + " " + "x" * 40
    out = summarise(line)
    assert out == f"fetch 6 URLs, the first h0.example/kernel_0.co (-v lists them) {'x' * 40}"
    same_host = [u.replace(f"h{n}.example", "mirror.example") for n, u in enumerate(urls)]
    out = summarise("fetch " + ", ".join(same_host) + " " + "x" * 40)
    assert out.startswith("fetch 6 URLs under mirror.example/\u2026 (-v lists them)")
    assert "pw-4c5d6e7f" not in out


# -- status and validate of an artifact patch with many URLs -----------------------------------


def _artifacts(tmp_path: Path) -> tuple[Path, Path]:
    """A patchset of one artifact patch of 8 files not locked yet, and a tree for --root."""
    files = [
        {"url": url, "dest": f"kernels/gfx942/k{n}.co", "sha256": None}
        for n, url in enumerate(URLS)
    ]
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "kernels", "kind": "artifact", "target": "meta", "files": files}],
        targets={"meta": {"package": "demo_engine", "path": "demo_engine_meta"}},
    )
    root = tmp_path / "tree"
    (root / "demo_engine").mkdir(parents=True)
    (root / "demo_engine" / "__init__.py").write_text("")
    return ps, root


@pytest.mark.parametrize("output_format", ["table", "concise"])
def test_status_summarises_many_urls_and_prints_them_with_verbose(
    tmp_path: Path, output_format: str
) -> None:
    ps, root = _artifacts(tmp_path)
    res = run_cli("status", ps, "--root", root, "--format", output_format)
    assert res.code == 1, res.err  # unlocked: apply refuses it
    shown = _detail(res.out) if output_format == "table" else res.out
    assert not any(url in res.out for url in URLS), res.out
    if output_format == "concise":
        shown = shown.removeprefix("kernels: unlocked ")
    assert shown.startswith(f"8 artifact(s) have no sha256 yet ({URL_SUMMARY}): run "), res.out
    full = run_cli("status", ps, "--root", root, "--format", output_format, "--verbose")
    assert full.code == 1, full.err
    assert URL_SUMMARY not in full.out
    flat = "".join(full.out.split())  # the table folds long lines: every URL is there whole
    assert all(url in flat for url in URLS), full.out
    assert run_cli("status", ps, "--root", root, "-f", output_format, "-v").out == full.out


def test_status_json_keeps_every_url_and_verbose_changes_nothing_there(tmp_path: Path) -> None:
    ps, root = _artifacts(tmp_path)
    res = run_cli("status", ps, "--root", root, "--json")
    (patch,) = json.loads(res.out)["patches"]
    (note,) = patch["notes"]
    assert note.startswith("8 artifact(s) have no sha256 yet (" + ", ".join(URLS) + "): ")
    assert "URLs under" not in res.out
    assert run_cli("status", ps, "--root", root, "--json", "-v").out == res.out


def test_validate_summarises_many_urls_and_keeps_them_in_json_and_verbose(
    tmp_path: Path,
) -> None:
    ps, _ = _artifacts(tmp_path)
    res = run_main("validate", ps)
    assert res.code == 0, res.err
    (line,) = [ln for ln in res.out.splitlines() if ln.startswith("NOT LOCKED: ")]
    assert line.startswith(
        f"NOT LOCKED: kernels: 8 artifact(s) have no sha256 yet ({URL_SUMMARY}): "
    )
    assert not any(url in res.out for url in URLS)
    assert run_main("validate", ps, "--format", "concise").out == res.out
    full = run_main("validate", ps, "-v")
    assert all(url in full.out for url in URLS) and URL_SUMMARY not in full.out
    doc = json.loads(run_main("validate", ps, "--json").out)
    assert doc["patches"][0]["unlocked"].startswith(
        "8 artifact(s) have no sha256 yet (" + ", ".join(URLS) + "): "
    )


# -- status of a pip pin whose dry run names many packages -------------------------------------


@pytest.fixture
def _isolated_pip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")  # no machine-wide index or find-links
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")


@pytest.mark.usefixtures("_isolated_pip")
def test_status_summarises_the_packages_of_a_dry_run_and_lists_them_in_json_and_verbose(
    tmp_path: Path, pengine: Engine
) -> None:
    links = tmp_path / "links"
    make_wheel(links, "bigstack", "1.0", requires=[f"{name}==1.0" for name in DEPS])
    for name in DEPS:
        make_wheel(links, name, "1.0")
    with Server() as empty:  # an index that has nothing: every wheel comes from the links
        pin = {"id": "stack", "kind": "pip", "requirement": "bigstack==1.0",
               "index_url": f"{empty.url}/simple/", "find_links": [str(links)]}  # fmt: skip
        ps = write_patchset(tmp_path / "ps", [pin])
        tried = run_main("status", ps, "--python", pengine.python, "--json", "--trial")
    assert tried.code == 0, tried.out + tried.err
    (patch,) = json.loads(tried.out)["patches"]
    (note,) = [n for n in patch["notes"] if n.startswith("pip's dry run: ")]
    for name in ["bigstack", *DEPS]:
        assert f"{name} would be added at 1.0" in note, note
    # the outcome is kept: a plain status shows it without asking pip again
    concise = run_main("status", ps, "--python", pengine.python, "--format", "concise")
    assert concise.code == 0, concise.err
    (line,) = concise.out.splitlines()
    assert line.startswith("stack: pending pip's dry run: 13 packages ("), line
    assert line.count("would be added at 1.0") == 3, line
    assert "; and 10 more: -v lists them) (kept from an earlier `status --trial`" in line, line
    table = run_main("status", ps, "--python", pengine.python, "--format", "table")
    assert _detail(table.out).startswith("pip's dry run: 13 packages ("), table.out
    assert "; and 10 more: -v lists them) (kept from an earlier" in _detail(table.out)
    assert _detail(table.out).count("would be added at 1.0") == 3, table.out
    full = run_main("status", ps, "--python", pengine.python, "--format", "concise", "-v")
    assert "13 packages" not in full.out
    for name in ["bigstack", *DEPS]:
        assert f"{name} would be added at 1.0" in full.out, full.out
    kept = run_main("status", ps, "--python", pengine.python, "--json")
    assert "13 packages" not in kept.out
    assert all(f"{name} would be added at 1.0" in kept.out for name in DEPS)


# -- a verified no-op apply counts the notes of the last apply -------------------------------


COUNTED = "nothing to do: 2 patch(es) already present (2 notes from the last apply: -v shows them)"


def _recorded(root: Path, ps: Path) -> tuple[list[str], list[str]]:
    """Apply until the identity of a verified no-op is recorded (the cold run's notes may differ
    from a re-run's: the first re-run, through the engine, records it then); returns the notes
    the identity keeps and what the run that recorded them printed."""
    for _ in range(2):
        res = run_main("apply", ps, "--root", root)
        assert res.code == 0, res.out + res.err
        verified = noop.check(str(ps), root=root)
        if verified is not None:
            return verified.notes, res.out.splitlines()
    raise AssertionError("no identity was recorded")


def test_a_verified_noop_prints_one_line_for_the_notes_and_them_with_verbose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, ps = patchset_with_notes(tmp_path)
    notes, printed = _recorded(root, ps)
    assert len(notes) == 2, notes
    assert notes[0].startswith("note: worker: demo_engine/worker.py hunk 1: ") and "+1" in notes[0]
    assert notes[1].startswith("note: crlf: demo_engine/crlf.py uses CRLF line endings")
    assert all(line in printed for line in notes)  # the run that recorded them printed them
    calls = count_inspections(monkeypatch)
    # every later no-op: one line, by the fast path (before the parser) ...
    again = run_main("apply", ps, "--root", root)
    assert (again.code, again.out) == (0, COUNTED + "\n")
    # ... and by apply's own check (an option the fast path does not take)
    slow = run_main("apply", ps, "--root", root, "--lock-timeout", "5")
    assert (slow.code, slow.out) == (0, COUNTED + "\n")
    full = run_main("apply", ps, "--root", root, "-v")
    assert full.code == 0
    assert full.out.splitlines() == [*notes, "nothing to do: 2 patch(es) already present"]
    assert run_main("apply", ps, "--root", root, "--verbose").out == full.out
    assert sum(calls.values()) == 0  # all of them verified no-ops: no patch was inspected
    quiet = run_main("apply", ps, "--root", root, "-q")
    assert quiet.out == "nothing to do: 2 patch(es) already present\n"
    quiet = run_main("apply", ps, "--root", root, "-q", "--lock-timeout", "5", "-v")
    assert quiet.out == "nothing to do: 2 patch(es) already present\n"


def test_a_verified_noop_of_the_console_script_counts_the_notes(tmp_path: Path) -> None:
    root, ps = patchset_with_notes(tmp_path)
    notes, _ = _recorded(root, ps)
    assert run_cli("apply", ps, "--root", root).out == COUNTED + "\n"
    assert run_cli("apply", ps, "--root", root, "-v").out.splitlines() == [
        *notes,
        "nothing to do: 2 patch(es) already present",
    ]
