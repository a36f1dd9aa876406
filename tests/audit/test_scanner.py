"""The scanner of undeclared engine patching (PB401-PB410), through the real CLI.

The shared case 010 is checked line by line against its expected findings; the fixtures below add
one positive line per mechanism and a script of harness work that must stay silent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import CASES, REPO, dedent, run_cli
from patchbay.analysis.syntax import parse_shell

POSITIVE_SH = dedent(
    """
    #!/usr/bin/env bash
    VLLM_DIR=$(python3 -c "import vllm, os; print(os.path.dirname(vllm.__file__))")
    cd "$VLLM_DIR" && git apply /patches/a.patch
    perl -pi -e 's/a/b/' /usr/lib/python3/dist-packages/vllm/envs.py
    awk -i inplace '{print}' "$VLLM_DIR/config.py"
    cat > "$VLLM_DIR/patched.py" <<'EOF'
    print("x")
    EOF
    install -m 644 kernel.co /opt/venv/lib/python3.12/site-packages/aiter_meta/hsa/kernel.co
    wget -O "$VLLM_DIR/x.so" https://example.invalid/x.so
    tar -xzf kernels.tgz -C "$VLLM_DIR"
    pip install "vllm @ git+https://github.com/vllm-project/vllm@main"
    pip install /wheels/sglang-0.5.0-py3-none-any.whl
    git clone https://github.com/sgl-project/sglang.git
    cd sglang && pip install -e "python[all]"
    echo /workspace/hooks > "$VLLM_DIR/hooks.pth"
    cp hooks/sitecustomize.py /usr/local/lib/python3.12/site-packages/
    pip install -U vllm==0.11.0
    sed -i 's/a/b/' "$VLLM_DIR/envs.py" || true
    cp x.py "$VLLM_DIR/x.py"  # patchbay-reviewed PB404: vetted override, see waiver W-1
    # patchbay-reviewed
    cp y.py "$VLLM_DIR/y.py"
    """
)
POSITIVE_SH_EXPECTED = [
    (3, "PB401"),
    (4, "PB402"),
    (5, "PB402"),
    (6, "PB403"),
    (9, "PB404"),
    (10, "PB404"),
    (11, "PB404"),
    (12, "PB405"),
    (13, "PB405"),
    (14, "PB406"),
    (16, "PB407"),
    (17, "PB407"),
    (18, "PB408"),
    (19, "PB402"),
    (19, "PB409"),
    (20, "PB404"),  # suppressed by its annotation
    (21, "PB410"),
    (22, "PB404"),  # the annotation above has no reason, so it does not count
]

NEGATIVE_SH = dedent(
    """
    #!/usr/bin/env bash
    # patch the server config, then run the sweep
    pip install --quiet tabulate==0.9.0 "aiperf>=0.3"
    pip install -r requirements.txt
    git clone https://github.com/example/bench-tools.git && pip install -e bench-tools
    sed -i 's/^model:.*/model: x/' configs/run.yaml
    cp results.json /workspace/results/vllm/
    curl -fsSL -o /tmp/data.json https://example.invalid/data.json
    patchbay apply patchsets/demo --python python3
    patch -p1 < fixes/harness.patch
    git apply --check /patches/a.patch
    python3 - <<'EOF'
    import vllm; print(vllm.__file__)
    EOF
    cat > run_config.yaml <<EOF
    sed -i s/x/y/ /usr/lib/python3/site-packages/vllm/envs.py
    EOF
    export PYTHONPATH=$PYTHONPATH
    vllm serve $MODEL --port 8000 --download-dir /models/vllm/cache
    echo "$(date) done" >> logs/run.log
    git clone -b main https://github.com/vllm-project/vllm && cd vllm \\
      && git checkout 1a2b3c4d && pip install -e .
    x=$((1 << 3))
    """
)

DOCKERFILE = dedent(
    """
    FROM vllm/vllm-openai:v0.11.0
    ENV SITE=/usr/local/lib/python3.12/dist-packages
    COPY patches/envs.py ${SITE}/vllm/envs.py
    RUN cd $SITE && patch -p1 < /tmp/fix.patch
    RUN pip install git+https://github.com/fork/vllm.git@dev
    ENV PYTHONPATH=/opt/hooks:$PYTHONPATH
    RUN pip install tabulate
    COPY configs/ /workspace/configs/
    WORKDIR /usr/local/lib/python3.12/dist-packages
    RUN sed -i 's/a/b/' vllm/envs.py
    """
)
DOCKERFILE_EXPECTED = [(3, "PB404"), (4, "PB401"), (5, "PB405"), (6, "PB407"), (10, "PB402")]

PATCH_PY = dedent(
    """
    import os, shutil, subprocess, sysconfig
    site = sysconfig.get_paths()["purelib"]
    target = os.path.join(site, "vllm", "envs.py")
    with open(target, "w") as fh:
        fh.write("X = 1\\n")
    shutil.copy("override.py", os.path.join(site, "vllm/override.py"))
    subprocess.run(["git", "apply", "/patches/x.patch"], cwd=site, check=True)
    os.environ["PYTHONPATH"] = "/opt/hooks"
    """
)
PATCH_PY_EXPECTED = [(4, "PB403"), (6, "PB403"), (7, "PB401"), (8, "PB407")]

REPORT_PY = dedent(
    """
    import json, subprocess
    from pathlib import Path
    HERE = Path(__file__).parent
    with open(HERE / "results.json", "w") as fh:
        json.dump({}, fh)
    subprocess.run(["pip", "install", "tabulate"], check=True)
    rel = Path("x").relative_to(HERE)
    """
)


def _findings(repo: Path) -> dict[str, list[dict]]:
    res = run_cli("audit", repo, "--format", "json")
    assert res.code in (0, 1), res.err
    out: dict[str, list[dict]] = {}
    for f in json.loads(res.out)["findings"]:
        if f["code"].startswith("PB4"):
            out.setdefault(f["path"], []).append(f)
    return out


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    """One repository holding case 010 (with the demo patchset, whose component names the
    engine) and the fixtures above, audited once."""
    repo = tmp_path_factory.mktemp("scan")
    shutil.copytree(REPO / "patchsets" / "demo", repo / "patchsets" / "demo")
    (repo / "scripts").mkdir()
    shutil.copy(CASES / "010-undeclared-patching" / "serve_demo.sh", repo / "scripts")
    files = {
        "scripts/positive.sh": POSITIVE_SH,
        "scripts/negative.sh": NEGATIVE_SH,
        "docker/Dockerfile": DOCKERFILE,
        "tools/patch_vllm.py": PATCH_PY,
        "tools/report.py": REPORT_PY,
    }
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return _findings(repo)


def _lines(findings: list[dict]) -> list[tuple[int, str]]:
    return [(f["line"], f["code"]) for f in findings]


def test_case_010_exact_findings(scanned: dict[str, list[dict]]) -> None:
    """expected.md: findings at 6, 8, 10-15, 17, 18 (with its || true), 19, 20, 21; none at
    5, 23, 24, 25, 26."""
    found = scanned["scripts/serve_demo.sh"]
    assert _lines(found) == [
        (6, "PB405"),
        (8, "PB402"),
        (10, "PB403"),
        (17, "PB401"),
        (18, "PB401"),
        (18, "PB409"),
        (19, "PB404"),
        (20, "PB404"),
        (21, "PB407"),
    ]
    by_line = {(f["line"], f["code"]): f for f in found}
    assert by_line[(10, "PB403")]["end_line"] == 15
    assert "fork" in by_line[(6, "PB405")]["message"]
    assert "fast-decode" in by_line[(6, "PB405")]["message"]
    assert "|| true" in by_line[(18, "PB409")]["message"]
    assert "hash" in by_line[(20, "PB404")]["message"]
    assert "PYTHONPATH" in by_line[(21, "PB407")]["message"]
    assert not {5, 23, 24, 25, 26} & {f["line"] for f in found}
    assert all(f["suppressed"] is None for f in found)


def test_every_mechanism_is_found(scanned: dict[str, list[dict]]) -> None:
    found = scanned["scripts/positive.sh"]
    assert _lines(found) == POSITIVE_SH_EXPECTED
    severities = {(f["line"], f["code"]): f["severity"] for f in found}
    assert severities[(18, "PB408")] == "warning"
    assert severities[(12, "PB405")] == "error"


def test_review_annotation_needs_a_reason(scanned: dict[str, list[dict]]) -> None:
    found = {(f["line"], f["code"]): f for f in scanned["scripts/positive.sh"]}
    assert found[(20, "PB404")]["suppressed"] == {
        "kind": "inSource",
        "reason": "vetted override, see waiver W-1",
    }
    assert found[(22, "PB404")]["suppressed"] is None
    assert found[(21, "PB410")]["suppressed"] is None


def test_dockerfile_and_python(scanned: dict[str, list[dict]]) -> None:
    assert _lines(scanned["docker/Dockerfile"]) == DOCKERFILE_EXPECTED
    assert _lines(scanned["tools/patch_vllm.py"]) == PATCH_PY_EXPECTED


def test_harness_work_is_not_a_finding(scanned: dict[str, list[dict]]) -> None:
    """Precision: tool installs, results, own config, a pinned engine clone, heredoc data,
    a declared `patchbay apply` and launching the engine are silent."""
    assert "scripts/negative.sh" not in scanned
    assert "tools/report.py" not in scanned


def test_parser_keeps_words_and_operators() -> None:
    """The grammar (tree-sitter-bash) splits a line into commands, words, redirections and
    operators, keeps the comment apart, and keeps `$(...)` and here-document words whole."""
    source = parse_shell(
        """cd "$SITE" && patch -p1 -d "$SITE" < x.diff 2>&1 || true  # note\n""", "t.sh"
    )
    commands = [n for n in _nodes(source.root) if n.type == "command"]
    assert [[source.text(c) for c in cmd.named_children if c.type != "file_redirect"]
            for cmd in commands] == [
        ["cd", '"$SITE"'],
        ["patch", "-p1", "-d", '"$SITE"'],
        ["true"],
    ]  # fmt: skip
    redirects = [source.text(n) for n in _nodes(source.root) if n.type == "file_redirect"]
    assert redirects == ["< x.diff", "2>&1"]
    assert [n.type for n in _nodes(source.root) if n.type in ("&&", "||")] == ["&&", "||"]
    assert [source.text(n) for n in _nodes(source.root) if n.type == "comment"] == ["# note"]
    source = parse_shell("python3 - \"$(python3 -c 'print(1)')\" <<'PY'\nprint(2)\nPY\n", "t.sh")
    [subst] = [n for n in _nodes(source.root) if n.type == "command_substitution"]
    assert source.text(subst) == "$(python3 -c 'print(1)')"
    [redirect] = [n for n in _nodes(source.root) if n.type == "heredoc_redirect"]
    assert source.heredoc_body(redirect) == "print(2)\n"


