"""``patchbay edit`` and ``patchbay refresh``: change an existing patch by editing the tree."""

from __future__ import annotations

from pathlib import Path

from ..capture import PristineSources
from ..refresh import edit_patch, refresh_patch
from .common import console, environment, load


def edit(
    patchset_arg: str,
    patch_id: str,
    *,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
) -> int:
    """Bring the tree to the state just after the patch; exit 0 (refusals raise)."""
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, state_dir)
    result = edit_patch(patchset, env, patch_id)
    for pid in result.reverted:
        console.print(f"took off {pid}", markup=False)
    for pid in result.applied:
        console.print(f"applied {pid}", markup=False)
    console.print(f"the tree is at the state just after {patch_id}; its files:", markup=False)
    for path in result.files:
        console.print(f"  {path}", markup=False)
    console.print(
        f"edit them, then `patchbay refresh {patchset_arg} {patch_id}`; `patchbay apply` puts "
        "the later patches back",
        markup=False,
    )
    return 0


def refresh(
    patchset_arg: str,
    patch_id: str,
    files: list[str],
    *,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    wheels: list[Path],
    from_git: str | None,
) -> int:
    """Rewrite the patch's diff from the tree; exit 0 (refusals raise, nothing written)."""
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, state_dir)
    result = refresh_patch(
        patchset, env, patch_id, files, sources=PristineSources(wheels=wheels, from_git=from_git)
    )
    for path in result.dropped:
        console.print(f"dropped {path}: back to what it was before the patch", markup=False)
    console.print(
        f"refreshed {patch_id}: wrote {result.patch_file} ({len(result.files)} file(s)); the "
        "ledger records the new content",
        markup=False,
    )
    pending = [pid for pid, status in result.later.items() if status == "pending"]
    if pending:
        console.print(
            f"the later patches still apply ({', '.join(pending)}): `patchbay apply` puts them "
            "back",
            markup=False,
        )
    return 0
