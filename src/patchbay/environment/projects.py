"""The repositories of the projects people name in text: ``vllm #51011`` is
``vllm-project/vllm#51011``.

Both readers of free text use this map: ``patchbay import`` (references in a script's comments)
and the waiver parser (``project #N`` in a waiver, through ``patchbay audit``). Each adds its
own entries on top (``--project NAME=OWNER/REPO``; ``upstream-names`` in the audit
configuration and the patchsets' components). A module of its own, with no imports, because
both features are timed from start-up.
"""

from __future__ import annotations

DEFAULT_PROJECTS: dict[str, str] = {
    "vllm": "vllm-project/vllm",
    "aiter": "ROCm/aiter",
    "sglang": "sgl-project/sglang",
    "triton": "triton-lang/triton",
    "flashinfer": "flashinfer-ai/flashinfer",
}
"""Project name (lower case) -> ``owner/repo``."""
