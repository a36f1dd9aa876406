"""``patchbay import``: shell patch scripts into draft patchsets.

The scripts here are written the way teams write them: helper functions, diffs in
here-documents applied behind a ``grep`` marker with ``git apply || patch --fuzz=3`` (one diff
lost the leading space of its blank context line), a checked-in patch file, a Python
here-document doing ``str.replace``, ``pip install`` pins with an extra index, a ``curl`` loop
over kernel files, a rebuild after removing a stale build, and upstream references in comments.

The main test runs the real script with bash in one copy of a demo-engine environment and
applies the imported patchset to another copy, with the package indexes and the kernel host
served on 127.0.0.1, and compares the two trees.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pip
import pytest
import yaml

from conftest import REPO, Engine, _site_packages, dedent, run_cli
from patchbay.errors import InputError
from patchbay.importer import import_script, parse_projects
from patchbay.importer.refs import find_refs
from servers import Response, Server, make_wheel

SCHEDULER_PATCH = (REPO / "patchsets/demo/patches/02-scheduler-padding.patch").read_bytes()

ENVS_DIFF = """\
diff --git a/demo_engine/envs.py b/demo_engine/envs.py
--- a/demo_engine/envs.py
+++ b/demo_engine/envs.py
@@ -3,3 +3,4 @@ import os
 USE_FAST_DECODE = os.environ.get("DEMO_USE_FAST_DECODE", "0") == "1"
 MAX_BATCH = int(os.environ.get("DEMO_MAX_BATCH", "256"))
 KV_CACHE_DTYPE = os.environ.get("DEMO_KV_CACHE_DTYPE", "auto")
+ASM_PADDING = os.environ.get("DEMO_ASM_PADDING", "none")
"""

# the blank context line (line 5 of decode.py) lost its leading space, as editors do
DECODE_DIFF = """\
--- a/demo_engine/ops/decode.py
+++ b/demo_engine/ops/decode.py
@@ -2,7 +2,7 @@ def decode_step(state, indices, stride_token):
     out = []
     for i in range(len(indices)):
         idx = indices[i]

-        if idx <= 0:
+        if idx < 0:
             out.append(0.0)
             continue
"""

KERNEL_ROW_DIFF = """\
--- a/kernels/mla_asm.csv
+++ b/kernels/mla_asm.csv
@@ -1,2 +1,3 @@
 heads,qlen,dtype,kernel
 128,1,bf16,mla_a16w16_qh128.co
+16,4,fp8,mla_a8w8_qh16_qseqlen4.co
"""

REBUILD = (
    "import hashlib, importlib.util, os; "
    'd = importlib.util.find_spec("demo_engine").submodule_search_locations[0]; '
    'os.makedirs(os.path.join(d, "jit"), exist_ok=True); '
    'src = open(os.path.join(d, "ops", "decode.py"), "rb").read(); '
    'open(os.path.join(d, "jit", "module_decode.so"), "w").write(hashlib.sha256(src).hexdigest())'
)

KERNELS = {
    f"mla_a8w8_qh{heads}_qseqlen4.co": f"DEMO-KERNEL fp8 qh{heads}\n".encode() * 32
    for heads in (16, 32, 64)
}

SCRIPT = (
    """\
#!/usr/bin/env bash
# Bring the demo engine image up for the fp8 MLA model.
# Usage: PYTHON=/path/to/engine/python ./patch-demo.sh
set -euo pipefail

PYTHON=${PYTHON:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
WS=$(mktemp -d)
trap 'rm -rf "$WS"' EXIT

# where the engine is installed (never import it: it probes the GPU on import)
PKG_DIR=$("$PYTHON" -c \\
  'import importlib.util as u; print(u.find_spec("demo_engine").submodule_search_locations[0])')
SITE=$(dirname "$PKG_DIR")
META="$SITE/demo_engine_meta"
KERNEL_URL=@KERNEL_URL@
EXTRA_INDEX=@EXTRA_INDEX@

log() { echo "[patch-demo] $*"; }

apply_one() {
  local rel="$1" marker="$2" file="$3"
  if grep -q "$marker" "$SITE/$rel"; then
    log "skip $rel: already patched"
    return 0
  fi
  (cd "$SITE" && git apply -p1 "$file") || patch -d "$SITE" -p1 --fuzz=3 -N < "$file"
  log "patched $rel"
}

# 1. envs: read DEMO_ASM_PADDING (demo-engine #101)
cat > "$WS/envs.diff" <<'EOF'
"""
    + ENVS_DIFF
    + """\
EOF
apply_one demo_engine/envs.py DEMO_ASM_PADDING "$WS/envs.diff"

# 2. decode: padded slots carry index 0 (https://github.com/demo-org/demo-engine/pull/105)
cat > "$WS/decode.diff" <<'DECODE_PADDED_SLOTS'
"""
    + DECODE_DIFF
    + """\
DECODE_PADDED_SLOTS
apply_one demo_engine/ops/decode.py "idx < 0" "$WS/decode.diff"

# 3. scheduler padding, checked in next to this script (demo-org/demo-engine#102)
apply_one demo_engine/scheduler.py ASM_PADDING "$HERE/patches/scheduler-padding.patch"

# 4. Triton MLA: full graphs for multi-token decode; no upstream PR yet
"$PYTHON" - "$PKG_DIR/scheduler.py" <<'PY'
import sys
from pathlib import Path

path = Path(sys.argv[1])
src = path.read_text()
if "num_decode_tokens >= 1" in src:
    print("already patched")
    sys.exit(0)
src = src.replace(
    "        return num_decode_tokens == 1\\n", "        return num_decode_tokens >= 1\\n"
)
path.write_text(src)
PY

# 5. kernel table row for the fp8 kernels, in the sibling data folder (demo-engine #104)
cat > "$WS/kernel-row.diff" <<'EOF'
"""
    + KERNEL_ROW_DIFF
    + """\
EOF
if ! grep -q qh16_qseqlen4 "$META/kernels/mla_asm.csv"; then
  (cd "$SITE" && git apply --directory=demo_engine_meta "$WS/kernel-row.diff")
fi

# 6. Triton from the ROCm index (vllm #51011 needs it), and the benchmark harness
"$PYTHON" -m pip install --quiet --extra-index-url "$EXTRA_INDEX" triton==3.7.0
"$PYTHON" -m pip install -q benchtool==1.0

# 7. fp8 MLA kernels, demo-engine #104
for k in mla_a8w8_qh16_qseqlen4.co mla_a8w8_qh32_qseqlen4.co mla_a8w8_qh64_qseqlen4.co; do
  curl -fsSL --retry 3 -o "$META/kernels/gfx950/$k" "$KERNEL_URL/$k"
done

# 8. rebuild the decode module: its cache is keyed on the module name
rm -rf "$PKG_DIR/jit/module_decode.so" "$PKG_DIR/jit/build/module_decode"
"$PYTHON" -c '"""
    + REBUILD
    + """'

# show what the kernels folder holds now
for f in "$META"/kernels/gfx950/*.co; do
  sha256sum "$f"
done
log "done"
"""
)