def _nodes(node):  # type: ignore[no-untyped-def]
    yield node
    for child in node.children:
        yield from _nodes(child)


RECALL_SH = dedent(
    """
    #!/usr/bin/env bash
    cd /usr/lib/python3/site-packages/vllm
    sed -i 's/a/b/' envs.py
    perl -pi -e 's/a/b/' config.py
    perl -i -pe 's/a/b/' config.py
    cp /tmp/x.py .
    VLLM_DIR=$(python3 -c "import vllm, os; print(os.path.dirname(vllm.__file__))")
    cd "$VLLM_DIR"
    sed -i 's/a/b/' envs.py
    git clone https://github.com/ROCm/aiter && cd aiter && pip install .
    find /usr/lib/python3/site-packages/vllm -name '*.py' -exec sed -i 's/a/b/' {} +
    for f in /usr/lib/python3/site-packages/vllm/*.py; do sed -i 's/a/b/' "$f"; done
    python3 -c "import vllm; p=vllm.__file__; open(p,'a').write('x')"
    docker exec c sed -i 's/a/b/' /usr/lib/python3/site-packages/vllm/envs.py
    sed -i 's/a/b/' /usr/lib/python3/site-packages/vllm/envs.py || echo failed
    for g in "$VLLM_DIR"/*.py
    do
      perl -i -pe 's/a/b/' "$g"
    done
    find "$VLLM_DIR" -name '*.py' -exec perl -pi -e 's/a/b/' {} \\;
    """
)
RECALL_SH_EXPECTED = [
    (3, "PB402"),
    (4, "PB402"),
    (5, "PB402"),
    (6, "PB404"),
    (9, "PB402"),
    (10, "PB406"),
    (11, "PB402"),
    (12, "PB402"),
    (13, "PB403"),
    (14, "PB402"),
    (15, "PB402"),
    (15, "PB409"),
    (18, "PB402"),
    (20, "PB402"),
]

