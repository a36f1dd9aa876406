"""``patchbay rebase``: carry a patchset onto a new image (3-way merges where it conflicts)."""

from __future__ import annotations

from pathlib import Path

from ...authoring.capture import PristineSources
from ...authoring.rebase import RebaseItem, rebase_patchset
from ...errors import InputError
from ...outputfiles import check_input_folder, check_output_folder
from .common import environment, hint, load, say

_STYLES = {"unchanged": "green", "refreshed": "yellow", "dropped": "cyan", "conflict": "red"}


def run(
    patchset_arg: str,
    *,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    onto_python: str | None,
    onto_root: Path | None,
    out: Path | None,
    write: bool,
    conflicts: Path | None,
    wheels: list[Path],
    from_git: str | None,
    resolved: Path | None = None,
) -> int:
    """Print what happened to each patch; exit 0 when all clear, 1 when conflicts remain."""
    if (onto_python is None) == (onto_root is None):
        raise InputError("give the candidate image: --onto-python PATH or --onto-root DIR")
    if out is not None:
        check_output_folder(out, "--out")
    if conflicts is not None:
        check_output_folder(conflicts, "--conflicts")
    if resolved is not None:
        check_input_folder(resolved, "--resolved")
    patchset = load(patchset_arg)
    old_env = environment(patchset, python, root, state_dir)
    new_env = environment(patchset, onto_python, onto_root, None)
    result = rebase_patchset(
        patchset,
        old_env,
        new_env,
        out=out,
        write=write,
        conflicts_dir=conflicts,
        sources=PristineSources(wheels=wheels, from_git=from_git),
        resolved=resolved,
    )
    width = max((len(i.id) for i in result.items), default=0)
    for item in result.items:
        style = _STYLES.get(item.outcome, "")
        say(f"{item.id:<{width}}  {item.verdict:<9} -> ", (item.outcome, style))
        for detail in item.details:
            say(f"{'':<{width}}    {detail}")
    _hunk_table(result.items)
    for note in result.guard:
        say(f"guard: {note}")
    where = {"python": python, "root": root, "state_dir": state_dir}
    if result.conflicts:
        say(
            f"\n{len(result.conflicts)} patch(es) in conflict: "
            + ", ".join(i.id for i in result.conflicts)
            + " (left as they were in the result; why: the lines under each above)"
        )
        if result.conflicts_dir is not None:
            say(f"merged files with conflict markers in {result.conflicts_dir}:")
            for item in result.conflicts:
                for path in item.conflict_files:
                    say(f"  {path}")
            again = _again(patchset_arg, onto_python, onto_root, out, write, wheels, from_git)
            say(
                "merge them by hand (remove the markers; a binary file: put the version wanted "
                "at its path there), then run "
                f"`{hint(*again, '--resolved', result.conflicts_dir, **where)}`"
            )
    check = hint("check", result.folder, python=onto_python, root=onto_root)
    say(
        f"\nwrote the rebased patchset to {result.folder}; `{check}`: "
        + ("all clear" if result.final.ok else "all clear except the conflicts above")
    )
    return 0 if result.ok else 1


_HUNK_STYLES = {
    "kept": "green",
    "re-anchored": "green",
    "merged": "yellow",
    "dropped upstream": "cyan",
    "conflict": "red",
}


def _hunk_table(items: list[RebaseItem]) -> None:
    """One row per hunk: patch, file, hunk number, what rebase did with it, and where."""
    rows = [
        (i.id, h.file, str(h.index or "-"), h.verdict.value, h.note) for i in items for h in i.hunks
    ]
    if not rows:
        return
    head = ("patch", "file", "hunk", "verdict", "")
    widths = [max(len(r[k]) for r in [head, *rows]) for k in range(3)]
    say("\nper hunk:")
    say(f"  {head[0]:<{widths[0]}}  {head[1]:<{widths[1]}}  {head[2]:>{widths[2]}}  verdict")
    for pid, file, hunk, verdict, note in rows:
        say(
            f"  {pid:<{widths[0]}}  {file:<{widths[1]}}  {hunk:>{widths[2]}}  ",
            (verdict, _HUNK_STYLES.get(verdict, "")),
            f"  ({note})" if note else "",
        )


def _again(
    patchset_arg: str,
    onto_python: str | None,
    onto_root: Path | None,
    out: Path | None,
    write: bool,
    wheels: list[Path],
    from_git: str | None,
) -> list[str | Path]:
    """The words of this rebase to run again (the options that chose its inputs and output;
    a new ``--out`` beside the first, which holds the conflicts folder and cannot be written
    again), for the hint that follows a conflict."""
    words: list[str | Path] = ["rebase", patchset_arg]
    words += ["--onto-python", onto_python] if onto_python else ["--onto-root", str(onto_root)]
    if out is not None:  # a result folder of its own: this one holds the conflicts
        fresh = out.with_name(f"{out.name}-resolved")
        n = 2
        while fresh.exists():
            fresh, n = out.with_name(f"{out.name}-resolved-{n}"), n + 1
        words += ["--out", fresh]
    if write:
        words.append("--write")
    for wheel in wheels:
        words += ["--wheel", wheel]
    if from_git:
        words += ["--from-git", from_git]
    return words
