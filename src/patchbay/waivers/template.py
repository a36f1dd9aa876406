"""``patchbay waiver new``: the text of a new waiver, prefilled from a patchset."""

from __future__ import annotations

from datetime import date

from ..patchset.describe import PatchSummary

PATCHES_BLOCK = "patches"
UPSTREAM_BLOCK = "upstream"
_NOTE = "written by `patchbay waiver new` and `patchbay waiver sync`"


def _begin(name: str, source: str) -> str:
    return f"<!-- patchbay:{name} begin (patchset {source}; {_NOTE}: edit the patchset) -->"


def _end(name: str) -> str:
    return f"<!-- patchbay:{name} end -->"


def _cell(text: str) -> str:
    from ..summaries import summarise  # a wall of 70 packages or 8 URLs: its count instead

    return summarise(text.replace("\n", " "), "the patchset lists them").replace("|", "\\|")


def patch_table(patches: list[PatchSummary], source: str) -> str:
    """The generated ``What is patched`` table, between its ``patchbay:patches`` markers
    (``source``: the patchset's path, named in the begin marker)."""
    rows = "\n".join(
        f"| `{p.id}` | {p.kind} | {p.target or '-'} | {_cell(p.content)} | {_cell(p.description)} |"
        for p in patches
    )
    return (
        f"{_begin(PATCHES_BLOCK, source)}\n| patch | kind | target | content | description |\n"
        f"|---|---|---|---|---|\n{rows}\n{_end(PATCHES_BLOCK)}"
    )


def upstream_list(patches: list[PatchSummary], source: str) -> str:
    """The generated upstream references of each patch, between ``patchbay:upstream`` markers
    (a patch without one gets a ``<TODO: ...>`` blank, which the audit reports)."""
    lines = []
    for p in patches:
        refs = ", ".join(p.upstream)
        status = f" (Upstream-Status {p.upstream_status})" if p.upstream_status else ""
        covered = "".join(f"; {line}" for line in p.coverage or [])
        if refs:
            lines.append(f"- `{p.id}`: {refs}{status}{covered}")
        else:
            lines.append(
                f"- `{p.id}`: no upstream reference{status}; "
                "<TODO: the upstream PR or issue that removes the need, once there is one>"
            )
    return f"{_begin(UPSTREAM_BLOCK, source)}\n" + "\n".join(lines) + f"\n{_end(UPSTREAM_BLOCK)}"


def yaml_word(text: str) -> str:
    """``text`` as a YAML scalar that reads back as that string: quoted when YAML would read
    it as a number, a boolean, a date or null (``2508``, ``1.0``, ``no``, ``2026-01-02``)."""
    import json
    import re

    plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9._/-]*", text) and text.lower() not in {
        "true", "false", "yes", "no", "on", "off", "null", "y", "n", "~",
    }  # fmt: skip
    return text if plain else json.dumps(text)


def front_matter(
    *,
    waiver_id: str,
    patches: list[PatchSummary],
    today: date,
    owner: str | None = None,
    status: str = "requested",
    approval: str | None = None,
) -> str:
    """The front matter block (``---`` lines included) of a waiver of ``patches``; what only a
    person can say (the owner, the review date, an approval link) is a ``<TODO: ...>``."""
    ids = ", ".join(yaml_word(p.ref or p.id) for p in patches)
    who = _quoted(owner) if owner else '"<TODO: who carries these patches>"'
    if status == "approved":
        link = _quoted(approval) if approval else '"<TODO: link to the approving review>"'
        approved = f"approval: {link}\n"
    else:
        approved = (
            "# approval: <link to the approving review>  (required once status is approved)\n"
        )
    return (
        f"---\nid: {yaml_word(waiver_id)}\npatches: [{ids}]\nowner: {who}\n"
        f"filed: {today.isoformat()}\n"
        'review_by: "<TODO: YYYY-MM-DD, when this waiver is looked at again>"\n'
        f"status: {status}\n{approved}---\n"
    )