PRECISION_SH = dedent(
    """
    #!/usr/bin/env bash
    sed -i 's/a/b/' /usr/lib/python3/site-packages/vllm/envs.py || { echo failed; exit 1; }
    sed -i 's/a/b/' /usr/lib/python3/site-packages/vllm/envs.py || echo failed >&2 && exit 1
    git clone https://github.com/ROCm/aiter && cd aiter && git checkout 0123abcd && pip install .
    cd /workspace/results && sed -i 's/a/b/' summary.txt
    find results -name '*.json' -exec sed -i 's/a/b/' {} +
    for f in /usr/lib/python3/site-packages/vllm/*.py; do echo "$f"; done
    for f in configs/*.yaml; do sed -i 's/a/b/' "$f"; done
    python3 -c "import vllm; print(vllm.__file__)"
    python3 -c "import json; open('out.json', 'w').write('{}')"
    docker exec c pip install tabulate
    docker exec c cat /usr/lib/python3/site-packages/vllm/envs.py
    docker exec -w /workspace c sed -i 's/a/b/' run.yaml
    SITE=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    cd "$SITE"
    python3 -c "import vllm"
    cd /workspace
    sed -i 's/a/b/' config.yaml
    cp results.json .
    perl -pi -e 's/a/b/' configs/run.yaml
    pip install tabulate || echo "tabulate not installed"
    cd "$SITE" && git apply /workspace/patches/fix.patch
    sed -i 's/a/b/' configs/run.yaml
    cp results/*.json /workspace/results/
    """
)
# 2, 3: reported, but the failure still stops the script; 22: only the cd line's own command
PRECISION_SH_EXPECTED = [(2, "PB402"), (3, "PB402"), (22, "PB401")]


