"""Generated inputs the benchmarks share: a package tree of plausible Python modules, unified
diffs against it (each adding a unique marker line) and the patchset naming them.

Imported as ``from _generate import ...`` (see ``_common``). Everything is drawn from one
``random.Random``, so a seed gives the same inputs on every machine.
"""

from __future__ import annotations

import difflib
import itertools
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "bigengine"
MARKER = "PATCHBAY-BENCH-MARKER"
CONTEXT = 3

SUBPACKAGES = [
    "attention",
    "kernels",
    "models",
    "scheduler",
    "distributed",
    "quantization",
    "sampling",
    "cache",
    "lora",
    "spec_decode",
]
SUBSUBPACKAGES = ["ops", "backends", "layers", "utils", "configs", "runtime", "triton", "rocm"]
STEMS = ["mla", "paged", "fused", "rotary", "moe", "gemm", "topk", "norm", "prefix", "block"]
VERBS = ["compute", "pad", "scale", "split", "merge", "select", "pack", "clamp", "route", "fold"]
NOUNS = ["heads", "tokens", "blocks", "experts", "pages", "slots", "ranks", "tiles", "lanes"]
TOPICS = ["attention", "kv-cache", "sampling", "quantisation", "scheduling", "graph capture"]
PHRASES = [
    "cap the batch for the ASM kernels",
    "widen strides past 2 GB",
    "dequantise fp8 queries",
    "skip the graph for decode-only batches",
    "honour the padding switch",
    "keep the block table aligned",
]


def module_lines(rng: random.Random, idx: int, dotted: str) -> list[str]:
    """40-80 lines of plausible Python for module number ``idx``; every def name is unique."""
    cls = f"{rng.choice(STEMS).capitalize()}{rng.choice(NOUNS).capitalize()}{idx}"
    lines = [
        f'"""{rng.choice(TOPICS).capitalize()} helpers for {dotted}."""',
        "",
        "from __future__ import annotations",
        "",
        "import logging",
        "import math",
        "from dataclasses import dataclass",
        "",
        "logger = logging.getLogger(__name__)",
        "",
        f"DEFAULT_BLOCK_{idx} = {rng.choice([16, 32, 64, 128, 256])}",
        f"MAX_TOKENS_{idx} = {rng.randrange(1024, 65536, 512)}",
        "",
        "",
        "@dataclass",
        f"class {cls}Config:",
        f'    """Settings of the {rng.choice(NOUNS)} in module {idx}."""',
        "",
        f"    block_size: int = DEFAULT_BLOCK_{idx}",
        f"    max_tokens: int = MAX_TOKENS_{idx}",
        f"    use_{rng.choice(STEMS)}: bool = {rng.choice(['True', 'False'])}",
        "",
        "",
    ]
    target = rng.randint(44, 74)
    j = 0
    while len(lines) < target - 4:
        name = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}_{idx}_{j}"
        kind = rng.randrange(3)
        if kind == 0:
            body = [
                f"def {name}(values: list[float], scale: float = {rng.randint(2, 9)}.0) -> "
                "list[float]:",
                f'    """Scaled values for block {j} of module {idx}."""',
                "    result = []",
                "    for value in values:",
                f"        result.append(value * scale + {rng.randint(0, 99)})",
                f'    logger.debug("{name}: %d values", len(result))',
                "    return result",
            ]
        elif kind == 1:
            body = [
                f"def {name}(config: {cls}Config, tokens: int) -> int:",
                f'    """Blocks needed for ``tokens`` tokens (step {j})."""',
                "    blocks = math.ceil(tokens / config.block_size)",
                f"    limit = config.max_tokens // config.block_size + {rng.randint(0, 7)}",
                "    if blocks > limit:",
                f'        raise ValueError(f"{name}: {{tokens}} tokens exceed {{limit}} blocks")',
                "    return blocks",
            ]
        else:
            body = [
                f"def {name}(name: str, enabled: bool = {rng.choice(['True', 'False'])}) -> dict:",
                f'    """Describe the {rng.choice(NOUNS)} named ``name``."""',
                f"    limit = {rng.randrange(8, 4096)}",
                '    return {"name": name, "enabled": enabled, "limit": limit, "module": __name__}',
            ]
        lines += [*body, "", ""]
        j += 1
    while lines[-1] == "":
        lines.pop()
    return [line + "\n" for line in lines]


