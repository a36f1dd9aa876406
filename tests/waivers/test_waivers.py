"""Waiver documents: the four legacy layouts (tests/data/waivers-legacy, copied from the shared
examples), front matter, placeholders, and `patchbay waiver new`."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest

from conftest import REPO, dedent, run_cli, write_patchset
from patchbay.errors import InputError
from patchbay.waivers import parse_waiver, placeholder_in, read_waivers, waiver_files

LEGACY = Path(__file__).resolve().parents[1] / "data" / "waivers-legacy"
ENGINES = ["vllm", "sglang", "aiter", "triton", "torch", "flashinfer"]


def _fields(path: Path) -> dict[str, tuple[str, int | None]]:
    w = parse_waiver(path, projects=ENGINES)
    return {name: (r.status, r.line) for name, r in w.fields.items()}


def _refs(path: Path, names: dict[str, str] | None = None) -> list[tuple[int, str, bool]]:
    w = parse_waiver(path, names=names, projects=ENGINES)
    return [(r.line, r.canonical, r.resolved) for r in w.references]


def test_1204_config_covered_layout() -> None:
    """Bold-bullet fields and a table; bare URLs, `project #N` in the table, owner/repo#N."""
    assert _fields(LEGACY / "1204.md") == {
        "what": ("found", 13),
        "why": ("found", 23),
        "upstream": ("found", 28),
        "removal": ("found", 33),
    }
    assert _refs(LEGACY / "1204.md") == [
        (17, "vllm #48110", False),
        (18, "vllm #48377", False),
        (19, "aiter #3902", False),
        (20, "aiter #3950", False),
        (30, "vllm-project/vllm#48110", True),
        (30, "vllm-project/vllm#48377", True),
        (31, "ROCm/aiter#3902", True),
        (31, "ROCm/aiter#3950", True),
    ]
    w = parse_waiver(LEGACY / "1204.md")
    assert w.meta["image"][0].startswith("vllm/vllm-openai-rocm:nightly-")
    assert w.legacy and w.id == "1204"


def test_1204_project_references_resolve_through_the_name_map() -> None:
    names = {"vllm": "vllm-project/vllm", "aiter": "ROCm/aiter"}
    refs = _refs(LEGACY / "1204.md", names)
    # the table rows now name the same PRs as the URLs below them: one reference each
    assert refs == [
        (17, "vllm-project/vllm#48110", True),
        (18, "vllm-project/vllm#48377", True),
        (19, "ROCm/aiter#3902", True),
        (20, "ROCm/aiter#3950", True),
    ]


def test_1311_scope_why_tracking_removal() -> None:
    assert _fields(LEGACY / "1311.md") == {
        "what": ("found", 3),  # under "Scope"
        "why": ("found", 9),
        "upstream": ("found", 14),
        "removal": ("found", 23),
    }
    refs = parse_waiver(LEGACY / "1311.md").references
    assert [(r.line, r.form, r.canonical, r.kind) for r in refs] == [
        (16, "link", "sgl-project/sglang#21044", "issue"),
        (17, "owner/repo#N", "sgl-project/sglang#21090", None),
    ]


def test_1350_plain_text_reference_needs_a_mapping() -> None:
    assert _fields(LEGACY / "1350.md") == {
        "what": ("found", 3),
        "why": ("found", 7),
        "upstream": ("found", 11),
        "removal": ("found", 15),
    }
    assert _refs(LEGACY / "1350.md") == [(13, "flashinfer #1877", False)]
    mapped = _refs(LEGACY / "1350.md", {"flashinfer": "flashinfer-ai/flashinfer"})
    assert mapped == [(13, "flashinfer-ai/flashinfer#1877", True)]


def test_1402_upstream_incomplete_with_rows_named() -> None:
    w = parse_waiver(LEGACY / "1402.md", projects=ENGINES)
    assert w.fields["what"].status == "found"
    assert w.fields["why"].status == "found"
    assert 12 <= (w.fields["what"].line or 0) <= 18  # the "Exact changes and necessity" table
    assert w.fields["removal"].status == "found"
    upstream = w.fields["upstream"]
    assert upstream.status == "placeholder"
    assert [(p.line, p.row, p.text) for p in upstream.placeholders] == [
        (17, "block32 dense linear", "<link to upstream PR>"),
        (18, "host table pointers", "upstream tracking pending"),
    ]
    assert [(r.line, r.canonical) for r in w.references] == [(16, "sgl-project/sglang#39001")]
    assert w.status == "requested"


