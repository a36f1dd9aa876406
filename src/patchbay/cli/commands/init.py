"""``patchbay init``: a new patchset read from an engine environment."""

from __future__ import annotations

from pathlib import Path

from ...authoring.scaffold import init_patchset
from .common import hint, say


def run(
    folder: Path,
    packages: list[str],
    *,
    python: str | None,
    root: Path | None,
    name: str | None,
    image: str | None,
    from_git: Path | None,
) -> int:
    """Write the patchset and say what was read for each package; exit 0 (errors raise)."""
    result = init_patchset(
        folder, packages, python=python, root=root, name=name, image=image, from_git=from_git
    )
    for c in result.components:
        if c.distribution is None:
            say(f"{c.package}: no component")
        else:
            pin = f" {c.commit[:12]}" if c.commit else ""
            repo = f" ({c.repository})" if c.repository else ""
            say(f"{c.package}: {c.distribution} {c.version or '?'}{repo}{pin}")
        for note in c.notes:
            say(f"    {note}")
    say(
        f"wrote {result.path}; fill in its blanks (`{hint('validate', folder)}` lists them), "
        f"then add patches (`{hint('capture', folder, 'ID', python=python, root=root)}` "
        "writes edits of the installed engine as one)"
    )
    return 0