def build_tree(root: Path, n_files: int, rng: random.Random) -> list[str]:
    """Write ``n_files`` files under ``root/bigengine``; returns the module paths (no inits)."""
    dirs = [PACKAGE] + [f"{PACKAGE}/{s}" for s in SUBPACKAGES]
    dirs += [f"{PACKAGE}/{s}/{t}" for s in SUBPACKAGES for t in SUBSUBPACKAGES]
    leaf_dirs = dirs[1 + len(SUBPACKAGES) :]
    for d in dirs:
        (root / d).mkdir(parents=True, exist_ok=True)
        (root / d / "__init__.py").write_text(f'"""The {d.replace("/", ".")} package."""\n')
    modules = []
    for idx in range(n_files - len(dirs)):
        folder = leaf_dirs[idx % len(leaf_dirs)]
        rel = f"{folder}/{rng.choice(STEMS)}_{rng.choice(NOUNS)}_{idx:04d}.py"
        dotted = rel.removesuffix(".py").replace("/", ".")
        (root / rel).write_text("".join(module_lines(rng, idx, dotted)))
        modules.append(rel)
    return modules


def _count(block: list[str], lines: list[str]) -> int:
    m = len(block)
    return sum(1 for i in range(len(lines) - m + 1) if lines[i : i + m] == block)


@dataclass
class Edit:
    """One change at old line ``pos`` (0-based): insert ``text`` before it, or replace it."""

    pos: int
    text: str
    replace: bool


def plan_edits(
    rng: random.Random, lines: list[str], n_hunks: int, marker_line: str | None, tag: str
) -> list[Edit] | None:
    """Edits at least 8 lines apart whose pre- and postimage each occur exactly once, and
    whose replaced lines become lines the file does not hold yet (a changed line that already
    reads so elsewhere can be taken for the change landed with its context moved, which
    patchbay refuses as ambiguous, rightly or not: not what these benchmarks measure)."""
    n = len(lines)
    number = re.compile(r"(\d+)(\D*)$")
    for _ in range(200):
        positions = sorted(rng.sample(range(CONTEXT, n - CONTEXT - 1), n_hunks))
        if any(b - a < 2 * CONTEXT + 2 for a, b in itertools.pairwise(positions)):
            continue
        edits = []
        for k, pos in enumerate(positions):
            line = lines[pos]
            indent = line[: len(line) - len(line.lstrip())] if line.strip() else ""
            match = number.search(line.rstrip("\n"))
            if k == 0 and marker_line is not None:
                edits.append(Edit(pos, f"{indent}{marker_line}\n", replace=False))
            elif match and rng.random() < 0.5 and not line.lstrip().startswith(("#", '"')):
                value = str(int(match.group(1)) * 2 + 1)
                new = line[: match.start(1)] + value + line[match.end(1) :]
                edits.append(Edit(pos, new, replace=True))
            else:
                comment = f"{indent}# bench {tag} hunk {k + 1}: {rng.choice(PHRASES)}\n"
                edits.append(Edit(pos, comment, replace=False))
        new_lines = apply_edits(lines, edits)
        ok = True
        shift = 0
        for e in edits:
            old_end = e.pos + CONTEXT + (1 if e.replace else 0)
            pre = lines[e.pos - CONTEXT : old_end]
            post = new_lines[e.pos - CONTEXT + shift : old_end + shift + (0 if e.replace else 1)]
            shift += 0 if e.replace else 1
            if _count(pre, lines) != 1 or _count(post, new_lines) != 1:
                ok = False
            if _count(pre, new_lines) or _count(post, lines):
                ok = False
            if e.replace and e.text in lines:  # the new line already elsewhere: see below
                ok = False
        if ok:
            return edits
    return None


def apply_edits(lines: list[str], edits: list[Edit]) -> list[str]:
    """The lines after ``edits``."""
    out = list(lines)
    for e in sorted(edits, key=lambda e: -e.pos):
        out[e.pos : e.pos + (1 if e.replace else 0)] = [e.text]
    return out


@dataclass
class BenchPatch:
    """One generated patch: its number, file, marker, and the files it touches."""

    number: int
    file: Path
    marker: str
    touched: list[str] = field(default_factory=list)