@pytest.mark.parametrize(
    ("text", "blank"),
    [
        ("<link to upstream PR>", "<link to upstream PR>"),
        ("see <TODO: owner>", "<TODO: owner>"),
        ("TBD", "TBD"),
        ("fix: TODO", "TODO"),
        ("upstream tracking pending", "upstream tracking pending"),
        ("Pending.", "Pending"),
        ("- PR pending; see notes", "- PR pending"),
    ],
)
def test_placeholders(text: str, blank: str) -> None:
    assert placeholder_in(text) == blank


@pytest.mark.parametrize(
    "text",
    [
        "merged upstream in vllm-project/vllm#123",
        "review pending in https://github.com/o/r/pull/4",
        "Pending: no standalone PR; part of a larger speculative-decoding change",
        "batches of 64 < n < 128 are padded",
        "line one<br>line two",
        "<https://example.invalid/x>",
    ],
)
def test_not_placeholders(text: str) -> None:
    assert placeholder_in(text) is None


def test_front_matter_fields_and_lines(tmp_path: Path) -> None:
    path = tmp_path / "w.md"
    path.write_text(
        dedent(
            """
            ---
            id: w-1
            patches: [a, ps/b]
            owner: "<TODO: who>"
            filed: 2025-01-02
            review_by: 2025-06-30
            status: approved
            approval: https://example.invalid/pr/1#review
            ---
            # W

            ## What is patched
            a and b.
            ## Why
            It crashes.
            ## Upstream
            - o/r#1
            ## Removal plan
            When o/r#1 is in the image.
            """
        )
    )
    w = parse_waiver(path)
    assert not w.legacy
    assert w.id == "w-1"
    assert w.patches == ["a", "ps/b"]
    assert w.front_matter is not None
    assert w.front_matter.review_by == date(2025, 6, 30)
    assert w.line_of("review_by") == 6
    assert w.line_of(("patches", 1)) == 3
    assert [(p.line, p.field) for p in w.placeholders] == [(4, "owner")]
    assert {n: r.line for n, r in w.fields.items()} == {
        "what": 12,
        "why": 14,
        "upstream": 16,
        "removal": 18,
    }


@pytest.mark.parametrize(
    ("front", "line", "reason"),
    [
        ("id: w\nstatus: done\n", 3, "status"),
        ("id: w\nreviewer: me\n", 3, "unknown key"),
        ("id: w\nfiled: not-a-date\n", 3, "filed"),
        ("id: [w\n", 3, "invalid YAML"),  # PyYAML finds it where the text ends
    ],
)
def test_malformed_front_matter_is_bad_input(
    tmp_path: Path, front: str, line: int, reason: str
) -> None:
    path = tmp_path / "w.md"
    path.write_text(f"---\n{front}---\n# W\n")
    with pytest.raises(InputError) as exc:
        parse_waiver(path)
    assert exc.value.line == line
    assert reason in str(exc.value)


def test_unclosed_front_matter(tmp_path: Path) -> None:
    path = tmp_path / "w.md"
    path.write_text("---\nid: w\n# W\n")
    with pytest.raises(InputError, match="never closed"):
        parse_waiver(path)


def test_waiver_new_writes_a_prefilled_waiver(tmp_path: Path) -> None:
    shutil.copytree(REPO / "patchsets" / "demo", tmp_path / "patchsets" / "demo")
    res = run_cli("waiver", "new", "demo", "mla-large-cache", "mla-full-graph", cwd=tmp_path)
    assert res.code == 0, res.err
    path = tmp_path / "waivers" / "demo.md"
    text = path.read_text()
    assert "patches: [mla-large-cache, mla-full-graph]" in text
    assert "demo_engine/attention/mla.py" in text  # files touched
    assert "demo_engine/scheduler.py" in text
    assert "demo-org/demo-engine#103" in text  # upstream reference
    assert "no standalone upstream PR yet" in text  # the local status with its reason
    assert "example.invalid/demo-engine:0.4.1-g1a2b3c4" in text  # the image
    w = parse_waiver(path)
    assert w.patches == ["mla-large-cache", "mla-full-graph"]
    assert w.status == "requested"
    assert {p.field for p in w.placeholders} == {"owner", "review_by"}
    assert {n for n, r in w.fields.items() if r.status == "placeholder"} == {
        "why",
        "upstream",
        "removal",
    }
    assert w.fields["what"].status == "found"
    again = run_cli("waiver", "new", "demo", "mla-large-cache", "mla-full-graph", cwd=tmp_path)
    assert again.code == 1
    assert "already exists" in again.err


