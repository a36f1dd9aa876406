"""The shipped Kimi-K3 and MiniMax-M3 patchsets against the real scripts they replace and the
real engine files their diffs change (``../shared/mission/``, read there, never copied).

- Change by change: every embedded diff of each script is the source of exactly one diff patch
  (its here-document, at the script's pinned commit), the script's Python edits are the K3
  ``replace`` patches (their texts are the literals of the script's own edit program), the
  #4521 kernels are pinned with the hashes the mission README gives.
- Offline: ``vendor --offline --from`` the shared script locks every here-document against the
  committed lock (no byte moves), after which ``validate`` lists as not locked only the #4521 PR
  diff, which only the forge can give.
- On the real files (vLLM 0.27.0 from its wheel, aiter at 044f906a8d, one ``--root``): the state
  of every patch and hunk is what ``git apply --check`` says of the same diff, one hunk at a time
  (7 of the 8 vLLM diffs apply, VLLM_ENVS's hunk 1 conflicts, both aiter diffs apply); then the
  patches that apply go through apply -> no-op -> revert, the applied tree byte for byte what
  ``git apply`` and the script's ``str.replace`` make, the reverted one pristine.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO, snapshot
from inprocess import run_main

MISSION = REPO.parent / "shared" / "mission"
K3_SCRIPT = MISSION / "apply_k3_container_patches.sh"
MINIMAX_SCRIPT = MISSION / "apply_minimaxm3_container_patches.sh"
ENGINE = MISSION / "engine-files"
KIMI = REPO / "patchsets" / "kimik3-mi355x-vllm"
MINIMAX = REPO / "patchsets" / "minimaxm3-mi355x-vllm"

pytestmark = pytest.mark.skipif(
    not K3_SCRIPT.is_file(), reason=f"the mission scripts are not at {MISSION} (CI has them)"
)

K3_COMMIT = "39324e4417dece63fc71ed9b72c3ed3b3b42d412"
MINIMAX_COMMIT = "a46977ffacdf0c7b1714c259ba6ea495b01a5af2"
NEEDS_THE_FORGE = {"aiter-4521-python", "aiter-4521-meta"}  # ROCm/aiter#4521's PR diff


def _here_documents(script: Path) -> dict[str, bytes]:
    from patchbay.analysis.heredocs import here_documents

    return {h.delimiter: h.body for h in here_documents(script.read_bytes(), str(script))}


def _copy(patchset: Path, dest: Path) -> Path:
    """The shipped patchset as a fresh clone has it (no vendored diffs)."""
    shutil.copytree(patchset, dest, ignore=shutil.ignore_patterns("vendor"))
    return dest


def _patches(folder: Path) -> list[dict]:
    return yaml.safe_load((folder / "patchset.yaml").read_text())["patches"]


def _vendored(tmp_path: Path, patchset: Path, script: Path) -> Path:
    ps = _copy(patchset, tmp_path / patchset.name)
    lock = (ps / "patchbay.lock").read_bytes()
    res = run_main("vendor", ps, "--offline", "--from", script)  # --offline: no request at all
    assert res.code == 0, res.err
    assert (ps / "patchbay.lock").read_bytes() == lock  # the committed lock pins these bytes
    return ps


def test_every_embedded_diff_of_the_k3_script_is_one_patch_sourced_from_it() -> None:
    bodies = _here_documents(K3_SCRIPT)
    diffs = {d for d in bodies if d.startswith("DIFF_")}
    assert len(diffs) == 10
    patches = _patches(KIMI)
    sourced = [p for p in patches if p["kind"] == "diff" and "heredoc" in p["source"]]
    assert sorted(p["source"]["heredoc"] for p in sourced) == sorted(diffs)
    lock = json.loads((KIMI / "patchbay.lock").read_text())["sources"]
    script_sha = hashlib.sha256(K3_SCRIPT.read_bytes()).hexdigest()
    for p in sourced:
        assert p["source"]["commit"] == K3_COMMIT
        assert p["source"]["file"].endswith("/apply_k3_container_patches.sh")
        entry = lock[p["id"]]  # committed with every hash filled
        assert entry["sha256"] == hashlib.sha256(bodies[p["source"]["heredoc"]]).hexdigest()
        assert entry["origin_sha256"] == script_sha
    # the two Python edits name the OLD/NEW constants of the script's own edit program
    replaces = [p for p in patches if p["kind"] == "replace"]
    assert [(p["source"]["heredoc"], p["source"]["commit"]) for p in replaces] == [
        ("PYDSPARK", K3_COMMIT)
    ] * 2
    assert [(e["old_from"], e["new_from"]) for p in replaces for e in p["edits"]] == [
        ("OLD1", "NEW1"),
        ("OLD2", "NEW2"),
    ]
    assert all("old" not in e and "new" not in e for p in replaces for e in p["edits"])
    for p in replaces:
        assert lock[p["id"]]["origin_sha256"] == script_sha

    # the #4521 kernels, with the README's sizes and hashes
    table = dict(
        (m[0], (int(m[1]), m[2]))
        for m in re.findall(
            r"^\| (mla_\S+\.co) \| (\d+) \| ([0-9a-f]{64}) \|$",
            (MISSION / "README.md").read_text(),
            re.M,
        )
    )
    (kernels,) = [p for p in patches if p["kind"] == "artifact"]
    assert {Path(f["dest"]).name: (f["size"], f["sha256"]) for f in kernels["files"]} == table
    assert len(table) == 8
    kinds = [p["kind"] for p in patches]
    assert kinds.count("pip") == 1 and kinds.count("command") == 1
    assert [p["id"] for p in patches if p["kind"] == "diff" and "heredoc" not in p["source"]] == [
        "aiter-4521-python",
        "aiter-4521-meta",
    ]


def test_the_vendored_edit_texts_are_what_the_script_s_program_replaces(tmp_path: Path) -> None:
    ps = _vendored(tmp_path, KIMI, K3_SCRIPT)
    program = ast.parse(_here_documents(K3_SCRIPT)["PYDSPARK"].decode())
    literals: dict[str, str] = {}
    for node in program.body:  # OLD1 = "...", NEW1 = OLD1 + "..." + ..., as the script runs them
        name = getattr(node.targets[0], "id", "") if isinstance(node, ast.Assign) else ""
        if name in ("OLD1", "NEW1", "OLD2", "NEW2"):
            literals[name] = eval(ast.unparse(node.value), {}, dict(literals))
    for pid, (old, new) in {
        "vllm-dspark-ps-verify-qlen": ("OLD1", "NEW1"),
        "vllm-dspark-ps-verify-fp8-asm": ("OLD2", "NEW2"),
    }.items():
        vendored = json.loads((ps / "vendor" / f"{pid}.json").read_text())
        assert vendored == {old: literals[old], new: literals[new]}


def test_the_minimax_patchset_is_the_script_s_diff_and_the_launcher_s_lmcache_pin() -> None:
    bodies = _here_documents(MINIMAX_SCRIPT)
    assert list(bodies) == ["DIFF_PA_GLUON"]
    doc = yaml.safe_load((MINIMAX / "patchset.yaml").read_text())
    assert doc["image"]["reference"] == "vllm/vllm-openai-rocm:v0.27.1"
    diff, lmcache = doc["patches"]
    assert diff["source"]["heredoc"] == "DIFF_PA_GLUON"
    assert diff["source"]["commit"] == MINIMAX_COMMIT
    (covered,) = diff["upstream"]  # every hunk but 15, the gate from upstream main
    assert covered["ref"] == "vllm-project/vllm#52849"
    assert covered["covers"] == [n for n in range(1, 19) if n != 15]
    hunks = _single_hunks(bodies["DIFF_PA_GLUON"])
    assert len(hunks) == 18
    assert b"def fused_qk_norm_rope_kvcache_supported" in hunks[14]  # the script's header says so
    entry = json.loads((MINIMAX / "patchbay.lock").read_text())["sources"][diff["id"]]
    assert entry["sha256"] == hashlib.sha256(bodies["DIFF_PA_GLUON"]).hexdigest()
    assert lmcache["requirement"] == "lmcache==0.5.3" and lmcache["no_deps"] is True
    assert lmcache["find_links"] == [
        "https://github.com/LMCache/LMCache/releases/expanded_assets/v0.5.3-rocm"
    ]


def test_vendor_from_the_shared_scripts_leaves_only_the_forge_s_diff_unlocked(
    tmp_path: Path,
) -> None:
    ps = _copy(KIMI, tmp_path / "fresh")
    res = run_main("validate", ps)
    assert res.code == 0, res.err
    before = {line.split(":")[1].strip() for line in res.out.splitlines() if "NOT LOCKED" in line}
    assert len(before) == 14  # 12 locked in the lock but not vendored in a fresh clone
    assert "not vendored here" in res.out
    ps = _vendored(tmp_path, KIMI, K3_SCRIPT)
    res = run_main("validate", ps)
    assert res.code == 0, res.err
    unlocked = {line.split(":")[1].strip() for line in res.out.splitlines() if "NOT LOCKED" in line}
    assert unlocked == NEEDS_THE_FORGE
    ps = _vendored(tmp_path, MINIMAX, MINIMAX_SCRIPT)
    res = run_main("validate", ps)
    assert res.code == 0, res.err
    assert "NOT LOCKED" not in res.out


def _engine_root(dest: Path) -> Path:
    """One site-packages folder with vLLM 0.27.0's and aiter's real files (writable)."""
    shutil.copytree(ENGINE / "vllm-0.27.0", dest)
    shutil.copytree(ENGINE / "aiter-044f906a8d" / "aiter", dest / "aiter")
    for path in [dest, *dest.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    return dest


def _contents(root: Path) -> dict[str, bytes]:
    return {rel: data for rel, (data, _) in snapshot(root).items()}


def _git_check(root: Path, diff: bytes) -> bool:
    proc = subprocess.run(
        ["git", "apply", "--check", "-p1", "-"], cwd=root, input=diff, capture_output=True
    )
    return proc.returncode == 0


def _single_hunks(diff: bytes) -> list[bytes]:
    """The diff as one diff per hunk (a ``---``/``+++`` header of its file, then the hunk's
    lines as the patch file has them), in diff order."""
    from patchbay.diff.parse import parse_diff

    lines = diff.splitlines(keepends=True)
    out = []
    for fp in parse_diff(diff, source=Path("x.diff"), strip=1).files:
        head = f"--- a/{fp.path}\n+++ b/{fp.path}\n".encode()
        for hunk in fp.hunks:
            start = hunk.line - 1  # the @@ line, 1-based in the patch file
            out.append(head + b"".join(lines[start : start + 1 + len(hunk.lines)]))
    return out


def test_the_k3_patchset_on_the_real_engine_files_agrees_with_git_apply(tmp_path: Path) -> None:
    ps = _vendored(tmp_path, KIMI, K3_SCRIPT)
    root = _engine_root(tmp_path / "site-packages")
    pristine = snapshot(root)
    res = run_main("check", ps, "--root", root, "--json")
    assert res.code == 1  # VLLM_ENVS conflicts on 0.27.0, the pin needs an interpreter
    checked = {p["id"]: p for p in json.loads(res.out)["patches"]}
    assert snapshot(root) == pristine

    applies: dict[str, dict[str, bool]] = {"vllm": {}, "aiter": {}}
    for patch in _patches(ps):
        if patch["kind"] != "diff" or patch["id"] in NEEDS_THE_FORGE:
            continue
        diff = (ps / "vendor" / f"{patch['id']}.patch").read_bytes()
        ours = checked[patch["id"]]
        git_hunks = [_git_check(root, one) for one in _single_hunks(diff)]
        assert [h["state"] == "pending" for h in ours["hunks"]] == git_hunks, patch["id"]
        assert all(h["state"] in ("pending", "conflict") for h in ours["hunks"])
        whole = _git_check(root, diff)
        assert (ours["verdict"] == "applies") == whole, patch["id"]
        applies[patch["target"]][patch["id"]] = whole
    # as measured on these files: 7 of the 8 vLLM diffs apply, both aiter diffs apply
    assert [pid for pid, ok in applies["vllm"].items() if not ok] == ["vllm-envs-asm-padding"]
    assert len(applies["vllm"]) == 8
    assert list(applies["aiter"].values()) == [True, True]
    envs = checked["vllm-envs-asm-padding"]
    assert [h["state"] for h in envs["hunks"]] == ["conflict", "pending"]
    # the Python edits apply on the tree the hand-merged diff leaves
    assert checked["vllm-dspark-ps-verify-qlen"]["verdict"] == "applies"
    assert checked["vllm-dspark-ps-verify-fp8-asm"]["verdict"] == "applies"


def test_apply_no_op_revert_of_the_k3_patches_on_the_real_engine_files(tmp_path: Path) -> None:
    ps = _vendored(tmp_path, KIMI, K3_SCRIPT)
    # the patches a root of real files can take: every diff and edit but VLLM_ENVS (its hunk 1
    # conflicts on 0.27.0) and #4521's (the forge's), no pin, kernel download or GPU rebuild
    doc = yaml.safe_load((ps / "patchset.yaml").read_text())
    skip = {"vllm-envs-asm-padding", *NEEDS_THE_FORGE}
    doc["patches"] = [
        p for p in doc["patches"] if p["kind"] in ("diff", "replace") and p["id"] not in skip
    ]
    (ps / "patchset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    root = _engine_root(tmp_path / "site-packages")
    pristine = snapshot(root)
    state = tmp_path / "state"

    res = run_main("apply", ps, "--root", root, "--state-dir", state)
    assert res.code == 0, res.err
    applied = snapshot(root)
    # what the script makes: git apply of the same diffs, then its str.replace edits
    expected = _engine_root(tmp_path / "by-git")
    for patch in doc["patches"]:
        if patch["kind"] == "diff":
            diff = ps / "vendor" / f"{patch['id']}.patch"
            subprocess.run(["git", "apply", "-p1", str(diff)], cwd=expected, check=True)
        else:
            constants = json.loads((ps / "vendor" / f"{patch['id']}.json").read_text())
            for edit in patch["edits"]:
                old, new = constants[edit["old_from"]], constants[edit["new_from"]]
                path = expected / edit["file"]
                text = path.read_text()
                assert text.count(old) == 1
                path.write_text(text.replace(old, new, 1))
    assert _contents(root) == _contents(expected)

    res = run_main("apply", ps, "--root", root, "--state-dir", state)
    assert res.code == 0, res.err
    assert "nothing to do" in res.out
    assert snapshot(root) == applied

    res = run_main("revert", ps, "--root", root, "--state-dir", state)
    assert res.code == 0, res.err
    assert _contents(root) == {rel: data for rel, (data, _) in pristine.items()}


def _aiter_history(path: Path, gluon: bytes) -> dict[str, str]:
    """A real git repository of the aiter files at 044f906a8d (``B0``), then ``M``: the
    MLA_GLUON diff's hunk 1 only (what ROCm/aiter#4474 merged), then ``F``: all three hunks."""
    from github_standin import git

    shutil.copytree(ENGINE / "aiter-044f906a8d", path)
    for p in [path, *path.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    git(path, "init", "-q", "-b", "main")
    ids = {}
    for name, diff, when in [
        ("B0", None, "2026-07-01T10:00:00Z"),
        ("M", _single_hunks(gluon)[0], "2026-07-02T10:00:00Z"),
        ("F", b"".join(_single_hunks(gluon)[1:]), "2026-07-03T10:00:00Z"),
    ]:
        if diff is not None:
            subprocess.run(["git", "apply", "-p1", "-"], cwd=path, input=diff, check=True)
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"{name} (#4474)" if name == "M" else name, date=when)
        ids[name] = git(path, "rev-parse", "HEAD")
    return ids