def test_recall_cd_loops_find_docker_and_python_c(tmp_path: Path) -> None:
    """Each line here came back clean before: a relative edit after `cd` into an installed
    folder, a clone built on its own line, find -exec, a for loop, `python -c` with
    statements on one line, docker exec, and `|| echo` after an engine edit."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "recall.sh").write_text(RECALL_SH)
    (tmp_path / "scripts" / "precision.sh").write_text(PRECISION_SH)
    found = _findings(tmp_path)
    assert _lines(found["scripts/recall.sh"]) == RECALL_SH_EXPECTED
    by_line = {(f["line"], f["code"]): f["message"] for f in found["scripts/recall.sh"]}
    assert "working folder /usr/lib/python3/site-packages/vllm" in by_line[(3, "PB402")]
    assert "config.py" in by_line[(5, "PB402")]  # the program is not taken for a file
    assert "working folder $VLLM_DIR" in by_line[(9, "PB402")]
    assert "built or installed at line 10" in by_line[(10, "PB406")]
    assert "vllm.__file__" in by_line[(13, "PB403")]
    assert "|| echo" in by_line[(15, "PB409")]
    assert _lines(found["scripts/precision.sh"]) == PRECISION_SH_EXPECTED


def test_a_plain_requirement_is_read_as_packaging_reads_it() -> None:
    """The requirements scripts write most (a name, extras, release comparisons) are read
    without ``packaging``, with its answer: the name as written, the comparisons sorted; any
    other form is left to it."""
    import itertools

    from packaging.requirements import InvalidRequirement, Requirement

    from patchbay.analysis.handlers.installs import _plain_requirement

    names = ["datasets", "lm-eval", "swe_rex", "A1", "x.y", "a-", "-a", "9"]
    extras = ["", "[api]", "[a,b]", "[a-]", "[]", "[a, b]"]
    specs = [
        "",
        "==2.4.5",
        ">=4.7.0",
        "<5,>=4",
        "~=1",
        "~=1.4",
        "==1.*",
        ">=2.0rc1",
        "=1",
        ">=1,>=2",
    ]
    read = 0
    for name, extra, spec in itertools.product(names, extras, specs):
        text = name + extra + spec
        mine = _plain_requirement(text)
        if mine is None:
            continue
        read += 1
        try:
            req = Requirement(text)
        except InvalidRequirement:
            raise AssertionError(f"{text!r} read, but packaging refuses it") from None
        assert mine == (req.name, str(req.specifier)), text
    assert read >= 50
    assert _plain_requirement("vllm ; python_version>'3'") is None  # a marker: packaging's