def test_waiver_new_unknown_patch_is_bad_input(tmp_path: Path) -> None:
    ps = write_patchset(
        tmp_path / "ps",
        [{"id": "p1", "kind": "replace", "edits": [{"file": "a.py", "old": "x", "new": "y"}]}],
    )
    res = run_cli("waiver", "new", ps, "nope", "--output", tmp_path / "w.md")
    assert res.code == 2
    assert "no patch nope" in res.err
    assert "Traceback" not in res.err
    assert len(res.err.strip().splitlines()) == 1


def _shared_repo(root: Path) -> None:
    edits = [{"file": "a.py", "old": "x", "new": "y"}]
    write_patchset(
        root / "patchsets" / "a",
        [
            {"id": "pad", "kind": "replace", "edits": edits},
            {"id": "solo", "kind": "replace", "edits": edits},
        ],
        name="a",
    )
    write_patchset(
        root / "patchsets" / "b", [{"id": "pad", "kind": "replace", "edits": edits}], name="b"
    )


def test_waiver_new_qualifies_shared_ids_and_deduplicates(tmp_path: Path) -> None:
    _shared_repo(tmp_path)
    res = run_cli("waiver", "new", "patchsets/a", "pad", "pad", "solo", "--id", "wa", cwd=tmp_path)
    assert res.code == 0, res.err
    w = parse_waiver(tmp_path / "waivers" / "wa.md")
    assert w.patches == ["a/pad", "solo"]  # pad is in patchset b too; solo is unique
    assert "| `pad` |" in (tmp_path / "waivers" / "wa.md").read_text()
    assert "2 patch(es)" in res.out
    # the waiver it writes covers the patch in the audit (no PB101/PB106 for a/pad)
    audit = run_cli("audit", tmp_path, "--format", "json")
    findings = json.loads(audit.out)["findings"]
    assert not [f for f in findings if f["code"] == "PB106"]
    assert [f["path"] for f in findings if f["code"] == "PB101"] == ["patchsets/b/patchset.yaml"]


def test_waiver_new_keeps_bare_ids_when_unique(tmp_path: Path) -> None:
    _shared_repo(tmp_path)
    (tmp_path / "patchsets" / "b" / "patchset.yaml").unlink()  # b is gone: pad is unique
    res = run_cli("waiver", "new", "patchsets/a", "pad", "pad", "--id", "wa", cwd=tmp_path)
    assert res.code == 0, res.err
    assert parse_waiver(tmp_path / "waivers" / "wa.md").patches == ["pad"]
    text = (tmp_path / "waivers" / "wa.md").read_text()
    assert "patches: [pad]\n" in text and text.count("| `pad` |") == 1


# -- upstream links outside an upstream section ---------------------------------------------


def _legacy(tmp_path: Path, body: str, name: str = "2508.md") -> Path:
    path = tmp_path / name
    path.write_text(dedent(body))
    return path


@pytest.mark.parametrize(
    ("section", "line", "reference"),
    [
        ("What", 4, "https://github.com/vllm-project/vllm/pull/48110"),
        ("Why", 7, "vllm-project/vllm#48110"),
        ("Scope", 4, "[the fix](https://github.com/vllm-project/vllm/pull/48110)"),
        ("What", 4, "vllm #48110"),
    ],
)
def test_upstream_links_under_another_section_count_for_upstream(
    tmp_path: Path, section: str, line: int, reference: str
) -> None:
    """No Upstream section, heading, label or column: the references written under What, Why
    or Scope are the upstream field (found at the first one's line), not a missing field."""
    what = f"Patches the MLA decode path ({reference})." if section != "Why" else "MLA decode."
    why = f"Graph capture faults; fixed by {reference}." if section == "Why" else "It faults."
    path = _legacy(
        tmp_path,
        f"""
        # Waiver 2508

        ## {section if section != "Why" else "What"}
        {what}

        ## Why
        {why}

        ## Removal plan
        Drop it with the next nightly.
        """,
    )
    w = parse_waiver(path, names={"vllm": "vllm-project/vllm"})
    upstream = w.fields["upstream"]
    assert (upstream.status, upstream.line) == ("found", line)
    field = "why" if section == "Why" else "what"
    assert upstream.where == f"reference under '{field}' (no upstream section)"
    assert [r.canonical for r in w.references] == ["vllm-project/vllm#48110"]
    assert {n: r.status for n, r in w.fields.items()} == dict.fromkeys(
        ("what", "why", "upstream", "removal"), "found"
    )


