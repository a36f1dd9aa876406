"""A generated corpus of bad inputs, each run through the real command line in this process.

Every input is a small variation of one valid patchset (a diff and an exact-text edit of the
demo engine), made by a category function: malformed YAML, YAML features patchbay refuses,
schema values, wrong types, unknown keys, inconsistent patchsets, odd patch files, corrupt
diffs of many shapes, bad hunk counts, binary junk, NUL bytes, bad paths, bad lock files, bad
state folders, bad interpreters, damaged journals, and refusals. Adding a category is one
function appended to ``CATEGORIES``.

Each input runs under several of validate, status, apply, revert, check and verify, against
one shared engine tree (a ``--root`` folder; the interpreter cases use real processes) and
asserts: the exit code (2 for bad input, 1 where a refusal is the contract), one line on
stderr naming the file, no traceback, and the engine tree unchanged by hash.

Path-escape inputs (quoted octal ``..``, ``\\0`` and ``\\777`` escapes, NUL bytes, absolute
paths) go through the path gate (``patchbay/environment/paths.py``) like every other path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from inprocess import run_main

COMMANDS = ("validate", "status", "apply", "revert", "check", "verify")
CONTENT = ("validate", "status", "apply", "check", "verify")  # the ones that read patch files

ENVS = """import os