# lines of SCRIPT, for the checks below
LINE_ENVS = (
    SCRIPT.splitlines().index('apply_one demo_engine/envs.py DEMO_ASM_PADDING "$WS/envs.diff"') + 1
)
LINE_LOOP = SCRIPT.splitlines().index('for f in "$META"/kernels/gfx950/*.co; do') + 1
LINE_HARNESS = SCRIPT.splitlines().index('"$PYTHON" -m pip install -q benchtool==1.0') + 1


def write_script(folder: Path, kernel_url: str, extra_index: str) -> Path:
    """The demo script and its checked-in patch file, in ``folder``."""
    (folder / "patches").mkdir(parents=True, exist_ok=True)
    (folder / "patches" / "scheduler-padding.patch").write_bytes(SCHEDULER_PATCH)
    script = folder / "patch-demo.sh"
    text = SCRIPT.replace("@KERNEL_URL@", kernel_url).replace("@EXTRA_INDEX@", extra_index)
    script.write_text(text)
    return script


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")


@pytest.fixture(scope="session")
def pip_engine_template(tmp_path_factory: pytest.TempPathFactory, engine_template: Path) -> Path:
    """The demo engine environment with a pip of its own (copied from patchbay's environment,
    the same interpreter: much faster than a venv with ensurepip)."""
    prefix = tmp_path_factory.mktemp("import-template") / "engine"
    shutil.copytree(engine_template, prefix, symlinks=True)
    site = _site_packages(prefix)
    pip_dir = Path(pip.__file__).parent
    shutil.copytree(pip_dir, site / "pip")
    for info in pip_dir.parent.glob("pip-*.dist-info"):
        shutil.copytree(info, site / info.name)
    return prefix


def copy_engine(template: Path, prefix: Path) -> Engine:
    shutil.copytree(template, prefix, symlinks=True)
    return Engine(prefix=prefix, python=prefix / "bin" / "python", site=_site_packages(prefix))


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes, bytecode caches left out (they hold mtimes)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


# -- the whole script ---------------------------------------------------------------------------


