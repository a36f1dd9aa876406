"""``patchbay edit`` and ``patchbay refresh``: change an existing patch by editing the tree."""

from __future__ import annotations

from pathlib import Path

from ...authoring.capture import PristineSources
from ...authoring.refresh import edit_patch, refresh_patch
from .common import environment, hint, load, say


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
        say(f"took off {pid}")
    for pid in result.applied:
        say(f"applied {pid}")
    say(f"the tree is at the state just after {patch_id}; its files:")
    for path in result.files:
        say(f"  {path}")
    where = {"python": python, "root": root, "state_dir": state_dir}
    say(
        f"edit them, then `{hint('refresh', patchset_arg, patch_id, **where)}`; "
        f"`{hint('apply', patchset_arg, **where)}` puts the later patches back"
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
    allow_delete: bool = False,
) -> int:
    """Rewrite the patch's diff from the tree; exit 0 (refusals raise, nothing written)."""
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, state_dir)
    result = refresh_patch(
        patchset,
        env,
        patch_id,
        files,
        sources=PristineSources(wheels=wheels, from_git=from_git),
        allow_delete=allow_delete,
    )
    for path in result.dropped:
        say(f"dropped {path}: back to what it was before the patch")
    say(
        f"refreshed {patch_id}: wrote {result.patch_file} ({len(result.files)} file(s)); the "
        "ledger records the new content",
    )
    pending = [pid for pid, status in result.later.items() if status == "pending"]
    if pending:
        where = {"python": python, "root": root, "state_dir": state_dir}
        say(
            f"the later patches still apply ({', '.join(pending)}): "
            f"`{hint('apply', patchset_arg, **where)}` puts them back"
        )
    return 0