@pytest.mark.parametrize(
    ("pin", "covers", "verdict"),
    [("M", True, "refresh"), ("M", False, "refresh"), ("F", False, "remove")],
)
def test_the_report_judges_mla_gluon_by_content_without_an_image(
    tmp_path: Path, pin: str, covers: bool, verdict: str
) -> None:
    """#4474 is merged and in the pinned aiter commit: only content tells that 2 of the 3
    hunks are still needed there (``check`` on those files says ``partial``)."""
    from github_standin import GitHubStandIn, Pull
    from patchbay.patchset.loading import load_patchset
    from patchbay.upstream import GitHubClient
    from patchbay.upstream.status import assess

    ps = _vendored(tmp_path, KIMI, K3_SCRIPT)
    gluon = (ps / "vendor" / "aiter-mla-gluon.patch").read_bytes()
    ids = _aiter_history(tmp_path / "aiter", gluon)
    doc = yaml.safe_load((ps / "patchset.yaml").read_text())
    for c in doc["components"]:
        if c["distribution"] == "amd-aiter":
            c["commit"] = ids[pin]
    (gluon_patch,) = [p for p in doc["patches"] if p["id"] == "aiter-mla-gluon"]
    if not covers:
        gluon_patch["upstream"] = ["ROCm/aiter#4474"]
    (ps / "patchset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    with GitHubStandIn() as server:
        repo = server.add_repo("ROCm/aiter", str(tmp_path / "aiter"))
        repo.pulls[4474] = Pull(
            4474, "int64 KV stride", "closed", merged=True, merge_commit_sha=ids["M"],
            merged_at="2026-07-02T10:00:00Z",
        )  # fmt: skip
        client = GitHubClient(server.url, cache_dir=tmp_path / "cache")
        got = {a.patch_id: a for a in assess([load_patchset(ps)], client)}
    a = got["aiter-mla-gluon"]
    assert a.verdict.value == verdict, a.reason
    (pinned,) = [e for e in a.evidence if e.image == "pinned"]
    # the same files through check: the classification agrees hunk for hunk
    root = tmp_path / "at-pin"
    (root / "aiter").mkdir(parents=True)
    subprocess.run(
        ["git", "-C", str(tmp_path / "aiter"), "archive", ids[pin], "aiter"],
        stdout=open(tmp_path / "a.tar", "wb"),  # noqa: SIM115
        check=True,
    )
    subprocess.run(["tar", "-xf", str(tmp_path / "a.tar"), "-C", str(root)], check=True)
    only = tmp_path / "only"
    shutil.copytree(ps, only)
    one = yaml.safe_load((only / "patchset.yaml").read_text())
    one["patches"] = [gluon_patch]
    one["targets"] = {"aiter": one["targets"]["aiter"]}
    (only / "patchset.yaml").write_text(yaml.safe_dump(one, sort_keys=False))
    res = run_main("check", only, "--root", root, "--json")
    (checked,) = json.loads(res.out)["patches"]
    states = [h["state"] for h in checked["hunks"]]
    present = tuple(n for n, s in enumerate(states, 1) if s == "upstream")  # the image has it
    assert pinned.present == present
    if verdict == "refresh":
        assert checked["verdict"] == "partial" and present == (1,)
        assert "hunks 2-3" in a.reason
    else:
        assert checked["verdict"] == "upstream" and "already ships" in a.reason
