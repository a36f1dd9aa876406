"""Capture of an edit in a large compiled kernel (issue 24, part 9): the binary patch is written
in-process (a delta, not the file again), applies and reverts exactly, on real files."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import shutil
import subprocess
import zipfile
from pathlib import Path

from conftest import run_cli


def _record_line(root: Path, rel: str) -> str:
    data = (root / rel).read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{rel},sha256={digest},{len(data)}\n"


def _kernel_tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A --root tree with ``kdist`` (a 3 MB kernel, RECORD, METADATA), its wheel, and a
    patchset naming it as component."""
    rng = random.Random(9)
    tree = tmp_path / "tree"
    (tree / "kdist").mkdir(parents=True)
    (tree / "kdist" / "__init__.py").write_text('"""kdist."""\n')
    blocks = [rng.randbytes(4096) if i % 3 else bytes(4096) for i in range(750)]
    (tree / "kdist" / "kernel.so").write_bytes(b"\x7fELF\0" + b"".join(blocks))
    info = tree / "kdist-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kdist\nVersion: 1.0\n")
    lines = [_record_line(tree, r) for r in ("kdist/__init__.py", "kdist/kernel.so")]
    (info / "RECORD").write_text("".join(lines) + f"{info.name}/RECORD,,\n")
    wheel = tmp_path / "kdist-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(tree.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(tree).as_posix())
    folder = tmp_path / "ps"
    folder.mkdir()
    (folder / "patchset.yaml").write_text(
        "schema: 1\nname: kernels\ndescription: A kernel fix.\n"
        "image: {reference: example.invalid/kdist:1.0}\n"
        "components:\n  - distribution: kdist\n"
        "targets:\n  engine: {package: kdist}\npatches: []\n"
    )
    return tree, wheel, folder


def _states(folder: Path, root: Path) -> dict[str, str]:
    res = run_cli("status", folder, "--root", root, "--format", "json")
    return {p["id"]: p["status"] for p in json.loads(res.out)["patches"]}


def test_a_byte_changed_in_a_large_kernel_is_captured_as_a_delta(tmp_path: Path) -> None:
    tree, wheel, folder = _kernel_tree(tmp_path)
    fresh = tmp_path / "fresh"
    shutil.copytree(tree, fresh)
    kernel = tree / "kdist" / "kernel.so"
    pristine = kernel.read_bytes()
    edited = bytearray(pristine)
    edited[1_234_567] ^= 0x40
    kernel.write_bytes(bytes(edited))
    res = run_cli(
        "capture", folder, "kernel-fix", "kdist/kernel.so", "--root", tree, "--wheel", wheel
    )
    assert res.code == 0, res.err
    patch = (folder / "patches" / "kernel-fix.patch").read_bytes()
    assert b"GIT binary patch\ndelta " in patch and len(patch) < 2000  # not the file again
    assert _states(folder, tree) == {"kernel-fix": "applied"}
    assert _states(folder, fresh) == {"kernel-fix": "pending"}
    # git reads it as patchbay wrote it, both ways
    check = subprocess.run(
        ["git", "apply", "--check", "-"], input=patch, cwd=fresh, capture_output=True
    )
    assert check.returncode == 0, check.stderr
    applied = run_cli("apply", folder, "--root", fresh)
    assert applied.code == 0, applied.err
    assert (fresh / "kdist" / "kernel.so").read_bytes() == bytes(edited)
    reverted = run_cli("revert", folder, "--root", fresh)
    assert reverted.code == 0, reverted.err
    assert (fresh / "kdist" / "kernel.so").read_bytes() == pristine


def test_a_corrupt_binary_hunk_is_refused_naming_the_file(tmp_path: Path) -> None:
    """A delta whose data was damaged: apply refuses with the file named, the tree untouched."""
    tree, wheel, folder = _kernel_tree(tmp_path)
    fresh = tmp_path / "fresh"
    shutil.copytree(tree, fresh)
    kernel = tree / "kdist" / "kernel.so"
    data = bytearray(kernel.read_bytes())
    data[100] ^= 1
    kernel.write_bytes(bytes(data))
    assert (
        run_cli("capture", folder, "k", "kdist/kernel.so", "--root", tree, "--wheel", wheel).code
        == 0
    )
    patch_file = folder / "patches" / "k.patch"
    text = patch_file.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(text) if line.startswith("delta ")) + 1
    line = text[at]
    text[at] = line[0] + ("0" if line[1] != "0" else "1") + line[2:]  # one base85 digit
    patch_file.write_text("".join(text))
    before = (fresh / "kdist" / "kernel.so").read_bytes()
    for command in ("validate", "apply"):
        res = run_cli(command, folder, *(["--root", fresh] if command == "apply" else []))
        assert res.code == 2, res.out + res.err
        assert f"{patch_file}:" in res.err and "kdist/kernel.so" in res.err, res.err
        assert "Traceback" not in res.err
    assert (fresh / "kdist" / "kernel.so").read_bytes() == before


def test_one_capture_mixes_git_written_and_own_binary_sections(tmp_path: Path) -> None:
    """A deleted binary, a small edited one (git writes both) and a large one edited in place
    (patchbay writes it) in one patch: every section whole, each file right after apply."""
    tree, wheel, folder = _kernel_tree(tmp_path)
    for name, data in (("gone.bin", b"\0gone" * 10), ("small.bin", b"\0small" * 10)):
        (tree / "kdist" / name).write_bytes(data)
    info = tree / "kdist-1.0.dist-info"
    record = (info / "RECORD").read_text()
    extra = "".join(_record_line(tree, f"kdist/{n}") for n in ("gone.bin", "small.bin"))
    (info / "RECORD").write_text(extra + record)
    with zipfile.ZipFile(wheel, "a") as zf:
        for n in ("gone.bin", "small.bin"):
            zf.write(tree / "kdist" / n, f"kdist/{n}")
    fresh = tmp_path / "fresh"
    shutil.copytree(tree, fresh)
    (tree / "kdist" / "gone.bin").unlink()
    (tree / "kdist" / "small.bin").write_bytes(b"\0small" * 11)
    kernel = tree / "kdist" / "kernel.so"
    data = bytearray(kernel.read_bytes())
    data[2_000_000] ^= 1
    kernel.write_bytes(bytes(data))
    files = ["kdist/gone.bin", "kdist/kernel.so", "kdist/small.bin"]
    res = run_cli("capture", folder, "mix", *files, "--root", tree, "--wheel", wheel)
    assert res.code == 0, res.err
    assert run_cli("apply", folder, "--root", fresh).code == 0
    assert not (fresh / "kdist" / "gone.bin").exists()
    for name in ("kernel.so", "small.bin"):
        assert (fresh / "kdist" / name).read_bytes() == (tree / "kdist" / name).read_bytes()


def test_a_chmod_of_a_large_kernel_is_a_mode_change(tmp_path: Path) -> None:
    tree, wheel, folder = _kernel_tree(tmp_path)
    fresh = tmp_path / "fresh"
    shutil.copytree(tree, fresh)
    (tree / "kdist" / "kernel.so").chmod(0o755)
    res = run_cli("capture", folder, "x", "kdist/kernel.so", "--root", tree, "--wheel", wheel)
    assert res.code == 0, res.err
    patch = (folder / "patches" / "x.patch").read_text()
    assert "old mode 100644\nnew mode 100755\n" in patch and "GIT binary patch" not in patch
    assert run_cli("apply", folder, "--root", fresh).code == 0
    assert (fresh / "kdist" / "kernel.so").stat().st_mode & 0o111
