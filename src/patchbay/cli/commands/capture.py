"""``patchbay capture``: edits made to the installed engine, written as a new ``diff`` patch."""

from __future__ import annotations

from pathlib import Path

from ...authoring.capture import PristineSources, capture_patch
from .common import environment, hint, load, say


def run(
    patchset_arg: str,
    patch_id: str,
    files: list[str],
    *,
    python: str | None,
    root: Path | None = None,
    state_dir: Path | None,
    target: str | None,
    wheels: list[Path],
    from_git: str | None,
    description: str | None,
    upstream: list[str],
    exclude: list[str] | None = None,
) -> int:
    """Write the patch and add it to the patchset; exit 0 (errors raise, nothing written)."""
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, state_dir)
    result = capture_patch(
        patchset,
        env,
        patch_id,
        files,
        target=target,
        sources=PristineSources(wheels=wheels, from_git=from_git),
        description=description,
        upstream=upstream,
        exclude=exclude or [],
    )
    for note in result.skipped:
        say(f"skipped: {note}")
    for f in result.files:
        origin = "no RECORD lists it" if f.change == "new" else f"from {f.base}"
        say(f"captured: {f.path} ({f.change}; {origin})")
    say(
        f"wrote {result.patch_file} ({len(result.files)} file(s), {result.context} lines of "
        f"context) and added patch {result.patch_id} (target {result.target}, strip 1) to "
        f"{patchset.path}; recorded as applied in this environment",
    )
    if not description or not upstream:
        say(
            "fill in the <TODO: ...> blanks of its description and upstream state "
            f"(`{hint('validate', patchset_arg)}` lists them)"
        )
    return 0