def build_patches(
    pristine: Path, patchset_dir: Path, modules: list[str], n_patches: int, rng: random.Random
) -> list[BenchPatch]:
    """Write ``n_patches`` diffs (distinct files per patch) and ``patchset.yaml``."""
    patch_dir = patchset_dir / "patches"
    patch_dir.mkdir(parents=True)
    pool = rng.sample(modules, 2 * n_patches)
    patches = []
    for p in range(1, n_patches + 1):
        files = [pool.pop()] + ([pool.pop()] if rng.random() < 0.5 else [])
        total = rng.randint(len(files), 3)  # 1-3 hunks per patch, at least one per file
        first = rng.randint(1, total - len(files) + 1)
        hunk_counts = [first, total - first][: len(files)]
        marker = f"{MARKER}-{p:03d}"
        chunks = []
        for f_i, rel in enumerate(files):
            old = (pristine / rel).read_text().splitlines(keepends=True)
            edits = None
            while edits is None:
                edits = plan_edits(
                    rng,
                    old,
                    hunk_counts[f_i],
                    f"# {marker}: {rng.choice(PHRASES)}" if f_i == 0 else None,
                    f"patch {p:03d}",
                )
            new = apply_edits(old, edits)
            diff = difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}", n=CONTEXT)
            chunks.append(f"diff --git a/{rel} b/{rel}\n" + "".join(diff))
        stem = files[0].rsplit("/", 1)[1].removesuffix(".py").replace("_", "-")
        path = patch_dir / f"{p:03d}-{stem}.patch"
        path.write_text("".join(chunks))
        patches.append(BenchPatch(p, path, marker, files))
    entries = "".join(
        f"  - id: bench-{bp.number:03d}\n"
        "    kind: diff\n"
        "    target: engine\n"
        f"    file: patches/{bp.file.name}\n"
        "    strip: 1\n"
        f"    description: Benchmark patch {bp.number} ({len(bp.touched)} file(s)).\n"
        f"    upstream: [bench-org/{PACKAGE}#{1000 + bp.number}]\n"
        for bp in patches
    )
    (patchset_dir / "patchset.yaml").write_text(
        "schema: 1\n"
        "name: bench\n"
        "description: Generated by benchmarks/bench_apply.py.\n"
        f"image: {{reference: example.invalid/{PACKAGE}:1.0.0}}\n"
        "targets:\n"
        f"  engine: {{package: {PACKAGE}}}\n"
        f"patches:\n{entries}"
    )
    return patches


def big_module(rng: random.Random, size: int) -> list[str]:
    """One module of about ``size`` bytes: generated modules one after another (every function
    name is still unique; blank lines, ``return result`` and the like recur everywhere)."""
    lines: list[str] = []
    total = idx = 0
    while total < size:
        part = [*module_lines(rng, idx, f"{PACKAGE}.big.part{idx}"), "\n", "\n"]
        lines += part
        total += sum(len(line) for line in part)
        idx += 1
    return lines


def big_patch(rel: str, lines: list[str], n_hunks: int) -> tuple[str, list[str]]:
    """A diff of ``rel`` with ``n_hunks`` hunks spread evenly over ``lines``, each adding a
    comment right after a function's ``def`` line: its context starts with the two blank lines
    before the ``def`` (as real diffs so often do) and holds one unique line, the ``def``.
    Returns the diff and the lines it leaves."""
    defs = [
        i for i, line in enumerate(lines) if line.startswith("def ") and 2 <= i < len(lines) - 4
    ]
    if len(defs) < n_hunks:
        raise ValueError(f"{len(defs)} functions in the module, fewer than {n_hunks} hunks")
    step = len(defs) / n_hunks
    chosen = [defs[int(k * step)] for k in range(n_hunks)]
    out = [f"diff --git a/{rel} b/{rel}\n", f"--- a/{rel}\n", f"+++ b/{rel}\n"]
    result = list(lines)
    for shift, i in enumerate(chosen):
        comment = f"    # bench hunk {shift + 1}: {PHRASES[shift % len(PHRASES)]}\n"
        out.append(f"@@ -{i - 1},6 +{i - 1 + shift},7 @@\n")
        out += [" " + line for line in lines[i - 2 : i + 1]]
        out.append("+" + comment)
        out += [" " + line for line in lines[i + 1 : i + 4]]
    for k in reversed(range(n_hunks)):
        result.insert(chosen[k] + 1, f"    # bench hunk {k + 1}: {PHRASES[k % len(PHRASES)]}\n")
    return "".join(out), result


def write_patchset(folder: Path, patch_files: list[str], package: str = PACKAGE) -> None:
    """``folder/patchset.yaml`` naming ``patch_files`` (relative to ``folder``) in order."""
    entries = "".join(
        f"  - id: bench-{n:05d}\n"
        "    kind: diff\n"
        "    target: engine\n"
        f"    file: {rel}\n"
        "    strip: 1\n"
        f"    description: Benchmark patch {n}.\n"
        f"    upstream: [bench-org/{package}#{1000 + n}]\n"
        for n, rel in enumerate(patch_files, start=1)
    )
    (folder / "patchset.yaml").write_text(
        "schema: 1\n"
        "name: bench\n"
        "description: Generated by a patchbay benchmark.\n"
        f"image: {{reference: example.invalid/{package}:1.0.0}}\n"
        "targets:\n"
        f"  engine: {{package: {package}}}\n"
        f"patches:\n{entries}"
    )
