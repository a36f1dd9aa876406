"""``apply --dry-run``: the unified diff ``apply`` would write, and nothing written.

The plan is the one ``apply`` makes (same refusals: a wrong image, a conflict, a stale ledger
entry without ``--upgrade``); its file changes are folded per file (the first patch's
``before``, the last one's ``after``) and written as one git diff per target by
:func:`patchbay.diff.gitdiff.write_diff`, relative to the target's root (``git apply -p1`` in that
folder would make the same change). Effects that are no file diff (a package pin, a rebuild
command) are listed as comments.
"""

from __future__ import annotations

from ..apply.results import PatchStatus, Plan
from ..diff.gitdiff import FileVersions, write_diff


def dry_run_text(plan: Plan) -> str:
    """The diff (and ``#`` comment lines) for every pending patch of ``plan``.

    Raises:
        ApplyFailed: git could not write the diff.
    """
    pending = plan.with_status(PatchStatus.PENDING)
    out: list[str] = []
    for entry in plan.stale:
        out.append(f"# would first revert {entry.patch_id} (the recorded version; --upgrade)")
    folded: dict[str, dict[str, FileVersions]] = {}
    for report in pending:
        changes = [c for c in report.inspection.changes if c.before != c.after]
        if not changes:
            what = KIND_EFFECTS.get(report.patch.kind, "no file change")
            out.append(f"# {report.id} ({report.patch.kind}): pending; {what}")
            continue
        out.append(f"# {report.id} ({report.patch.kind}): {len(changes)} file(s)")
        for c in changes:
            files = folded.setdefault(c.target, {})
            if c.path in files:
                files[c.path].after = c.after
            else:
                files[c.path] = FileVersions(c.path, c.before, c.after)
    if not pending and not plan.stale:
        out.append("# nothing to do: every patch is already present")
    for target, files in folded.items():
        out.append(f"# target {target}: {plan.env.roots[target]}")
        diff = write_diff(list(files.values()))
        out.append(diff.decode("utf-8", "surrogateescape").rstrip("\n"))
    return "\n".join(out) + "\n"


KIND_EFFECTS = {
    "pip": "a package install (pip's dry run decides what moves)",
    "command": "a command run",
}