def test_imported_patchset_applies_like_the_script(
    tmp_path: Path, pip_engine_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheels = tmp_path / "wheels"
    triton = make_wheel(wheels / "rocm", "triton", "3.7.0")
    benchtool = make_wheel(wheels / "pypi", "benchtool", "1.0")
    with Server() as pypi, Server() as rocm, Server() as downloads:
        index = pypi.serve_index([benchtool])
        extra_index = rocm.serve_index([triton])
        for name, body in KERNELS.items():
            downloads.add(f"/demo/kernels/gfx950/{name}", Response(body=body))
        script = write_script(
            tmp_path / "scripts", f"{downloads.url}/demo/kernels/gfx950", extra_index
        )
        # pip's default index is the local one too: nothing may reach the internet
        monkeypatch.setenv("PIP_INDEX_URL", index)
        monkeypatch.setenv("PIP_RETRIES", "0")

        # the original script, run by bash in one copy of the environment
        by_script = copy_engine(pip_engine_template, tmp_path / "by-script")
        proc = subprocess.run(
            ["bash", str(script)],
            env={
                **os.environ,
                "PYTHON": str(by_script.python),
                "PATH": f"{by_script.prefix / 'bin'}:{os.environ['PATH']}",
            },
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert "[patch-demo] patched demo_engine/envs.py" in proc.stdout

        # the imported patchset, locked with vendor and applied to another copy
        out = tmp_path / "patchsets" / "demo-import"
        res = run_cli(
            "import", script, "--out", out, "--project", "demo-engine=demo-org/demo-engine"
        )
        assert res.code == 1, res.out + res.err  # partial: the loop over a run-time glob
        assert "NOT CONVERTED: 1 part(s)" in res.out
        res = run_cli("vendor", out)
        assert res.code == 0, res.err
        assert res.out.count("locked http://127.0.0.1") == 3
        by_patchbay = copy_engine(pip_engine_template, tmp_path / "by-patchbay")
        res = run_cli("apply", out, "--python", by_patchbay.python)
        assert res.code == 0, res.out + res.err

    assert tree(by_patchbay.site) == tree(by_script.site)
    assert (by_patchbay.pkg / "jit" / "module_decode.so").is_file()
    # a second run changes nothing, and needs neither the index nor the download host
    res = run_cli("apply", out, "--python", by_patchbay.python)
    assert res.code == 0, res.err
    assert "nothing to do" in res.out


# -- the patchset it writes, file by file -------------------------------------------------------

KERNEL_HOST = "https://downloads.example.invalid/demo/kernels/gfx950"
ROCM_INDEX = "https://pypi.example.invalid/rocm/simple/"
TODO_STATUS = {
    "status": "Pending",
    "reason": "TODO: no upstream reference in the script; link the upstream PR or commit, or "
    "give the real status and why",
}


def test_import_writes_the_patchset_file_by_file(tmp_path: Path) -> None:
    script = write_script(tmp_path / "scripts", KERNEL_HOST, ROCM_INDEX)
    out = tmp_path / "patchsets" / "demo-import"
    res = run_cli("import", script, "--out", out, "--project", "demo-engine=demo-org/demo-engine")
    assert res.code == 1, res.err
    assert "9 patch(es) (4 diff, 1 replace, 2 pip, 1 artifact, 1 command)" in res.out
    assert f"{script}:lines {LINE_LOOP}-{LINE_LOOP + 2}: a loop over" in res.out
    assert "NOT LOCKED: download-gfx950" in res.out  # `validate` ran on the result
    assert f"{out / 'patchset.yaml'}: valid (9 patch(es), 1 not locked yet" in res.out

    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "IMPORT-NOTES.md",
        "patches/01-envs.patch",
        "patches/02-decode-padded-slots.patch",
        "patches/05-kernel-row.patch",
        "patches/scheduler-padding.patch",
        "patchset.yaml",
    ]
    # diffs byte for byte as the script carried them (the blank context line stays blank)
    assert (out / "patches/01-envs.patch").read_text() == ENVS_DIFF
    assert (out / "patches/02-decode-padded-slots.patch").read_text() == DECODE_DIFF
    assert "\n\n-        if idx <= 0:" in DECODE_DIFF
    assert (out / "patches/05-kernel-row.patch").read_text() == KERNEL_ROW_DIFF
    assert (out / "patches/scheduler-padding.patch").read_bytes() == SCHEDULER_PATCH

    text = (out / "patchset.yaml").read_text()
    assert "# patch-demo.sh line(s) " in text
    assert text.count("sha256: null  # NOT LOCKED") == 3
    doc = yaml.safe_load(text)
    kernels = [f"mla_a8w8_qh{h}_qseqlen4.co" for h in (16, 32, 64)]
    assert doc == {
        "schema": 1,
        "name": "demo-import",
        "description": "Imported from patch-demo.sh. Bring the demo engine image up for the fp8 "
        "MLA model. Usage: PYTHON=/path/to/engine/python ./patch-demo.sh",
        "image": {"reference": "TODO: the image this script patches (registry/name:tag)"},
        "targets": {
            "demo_engine": {"package": "demo_engine"},
            "demo_engine_meta": {"package": "demo_engine", "path": "demo_engine_meta"},
        },
        "patches": [
            {
                "id": "envs",
                "kind": "diff",
                "target": "demo_engine",
                "description": "envs: read DEMO_ASM_PADDING (demo-engine #101)",
                "upstream": ["demo-org/demo-engine#101"],
                "file": "patches/01-envs.patch",
            },
            {
                "id": "decode-padded-slots",
                "kind": "diff",
                "target": "demo_engine",
                "description": "decode: padded slots carry index 0 "
                "(https://github.com/demo-org/demo-engine/pull/105)",
                "upstream": ["https://github.com/demo-org/demo-engine/pull/105"],
                "file": "patches/02-decode-padded-slots.patch",
            },
            {
                "id": "scheduler-padding",
                "kind": "diff",
                "target": "demo_engine",
                "description": "scheduler padding, checked in next to this script "
                "(demo-org/demo-engine#102)",
                "upstream": ["demo-org/demo-engine#102"],
                "file": "patches/scheduler-padding.patch",
            },
            {
                "id": "scheduler-edit",
                "kind": "replace",
                "target": "demo_engine",
                "description": "Triton MLA: full graphs for multi-token decode; no upstream PR yet",
                "upstream_status": TODO_STATUS,
                "edits": [
                    {
                        "file": "demo_engine/scheduler.py",
                        "old": "        return num_decode_tokens == 1\n",
                        "new": "        return num_decode_tokens >= 1\n",
                    }
                ],
            },
            {
                "id": "kernel-row",
                "kind": "diff",
                "target": "demo_engine_meta",
                "description": "kernel table row for the fp8 kernels, in the sibling data folder "
                "(demo-engine #104)",
                "upstream": ["demo-org/demo-engine#104"],
                "file": "patches/05-kernel-row.patch",
            },
            {
                "id": "triton-3.7.0",
                "kind": "pip",
                "description": "Triton from the ROCm index (vllm #51011 needs it), and the "
                "benchmark harness",
                "upstream": ["vllm-project/vllm#51011"],
                "requirement": "triton==3.7.0",
                # the script's --extra-index-url, as the one index (dependency confusion)
                "index_url": ROCM_INDEX,
            },
            {
                "id": "benchtool-1.0",
                "kind": "pip",
                "description": "TODO: say what this patch does and why (imported from "
                f"patch-demo.sh line {LINE_HARNESS})",
                "upstream_status": TODO_STATUS,
                "requirement": "benchtool==1.0",
            },
            {
                "id": "download-gfx950",
                "kind": "artifact",
                "target": "demo_engine_meta",
                "description": "fp8 MLA kernels, demo-engine #104",
                "upstream": ["demo-org/demo-engine#104"],
                "files": [
                    {"url": f"{KERNEL_HOST}/{k}", "dest": f"kernels/gfx950/{k}", "sha256": None}
                    for k in kernels
                ],
            },
            {
                "id": "rebuild-module_decode",
                "kind": "command",
                "target": "demo_engine",
                "description": "rebuild the decode module: its cache is keyed on the module name",
                "upstream_status": {
                    "status": "Inappropriate",
                    "reason": "a rebuild step of the environment, not a code change",
                },
                "argv": ["{python}", "-c", REBUILD],
                "remove": [
                    "demo_engine/jit/module_decode.so",
                    "demo_engine/jit/build/module_decode",
                ],
                "output": "demo_engine/jit/module_decode.so",
                "after": [
                    "envs",
                    "decode-padded-slots",
                    "scheduler-padding",
                    "scheduler-edit",
                    "kernel-row",
                    "download-gfx950",
                ],
            },
        ],
    }

    notes = (out / "IMPORT-NOTES.md").read_text()
    assert "The import is **partial**: 1 part(s) of the script were not converted" in notes
    assert f"### lines {LINE_LOOP}-{LINE_LOOP + 2}: a loop over" in notes
    assert '```sh\nfor f in "$META"/kernels/gfx950/*.co; do\n  sha256sum "$f"\ndone\n```' in notes
    assert (
        f"- `benchtool-1.0` (lines {LINE_HARNESS}): benchtool is not an engine package "
        "(a harness tool?)" in notes
    )
    assert "`benchtool-1.0`: description" in notes
    assert "`scheduler-edit`: upstream reference or upstream_status" in notes
    # every top-level command of the script has its row, and says what it became
    rows = [line for line in notes.splitlines() if re.match(r"\| \d", line)]
    assert len(rows) == 27
    assert (
        f'| {LINE_ENVS} | `apply_one demo_engine/envs.py DEMO_ASM_PADDING "$WS/envs.diff"` '
        "| patch envs |" in rows
    )
    assert any(
        r.startswith(f"| {LINE_LOOP}-{LINE_LOOP + 2} |") and "NOT CONVERTED" in r for r in rows
    )
    assert any("`trap " in r and "nothing to import" in r for r in rows)


# -- what cannot be converted -----------------------------------------------------------------

UNCONVERTIBLE = """\
#!/bin/bash
set -euo pipefail
PKG=$(python3 -c 'import demo_engine, os; print(os.path.dirname(demo_engine.__file__))')
# tabs to spaces in every module (a computed list)
for f in $(find "$PKG" -name '*.py'); do
  sed -i 's/\\t/    /' "$f"
done
sed -i 's/MAX_BATCH", "256"/MAX_BATCH", "512"/' "$PKG/envs.py"
case "$(uname -m)" in
  x86_64) echo ok ;;
esac
while read -r line; do echo "$line"; done < /etc/hostname
python3 - <<'PY'
import re, pathlib, demo_engine
p = pathlib.Path(demo_engine.__file__).parent / "envs.py"
p.write_text(re.sub(r"256", "512", p.read_text()))
PY
pip install numpy
curl -fsSL -o "$PKG/k.co" "$(cat /etc/kernel-url)"
git clone https://github.com/demo-org/demo-engine /tmp/src
source ./env.sh
cat > "$PKG/extra.py" <<'EOF'
X = 1
EOF
cd "$(dirname "$PKG")"
patch -p1 <<EOF
--- a/demo_engine/worker.py
+++ b/demo_engine/worker.py
@@ -1 +1 @@
-from demo_engine import scheduler
+from demo_engine import scheduler  # $HOME
EOF
rm -f "$PKG/scheduler.py"
# this one still converts (sglang #77; see also foo #12)
python3 - "$PKG/envs.py" <<'PY'
import sys
p = sys.argv[1]
with open(p) as f:
    s = f.read()
for old, new in [('"0") == "1"', '"1") == "1"'), ('"auto")', '"fp8")')]:
    s = s.replace(old, new)
with open(p, "w") as f:
    f.write(s)
PY
pip install --no-index --find-links "$WHEELHOUSE" tinypkg==1.2.3
curl -fsSL -o "$PKG/k2.co" "$DOWNLOADS/kernels/k2.co"
"""


def test_what_cannot_be_converted_is_listed_with_its_lines(tmp_path: Path) -> None:
    script = tmp_path / "unconvertible.sh"
    script.write_text(UNCONVERTIBLE)
    result = import_script(script, tmp_path / "out", projects=parse_projects([]))
    assert result.partial
    found = [(o.start, o.end, o.text) for o in result.unconverted]
    expected = [
        (5, 7, "a loop over $(find \"$PKG\" -name '*.py'), a list computed at run time"),
        (9, 11, "a case statement"),
        (12, 12, "a while loop"),
        (13, 17, "Python the importer does not follow: a call of .sub()"),
        (18, 18, "pip install numpy: not pinned"),
        (19, 19, "downloads from a URL computed at run time"),
        (20, 20, "git clone"),
        (21, 21, "sources another script (./env.sh)"),
        (22, 24, 'writes "$PKG/extra.py" (a file of the engine install)'),
        (26, 32, "the here-document <<EOF is not quoted and expands values known only at run"),
        (33, 33, "removes demo_engine/scheduler.py from the engine install"),
        (45, 45, "tinypkg==1.2.3 from $WHEELHOUSE, computed at run time"),
        (46, 46, "downloads from a URL computed at run time"),
    ]
    assert len(found) == len(expected), found
    for (start, end, text), (want_start, want_end, want) in zip(found, expected, strict=True):
        assert (start, end) == (want_start, want_end), text
        assert want in text
    # what it could convert, it did: a literal sed edit, and literal edits from a loop over
    # literal pairs
    doc = yaml.safe_load((tmp_path / "out" / "patchset.yaml").read_text())
    [sed, patch] = doc["patches"]
    assert sed["kind"] == "replace"
    assert sed["edits"] == [
        {"file": "demo_engine/envs.py", "old": 'MAX_BATCH", "256"', "new": 'MAX_BATCH", "512"'}
    ]
    assert patch["upstream"] == ["sgl-project/sglang#77"]
    assert patch["edits"] == [
        {"file": "demo_engine/envs.py", "old": '"0") == "1"', "new": '"1") == "1"'},
        {"file": "demo_engine/envs.py", "old": '"auto")', "new": '"fp8")'},
    ]
    notes = (tmp_path / "out" / "IMPORT-NOTES.md").read_text()
    assert "## Not converted (13)" in notes
    for start, end, _ in found:
        assert (f"### line {start}:" if start == end else f"### lines {start}-{end}:") in notes
    assert "a comment mentions `foo #12`, a project the importer does not know" in notes
    res = run_cli("validate", tmp_path / "out")
    assert res.code == 0, res.err


# -- bad input ---------------------------------------------------------------------------------


def test_bad_input_is_one_line_naming_the_file_and_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run_cli("import", tmp_path / "missing.sh", "--out", out)
    assert res.code == 2
    assert res.err == f"patchbay: error: {tmp_path / 'missing.sh'}: no such script\n"

    broken = tmp_path / "broken.sh"
    broken.write_text("#!/bin/bash\nif true; then\n  echo hi\nfi fi\n")
    res = run_cli("import", broken, "--out", out)
    assert res.code == 2
    assert res.err.startswith(
        f"patchbay: error: {broken}:4: not valid shell (bash -n): syntax error"
    )
    assert "Traceback" not in res.err and len(res.err.splitlines()) == 1

    open_heredoc = tmp_path / "open-heredoc.sh"
    open_heredoc.write_text("#!/bin/bash\necho start\ncat > /tmp/x.diff <<'EOF'\n--- a/x\n")
    res = run_cli("import", open_heredoc, "--out", out)
    assert res.code == 2
    assert res.err == (
        f"patchbay: error: {open_heredoc}:3: here-document <<EOF is not terminated (no line "
        "'EOF' before the end of the script)\n"
    )
    assert not out.exists()

    fine = tmp_path / "fine.sh"
    fine.write_text("#!/bin/bash\necho nothing to patch\n")
    out.mkdir()
    (out / "keep.txt").write_text("someone's work\n")
    with pytest.raises(InputError, match="already exists and is not empty"):
        import_script(fine, out)
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    with pytest.raises(InputError, match="--project 'vllm': expected NAME=OWNER/REPO"):
        parse_projects(["vllm"])
    result = import_script(fine, tmp_path / "o3")
    assert not result.partial and result.patches == []  # nothing to convert: complete
    assert run_cli("validate", tmp_path / "o3").code == 0


# -- --python: the status of the result --------------------------------------------------------


def test_import_with_python_shows_the_status_of_the_result(tmp_path: Path, engine: Engine) -> None:
    script = tmp_path / "patch.sh"
    script.write_text(
        dedent(
            """
            #!/bin/sh
            set -e
            SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
            cd "$SITE"
            # demo-org/demo-engine#7
            git apply <<'EOF'
            """
        )
        + ENVS_DIFF
        + dedent(
            """
            EOF
            python3 - "$SITE/demo_engine/scheduler.py" <<'PY'
            import sys
            p = sys.argv[1]
            s = open(p).read()
            s = s.replace("def pick_batch(requests):", "def pick_batch(requests):")
            s = s.replace("limit = envs.MAX_BATCH\\n", "limit = envs.MAX_BATCH // 2\\n")
            open(p, "w").write(s)
            PY
            """
        )
    )
    res = run_cli("import", script, "--out", tmp_path / "out", "--python", engine.python)
    assert res.code == 0, res.out + res.err
    assert re.search(r"envs\b.*pending", res.out), res.out
    assert re.search(r"scheduler-edit\b.*pending", res.out), res.out
    doc = yaml.safe_load((tmp_path / "out" / "patchset.yaml").read_text())
    assert doc["patches"][1]["edits"] == [
        {
            "file": "demo_engine/scheduler.py",
            "old": "limit = envs.MAX_BATCH\n",
            "new": "limit = envs.MAX_BATCH // 2\n",
        }
    ]
    notes = (tmp_path / "out" / "IMPORT-NOTES.md").read_text()
    assert "a replace() that changes nothing was left out" in notes


# -- recognisers, one at a time -----------------------------------------------------------------


def _import(tmp_path: Path, text: str, *projects: str) -> tuple[object, dict[str, object], str]:
    script = tmp_path / "scripts" / "patch.sh"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(dedent(text))
    out = tmp_path / "out"
    result = import_script(script, out, projects=parse_projects(list(projects)), force=True)
    doc = yaml.safe_load((out / "patchset.yaml").read_text())
    return result, doc, (out / "IMPORT-NOTES.md").read_text()


def test_upstream_references_in_comments() -> None:
    projects = parse_projects(["demo=demo-org/demo-engine"])
    text = (
        "backport of vllm #51011 and vllm PR 51682 (aiter#4474, see also sglang pull #12);\n"
        "https://github.com/triton-lang/triton/pull/7.diff, ROCm/aiter@110055925df4, "
        "Demo #3, step #2, frobnicator #9"
    )
    found = find_refs(text, projects)
    assert found.refs == [
        "vllm-project/vllm#51011",
        "vllm-project/vllm#51682",
        "ROCm/aiter#4474",
        "sgl-project/sglang#12",
        "https://github.com/triton-lang/triton/pull/7",
        "ROCm/aiter@110055925df4",
        "demo-org/demo-engine#3",
    ]
    assert found.unknown == ["frobnicator #9"]
    assert find_refs("flashinfer #5", parse_projects([])).refs == ["flashinfer-ai/flashinfer#5"]
    custom = parse_projects(["vllm=my-fork/vllm"])
    assert find_refs("vllm #1", custom).refs == ["my-fork/vllm#1"]


def test_python_edit_forms(tmp_path: Path) -> None:
    _, doc, notes = _import(
        tmp_path,
        """
        #!/bin/bash
        PKG=$(python3 -c 'import importlib.util as u
        print(u.find_spec("demo_engine").submodule_search_locations[0])')
        export PKG
        # unquoted here-document: the shell fills in $PKG
        python3 <<EOF
        p = "$PKG/envs.py"
        text = open(p).read()
        text = text.replace('"256"', '"512"')
        open(p, "w").write(text)
        EOF
        # os.environ, pathlib and a with block (vllm #1)
        python3 - <<'PY'
        import os, pathlib
        path = pathlib.Path(os.environ["PKG"]) / "worker.py"
        with open(path) as fh:
            src = fh.read()
        assert "r * 2" in src
        src = src.replace("r * 2", "r * 3", 1)
        with open(path, "w") as fh:
            fh.write(src)
        PY
        # alternatives are not edits in a row
        python3 - <<'PY'
        import os
        p = os.path.join(os.environ["PKG"], "envs.py")
        s = open(p).read()
        if "auto" in s:
            s = s.replace("auto", "fp8")
        else:
            s = s.replace("bf16", "fp8")
        open(p, "w").write(s)
        PY
        """,
    )
    assert [p["edits"] for p in doc["patches"]] == [  # type: ignore[index]
        [{"file": "demo_engine/envs.py", "old": '"256"', "new": '"512"'}],
        [{"file": "demo_engine/worker.py", "old": "r * 2", "new": "r * 3"}],
    ]
    assert doc["patches"][1]["upstream"] == ["vllm-project/vllm#1"]  # type: ignore[index]
    assert "an if/else that makes different edits in each branch" in notes


def test_downloads_pins_and_checked_in_patches(tmp_path: Path) -> None:
    patches = tmp_path / "scripts" / "patches"
    patches.mkdir(parents=True)
    first = ENVS_DIFF
    second = (
        "--- a/demo_engine/envs.py\n+++ b/demo_engine/envs.py\n@@ -6 +6 @@\n"
        '-ASM_PADDING = os.environ.get("DEMO_ASM_PADDING", "none")\n'
        '+ASM_PADDING = os.environ.get("DEMO_ASM_PADDING", "none")  # padded\n'
    )
    (patches / "10-envs.patch").write_text(first)
    (patches / "20-envs-comment.patch").write_text(second)
    result, doc, notes = _import(
        tmp_path,
        """
        #!/bin/sh
        set -e
        SITE=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
        cd "$SITE"
        # checked-in backports, in order
        for p in "$(dirname "$0")"/patches/*.patch; do
        \tgit apply "$p"
        done
        patch -p1 -N < "$(dirname "$0")/patches/20-envs-comment.patch" || true
        # vllm PR 51682, fetched at run time
        curl -fsSL https://github.com/vllm-project/vllm/pull/51682.diff | git apply -p1
        WS=$(mktemp -d)
        wget -q -P "$WS" https://example.invalid/kernels/k1.co
        install -m 0644 "$WS/k1.co" "$SITE/demo_engine_meta/kernels/"
        CXX=hipcc BUILD_WITH_HIP=1 pip install --no-build-isolation --no-deps \\
          -i https://idx.invalid/simple "flash-attn==2.8.0"
        pip3 install 'git+https://github.com/o/bar@0123456789abcdef0123456789abcdef01234567#egg=bar'
        """,
    )
    assert not result.partial  # type: ignore[attr-defined]
    patches_out = doc["patches"]
    assert [(p["id"], p["kind"]) for p in patches_out] == [  # type: ignore[union-attr]
        ("10-envs", "diff"),
        ("20-envs-comment", "diff"),
        ("vllm-51682", "diff"),
        ("download-k1", "artifact"),
        ("flash-attn-2.8.0", "pip"),
        ("bar-0123456789ab", "pip"),
    ]
    assert patches_out[0]["file"] == "patches/10-envs.patch"  # type: ignore[index]
    assert (tmp_path / "out/patches/20-envs-comment.patch").read_text() == second
    source = patches_out[2]["source"]  # type: ignore[index]
    assert source == {"repo": "vllm-project/vllm", "pr": 51682}
    assert patches_out[3]["target"] == "demo_engine_meta"  # type: ignore[index]
    assert patches_out[3]["files"] == [  # type: ignore[index]
        {"url": "https://example.invalid/kernels/k1.co", "dest": "kernels/k1.co", "sha256": None}
    ]
    pin = patches_out[4]
    assert (pin["index_url"], pin["no_deps"], pin["no_build_isolation"]) == (  # type: ignore[index]
        "https://idx.invalid/simple",
        True,
        True,
    )
    assert pin["build_env"] == {"CXX": "hipcc", "BUILD_WITH_HIP": "1"}  # type: ignore[index]
    assert patches_out[5]["requirement"] == (  # type: ignore[index]
        "bar @ git+https://github.com/o/bar@0123456789abcdef0123456789abcdef01234567"
    )
    assert "bar is not an engine package (a harness tool?)" in notes
    assert "applies the same diff again" in notes
    assert run_cli("validate", tmp_path / "out").code == 0


def test_shell_reader_keeps_lines_and_here_documents() -> None:
    """The grammar the importer reads with (tree-sitter-bash, through the analyser) keeps the
    statements' lines, ``<<-`` here-documents with every leading tab removed, a loop's items
    (quoted, ``$'...'``), functions, ``case`` and the comments."""
    from patchbay.analysis import analyse_shell
    from patchbay.analysis.syntax import parse_shell

    text = dedent(
        """
        #!/bin/bash
        # header
        x=$(cd "$(dirname "$0")" && \\
          pwd)
        f() { echo "$1"; }
        if [[ -f a && -d b ]]; then
        \tcat <<-EOF >/dev/null
        \t\ttabbed $x
        \tEOF
        fi
        for k in a 'b c' $'d\\te'; do f "$k"; done  # trailing
        case "$x" in
          a|b) echo one ;;
          *) echo two ;;
        esac
        """
    )
    source = parse_shell(text, "t.sh")
    nodes = [n for n in source.root.named_children if n.type != "comment"]
    kinds = [(n.type, source.line(n), source.end_line(n)) for n in nodes]
    assert kinds == [
        ("variable_assignment", 3, 4),
        ("function_definition", 5, 5),
        ("if_statement", 6, 10),
        ("for_statement", 11, 11),
        ("case_statement", 12, 15),
    ]
    [redirect] = [n for n in _walk_nodes(nodes[2]) if n.type == "heredoc_redirect"]
    assert source.heredoc_body(redirect) == "tabbed $x\n"  # every tab goes
    assert source.text(next(c for c in redirect.children if c.type == "heredoc_start")) == "EOF"
    analysis = analyse_shell(text, "t.sh")
    assert analysis.loops[11] == {"items": 3, "computed": [], "globbed": False}
    assert [f.name for f in analysis.functions] == ["f"]
    assert analysis.functions[0].calls == (11,)
    comments = {source.line(n): source.text(n) for n in _walk_nodes(source.root)
                if n.type == "comment"}  # fmt: skip
    assert comments[2] == "# header" and comments[11] == "# trailing"


def _walk_nodes(node):  # type: ignore[no-untyped-def]
    yield node
    for child in node.children:
        yield from _walk_nodes(child)


def test_import_refuses_bad_out_and_bad_interpreter_before_writing(tmp_path: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/bash\npip install triton==3.7.0\n")
    res = run_cli("import", script, "--out", "/dev/null/x")
    assert res.code == 2
    assert "/dev/null is not a folder" in res.err
    out = tmp_path / "out"
    res = run_cli("import", script, "--out", out, "--python", tmp_path / "no-python")
    assert res.code == 2
    assert "engine interpreter not found" in res.err
    assert not out.exists()


FALLBACK = (
    """\
#!/bin/bash
# Patches for the MI300X run:
#   demo-org/demo-engine #20112  padding of the fp8 envs
set -e
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
apply() { (cd "$SITE" && git apply "$1") || patch -d "$SITE" -p1 -N < "$1"; }
old_fix() { sed -i 's/MAX_BATCH = 256/MAX_BATCH = 512/' "$SITE/demo_engine/envs.py"; }
cat > /tmp/envs.diff <<'EOF'
"""
    + ENVS_DIFF
    + """\
EOF
apply /tmp/envs.diff
"""
)


def test_fallback_is_one_patch_header_reference_and_uncalled_helper_listed(tmp_path: Path) -> None:
    """A helper that tries `git apply` and falls back to `patch` is one patch; the header's
    `owner/repo #N  what` line gives it its upstream and description; a helper the script never
    calls that would change the engine is listed, so the import is partial."""
    script = tmp_path / "fallback.sh"
    script.write_text(FALLBACK)
    result = import_script(script, tmp_path / "out", projects=parse_projects([]))
    doc = yaml.safe_load((tmp_path / "out" / "patchset.yaml").read_text())
    [patch] = doc["patches"]
    assert (patch["kind"], patch["upstream"]) == ("diff", ["demo-org/demo-engine#20112"])
    assert patch["description"] == "padding of the fp8 envs"
    assert (tmp_path / "out" / patch["file"]).read_text() == ENVS_DIFF
    assert result.partial
    [missing] = result.unconverted
    assert (missing.start, missing.end) == (7, 7)
    assert "old_fix() is never called, and it would change the engine" in missing.text


HELPERS = """\
#!/bin/bash
set -e
python3 - <<'PY'
import importlib.util, os


def engine_file(rel):
    root = importlib.util.find_spec("demo_engine").submodule_search_locations[0]
    return os.path.join(root, rel)


def replace_in(path, pairs):
    with open(path) as fh:
        text = fh.read()
    for old, new in pairs:
        text = text.replace(old, new)
    with open(path, "w") as fh:
        fh.write(text)


replace_in(engine_file("scheduler.py"), [("limit = envs.MAX_BATCH\\n", "limit = 64\\n")])
PY
"""


def test_literal_edits_through_python_helper_functions(tmp_path: Path) -> None:
    """A path computed by one helper and rewritten by another, with literal `.replace` edits:
    a `replace` patch (with a note to check it), and the import is complete."""
    script = tmp_path / "helpers.sh"
    script.write_text(HELPERS)
    result = import_script(script, tmp_path / "out", projects=parse_projects([]))
    assert not result.partial, [o.text for o in result.unconverted]
    doc = yaml.safe_load((tmp_path / "out" / "patchset.yaml").read_text())
    [patch] = doc["patches"]
    assert patch["edits"] == [
        {
            "file": "demo_engine/scheduler.py",
            "old": "limit = envs.MAX_BATCH\n",
            "new": "limit = 64\n",
        }
    ]
    assert "helper functions" in (tmp_path / "out" / "IMPORT-NOTES.md").read_text()


HEREDOC_PATCH = (
    "cd $(python3 -c 'import demo_engine, os; print(os.path.dirname(demo_engine.__file__))')/..\n"
    "git apply <<'EOF'\n"
    "--- a/demo_engine/worker.py\n+++ b/demo_engine/worker.py\n@@ -1 +1 @@\n"
    "-X = 1\n+X = 2\nEOF\n"
)


@pytest.mark.parametrize(
    "comment",
    [
        "# TODO: document this script\n",
        "# Bump the kernel rows (see <link to PR>)\n",
        "# XXX check with AMD\n",
        "# todo: explain\n",
        "# TODOList widget: cap the rows\n",
        "",
    ],
)
def test_the_to_fill_count_is_the_blanks_validate_lists(tmp_path: Path, comment: str) -> None:
    """Whatever a script's comments say (placeholder-like words become a description), the
    count ``import`` gives is the number of ``TO FILL`` lines of ``validate`` on the draft."""
    from inprocess import run_main

    result, _doc, notes = _import(
        tmp_path, "#!/bin/bash\n" + comment + "set -e\n" + HEREDOC_PATCH + "pip install x==1\n"
    )
    res = run_main("validate", tmp_path / "out")
    assert res.code == 0, res.err
    listed = [line for line in res.out.splitlines() if line.startswith("TO FILL: ")]
    assert len(listed) == len(result.todo), (listed, result.todo)  # type: ignore[attr-defined]
    assert f"## Blanks to fill in patchset.yaml ({len(listed)})" in notes


@pytest.mark.parametrize("delimiter", ["EOF2", "PATCH_1", "eof-3"])
def test_a_numbered_heredoc_delimiter_does_not_name_the_patch(
    tmp_path: Path, delimiter: str
) -> None:
    text = "#!/bin/bash\nset -e\n" + HEREDOC_PATCH.replace("'EOF'", f"'{delimiter}'").replace(
        "\nEOF\n", f"\n{delimiter}\n"
    )
    _result, doc, _notes = _import(tmp_path, text)
    ids = [p["id"] for p in doc["patches"]]  # type: ignore[index]
    assert len(ids) == 1 and delimiter.lower() not in ids[0], ids


def test_a_script_whose_name_is_not_utf8(tmp_path: Path) -> None:
    """A script named by Latin-1 bytes (``q\\xe9.sh``) imports: the draft and its notes name
    it ``q\\xe9.sh`` (patchbay.printable's rule), and the draft validates."""
    from inprocess import run_main

    script = os.fsdecode(os.fsencode(str(tmp_path)) + b"/q\xe9.sh")
    Path(script).write_text(
        "#!/bin/bash\nSITE=/usr/lib/python3/site-packages\n"
        "sed -i 's/MAX = 8/MAX = 16/' $SITE/vllm/envs.py\n"
    )
    res = run_main("import", script, "--out", tmp_path / "out")
    assert res.crash is None, res.crash
    assert res.code in (0, 1), res.err
    assert "q\\xe9.sh" in (tmp_path / "out" / "patchset.yaml").read_text(encoding="utf-8")
    assert "q\\xe9.sh" in (tmp_path / "out" / "IMPORT-NOTES.md").read_text(encoding="utf-8")
    assert run_main("validate", tmp_path / "out").code == 0


PATCHER = """\
# vllm #4343: a bigger default batch
import importlib.util, pathlib
path = pathlib.Path(importlib.util.find_spec("demo_engine").origin).parent / "envs.py"
text = path.read_text()
path.write_text(text.replace('"DEMO_MAX_BATCH", "256"', '"DEMO_MAX_BATCH", "512"'))
"""


def test_a_python_patcher_is_imported_as_replace_edits(tmp_path: Path) -> None:
    """A ``.py`` patcher, imported on its own or run by the script, becomes the ``replace``
    edits it makes, with the references of its own comments (it was refused as "not valid
    shell", or listed as not converted)."""
    (tmp_path / "tools").mkdir()
    patcher = tmp_path / "tools" / "fix_envs.py"
    patcher.write_text(PATCHER)
    script = tmp_path / "patch.sh"
    script.write_text(
        "#!/bin/bash\nset -e\n"
        "PKG=$(python3 -c 'import demo_engine, os; print(os.path.dirname(demo_engine.__file__))')\n"
        "python3 tools/fix_envs.py\n"
    )
    projects = {"demo_engine": "example/demo-engine", **parse_projects([])}
    for source, line in ((script, 4), (patcher, 1)):
        out = tmp_path / f"out-{source.stem}"
        result = import_script(source, out, projects=projects)
        assert not result.partial, result.unconverted
        doc = yaml.safe_load((out / "patchset.yaml").read_text())
        (patch,) = doc["patches"]
        assert patch["kind"] == "replace"
        assert patch["edits"] == [
            {
                "file": "demo_engine/envs.py",
                "old": '"DEMO_MAX_BATCH", "256"',
                "new": '"DEMO_MAX_BATCH", "512"',
            }
        ]
        assert patch["upstream"] == ["vllm-project/vllm#4343"]
        assert f"line(s) {line}" in (out / "patchset.yaml").read_text()


def test_a_python_patcher_that_does_not_parse_is_bad_input(tmp_path: Path) -> None:
    broken = tmp_path / "fix.py"
    broken.write_text("import vllm\ndef (:\n")
    res = run_cli("import", broken, "--out", tmp_path / "out")
    assert res.code == 2
    assert f"{broken}:2: not valid Python" in res.err, res.err


def test_a_credential_the_script_spelled_out_is_never_copied(tmp_path: Path) -> None:
    """A token in an index or download URL becomes a ``${NAME}`` reference in the patchset
    (with a note naming the variable), and the notes never show it."""
    script = tmp_path / "secret.sh"
    script.write_text(
        "#!/bin/bash\nset -e\n"
        "SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')\n"
        "pip install --index-url https://ci:s3cr3t-t0ken-value@pypi.example.com/simple "
        "vllm==0.9.2\n"
        'curl -fsSL -o "$SITE/aiter_meta/k.co" '
        "https://robot:an0ther-s3cret-v4lue@files.example.com/k.co\n"
    )
    out = tmp_path / "out"
    import_script(script, out, projects=parse_projects([]))
    text = (out / "patchset.yaml").read_text()
    notes = (out / "IMPORT-NOTES.md").read_text()
    for secret in ("s3cr3t-t0ken-value", "an0ther-s3cret-v4lue"):
        assert secret not in text and secret not in notes
    assert "https://ci:${PYPI_EXAMPLE_COM_TOKEN}@pypi.example.com/simple" in text
    assert "https://robot:${FILES_EXAMPLE_COM_TOKEN}@files.example.com/k.co" in text
    assert "set PYPI_EXAMPLE_COM_TOKEN where `patchbay apply` runs" in notes


def test_an_environment_reference_is_expanded_only_where_it_is_used() -> None:
    from patchbay.envrefs import expand, reference_for
    from patchbay.errors import RefusedError
    from patchbay.redaction import redact

    url = "https://ci:${INDEX_TOKEN}@pypi.example.com/simple"
    assert expand(url, "index_url", {"INDEX_TOKEN": "tok-1234567890"}) == (
        "https://ci:tok-1234567890@pypi.example.com/simple"
    )
    assert "tok-1234567890" not in redact("failed: https://x/tok-1234567890")
    with pytest.raises(RefusedError, match=r"\$\{INDEX_TOKEN\}, which is not set"):
        expand(url, "index_url", {})
    assert reference_for(url) == (url, None)
    assert reference_for("https://files.example.com/k.co") == (
        "https://files.example.com/k.co",
        None,
    )
    assert reference_for("https://git@github.com/x") == ("https://git@github.com/x", None)


ONE_OF = """\
#!/bin/bash
set -e
ROOT=$(python3 -c 'import vllm, os; print(os.path.dirname(os.path.dirname(vllm.__file__)))')
cat > /tmp/A.diff <<'EOF1'
--- a/vllm/envs.py
+++ b/vllm/envs.py
@@ -1,3 +1,3 @@
 a
-b
+c
 d
EOF1
cat > /tmp/B.diff <<'EOF2'
--- a/vllm/envs.py
+++ b/vllm/envs.py
@@ -1,3 +1,3 @@
 a
-bb
+c
 d
EOF2
apply_one_of() {
  for d in "$@"; do
    if (cd "$ROOT" && git apply -p1 "$d"); then return 0; fi
  done
  return 1
}
apply_one_of /tmp/A.diff /tmp/B.diff
"""


def test_two_diffs_of_one_change_from_different_bases_are_one_patch(tmp_path: Path) -> None:
    """``apply_one_of A B`` (the same edit for two images) is one patch and a note naming the
    other; a patchset that carries both is refused by validate, naming both."""
    script = tmp_path / "one_of.sh"
    script.write_text(ONE_OF)
    out = tmp_path / "out"
    import_script(script, out, projects=parse_projects([]))
    doc = yaml.safe_load((out / "patchset.yaml").read_text())
    assert [p["kind"] for p in doc["patches"]] == ["diff"]
    notes = (out / "IMPORT-NOTES.md").read_text()
    assert "both make the same change from different bases" in notes
    assert run_cli("validate", out).code == 0
    (out / "patches" / "b.patch").write_text(
        "--- a/vllm/envs.py\n+++ b/vllm/envs.py\n@@ -1,3 +1,3 @@\n a\n-bb\n+c\n d\n"
    )
    doc["patches"].append({**doc["patches"][0], "id": "b", "file": "patches/b.patch"})
    (out / "patchset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    res = run_cli("validate", out)
    assert res.code == 2, res.out + res.err
    assert "make the same change to vllm/envs.py from different bases" in res.err
