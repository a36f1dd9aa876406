"""What counts as an engine: distribution names, import (folder) names, upstream repositories."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

DEFAULT_ENGINES = (
    "vllm",
    "sglang",
    "sgl-kernel",
    "aiter",
    "triton",
    "pytorch-triton-rocm",
    "torch",
    "flashinfer",
    "flashinfer-python",
    "flash-attn",
    "xformers",
    "tensorrt-llm",
    "lmdeploy",
)
"""Engine distributions known without configuration (a patchset's components add more)."""

DEFAULT_HARNESS = (
    "lm-eval",
    "lighteval",
    "evalplus",
    "bigcode-eval",
    "opencompass",
    "swebench",
    "minisweagent",
    "mini-swe-agent",
    "swerex",
    "aiperf",
    "genai-perf",
    "guidellm",
)
"""Evaluation harnesses and benchmark clients known without configuration: a change to one of
them (a ``sitecustomize`` or a patcher of ``lm_eval``) measures differently but serves the
same engine, so it is never engine patching (``[tool.patchbay] harness`` adds more)."""


def is_bytecode(path: str) -> bool:
    """A path (or pattern) of Python byte-code: ``__pycache__`` or ``*.pyc``/``*.pyo``.
    Removing byte-code changes no engine: Python compiles the source again (PEP 3147)."""
    return "__pycache__" in path or path.endswith((".pyc", ".pyo", ".py[co]", "*.pyc"))


def normalise_name(name: str) -> str:
    """PEP 503 normalisation (``Flash_Attn`` -> ``flash-attn``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class EngineNames:
    """What counts as an engine.

    Attributes:
        distributions: PEP 503-normalised distribution names (``vllm``, ``demo-engine``).
        imports: package folder names (``vllm``, ``demo_engine``, ``flash_attn``).
        upstreams: repository name (lower case) -> upstream ``owner/repo`` (from components).
        harness: import names of evaluation harnesses (:data:`DEFAULT_HARNESS` and the
            configured ones): their installed files are not the engine.
    """

    distributions: frozenset[str]
    imports: frozenset[str]
    upstreams: dict[str, str] = field(default_factory=dict, hash=False)
    harness: frozenset[str] = frozenset(d.replace("-", "_") for d in DEFAULT_HARNESS)

    @classmethod
    def build(
        cls,
        distributions: Iterable[str] = DEFAULT_ENGINES,
        packages: Iterable[str] = (),
        repositories: Iterable[str] = (),
        harness: Iterable[str] = DEFAULT_HARNESS,
    ) -> EngineNames:
        """Engine names from distribution names, target packages and ``owner/repo`` upstreams;
        ``harness``: distribution or import names of evaluation harnesses (an engine name
        among them stays an engine)."""
        dists = {normalise_name(d) for d in distributions}
        upstreams = {}
        for repo in repositories:
            name = repo.rsplit("/", 1)[-1].lower()
            upstreams[name] = repo
            dists.add(normalise_name(name))
        imports = {d.replace("-", "_") for d in dists}
        imports |= {p.split(".")[0] for p in packages}
        tools = {normalise_name(h).replace("-", "_") for h in harness} - imports
        return cls(frozenset(dists), frozenset(imports), upstreams, frozenset(tools))

    def is_harness(self, rel: str) -> bool:
        """A path below site-packages that belongs to an evaluation harness
        (``lm_eval/models/api.py``, ``swebench/harness/x.py``, ``lm_eval-0.4.dist-info``)."""
        first = rel.split("/", 1)[0]
        stem = re.split(r"-\d", first.removesuffix(".dist-info"), maxsplit=1)[0]
        return normalise_name(stem).replace("-", "_") in self.harness

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """Any engine name as a word (``vllm``, ``demo-engine``, ``demo_engine``)."""
        names = sorted(self.distributions | self.imports, key=len, reverse=True)
        return re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-])")

    def is_engine(self, name: str) -> bool:
        """True for an engine distribution, package or repository name (any spelling)."""
        key = normalise_name(name.removesuffix(".git"))
        return key in self.distributions or key.replace("-", "_") in self.imports

    def package_of(self, rel: str) -> str | None:
        """The engine package a path below site-packages belongs to (``vllm/envs.py`` ->
        ``vllm``; ``aiter_meta/x`` -> ``aiter``; a ``.dist-info`` folder -> its name)."""
        first = rel.split("/", 1)[0]
        if not first:
            return None
        stem = re.split(r"-\d", first.removesuffix(".dist-info"), maxsplit=1)[0]
        for candidate in (first, stem, first.split("_")[0]):
            if candidate in self.imports or self.is_engine(candidate):
                return candidate
        for name in self.imports:
            if first.startswith(name + "_"):
                return name
        return None

    def named_in(self, text: str) -> str | None:
        """The first engine name mentioned in ``text`` as a word, or None."""
        m = self.pattern.search(text)
        return m.group(0) if m else None