def _quoted(text: str) -> str:
    import json

    return json.dumps(text)


def waiver_template(
    *,
    waiver_id: str,
    patchset_name: str,
    patchset_path: str,
    image: str,
    patches: list[PatchSummary],
    today: date,
    source: str | None = None,
) -> str:
    """The text of a new waiver, prefilled from a patchset (``source``: the patchset as its
    generated blocks name it for ``waiver sync``; default ``patchset_path``).

    Everything the patchset knows is written out (patch ids, files touched, upstream references,
    image); what only a person can say is a ``<TODO: ...>`` blank, which ``patchbay audit``
    reports (PB202) until it is filled. The patch table and the upstream list are generated
    blocks (between ``<!-- patchbay:NAME begin ... -->`` and ``<!-- patchbay:NAME end -->``)
    that ``patchbay waiver sync`` rewrites; every other line is the author's.
    """
    head = front_matter(waiver_id=waiver_id, patches=patches, today=today)
    source = source or patchset_path
    return f"""{head}
# Waiver {waiver_id}: patchset {patchset_name}

<!-- Written by `patchbay waiver new`. Replace every <TODO: ...>; `patchbay audit` lists the
     ones left. -->

Image: `{image}`. Patchset: `{patchset_path}`.

## What is patched

{patch_table(patches, source)}

## Why the unmodified image cannot run the benchmark

<TODO: what fails without these patches (error, crash or wrong result), on which config>

## Upstream

{upstream_list(patches, source)}

## Removal plan

<TODO: when these patches are dropped (e.g. an image that has the upstream fixes), and by whom>
"""


_MISSING_SECTIONS = {
    "what": ("What is patched", None),
    "why": (
        "Why the unmodified image cannot run the benchmark",
        "<TODO: what fails without these patches (error, crash or wrong result), on which config>",
    ),
    "upstream": ("Upstream", None),
    "removal": (
        "Removal plan",
        "<TODO: when these patches are dropped (e.g. an image that has the upstream fixes), "
        "and by whom>",
    ),
}


def adopted_text(
    text: str,
    *,
    waiver_id: str,
    patchset_name: str,
    patchset_path: str,
    patches: list[PatchSummary],
    found: set[str],
    today: date,
    owner: str | None = None,
    status: str | None = None,
    approval: str | None = None,
) -> str:
    """A legacy waiver (``text``, no front matter) adopted in place: the front matter put
    before its text, which is kept byte for byte, and the generated patch table (and the
    upstream list, and a ``<TODO: ...>`` section for each required field the text lacks: the
    four of :data:`~patchbay.waivers.fields.FIELDS` not in ``found``) appended after it.
    ``owner``, ``status`` and ``approval`` are what the legacy layout's labels say."""
    head = front_matter(
        waiver_id=waiver_id,
        patches=patches,
        today=today,
        owner=owner,
        status=status or "requested",
        approval=approval,
    )
    parts = [
        text.rstrip("\n"),
        "",
        f"## Patches of patchset {patchset_name}",
        "",
        patch_table(patches, patchset_path),
    ]
    if "upstream" not in found:
        parts += ["", "## Upstream", "", upstream_list(patches, patchset_path)]
    for name in ("why", "removal"):
        title, blank = _MISSING_SECTIONS[name]
        if name not in found and blank:
            parts += ["", f"## {title}", "", blank]
    return head + "\n".join(parts) + "\n"


def replace_block(text: str, name: str, block: str) -> str | None:
    """``text`` with its generated block ``name`` (markers included) replaced by ``block``;
    None when ``text`` has no such block (or its end marker is missing)."""
    begin = text.find(f"<!-- patchbay:{name} begin")
    end_marker = _end(name)
    end = text.find(end_marker, begin) if begin >= 0 else -1
    if begin < 0 or end < 0:
        return None
    return text[:begin] + block + text[end + len(end_marker) :]