def test_without_references_anywhere_upstream_stays_missing(tmp_path: Path) -> None:
    path = _legacy(
        tmp_path,
        """
        # Waiver
        ## What
        The cap.
        ## Why
        It crashes.
        """,
    )
    assert parse_waiver(path).fields["upstream"].status == "missing"


def test_an_upstream_section_wins_over_links_elsewhere(tmp_path: Path) -> None:
    path = _legacy(
        tmp_path,
        """
        # Waiver
        ## What
        The cap (o/r#1).
        ## Upstream
        upstream tracking pending
        """,
    )
    upstream = parse_waiver(path).fields["upstream"]
    assert (upstream.status, upstream.line) == ("placeholder", 4)
    assert [p.text for p in upstream.placeholders] == ["upstream tracking pending"]


# -- sentences that say no link exists yet --------------------------------------------------


NO_LINK_YET = [
    "Upstream issue being filed.",
    "being filed",
    "The upstream issue is being filed",
    "Link currently unavailable",
    "currently unavailable",
    "upstream issue pending",
    "pending while this draft is reviewed",
    "Pending while this draft is under internal review",
    "Upstream PR to be filed",
    "PR to be opened after validation on MI355X",
    "An issue will be filed once the reproducer is minimal",
    "not yet filed",
    "No upstream issue yet",
    "no PR yet",
    "link to follow",
    "PR link will be added later",
    "upstream PR in progress",
    "awaiting upstream PR",
]


@pytest.mark.parametrize("text", NO_LINK_YET)
def test_sentences_saying_no_link_exists_yet_are_placeholders(text: str) -> None:
    assert placeholder_in(text) == text.rstrip(".")


@pytest.mark.parametrize(
    "text",
    [
        "The kernel is not available yet on gfx950",
        "No upstream PR; the change is benchmark-only",
        "Inappropriate: will not be submitted upstream",
        "Will be removed once the image ships 0.4.2",
        "Drop when the fix is available upstream",
        "We will drop this when 0.5 ships",
        "Yet another allocator bug",
        "PR being reviewed: https://github.com/o/r/pull/4",
        "issue filed as o/r#12",
        # this repository's own kimik3 waiver: a reason, not a blank
        "no standalone upstream PR is known; the change belongs with the DSpark draft's "
        "multi-token decode support and has not been submitted on its own",
    ],
)
def test_statements_next_to_those_words_are_not_placeholders(text: str) -> None:
    assert placeholder_in(text) is None


@pytest.mark.parametrize("text", NO_LINK_YET[:6])
def test_no_link_yet_in_the_upstream_section_is_pb202_material(tmp_path: Path, text: str) -> None:
    path = _legacy(tmp_path, f"# W\n## What\nThe cap.\n## Upstream\n{text}\n")
    upstream = parse_waiver(path).fields["upstream"]
    assert upstream.status == "placeholder"
    assert [(p.line, p.text) for p in upstream.placeholders] == [(5, text.rstrip("."))]


def test_no_link_yet_under_another_section_is_the_upstream_blank(tmp_path: Path) -> None:
    """Without an upstream section, "the upstream issue is being filed" under Why is the
    upstream field's blank (reported once, there), not a blank of Why."""
    path = _legacy(
        tmp_path,
        """
        # Waiver
        ## What
        The cap.
        ## Why
        It crashes on the first full batch. The upstream issue is being filed.
        ## Removal plan
        With the next image.
        """,
    )
    w = parse_waiver(path)
    assert w.fields["why"].status == "found"
    upstream = w.fields["upstream"]
    assert (upstream.status, upstream.line) == ("placeholder", 5)
    assert upstream.where == "sentence under 'why' (no upstream section)"
    assert [p.text for p in upstream.placeholders] == ["The upstream issue is being filed"]


# -- references in prose --------------------------------------------------------------------


