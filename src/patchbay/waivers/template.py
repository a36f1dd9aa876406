"""``patchbay waiver new``: the text of a new waiver, prefilled from a patchset."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date


@dataclass
class PatchSummary:
    """What the template says about one patch (read from the patchset by the command)."""

    id: str
    kind: str
    target: str | None
    description: str
    content: str  # one line: files touched (the kind's own description)
    upstream: list[str]
    upstream_status: str | None  # "Pending: reason"
    ref: str | None = None  # how the waiver's `patches` list names it (default: the id)
    # what a reference with `covers` covers, and the local rest with its reason
    # (patchbay.patchset.coverage.coverage_lines)
    coverage: list[str] | None = None


def waiver_template(
    *,
    waiver_id: str,
    patchset_name: str,
    patchset_path: str,
    image: str,
    patches: list[PatchSummary],
    today: date,
) -> str:
    """The text of a new waiver, prefilled from a patchset.

    Everything the patchset knows is written out (patch ids, files touched, upstream references,
    image); what only a person can say is a ``<TODO: ...>`` blank, which ``patchbay audit``
    reports (PB202) until it is filled.
    """

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    ids = ", ".join(p.ref or p.id for p in patches)
    rows = "\n".join(
        f"| `{p.id}` | {p.kind} | {p.target or '-'} | {cell(p.content)} | {cell(p.description)} |"
        for p in patches
    )
    upstream_lines = []
    for p in patches:
        refs = ", ".join(p.upstream)
        status = f" (Upstream-Status {p.upstream_status})" if p.upstream_status else ""
        covered = "".join(f"; {line}" for line in p.coverage or [])
        if refs:
            upstream_lines.append(f"- `{p.id}`: {refs}{status}{covered}")
        else:
            upstream_lines.append(
                f"- `{p.id}`: no upstream reference{status}; "
                "<TODO: the upstream PR or issue that removes the need, once there is one>"
            )
    upstream = "\n".join(upstream_lines)
    return f"""---
id: {waiver_id}
patches: [{ids}]
owner: "<TODO: who carries these patches>"
filed: {today.isoformat()}
review_by: "<TODO: YYYY-MM-DD, when this waiver is looked at again>"
status: requested
# approval: <link to the approving review>  (required once status is approved)
---

# Waiver {waiver_id}: patchset {patchset_name}

<!-- Written by `patchbay waiver new`. Replace every <TODO: ...>; `patchbay audit` lists the
     ones left. -->

Image: `{image}`. Patchset: `{patchset_path}`.

## What is patched

| patch | kind | target | content | description |
|---|---|---|---|---|
{rows}

## Why the unmodified image cannot run the benchmark

<TODO: what fails without these patches (error, crash or wrong result), on which config>

## Upstream

{upstream}

## Removal plan

<TODO: when these patches are dropped (e.g. an image that has the upstream fixes), and by whom>
"""