USE_FAST_DECODE = os.environ.get("DEMO_USE_FAST_DECODE", "0") == "1"
MAX_BATCH = int(os.environ.get("DEMO_MAX_BATCH", "256"))
KV_CACHE_DTYPE = os.environ.get("DEMO_KV_CACHE_DTYPE", "auto")
"""

HUNK = (
    "@@ -3,3 +3,4 @@ import os\n"
    ' USE_FAST_DECODE = os.environ.get("DEMO_USE_FAST_DECODE", "0") == "1"\n'
    ' MAX_BATCH = int(os.environ.get("DEMO_MAX_BATCH", "256"))\n'
    ' KV_CACHE_DTYPE = os.environ.get("DEMO_KV_CACHE_DTYPE", "auto")\n'
    '+ASM_PADDING = os.environ.get("DEMO_ASM_PADDING", "none")\n'
)
HEADER = (
    "diff --git a/demo_engine/envs.py b/demo_engine/envs.py\n"
    "--- a/demo_engine/envs.py\n+++ b/demo_engine/envs.py\n"
)
GOOD_DIFF = HEADER + HUNK


def base_doc() -> dict[str, object]:
    """The valid patchset every input varies."""
    return {
        "schema": 1,
        "name": "corpus",
        "image": {"reference": "example.invalid/demo-engine:test"},
        "targets": {"engine": {"package": "demo_engine"}},
        "patches": [
            {
                "id": "envs-padding",
                "kind": "diff",
                "target": "engine",
                "file": "patches/a.patch",
                "description": "Read DEMO_ASM_PADDING.",
                "upstream": ["demo-org/demo-engine#101"],
            },
            {
                "id": "full-graph",
                "kind": "replace",
                "target": "engine",
                "description": "Full graphs for multi-token decode.",
                "upstream_status": {"status": "Pending", "reason": "not sent yet"},
                "edits": [
                    {
                        "file": "demo_engine/scheduler.py",
                        "old": "        return num_decode_tokens == 1\n",
                        "new": "        return num_decode_tokens >= 1\n",
                    }
                ],
            },
        ],
    }


@dataclass
class Input:
    """One bad input: the patchset folder's files (relative path -> bytes; None removes a
    base file), an optional ``setup`` on the folder (FIFOs, links), the commands it runs
    under, and what each must answer."""

    name: str
    files: dict[str, bytes | None] = field(default_factory=dict)
    setup: Callable[[Path, Path], None] | None = None  # (patchset folder, scratch folder)
    commands: tuple[str, ...] = COMMANDS
    code: int | dict[str, int] = 2
    names: str = "patchset.yaml"  # what the message must name ("{ps}", "{tmp}" expand)
    args: tuple[str, ...] = ()  # replaces --root TREE and --state-dir (with {tree} etc.)
    one_line: bool = True
    xfail: str | None = None

    def expected(self, command: str) -> int:
        return self.code if isinstance(self.code, int) else self.code.get(command, 2)


def yaml_text(doc: object) -> bytes:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode()


def with_doc(name: str, edit: Callable[[dict], None], **kw: object) -> Input:
    """An input made by editing the base document (a dict) in place."""
    doc = base_doc()
    edit(doc)
    return Input(name, files={"patchset.yaml": yaml_text(doc)}, **kw)


def raw(name: str, text: str | bytes, **kw: object) -> Input:
    data = text.encode() if isinstance(text, str) else text
    return Input(name, files={"patchset.yaml": data}, **kw)


def diff_file(name: str, text: str | bytes, **kw: object) -> Input:
    data = text.encode() if isinstance(text, str) else text
    kw.setdefault("commands", CONTENT)
    kw.setdefault("names", "a.patch")
    return Input(name, files={"patches/a.patch": data}, **kw)


def patch0(doc: dict) -> dict:
    return doc["patches"][0]


def patch1(doc: dict) -> dict:
    return doc["patches"][1]


def setter(getter: Callable[[dict], dict], key: str, value: object) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        getter(doc)[key] = value

    return edit


def top(doc: dict) -> dict:
    return doc


# -- categories ---------------------------------------------------------------------------------


def malformed_yaml() -> Iterator[Input]:
    good = yaml_text(base_doc()).decode()
    yield raw("unclosed-flow", "schema: 1\nname: [corpus\n")
    yield raw("tab-indent", "schema: 1\ntargets:\n\tengine: {package: demo_engine}\n")
    yield raw("bad-indent", "schema: 1\nname: x\n  image: y\n")
    yield raw("unterminated-quote", 'schema: 1\nname: "corpus\n')
    yield raw("colon-colon", "schema: 1\nname: : x\n")
    yield raw("duplicate-key", good + "name: again\n")
    yield raw("two-documents", good + "---\nschema: 1\n")
    yield raw("scalar-document", "just a string\n")
    yield raw("list-document", "- schema\n- 1\n")
    yield raw("empty-file", "")
    yield raw("only-comment", "# nothing here\n")
    yield raw("invalid-utf8", b"schema: 1\nname: \xff\xfe\n")
    yield raw("nul-byte", b"schema: 1\nname: cor\x00pus\n")
    yield raw("control-char", "schema: 1\nname: cor\x07pus\n")
    yield raw("bom-then-junk", b"\xef\xbb\xbf{{{\n")
    yield raw("binary-junk", bytes(range(256)) * 4)
    yield raw("unclosed-mapping", "schema: 1\nimage: {reference: x\n")
    yield raw("stray-dash", good + "- stray\n")
    yield raw("anchor-undefined", good.replace("name: corpus", "name: *nowhere"))
    yield raw("bad-escape", 'schema: 1\nname: "a\\qb"\n')
    yield raw("invalid-date", good + "extra: 2026-02-30\n")


def yaml_features() -> Iterator[Input]:
    good = yaml_text(base_doc()).decode()
    yield raw("python-tag", good.replace("name: corpus", "name: !!python/object:os.system x"))
    yield raw("custom-tag", good.replace("name: corpus", "name: !corpus x"))
    yield raw("binary-tag", good.replace("name: corpus", "name: !!binary aGVsbG8="))
    yield raw("set-tag", good + "extra: !!set {a, b}\n")
    yield raw("merge-key", "base: &b {package: demo_engine}\n" + good + "other:\n  <<: *b\n")
    yield raw("complex-key", good + "? [a, b]\n: c\n")
    laughs = ["schema: 1", 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    laughs += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    yield raw("billion-laughs", "\n".join(laughs) + "\n")
    wide = "schema: 1\nw: &w [" + ",".join(["x"] * 5000) + "]\n"
    yield raw("wide-aliases", wide + "z: [" + ",".join(["*w"] * 200) + "]\n")
    many = "schema: 1\nv: &v {k: x}\n" + "".join(f"m{i}: *v\n" for i in range(1100))
    yield raw("too-many-aliases", many)
    yield raw("recursive-alias", "schema: 1\na: &a [*a]\n")
    yield raw("deep-nesting", "schema: 1\nx: " + "[" * 200 + "]" * 200 + "\n")


def schema_values() -> Iterator[Input]:
    for label, value in [
        ("true", True),
        ("float", 1.0),
        ("string", "1"),
        ("two", 2),
        ("zero", 0),
        ("negative", -1),
        ("null", None),
        ("list", [1]),
        ("mapping", {"v": 1}),
    ]:
        yield with_doc(f"schema-{label}", setter(top, "schema", value))
    yield with_doc("schema-missing", lambda d: d.pop("schema"))


EDIT = {"file": "a.py", "old": "x", "new": "y"}
GUARD = {"target": "engine", "path": "demo_engine/envs.py", "sha256": "0" * 64}


def wrong_types() -> Iterator[Input]:
    """One field at a time set to a value of the wrong type or shape."""
    cases: list[tuple[str, Callable[[dict], dict], str, object]] = [
        ("name-int", top, "name", 7),
        ("name-list", top, "name", ["a"]),
        ("name-pattern", top, "name", "has space"),
        ("name-empty", top, "name", ""),
        ("image-string", top, "image", "example.invalid/x"),
        ("image-no-reference", top, "image", {}),
        ("image-digest", top, "image", {"reference": "x", "digest": "md5:00"}),
        ("targets-list", top, "targets", ["engine"]),
        ("target-package-int", top, "targets", {"engine": {"package": 3}}),
        ("target-package-pattern", top, "targets", {"engine": {"package": "demo-engine"}}),
        ("target-path-absolute", top, "targets", {"engine": {"package": "x", "path": "/x"}}),
        ("target-path-dotdot", top, "targets", {"engine": {"package": "x", "path": "../x"}}),
        ("patches-mapping", top, "patches", {"a": 1}),
        ("patches-string", top, "patches", "none"),
        ("components-mapping", top, "components", {"distribution": "x"}),
        ("component-repo", top, "components", [{"distribution": "x", "repository": "no"}]),
        ("component-commit", top, "components", [{"distribution": "x", "commit": "abc"}]),
        ("protect-string", top, "protect", "torch"),
        ("base-distribution-spec", top, "base", {"distributions": {"x": "~=banana"}}),
        ("base-file-sha", top, "base", {"files": [{**GUARD, "sha256": "0"}]}),
        ("description-int", top, "description", 5),
        ("id-int", patch0, "id", 1),
        ("id-empty", patch0, "id", ""),
        ("id-slash", patch0, "id", "a/b"),
        ("kind-unknown", patch0, "kind", "sed"),
        ("kind-int", patch0, "kind", 1),
        ("kind-null", patch0, "kind", None),
        ("diff-description-empty", patch0, "description", ""),
        ("diff-description-list", patch0, "description", ["a"]),
        ("upstream-string", patch0, "upstream", "demo-org/demo-engine#101"),
        ("upstream-bad-ref", patch0, "upstream", ["not a reference"]),
        ("upstream-status-word", patch1, "upstream_status", {"status": "Merged", "reason": "yes"}),
        ("upstream-status-short", patch1, "upstream_status", {"status": "Pending", "reason": "x"}),
        ("upstream-status-string", patch1, "upstream_status", "Pending"),
        ("strip-bool", patch0, "strip", True),
        ("strip-string", patch0, "strip", "1"),
        ("strip-negative", patch0, "strip", -1),
        ("strip-huge", patch0, "strip", 99),
        ("strip-float", patch0, "strip", 1.5),
        ("file-int", patch0, "file", 3),
        ("file-empty", patch0, "file", ""),
        ("file-and-source", patch0, "source", {"repo": "a/b", "pr": 1}),
        ("source-no-ref", patch0, "source", {"repo": "a/b"}),
        ("target-int", patch0, "target", 1),
        ("waiver-int", patch0, "waiver", 1),
        ("edits-empty", patch1, "edits", []),
        ("edits-string", patch1, "edits", "x"),
        ("edit-old-empty", patch1, "edits", [{"file": "a.py", "old": "", "new": "x"}]),
        ("edit-old-new-same", patch1, "edits", [{"file": "a.py", "old": "x", "new": "x"}]),
        ("edit-count-zero", patch1, "edits", [{**EDIT, "count": 0}]),
        ("edit-count-string", patch1, "edits", [{**EDIT, "count": "2"}]),
        ("edit-count-bool", patch1, "edits", [{**EDIT, "count": True}]),
        ("edit-old-int", patch1, "edits", [{"file": "a.py", "old": 1, "new": "y"}]),
        ("edit-file-list", patch1, "edits", [{"file": ["a.py"], "old": "x", "new": "y"}]),
        ("edit-missing-new", patch1, "edits", [{"file": "a.py", "old": "x"}]),
    ]  # fmt: skip
    for name, getter, key, value in cases:
        yield with_doc(name, setter(getter, key, value))
    pins = [
        ("pip-bad-requirement", {"requirement": "torch ==="}),
        ("pip-no-specifier", {"requirement": "torch"}),
        ("pip-branch", {"requirement": "x @ git+https://github.com/o/r@main"}),
        ("pip-no-deps-string", {"requirement": "x==1", "no_deps": "yes"}),
        ("pip-build-env-list", {"requirement": "x==1", "build_env": ["CXX=hipcc"]}),
        ("pip-allow-string", {"requirement": "x==1", "allow": "torch"}),
    ]
    for name, fields in pins:
        patch = {"id": "pin", "kind": "pip", "description": "a pin"}
        patch |= {"upstream_status": {"status": "Inappropriate", "reason": "a pin"}, **fields}
        yield with_doc(name, lambda d, p=patch: d["patches"].append(p))
    art = {"url": "https://example.invalid/k.co", "dest": "k.co", "sha256": "a" * 64}
    artifacts = [
        ("artifact-ftp", {"url": "ftp://example.invalid/k.co"}),
        ("artifact-http", {"url": "http://example.invalid/k.co"}),
        ("artifact-sha-short", {"sha256": "abc"}),
        ("artifact-sha-upper", {"sha256": "A" * 64}),
        ("artifact-size-negative", {"size": -1}),
        ("artifact-size-string", {"size": "10"}),
        ("artifact-no-dest", {"dest": None}),
    ]
    for name, fields in artifacts:
        entry = {k: v for k, v in {**art, **fields}.items() if v is not None}
        patch = {"id": "art", "kind": "artifact", "target": "engine", "description": "kernels"}
        patch |= {"upstream": ["a/b#1"], "files": [entry]}
        yield with_doc(name, lambda d, p=patch: d["patches"].append(p))
    cmd = {"id": "rebuild", "kind": "command", "target": "engine", "description": "rebuild"}
    cmd |= {"upstream": ["a/b#1"], "after": ["envs-padding"], "argv": ["true"]}
    commands = [
        ("command-argv-empty", {"argv": []}),
        ("command-argv-string", {"argv": "make"}),
        ("command-shell-two", {"shell": True, "argv": ["a", "b"]}),
        ("command-timeout-zero", {"timeout": 0}),
        ("command-timeout-string", {"timeout": "1h"}),
        ("command-after-unknown", {"after": ["nope"]}),
        ("command-never-runs", {"after": []}),
        ("command-env-name", {"env": {"BAD NAME": "x"}}),
        ("command-env-int", {"env": {"CXX": 1}}),
        ("command-env-nul", {"env": {"CXX": "hip\x00cc"}}),
        ("command-argv-nul", {"argv": ["echo", "a\x00b"]}),
    ]
    for name, fields in commands:
        patch = {**cmd, **fields}
        yield with_doc(name, lambda d, p=patch: d["patches"].append(p))


def unknown_keys() -> Iterator[Input]:
    yield with_doc("top-level-typo", setter(top, "pathces", []))
    yield with_doc("patch-typo", setter(patch0, "stirp", 1))
    yield with_doc("edit-typo", lambda d: patch1(d)["edits"][0].update(cout=1))
    yield with_doc("target-typo", lambda d: d["targets"]["engine"].update(pakage="x"))
    yield with_doc("image-typo", lambda d: d["image"].update(digst="x"))
    yield with_doc("key-not-string", lambda d: d.update({1: "one"}))
    yield with_doc("replace-with-file", setter(patch1, "file", "patches/a.patch"))


def inconsistent() -> Iterator[Input]:
    yield with_doc("duplicate-id", lambda d: d["patches"].append(dict(patch0(d))))
    yield with_doc("unknown-target", setter(patch0, "target", "nowhere"))
    yield with_doc(
        "guard-unknown-target",
        setter(top, "base", {"files": [{"target": "nope", "path": "a.py", "sha256": "a" * 64}]}),
    )
    cmd = {"id": "rebuild", "kind": "command", "target": "engine", "description": "rebuild"}
    cmd |= {"upstream": ["a/b#1"], "after": ["full-graph"], "argv": ["true"]}
    yield with_doc("after-a-later-patch", lambda d: d["patches"].insert(0, cmd))
    yield with_doc("after-itself", lambda d: d["patches"].append({**cmd, "after": ["rebuild"]}))


def _fifo(ps: Path, tmp: Path) -> None:
    (ps / "patches" / "a.patch").unlink()
    os.mkfifo(ps / "patches" / "a.patch")


def _link(target: str) -> Callable[[Path, Path], None]:
    def setup(ps: Path, tmp: Path) -> None:
        (ps / "patches" / "a.patch").unlink()
        os.symlink(target, ps / "patches" / "a.patch")

    return setup


def _folder(ps: Path, tmp: Path) -> None:
    (ps / "patches" / "a.patch").unlink()
    (ps / "patches" / "a.patch").mkdir()


def _huge(ps: Path, tmp: Path) -> None:
    with open(ps / "patches" / "a.patch", "r+b") as fh:  # sparse: no disk space used
        fh.truncate(65 << 20)


def _loop(ps: Path, tmp: Path) -> None:
    (ps / "patches" / "a.patch").unlink()
    os.symlink("b.patch", ps / "patches" / "a.patch")
    os.symlink("a.patch", ps / "patches" / "b.patch")


def _yaml_setup(make: Callable[[Path], None]) -> Callable[[Path, Path], None]:
    def setup(ps: Path, tmp: Path) -> None:
        (ps / "patchset.yaml").unlink()
        make(ps / "patchset.yaml")

    return setup


def odd_patch_files() -> Iterator[Input]:
    on = {"commands": CONTENT, "names": "a.patch"}
    yield Input("patch-missing", files={"patches/a.patch": None}, **on)
    yield Input("patch-fifo", setup=_fifo, **on)
    yield Input("patch-dev-zero", setup=_link("/dev/zero"), **on)
    yield Input("patch-dev-null", setup=_link("/dev/null"), **on)
    yield Input("patch-dangling-link", setup=_link("gone.patch"), **on)
    yield Input("patch-link-loop", setup=_loop, **on)
    yield Input("patch-folder", setup=_folder, **on)
    yield Input("patch-huge", setup=_huge, **on)
    yield with_doc("patch-under-a-file", setter(patch0, "file", "patches/a.patch/x"), **on)
    yield Input("yaml-fifo", setup=_yaml_setup(lambda p: os.mkfifo(p)), commands=COMMANDS)
    yield Input(
        "yaml-dev-zero", setup=_yaml_setup(lambda p: os.symlink("/dev/zero", p)), commands=COMMANDS
    )
    yield Input("yaml-folder", setup=_yaml_setup(lambda p: p.mkdir()), commands=COMMANDS)
    yield Input("yaml-huge", setup=_yaml_setup(lambda p: (p.touch(), os.truncate(p, 9 << 20))))


def corrupt_diffs() -> Iterator[Input]:
    shapes = {
        "empty": "",
        "prose-only": "This patch fixes things.\nNo diff follows.\n",
        "header-no-hunks": HEADER,
        "hunk-before-header": HUNK,
        "minus-without-plus": "--- a/demo_engine/envs.py\n" + HUNK,
        "plus-without-minus": "+++ b/demo_engine/envs.py\n" + HUNK,
        "malformed-hunk-header": HEADER + "@@ -a,b +c,d @@\n+x\n",
        "hunk-header-no-at": HEADER + "@@ -3,3 +3,4\n" + HUNK.split("\n", 1)[1],
        "line-without-prefix": HEADER + HUNK.replace(" MAX_BATCH", "MAX_BATCH"),
        "binary-junk": HEADER + "@@ -1 +1 @@\n" + "\x01\x02\x03\n",
        "git-binary-garbage": (
            "diff --git a/k.co b/k.co\nindex 0000000..1111111\nGIT binary patch\nliteral 5\n"
            "$$$not base85$$$\n\n"
        ),
        "dev-null-both": "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+x\n",
        "delete-with-added-lines": (
            "--- a/demo_engine/envs.py\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-import os\n+added\n"
        ),
        "no-newline-marker-first": HEADER + "\\ No newline at end of file\n" + HUNK,
        "only-diff-git-line": "diff --git a/demo_engine/envs.py b/demo_engine/envs.py\n",
        "truncated-mid-hunk": HEADER + HUNK[: HUNK.index("KV_CACHE")],
        "hunk-counts-zero-both": HEADER + "@@ -3,0 +3,0 @@\n",
        # cut at a byte, not a line: git apply says "corrupt patch", GNU patch "malformed"
        "cut-mid-diff-git-line": GOOD_DIFF[: GOOD_DIFF.index(" b/demo")],
        "cut-mid-minus-line": GOOD_DIFF[: GOOD_DIFF.index("+++") - 6],
        "cut-mid-plus-line": GOOD_DIFF[: GOOD_DIFF.index("@@") - 6],
        "cut-mid-hunk-header": GOOD_DIFF[: GOOD_DIFF.index("@@") + 9],
        "cut-mid-context-line": HEADER + HUNK[: HUNK.index("MAX_BATCH") + 20],
        "cut-mid-last-line": GOOD_DIFF[:-12],
        "last-newline-missing": GOOD_DIFF[:-1],
        "last-newline-missing-crlf": GOOD_DIFF.replace("\n", "\r\n")[:-1],
    }
    for name, text in shapes.items():
        yield diff_file(f"diff-{name}", text)
    yield diff_file("diff-random-bytes", hashlib.sha256(b"junk").digest() * 64)
    yield diff_file("diff-utf16", GOOD_DIFF.encode("utf-16"))
    # the valid hunk with every wrong pair of counts near the right one
    for old, new in [(2, 4), (4, 4), (3, 3), (3, 5), (0, 4), (3, 0), (99, 100), (1, 1)]:
        body = HUNK.split("\n", 1)[1]
        yield diff_file(f"hunk-counts-{old}-{new}", HEADER + f"@@ -3,{old} +3,{new} @@\n" + body)
    # the valid diff cut after each of its lines (every cut inside a hunk is corrupt)
    lines = GOOD_DIFF.splitlines(keepends=True)
    for n in range(len(HEADER.splitlines()) + 1, len(lines)):
        yield diff_file(f"cut-after-line-{n}", "".join(lines[:n]))


def bad_paths() -> Iterator[Input]:
    """Paths that leave the target, in every field that holds one (the path gate's cases)."""
    escapes = {
        "dotdot": "../../x.py",
        "absolute": "/tmp/patchbay-corpus-x.py",
        "quoted-octal-dotdot": '"\\056\\056/\\056\\056/x.py"',
        "quoted-nul-escape": '"demo_engine/x\\000.py"',
        "quoted-777-escape": '"demo_engine/x\\777.py"',
        "raw-nul": "demo_engine/x\x00.py",
    }
    for name, path in escapes.items():
        header = f"--- a/{path}\n+++ b/{path}\n" if not path.startswith('"') else (
            f'--- "a/{path[1:]}\n+++ "b/{path[1:]}\n'
        )  # fmt: skip
        if not path.startswith("/"):  # -p1 makes "/tmp/x" "tmp/x", as GNU patch does
            yield diff_file(f"diff-path-{name}", header + "@@ -1 +1 @@\n-a\n+b\n", names="patch")
        rename = (
            "diff --git a/demo_engine/envs.py b/demo_engine/y.py\nsimilarity index 100%\n"
            f"rename from demo_engine/envs.py\nrename to {path}\n"
        )
        yield diff_file(f"rename-to-{name}", rename, names="patch")
    fields = {
        "replace": lambda d, p: patch1(d)["edits"][0].update(file=p),
        "artifact": lambda d, p: d["patches"].append(
            {"id": "art", "kind": "artifact", "target": "engine", "description": "k",
             "upstream": ["a/b#1"],
             "files": [{"url": "https://example.invalid/k", "dest": p, "sha256": "a" * 64}]}
        ),
        "command-output": lambda d, p: d["patches"].append(
            {"id": "cmd", "kind": "command", "target": "engine", "description": "k",
             "upstream": ["a/b#1"], "argv": ["true"], "output": p}
        ),
        "command-cwd": lambda d, p: d["patches"].append(
            {"id": "cmd", "kind": "command", "target": "engine", "description": "k",
             "upstream": ["a/b#1"], "argv": ["true"], "after": ["full-graph"], "cwd": p}
        ),
        "command-remove": lambda d, p: d["patches"].append(
            {"id": "cmd", "kind": "command", "target": "engine", "description": "k",
             "upstream": ["a/b#1"], "argv": ["true"], "after": ["full-graph"], "remove": [p]}
        ),
        "guard-file": lambda d, p: d.update(
            base={"files": [{"target": "engine", "path": p, "sha256": "a" * 64}]}
        ),
    }  # fmt: skip
    for field_name, edit in fields.items():
        for name in ("dotdot", "absolute", "raw-nul", "backslash"):
            path = escapes.get(name, "demo_engine\\x.py")
            yield with_doc(f"{field_name}-{name}", lambda d, e=edit, p=path: e(d, p))


def lock_files() -> Iterator[Input]:
    def source_doc(d: dict) -> None:
        patch0(d).pop("file")
        patch0(d)["source"] = {"repo": "demo-org/demo-engine", "commit": "a" * 40}

    doc = base_doc()
    source_doc(doc)
    text = yaml_text(doc)
    on = {"commands": CONTENT, "names": "patchbay.lock"}
    locks = {
        "not-json": b"{not json",
        "a-list": b"[]",
        "wrong-format": b'{"format": 99}',
        "sources-list": b'{"format": 1, "sources": []}',
        "source-not-mapping": b'{"format": 1, "sources": {"envs-padding": 3}}',
        "source-missing-keys": b'{"format": 1, "sources": {"envs-padding": {"repo": "a/b"}}}',
        "source-file-int": (
            b'{"format": 1, "sources": {"envs-padding": {"repo": "demo-org/demo-engine", '
            b'"ref": "demo-org/demo-engine@' + b"a" * 40 + b'", "commit": "' + b"a" * 40 + b'", '
            b'"url": "u", "file": 7, "sha256": "' + b"b" * 64 + b'"}}}'
        ),
        "source-file-escapes": (
            b'{"format": 1, "sources": {"envs-padding": {"repo": "demo-org/demo-engine", '
            b'"ref": "demo-org/demo-engine@' + b"a" * 40 + b'", "commit": "' + b"a" * 40 + b'", '
            b'"url": "u", "file": "../../etc/hostname", "sha256": "' + b"b" * 64 + b'"}}}'
        ),
        "binary": bytes(range(256)),
    }
    for name, data in locks.items():
        yield Input(f"lock-{name}", files={"patchset.yaml": text, "patchbay.lock": data}, **on)

    def fifo_lock(ps: Path, tmp: Path) -> None:
        os.mkfifo(ps / "patchbay.lock")

    yield Input("lock-fifo", files={"patchset.yaml": text}, setup=fifo_lock, **on)


def _state_file(ps: Path, tmp: Path) -> None:
    (tmp / "state-file").write_text("not a folder\n")


def state_dirs() -> Iterator[Input]:
    run = ("status", "apply", "revert", "verify")
    yield Input(
        "state-dir-is-a-file", setup=_state_file, commands=run, names="state-file",
        args=("--root", "{tree}", "--state-dir", "{tmp}/state-file"),
    )  # fmt: skip
    yield Input(
        "state-dir-under-a-file", setup=_state_file, commands=run, names="state-file/x/y",
        args=("--root", "{tree}", "--state-dir", "{tmp}/state-file/x/y"),
    )  # fmt: skip

    def loop(ps: Path, tmp: Path) -> None:
        os.symlink(tmp / "l2", tmp / "l1")
        os.symlink(tmp / "l1", tmp / "l2")

    yield Input(
        "state-dir-link-loop", setup=loop, commands=run, names="l1",
        args=("--root", "{tree}", "--state-dir", "{tmp}/l1"),
    )  # fmt: skip
    yield Input(
        "root-and-python", commands=(*run, "check"), names="",
        args=("--root", "{tree}", "--python", sys.executable),
    )  # fmt: skip
    yield Input(
        "root-is-a-file", setup=_state_file, commands=(*run, "check"), names="state-file",
        args=("--root", "{tmp}/state-file"),
    )  # fmt: skip
    yield Input(
        "root-one-level-too-deep", commands=(*run, "check"),
        names="package demo_engine is not under",
        args=("--root", "{tree}/demo_engine"),
    )  # fmt: skip


def _script(name: str, body: str) -> Callable[[Path, Path], None]:
    def setup(ps: Path, tmp: Path) -> None:
        path = tmp / name
        path.write_text(body)
        path.chmod(0o755)

    return setup


def interpreters() -> Iterator[Input]:
    run = ("status", "apply", "check", "verify")
    shapes = {
        "missing": (None, "{tmp}/no-such-python"),
        "a-folder": (lambda ps, tmp: (tmp / "pydir").mkdir(), "{tmp}/pydir"),
        "not-executable": (_script("noexec", "#!/bin/sh\n"), "{tmp}/noexec"),
        "exits-1": (_script("fails", "#!/bin/sh\necho broken >&2\nexit 1\n"), "{tmp}/fails"),
        "prints-junk": (_script("junk", "#!/bin/sh\necho hello\n"), "{tmp}/junk"),
        "prints-wrong-json": (_script("json", "#!/bin/sh\necho '{\"a\": 1}'\n"), "{tmp}/json"),
        "silent-true": (None, "/bin/true"),
        "hangs": (_script("hang", "#!/bin/sh\nexec sleep 60\n"), "{tmp}/hang"),
    }
    for name, (setup, python) in shapes.items():
        if name == "not-executable":
            setup = _chmod_after(setup)
        extra = ("--probe-timeout", "0.3") if name == "hangs" else ()
        commands = ("status", "apply") if name == "hangs" else run
        yield Input(
            f"python-{name}", setup=setup, commands=commands,
            names=python.replace("{tmp}/", ""), args=("--python", python, *extra),
        )  # fmt: skip


def _chmod_after(setup: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    def run(ps: Path, tmp: Path) -> None:
        setup(ps, tmp)
        (tmp / "noexec").chmod(0o644)

    return run


def journals() -> Iterator[Input]:
    lines = {
        "missing-existed": '{"path": "{tree}/demo_engine/envs.py"}\n',
        "missing-backup": '{"path": "{tree}/demo_engine/envs.py", "existed": true}\n',
        "not-an-object": "[1, 2]\n",
    }
    for name, line in lines.items():

        def setup(ps: Path, tmp: Path, line: str = line) -> None:
            journal = tmp / "state" / "journal"
            journal.mkdir(parents=True)
            (journal / "journal.jsonl").write_text(line.replace("{tree}", str(tmp / "tree")))

        yield Input(
            f"journal-{name}", setup=setup, commands=("apply", "revert"), code=1,
            names="journal.jsonl:1",
        )  # fmt: skip


def refusals() -> Iterator[Input]:
    """Good input the tree refuses: exit 1 from apply, the file named."""
    on = {"commands": ("apply",), "code": 1, "one_line": False}  # a detail line per hunk
    conflict = GOOD_DIFF.replace('"256"', '"512"')
    yield diff_file("refused-conflict", conflict, names="a.patch", **on)
    # content a text diff may hold, but that is not in the file
    yield diff_file("refused-nul-in-context", GOOD_DIFF.replace("auto", "au\x00to"), **on)
    rename = "diff --git a/x.py b/y.py\nsimilarity index 90%\nrename from x.py\nrename to y.py\n"
    yield diff_file("refused-rename-of-nothing", rename, **on)
    yield with_doc(
        "refused-old-text-absent",
        lambda d: patch1(d)["edits"][0].update(old="no such text\n"),
        **on,
    )  # fmt: skip
    yield with_doc(
        "refused-guard-hash",
        setter(top, "base", {"files": [{"target": "engine", "path": "demo_engine/envs.py",
                                        "sha256": "0" * 64}]}),
        **on,
    )  # fmt: skip
    yield with_doc(
        "refused-edit-file-missing",
        lambda d: patch1(d)["edits"][0].update(file="demo_engine/nope.py"),
        **on,
    )  # fmt: skip


def git_headers() -> Iterator[Input]:
    """Extended ``diff --git`` headers that are malformed or contradict each other."""
    git = "diff --git a/demo_engine/envs.py b/demo_engine/envs.py\n"
    plain = "--- a/demo_engine/envs.py\n+++ b/demo_engine/envs.py\n" + HUNK
    shapes = {
        "old-mode-not-octal": git + "old mode 10064x\nnew mode 100755\n" + plain,
        "mode-of-a-folder": git + "old mode 100644\nnew mode 040000\n" + plain,
        "new-file-mode-junk": git + "new file mode 999\n" + plain,
        "index-not-hex": git + "index zzzzzzz..yyyyyyy 100644\n" + plain,
        "index-no-dots": git + "index 1234567 100644\n" + plain,
        "rename-from-only": (
            "diff --git a/demo_engine/envs.py b/demo_engine/e2.py\n"
            "rename from demo_engine/envs.py\n"
        ),
        "copy-from-only": (
            "diff --git a/demo_engine/envs.py b/demo_engine/e2.py\ncopy from demo_engine/envs.py\n"
        ),
        "names-disagree-with-minus-plus": (
            "diff --git a/demo_engine/envs.py b/demo_engine/envs.py\n"
            "--- a/demo_engine/other.py\n+++ b/demo_engine/other.py\n" + HUNK
        ),
        "deleted-file-with-new-lines": (
            git + "deleted file mode 100644\n--- a/demo_engine/envs.py\n+++ /dev/null\n"
            "@@ -1 +0,0 @@\n-import os\n+x\n"
        ),
        "binary-without-payload": git + "GIT binary patch\n",
        "binary-literal-size-junk": git + "GIT binary patch\nliteral abc\nzcmZ?\n\n",
        "binary-delta-no-data": git + "GIT binary patch\ndelta 12\n\n",
        "same-file-twice": GOOD_DIFF + GOOD_DIFF.replace("+ASM_PADDING", "+OTHER_PADDING"),
        "diff-git-one-path": "diff --git a/demo_engine/envs.py\n" + plain,
        "quoted-path-unterminated": '--- "a/demo_engine/envs.py\n+++ b/demo_engine/envs.py\n'
        + HUNK,
        "hunk-negative-start": HEADER + "@@ --3,3 +3,4 @@\n" + HUNK.split("\n", 1)[1],
    }
    for name, text in shapes.items():
        yield diff_file(f"git-{name}", text)


# credentials a user puts in a URL: refused inputs must never print them (see SECRETS)
CREDENTIAL_URL = "https://patchbay-user:s3cr3t-corpus-pw@downloads.example.invalid/k.co"


def credentials_in_urls() -> Iterator[Input]:
    """Bad inputs whose URLs carry credentials: the message names the file, never the
    password."""
    art = {
        "id": "art", "kind": "artifact", "target": "engine", "description": "k",
        "upstream": ["a/b#1"],
        "files": [{"url": CREDENTIAL_URL, "dest": "demo_engine/k.co", "sha256": "a" * 64}],
    }  # fmt: skip
    pin = {
        "id": "pin", "kind": "pip", "description": "p", "upstream": ["a/b#1"],
        "requirement": "tinypkg==1.0",
        "index_url": CREDENTIAL_URL.replace("/k.co", "/simple/"),
    }  # fmt: skip

    def add(item: dict, **changes: object) -> Callable[[dict], None]:
        def edit(d: dict) -> None:
            entry = {**item, **changes}
            d["patches"].append(entry)

        return edit

    http = CREDENTIAL_URL.replace("https://", "http://")
    art_files = art["files"][0]
    yield with_doc("cred-artifact-plain-http", add(art, files=[{**art_files, "url": http}]))
    yield with_doc("cred-artifact-bad-sha", add(art, files=[{**art_files, "sha256": "xyz"}]))
    yield with_doc("cred-artifact-ftp", add(art, files=[{**art_files, "url": "ftp" + http[4:]}]))
    yield with_doc(
        "cred-artifact-no-dest", add(art, files=[{"url": CREDENTIAL_URL, "sha256": "a" * 64}])
    )
    yield with_doc("cred-artifact-size-text", add(art, files=[{**art_files, "size": "big"}]))
    yield with_doc("cred-pin-unpinned", add(pin, requirement="tinypkg"))
    yield with_doc("cred-pin-index-int", add(pin, extra_index_urls=[3]))
    yield with_doc("cred-pin-bad-requirement", add(pin, requirement="tiny pkg ==="))
    yield with_doc("cred-pin-vcs-branch", add(pin, requirement=f"x @ git+{CREDENTIAL_URL}@main"))
    yield with_doc("cred-pin-unknown-key", add(pin, index=CREDENTIAL_URL))
    yield with_doc(
        "cred-source-repo-url",
        lambda d: (patch0(d).pop("file"), patch0(d).update(source={"repo": CREDENTIAL_URL})),
    )
    yield with_doc(
        "cred-upstream-url-int", lambda d: patch0(d).update(upstream=[CREDENTIAL_URL, 1])
    )


def upstream_fields() -> Iterator[Input]:
    """``upstream``/``upstream_status`` values a waiver audit could not use."""
    cases: dict[str, Callable[[dict], None]] = {
        "upstream-empty-list-no-status": lambda d: patch0(d).update(upstream=[]),
        "upstream-string": lambda d: patch0(d).update(upstream="demo-org/demo-engine#101"),
        "upstream-int": lambda d: patch0(d).update(upstream=[101]),
        "upstream-mapping": lambda d: patch0(d).update(upstream=[{"pr": 101}]),
        "upstream-missing-both": lambda d: patch0(d).pop("upstream"),
        "status-unknown-word": lambda d: patch0(d).update(
            upstream_status={"status": "Maybe", "reason": "xyz"}
        ),
        "status-string": lambda d: patch0(d).update(upstream_status="Pending"),
        "status-no-status": lambda d: patch0(d).update(upstream_status={"reason": "xyz"}),
        "status-reason-int": lambda d: patch0(d).update(
            upstream_status={"status": "Pending", "reason": 3}
        ),
        "status-extra-key": lambda d: patch0(d).update(
            upstream_status={"status": "Pending", "reason": "xyz", "when": "soon"}
        ),
        "description-missing": lambda d: patch0(d).pop("description"),
        "description-int": lambda d: patch0(d).update(description=5),
        "id-duplicate": lambda d: patch1(d).update(id="envs-padding"),
        "id-with-slash": lambda d: patch0(d).update(id="a/b"),
        "id-empty": lambda d: patch0(d).update(id=""),
        "kind-unknown": lambda d: patch0(d).update(kind="sed"),
        "waiver-int": lambda d: patch0(d).update(waiver=3),
        "after-unknown": lambda d: patch1(d).update(after=["nope"]),
        "after-later-patch": lambda d: patch0(d).update(after=["full-graph"]),
        "after-itself": lambda d: patch0(d).update(after=["envs-padding"]),
    }
    for name, edit in cases.items():
        yield with_doc(name, edit)


def target_fields() -> Iterator[Input]:
    """Targets that name no folder patchbay may write, and patches naming targets wrongly."""
    targets: dict[str, object] = {
        "package-dotted-start": {"package": ".demo_engine"},
        "package-with-slash": {"package": "demo_engine/ops"},
        "package-empty": {"package": ""},
        "path-with-nul": {"package": "demo_engine", "path": "meta\x00x"},
        "path-backslash": {"package": "demo_engine", "path": "meta\\x"},
        "path-dot-git": {"package": "demo_engine", "path": ".git/hooks"},
        "path-list": {"package": "demo_engine", "path": ["meta"]},
        "home-absolute": {"env": "DEMO_JIT_DIR", "home": "/root/.jit"},
        "home-dotdot": {"env": "DEMO_JIT_DIR", "home": "../.jit"},
        "home-env-lowercase-space": {"env": "demo jit", "home": ".jit"},
        "home-and-package": {"package": "demo_engine", "home": ".jit"},
        "nothing": {},
        "unknown-key": {"package": "demo_engine", "root": "/"},
    }
    for name, target in targets.items():
        yield with_doc(f"targets-{name}", lambda d, t=target: d["targets"].update(engine=t))
    yield with_doc("patch-target-unknown", lambda d: patch0(d).update(target="nope"))
    yield with_doc("patch-target-missing", lambda d: patch0(d).pop("target"))
    yield with_doc("patch-target-list", lambda d: patch0(d).update(target=["engine"]))


# (category, commands per input): None runs each input under all its commands; a number
# runs it under validate and that many more, rotating, so every command sees every category
CATEGORIES: list[tuple[Callable[[], Iterator[Input]], int | None]] = [
    (malformed_yaml, None),
    (yaml_features, None),
    (schema_values, None),
    (wrong_types, 2),
    (unknown_keys, None),
    (inconsistent, None),
    (odd_patch_files, None),
    (corrupt_diffs, 2),
    (bad_paths, 3),
    (lock_files, None),
    (state_dirs, None),
    (interpreters, None),
    (journals, None),
    (refusals, None),
    (git_headers, 2),
    (credentials_in_urls, 2),
    (upstream_fields, 2),
    (target_fields, 2),
]

# secrets in the environment of every run and in inputs: no output may show one
SECRETS = {
    "GITHUB_TOKEN": "ghp_corpusSENTINEL0123456789abcdefABCDEF",
    "HF_TOKEN": "hf_corpusSENTINEL0123456789abcdefghij",
}
SECRET_VALUES = [*SECRETS.values(), "s3cr3t-corpus-pw"]

# inputs that fail on this branch because the path gate is another branch's (see the docstring)


def _spread(commands: tuple[str, ...], per: int | None, index: int) -> tuple[str, ...]:
    if per is None or len(commands) <= per:
        return commands
    first, rest = commands[:1], commands[1:]
    return first + tuple(rest[(index + k) % len(rest)] for k in range(per - 1))


def _runs() -> list[object]:
    out = []
    for category, per in CATEGORIES:
        for index, item in enumerate(category()):
            for command in _spread(item.commands, per, index):
                marks = []
                name = f"{item.name}-{command}"
                if item.xfail:
                    marks.append(pytest.mark.xfail(strict=True, reason=item.xfail))
                param_id = f"{category.__name__}:{name}"
                out.append(pytest.param(item, command, id=param_id, marks=marks))
    return out


RUNS = _runs()


# -- running ------------------------------------------------------------------------------------


def tree_hash(root: Path) -> str:
    """sha256 over every path under ``root``: its name, type, mode and bytes."""
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(folder) / name
            st = os.lstat(path)
            h.update(
                f"{path.relative_to(root)}\0{stat.S_IFMT(st.st_mode)}\0{st.st_mode:o}\0".encode()
            )
            if stat.S_ISREG(st.st_mode):
                h.update(path.read_bytes())
            elif stat.S_ISLNK(st.st_mode):
                h.update(os.readlink(path).encode())
    return h.hexdigest()


@pytest.fixture(scope="module")
def shared_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One engine tree for the whole corpus, and its hash."""
    root = tmp_path_factory.mktemp("corpus") / "tree"
    shutil.copytree(
        REPO / "demo" / "engine" / "src", root, ignore=shutil.ignore_patterns("*.egg-info")
    )
    return root, tree_hash(root)


def _write_base(ps: Path) -> None:
    (ps / "patches").mkdir(parents=True)
    (ps / "patches" / "a.patch").write_text(GOOD_DIFF)
    (ps / "patchset.yaml").write_bytes(yaml_text(base_doc()))


def _argv(item: Input, command: str, ps: Path, tree: Path, tmp: Path) -> list[str]:
    if command == "validate":
        return ["validate", str(ps)]
    if item.args:
        extra = [a.replace("{tree}", str(tree)).replace("{tmp}", str(tmp)) for a in item.args]
        if command in ("check",):
            extra = [a for a in extra]
            if "--state-dir" in extra:
                i = extra.index("--state-dir")
                del extra[i : i + 2]
        elif "--state-dir" not in extra:
            extra += ["--state-dir", str(tmp / "state")]
    else:
        extra = ["--root", str(tree)]
        if command != "check":
            extra += ["--state-dir", str(tmp / "state")]
    return [command, str(ps), *extra]


@pytest.fixture(scope="module")
def scratch_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("inputs")


@pytest.fixture
def secrets_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize(("item", "command"), RUNS)
def test_bad_input(
    item: Input,
    command: str,
    scratch_root: Path,
    shared_tree: tuple[Path, str],
    secrets_in_env: None,
) -> None:
    # a folder of its own per input (pytest's tmp_path costs more than most inputs)
    tmp_path = Path(tempfile.mkdtemp(dir=scratch_root))
    tree, pristine = shared_tree
    if item.name.startswith("journal-"):
        # a journal names files of its own tree: give it one inside the scratch folder
        tree = tmp_path / "tree"
        shutil.copytree(shared_tree[0], tree, symlinks=True)
        pristine = tree_hash(tree)
    ps = tmp_path / "ps"
    _write_base(ps)
    for rel, data in item.files.items():
        if data is None:
            (ps / rel).unlink()
        else:
            (ps / rel).parent.mkdir(parents=True, exist_ok=True)
            (ps / rel).write_bytes(data)
    if item.setup is not None:
        item.setup(ps, tmp_path)
    res = run_main(*_argv(item, command, ps, tree, tmp_path))
    changed = tree_hash(tree) != pristine
    if changed and tree == shared_tree[0]:  # keep the next inputs meaningful
        shutil.rmtree(tree)
        shutil.copytree(
            REPO / "demo" / "engine" / "src", tree, ignore=shutil.ignore_patterns("*.egg-info")
        )
    assert res.crash is None, res.crash
    assert "Traceback" not in res.err
    assert not changed, "the engine tree changed"
    assert not [v for v in SECRET_VALUES if v in res.out + res.err], "a secret was printed"
    assert res.code == item.expected(command), res.out + res.err
    lines = res.err.strip().splitlines()
    assert lines and lines[0].startswith("patchbay: error: "), res.err
    if item.one_line:
        assert len(lines) == 1, res.err
    named = item.names.replace("{tmp}/", "")
    assert named in lines[0], f"{named!r} not named in: {lines[0]}"


def test_the_base_patchset_is_valid_and_applies(tmp_path: Path) -> None:
    """The corpus varies a patchset that is good: every failure above is the variation's."""
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "demo" / "engine" / "src", tree)
    ps = tmp_path / "ps"
    _write_base(ps)
    assert run_main("validate", ps).code == 0
    assert run_main("status", ps, "--root", tree).code == 0
    res = run_main("apply", ps, "--root", tree)
    assert res.code == 0, res.err
    assert "ASM_PADDING" in (tree / "demo_engine" / "envs.py").read_text()
    assert run_main("revert", ps, "--root", tree).code == 0


def test_the_corpus_is_large_and_spread_over_every_command() -> None:
    per_command = {c: sum(1 for p in RUNS if p.values[1] == c) for c in COMMANDS}
    inputs = {p.values[0].name for p in RUNS}
    assert len(inputs) >= 300, len(inputs)
    assert sum(per_command.values()) >= 300
    assert all(n >= 20 for n in per_command.values()), per_command


def test_a_hung_interpreter_is_stopped_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    hang = tmp_path / "hang"
    hang.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > {pid_file}\nwait\n")
    hang.chmod(0o755)
    ps = tmp_path / "ps"
    _write_base(ps)
    res = run_main("status", ps, "--python", hang, "--probe-timeout", "0.5")
    assert res.code == 2 and res.crash is None
    assert "printed nothing within 0.5 s" in res.err
    pid = int(pid_file.read_text())
    for _ in range(100):  # the kill is delivered at once; give the kernel a moment to act
        if not _alive(pid):
            break
        time.sleep(0.05)
    assert not _alive(pid), "the interpreter's child outlived it"


def test_the_silence_limit_is_short_by_default_and_the_users_limit_covers_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import patchbay.environment.targets

    monkeypatch.setattr(patchbay.environment.targets, "PROBE_SILENCE_S", 0.3)  # 10 s in real life
    monkeypatch.delenv("PATCHBAY_PROBE_TIMEOUT", raising=False)
    slow = tmp_path / "slow-python"
    slow.write_text(f'#!/bin/sh\nsleep 1\nexec {sys.executable} "$@"\n')
    slow.chmod(0o755)
    ps = tmp_path / "ps"
    _write_base(ps)
    res = run_main("status", ps, "--python", slow)
    assert res.code == 2 and "printed nothing within 0.3 s: it hangs" in res.err
    # a limit the user gives is theirs for a slow start too: the probe then answers (this
    # interpreter has no demo engine, which is the next thing said)
    res = run_main("status", ps, "--python", slow, "--probe-timeout", "30")
    assert res.code == 1 and "is not installed in this engine environment" in res.err, res.err


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for an init that does not reap is not running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("how", ["immutable", "read-only mount"])
def test_a_state_dir_that_cannot_be_written(tmp_path: Path, how: str) -> None:
    state = tmp_path / "state"
    state.mkdir()
    if how == "immutable":
        make, undo = ["chattr", "+i", str(state)], ["chattr", "-i", str(state)]
    else:
        make = ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(state)]
        undo = ["umount", str(state)]
    if subprocess.run(make, capture_output=True, check=False).returncode != 0:
        pytest.skip(f"cannot make an {how} folder here (needs root and a capable filesystem)")
    try:
        tree = tmp_path / "tree"
        shutil.copytree(REPO / "demo" / "engine" / "src", tree)
        before = tree_hash(tree)
        ps = tmp_path / "ps"
        _write_base(ps)
        # revert refuses it up front (bad input); apply, which may have nothing to write,
        # when it takes the lock, as for the default state folder (exit 1)
        for command, code in (("apply", 1), ("revert", 2)):
            res = run_main(command, ps, "--root", tree, "--state-dir", state)
            assert res.code == code and res.crash is None, res.err
            lines = res.err.strip().splitlines()
            assert len(lines) == 1 and "cannot be written" in lines[0] and str(state) in lines[0]
        assert run_main("status", ps, "--root", tree, "--state-dir", state).code == 0
        assert tree_hash(tree) == before
    finally:
        subprocess.run(undo, check=True)