def test_a_number_after_a_sentence_is_not_a_reference(tmp_path: Path) -> None:
    """`word. #NNNN`: the sentence ended; `#NNNN` is no project's reference (it would be an
    unresolvable `reverted. #1234`, PB207)."""
    path = _legacy(
        tmp_path,
        """
        # W
        ## Upstream
        The first attempt was reverted. #1234 in the tracker has the details.
        Reverted again! #99 too; the fix is vllm #48110 and flashinfer PR #1877.
        """,
    )
    refs = parse_waiver(path, names={"vllm": "vllm-project/vllm"}).references
    assert [r.canonical for r in refs] == ["vllm-project/vllm#48110", "flashinfer #1877"]


# -- translated copies ----------------------------------------------------------------------


def test_translated_copies_are_listed_not_read_as_waivers(tmp_path: Path) -> None:
    names = [
        "1234.md",
        "1234_zh.md",  # translation of 1234.md
        "2508.md",
        "2508.ja.md",  # translation of 2508.md
        "w-1.md",
        "w-1-pt-BR.md",  # translation of w-1.md
        "README.md",
        "README_zh.md",  # documentation, translated
        "README.zh-CN.md",
        "fix.md",
        "fix-v2.md",  # not a language: a waiver
        "solo_zh.md",  # no solo.md: a waiver of its own
        "_template.md",
    ]
    for name in names:
        (tmp_path / name).write_text("# W\n")
    files = waiver_files(tmp_path)
    assert [p.name for p in files.waivers] == [
        "1234.md",
        "2508.md",
        "fix-v2.md",
        "fix.md",
        "solo_zh.md",
        "w-1.md",
    ]
    assert [(t.path.name, t.original.name, t.language) for t in files.translations] == [
        ("1234_zh.md", "1234.md", "zh"),
        ("2508.ja.md", "2508.md", "ja"),
        ("README.zh-CN.md", "README.md", "zh-CN"),
        ("README_zh.md", "README.md", "zh"),
        ("w-1-pt-BR.md", "w-1.md", "pt-BR"),
    ]
    assert [w.id for w in read_waivers(tmp_path)] == [p.stem for p in files.waivers]


# -- paths a waiver names -------------------------------------------------------------------


def test_paths_a_legacy_waiver_names(tmp_path: Path) -> None:
    path = _legacy(
        tmp_path,
        """
        # Waiver 2508
        - **Patch script:** `benchmarks/single_node/apply_k3_container_patches.sh`
        - **Patch entrypoint:** `benchmarks/k3.sh` calls `apply_k3_container_patches.sh`
        - Installer: [install.py](../patches/install.py),
          [on GitHub](https://github.com/org/bench/blob/main/benchmarks/run.sh#L12)
        - The heredoc in benchmarks/demo4_h200.sh:88-104 (see vllm-project/vllm#1).

        ```sh
        bash benchmarks/.../apply.sh
        ```
        """,
        name="docs-2508.md",
    )
    named = [(p.text, p.line, p.relative_to_file) for p in parse_waiver(path).paths]
    assert named == [
        ("benchmarks/single_node/apply_k3_container_patches.sh", 2, False),
        ("benchmarks/k3.sh", 3, False),
        ("apply_k3_container_patches.sh", 3, False),
        ("../patches/install.py", 4, True),
        ("benchmarks/run.sh", 5, False),
        ("benchmarks/demo4_h200.sh", 6, False),
        ("benchmarks/.../apply.sh", 9, False),
    ]


def test_plain_and_markdown_it_paths_agree_on_named_paths(tmp_path: Path) -> None:
    """A plain body (no emphasis, links or HTML) takes the fast path; it names the same paths
    (code spans, text) as markdown-it does."""
    path = _legacy(
        tmp_path,
        """
        # Waiver 2508

        - Patch script: `benchmarks/single_node/apply_k3.sh`
        - Entrypoint: `bash benchmarks/k3.sh --tp 8` runs apply_k3.sh

        ## What is patched
        | script | change |
        |---|---|
        | `benchmarks/single_node/apply_k3.sh` | vllm/envs.py cap |
        """,
    )
    from patchbay.waivers.plain import plain_tokens

    assert plain_tokens(path.read_text()) is not None  # the fast path is the one compared
    fast, full = parse_waiver(path), parse_waiver(path, plain=False)
    assert fast == full
    assert [p.text for p in fast.paths] == [
        "benchmarks/single_node/apply_k3.sh",
        "benchmarks/k3.sh",
        "apply_k3.sh",
        "vllm/envs.py",
    ]
