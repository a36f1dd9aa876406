"""``patchbay bundle``: everything apply needs, for an air-gapped container."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ...carry.bundle import make_bundle
from ...carry.selfcarry import INSTALLER
from ...options import RunOptions
from ...outputfiles import check_output_folder
from .common import environment, load, say


def run(
    patchset_arg: str,
    *,
    out: Path,
    python: str | None,
    root: Path | None = None,
    options: Callable[[], RunOptions] = RunOptions,
    with_patchbay: bool = True,
) -> int:
    """Write the bundle; exit 0. Errors raise (a bad ``out`` before any work)."""
    check_output_folder(out, "OUT")
    patchset = load(patchset_arg)
    env = environment(patchset, python, root, None)
    manifest, compiled, diffs = make_bundle(
        patchset, env, out, options(), with_patchbay=with_patchbay
    )
    if diffs:
        where = env.python or env.tree_root
        say(
            f"compiled plan: {compiled} of {diffs} diff patch(es) judged on the files of {where} "
            "(a container of the same image applies them by hash; the rest, and any "
            "file that differs, are judged in full there)"
        )
    apply = f"patchbay apply {out / 'patchset'} --bundle {out} --offline"
    if with_patchbay:
        say(
            f"bundle {out}: {len(manifest)} file(s); inside the container run "
            f"`sh {out / INSTALLER}` (it prints the patchbay command it installed), then "
            f"`{apply}` with that command"
        )
    else:
        say(f"bundle {out}: {len(manifest)} file(s); inside the container run `{apply}`")
    return 0
