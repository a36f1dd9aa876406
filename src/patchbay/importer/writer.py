"""Write what the walker found as a draft patchset folder.

Drafts are placed under targets (the folder holding a package, or a data folder beside it such
as ``aiter_meta``), given stable ids, and written as ``patchset.yaml`` and patch files. Blanks
a person must fill say ``TODO``; ``IMPORT-NOTES.md`` lists what was not converted and what to
check, with the script's line numbers, and what became of every command.
"""

from __future__ import annotations

import posixpath
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from ..printable import printable
from ..redaction import is_credential, redact
from .drafts import (
    ArtifactDraft,
    CommandDraft,
    DiffDraft,
    Draft,
    Outcome,
    PipDraft,
    ReplaceDraft,
    WalkResult,
)

NOTES_NAME = "IMPORT-NOTES.md"
_KEY_ORDER = ("id", "kind", "target", "description", "upstream", "upstream_status")
PATCHES_DIR = "patches"
_GENERIC = frozenset(
    {
        "eof",
        "eot",
        "end",
        "patch",
        "diff",
        "py",
        "python",
        "pyeof",
        "script",
        "tmp",
        "x",
        "p",
        "fix",
        "edit",
        "code",
        "file",
        "data",
        "here",
        "heredoc",
        "in",
        "out",
        "body",
        "txt",
    }
)


@dataclass
class ImportResult:
    """What ``patchbay import`` wrote.

    Attributes:
        folder: the patchset folder.
        patches: the patches written, in order (their ``id`` set).
        unconverted: the parts of the script the patchset does not do.
        review: ``(where, what)`` points a person should check.
        todo: blanks left to fill in ``patchset.yaml``.
    """

    folder: Path
    patches: list[Draft]
    unconverted: list[Outcome]
    review: list[tuple[str, str]] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        """True when some part of the script was not converted."""
        return bool(self.unconverted)

    @property
    def notes(self) -> Path:
        return self.folder / NOTES_NAME


# -- targets ---------------------------------------------------------------------------------


class _Targets:
    """Targets named after their package (``demo_engine``) or data folder (``aiter_meta``)."""

    def __init__(self, packages: list[str]) -> None:
        self.packages = packages
        self.specs: dict[str, dict[str, str]] = {}
        self.by_key: dict[tuple[str, str | None], str] = {}
        self.guessed: list[str] = []

    def get(self, package: str, path: str | None) -> str:
        key = (package, path or None)
        if key in self.by_key:
            return self.by_key[key]
        base = (path or package).replace("/", "_").replace(".", "_")
        name = base
        n = 2
        while name in self.specs:
            name = f"{base}_{n}"
            n += 1
        spec = {"package": package}
        if path:
            spec["path"] = path
        self.specs[name] = spec
        self.by_key[key] = name
        return name

    def owner(self, folder: str) -> str:
        """The package a data folder belongs to: the longest known package its name starts
        with (``aiter_meta`` -> ``aiter``), else the script's first package."""
        candidates = [p for p in self.packages if folder.startswith(p) and p != folder]
        if candidates:
            return max(candidates, key=len)
        if self.packages:
            return self.packages[0]
        guess = re.sub(r"[-_.]?(meta|data|kernels?|libs?)$", "", folder) or folder
        guess = re.sub(r"\W", "_", guess)
        if not re.match(r"[A-Za-z_]", guess):
            guess = "TODO_package"
        if folder not in self.guessed:
            self.guessed.append(folder)
        return guess

    def for_dir(self, rel: str, paths: list[str]) -> str:
        """The target for a diff applied in ``rel`` (site-relative) touching ``paths``."""
        rel = _site_relative(rel)
        if rel == "":
            tops = [p.split("/")[0] for p in paths]
            known = [t for t in tops if t in self.packages]
            if known:
                return self.get(known[0], None)
            return self.get(self.owner(tops[0]) if tops else self.owner(""), None)
        first = rel.split("/")[0]
        package = first if first in self.packages else self.owner(first)
        return self.get(package, rel)

    def for_file(self, rel: str) -> tuple[str, str]:
        """The target and target-relative path for a site-relative file."""
        parts = _site_relative(rel).split("/")
        if len(parts) == 1:
            return self.get(self.owner(""), None), rel
        if parts[0] in self.packages:
            return self.get(parts[0], None), rel
        return self.get(self.owner(parts[0]), parts[0]), "/".join(parts[1:])


_HINTS = {
    "description": "what the patchset is for",
    "image.reference": "the image the script patches (and its digest)",
    "package": "the engine's import name (e.g. vllm)",
}


def _blanks_to_fill(yaml_text: str, path: Path) -> tuple[list[str], str]:
    """The blanks ``validate`` will list in the draft ``yaml_text`` (to be written at
    ``path``), counted by the same function (:func:`patchbay.patchset.blanks.blank_items`), each
    with what to put there; and "" or, when the draft does not load, validate's reason (no blanks:
    validate lists none for it either)."""
    from ..errors import PatchbayError
    from ..patchset.blanks import blank_items
    from ..patchset.loading import patchset_from_document
    from ..patchset.yamlfile import parse_yaml

    try:
        patchset = patchset_from_document(parse_yaml(yaml_text, path))
    except PatchbayError as exc:
        return [], str(exc)
    out = []
    for pid, _line, field_name, _blank in blank_items(patchset):
        if pid is not None:
            what = (
                "upstream reference or upstream_status"
                if "upstream" in field_name
                else "description"
            )
            out.append(f"`{pid}`: {what}")
        else:
            hint = _HINTS.get(field_name) or _HINTS.get(field_name.rsplit(".", 1)[-1], "")
            out.append(f"`{field_name}`: {hint}" if hint else f"`{field_name}`")
    return out, ""


def _site_relative(rel: str) -> str:
    """A site-relative folder or file as the targets name it: ``.``, ``./x`` and ``x/`` are
    ``""``, ``x`` and ``x`` (a script that ``cd``s to site-packages itself gives ``.``)."""
    import posixpath

    rel = posixpath.normpath(rel) if rel else ""
    return "" if rel == "." else rel


# -- ids -------------------------------------------------------------------------------------


def _slug(text: str) -> str:
    if text.isupper():
        text = text.replace("_", "-")
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")
    return text.lower() if text.isupper() else text


def _pick_id(draft: Draft, used: set[str]) -> str:
    base = ""
    for name in draft.names:
        slug = _slug(name)
        # a numbered heredoc delimiter (EOF2, PATCH_1) is as generic as the word itself
        word = re.sub(r"[-._]?\d+$", "", slug.lower())
        if slug and word not in _GENERIC and not slug.isdigit():
            base = slug
            break
    if not base:
        base = f"{draft.kind}-line-{draft.first_line}"
    candidate = base
    n = 2
    while candidate in used:
        candidate = f"{base}-{n}"
        n += 1
    used.add(candidate)
    return candidate


# -- YAML ------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value.rstrip("\n") or (value.endswith("\n") and len(value) > 1) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _dump(data: Any) -> str:
    return yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        width=100,
        allow_unicode=True,
        default_flow_style=False,
    )


def _indent(text: str, prefix: str) -> str:
    return "".join(prefix + line if line.strip() else line for line in text.splitlines(True))


def _spans(draft: Draft) -> str:
    seen: list[tuple[int, int]] = []
    for span in sorted(draft.spans):
        if span not in seen:
            seen.append(span)
    parts = [f"{a}-{b}" if b > a else str(a) for a, b in seen if a > 0]
    return ", ".join(parts) or "none: found by running it"


# -- the patchset ----------------------------------------------------------------------------


def _one_of_alternatives(drafts: list[Draft]) -> tuple[list[Draft], list[tuple[Draft, Draft]]]:
    """The drafts without the later of two diffs that make one change from different bases
    (a script's ``apply_one_of A B``: see :func:`patchbay.patchset.ordering.same_changes`,
    which ``validate`` refuses), and each one dropped with the one kept."""
    from ..diff.parse import parse_diff
    from ..patchset.ordering import line_change

    kept: list[Draft] = []
    dropped: list[tuple[Draft, Draft]] = []
    changes: list[tuple[Draft, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]]] = []
    for draft in drafts:
        if not isinstance(draft, DiffDraft) or not draft.content or draft.source is not None:
            kept.append(draft)
            continue
        try:
            parsed = parse_diff(draft.content, source=Path("diff"), strip=draft.strip)
        except InputError:
            kept.append(draft)
            continue
        mine = {
            posixpath.join(draft.root, fp.new_path): line_change(fp)
            for fp in parsed.files
            if fp.new_path and fp.hunks
        }
        twin = next(
            (
                other
                for other, theirs in changes
                if any(
                    path in theirs and change[0] and theirs[path][0] == change[0]
                    and theirs[path][1] != change[1]
                    for path, change in mine.items()
                )
            ),
            None,
        )  # fmt: skip
        if twin is not None:
            dropped.append((draft, twin))
            continue
        changes.append((draft, mine))
        kept.append(draft)
    return kept, dropped


def check_out(out: Path, *, force: bool) -> None:
    """Refuse an ``--out`` that cannot become the draft: a file, or a folder that is not empty
    (without ``force``). Checked before anything else (an observed import runs the script
    only once ``--out`` is known to be usable).

    Raises:
        InputError: as said, naming ``out``.
    """
    if out.exists() and not out.is_dir():
        raise InputError("--out names a file, not a folder", file=out)
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InputError(
            "already exists and is not empty (choose another --out, or --force)", file=out
        )


def write_patchset(
    result: WalkResult, script: Path, out: Path, *, force: bool = False
) -> ImportResult:
    """Write the patchset folder ``out`` (``patchset.yaml``, ``patches/``, ``IMPORT-NOTES.md``).

    Args:
        result: what the walk found.
        script: the imported script (named in comments and notes).
        out: the new patchset folder.
        force: write into a folder that already holds files (the patchset, the notes and
            ``patches/`` are replaced; nothing else is touched).

    Raises:
        InputError: ``out`` is a file, or a folder that is not empty (without ``force``).
    """
    check_out(out, force=force)
    unconverted = [o for o in result.outcomes if o.kind == "unconverted"]
    review: list[tuple[str, str]] = []
    result.drafts, alternatives = _one_of_alternatives(result.drafts)
    for dropped, kept in alternatives:
        review.append(
            (
                f"lines {_spans(dropped)}",
                f"the script tries this diff when the one at lines {_spans(kept)} does not "
                "apply: both make the same change from different bases, so only the first is "
                "a patch; if this patchset's image needs the other, swap them",
            )
        )
    packages = list(result.packages)
    for draft in result.drafts:
        extra: list[str] = []
        if isinstance(draft, DiffDraft) and draft.root == "":
            extra = [p.split("/")[0] for p in draft.paths if p.endswith(".py") and "/" in p]
        elif isinstance(draft, ReplaceDraft):
            extra = [f.split("/")[0] for f, *_ in draft.edits if f.endswith(".py") and "/" in f]
        for pkg in extra:
            if pkg not in packages:
                packages.append(pkg)
    targets = _Targets(packages)
    used: set[str] = set()
    entries: list[tuple[Draft, dict[str, Any]]] = []
    files: dict[str, bytes | Path] = {}
    name = _slug(out.resolve().name) or "imported"
    # the script's name may be bytes that are not UTF-8: the draft names it the way every
    # output names such a name (patchbay.printable)
    shown = Path(printable(str(script)))
    for draft in result.drafts:
        for item in _entries(draft, targets, used, files, len(entries), shown):
            entries.append((draft, item))
    # a rebuild runs after the file patches before it
    for n, (draft, item) in enumerate(entries):
        if isinstance(draft, CommandDraft):
            after = [
                e["id"] for _, e in entries[:n] if e["kind"] in ("diff", "replace", "artifact")
            ]
            if after:
                item["after"] = after
    kept = []
    for draft, item in entries:
        if isinstance(draft, CommandDraft) and not {"after", "output", "remove"} & set(item):
            unconverted.append(
                Outcome(
                    draft.first_line,
                    draft.first_line,
                    "unconverted",
                    "a rebuild step with no earlier patch to follow, no output to check and "
                    "nothing to remove",
                    hint="give it an `output`, or drop it",
                )
            )
            continue
        kept.append((draft, item))
    entries = kept
    if not targets.specs and not entries and packages:
        targets.get(packages[0], None)  # nothing converted: the package the script names
    review.append(
        (
            "`components` and `base`",
            "the script does not say which image it expects: declare the engine distributions "
            "and the base guard (see the comment in patchset.yaml)",
        )
    )
    for draft, item in entries:
        for note in draft.notes:
            review.append((f"`{item['id']}` (lines {_spans(draft)})", note))
        for form in draft.unknown_refs:
            review.append(
                (
                    f"`{item['id']}` (lines {_spans(draft)})",
                    f"a comment mentions `{form}`, a project the importer does not know: pass "
                    "`--project NAME=OWNER/REPO` and import again, or add the reference by hand",
                )
            )
    for folder in targets.guessed:
        review.append(
            (
                "targets",
                f"no package of the script owns `{folder}`; the importer guessed its package",
            )
        )
    for outcome in result.outcomes:
        if outcome.kind == "review":
            review.append((f"lines {outcome.start}-{outcome.end}", outcome.text))
    yaml_text = _patchset_yaml(result, shown, name, targets, entries)
    todo, invalid = _blanks_to_fill(yaml_text, out / "patchset.yaml")
    if invalid:
        review.append(("patchset.yaml", f"the draft does not validate: {invalid}"))
    notes = redact(
        printable(_notes(result, script, entries, unconverted, review, todo)), extra=_SECRETS
    )  # a token the script spelled out is not copied into the notes either
    _write(out, yaml_text, notes, files, force)
    drafts = [draft for draft, _ in entries]
    return ImportResult(out, drafts, unconverted, review, todo)


TODO_URL = "https://TODO.invalid"
"""The blank of an artifact's URL no statement gave (an observed import): a reserved name that
can never resolve, so the artifact stays NOT LOCKED until it is filled."""


def _entries(
    draft: Draft,
    targets: _Targets,
    used: set[str],
    files: dict[str, bytes | Path],
    index: int,
    script: Path,
) -> list[dict[str, Any]]:
    if isinstance(draft, ReplaceDraft):
        groups: dict[str, list[dict[str, Any]]] = {}
        for rel, old, new, _count in draft.edits:
            target, path = targets.for_file(rel)
            groups.setdefault(target, []).append({"file": path, "old": old, "new": new})
        out = []
        for target, edits in groups.items():
            pid = _pick_id(draft, used)
            item = _common(draft, pid, "replace", script)
            item["target"] = target
            _upstream(item, draft)
            item["edits"] = edits
            out.append(item)
        draft.id = out[0]["id"]
        return out
    pid = _pick_id(draft, used)
    draft.id = pid
    item = _common(draft, pid, draft.kind, script)
    if isinstance(draft, DiffDraft):
        item["target"] = targets.for_dir(draft.root, draft.paths)
        _upstream(item, draft)
        if draft.source is not None:
            repo, pr, commit = draft.source
            item["source"] = {
                "repo": repo,
                **({"pr": pr} if pr is not None else {"commit": commit}),
            }
        elif draft.copied_from is not None:
            rel = f"{PATCHES_DIR}/{draft.copied_from.name}"
            if rel in files and files[rel] != draft.copied_from:
                rel = f"{PATCHES_DIR}/{index + 1:02d}-{draft.copied_from.name}"
            files[rel] = draft.copied_from
            item["file"] = rel
        else:
            rel = f"{PATCHES_DIR}/{index + 1:02d}-{pid}.patch"
            files[rel] = draft.content
            item["file"] = rel
        if draft.strip != 1:
            item["strip"] = draft.strip
    elif isinstance(draft, PipDraft):
        _upstream(item, draft)
        item["requirement"] = draft.requirement
        if draft.index_url:
            item["index_url"] = _no_secret(draft.index_url, draft)
        if draft.extra_index_urls:
            item["extra_index_urls"] = [_no_secret(u, draft) for u in draft.extra_index_urls]
        if draft.find_links:
            item["find_links"] = [_no_secret(u, draft) for u in draft.find_links]
        if draft.no_index:
            item["no_index"] = True
        if draft.no_deps:
            item["no_deps"] = True
        if draft.no_build_isolation:
            item["no_build_isolation"] = True
        if draft.build_env:
            item["build_env"] = dict(draft.build_env)
    elif isinstance(draft, ArtifactDraft):
        placed = [targets.for_file(dest) for _, dest in draft.files]
        target = placed[0][0]
        if any(t != target for t, _ in placed):
            target = targets.get(targets.owner(""), None)
            placed = [(target, dest) for _, dest in draft.files]
        item["target"] = target
        _upstream(item, draft)
        item["files"] = []
        for (url, rel), (_, dest) in zip(draft.files, placed, strict=True):
            seen = draft.hashes.get(rel) or None
            blank = f"{TODO_URL}/{posixpath.basename(rel)}"
            shown = _no_secret(url, draft) if url else blank
            entry: dict[str, Any] = {"url": shown, "dest": dest, "sha256": seen}
            if url.startswith("http://"):
                entry["insecure_http"] = True
            item["files"].append(entry)
    elif isinstance(draft, CommandDraft):
        target = targets.get(targets.owner(""), None)
        item["target"] = target
        _upstream(item, draft, inappropriate="a rebuild step of the environment, not a code change")
        item["argv"] = list(draft.argv)
        if draft.remove:
            item["remove"] = list(draft.remove)
        if draft.output:
            item["output"] = draft.output
        if draft.env:  # a credential is passed through from apply's environment, never copied
            item["env"] = {k: (None if is_credential(k, v) else v) for k, v in draft.env.items()}
        if draft.cwd:
            item["cwd"] = draft.cwd
    return [item]


def _no_secret(url: str, draft: Draft) -> str:
    """``url`` without the credential the script spelled out: a ``${NAME}`` reference
    (:func:`patchbay.envrefs.reference_for`), with a note saying which variable to set; the
    secret itself is kept aside so that the notes never show it (:data:`_SECRETS`)."""
    from ..envrefs import reference_for

    safe, name = reference_for(url)
    if name is not None:
        info = url.split("://", 1)[1].split("@", 1)[0]
        _SECRETS.append(info.partition(":")[2] or info)
        draft.notes.append(
            f"the script had a credential in {safe.replace('${' + name + '}', '***')}: the "
            f"patch names ${{{name}}} instead; set {name} where `patchbay apply` runs"
        )
    return safe


_SECRETS: list[str] = []
"""Credentials taken out of the draft's URLs in this run (redacted from the notes)."""


def _common(draft: Draft, pid: str, kind: str, script: Path) -> dict[str, Any]:
    text = " ".join(draft.comments).strip()
    description = text or (
        f"TODO: say what this patch does and why (imported from {script.name} line "
        f"{draft.first_line})"
    )
    return {"id": pid, "kind": kind, "description": description}


def _upstream(item: dict[str, Any], draft: Draft, *, inappropriate: str | None = None) -> None:
    refs = list(draft.refs)
    if isinstance(draft, DiffDraft) and draft.source is not None:
        repo, pr, commit = draft.source
        ref = f"{repo}#{pr}" if pr is not None else f"{repo}@{commit}"
        if ref not in refs:
            refs.insert(0, ref)
    if refs:
        item["upstream"] = refs
    elif inappropriate:
        item["upstream_status"] = {"status": "Inappropriate", "reason": inappropriate}
    else:
        item["upstream_status"] = {
            "status": "Pending",
            "reason": "TODO: no upstream reference in the script; link the upstream PR or "
            "commit, or give the real status and why",
        }


def _patchset_yaml(
    result: WalkResult,
    script: Path,
    name: str,
    targets: _Targets,
    entries: list[tuple[Draft, dict[str, Any]]],
) -> str:
    out = [
        f"# Draft imported by `patchbay import` from {script.name}: fill in every TODO and read",
        f"# {NOTES_NAME} (what was not converted, what to check) before using it.",
        "# Then: `patchbay validate`, `patchbay vendor` (locks the downloads), and",
        "# `patchbay status --python <engine python>`.",
    ]
    description = f"Imported from {script.name}."
    if result.header:
        description += f" {result.header}"
    head = {
        "schema": 1,
        "name": name,
        "description": description,
        "image": {"reference": "TODO: the image this script patches (registry/name:tag)"},
    }
    out.append(_dump(head).rstrip("\n"))
    out.append(
        "# TODO: `components` (the engine distributions and their upstream repositories) and"
    )
    out.append("# `base` (distribution versions, pristine file hashes): the script does not say")
    out.append("# which image it expects.")
    out.append(_dump({"targets": targets.specs}).rstrip("\n"))
    out.append("patches:" if entries else "patches: []")
    for draft, item in entries:
        out.append(f"  # {script.name} line(s) {_spans(draft)}")
        first = {k: item[k] for k in _KEY_ORDER if k in item}
        body = _dump([{**first, **{k: v for k, v in item.items() if k not in first}}])
        lines = []
        for line in body.splitlines():
            if line.rstrip().endswith("sha256: null"):
                line += "  # NOT LOCKED: `patchbay vendor` records it in patchbay.lock"
            lines.append(line)
        out.append(_indent("\n".join(lines), "  ").rstrip("\n"))
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    text = text.replace("\n", " ").replace("|", "\\|").replace("`", "'")
    return text if len(text) <= 70 else text[:67] + "..."


def _notes(
    result: WalkResult,
    script: Path,
    entries: list[tuple[Draft, dict[str, Any]]],
    unconverted: list[Outcome],
    review: list[tuple[str, str]],
    todo: list[str],
) -> str:
    lines_of = script.read_text(encoding="utf-8", errors="replace").split("\n")
    status = (
        f"**partial**: {len(unconverted)} part(s) of the script were not converted, and the "
        "patchset does not do what they did"
        if unconverted
        else "**complete**: every command of the script was converted, or needs nothing"
    )
    out = [
        f"# Import notes: {script.name}",
        "",
        f"`patchbay import` read `{script}` ({len(lines_of)} lines) and wrote "
        f"{len(entries)} patch(es). The import is {status}.",
        "",
        f"## Not converted ({len(unconverted)})",
        "",
    ]
    if not unconverted:
        out += ["Nothing.", ""]
    for o in unconverted:
        where = f"line {o.start}" if o.start == o.end else f"lines {o.start}-{o.end}"
        via = f" (in a function called at line {o.via})" if o.via else ""
        out.append(f"### {where}{via}: {o.text}")
        out.append("")
        excerpt = lines_of[o.start - 1 : o.end]
        runs = [len(m) for line in excerpt for m in re.findall(r"`+", line)]
        fence = "`" * max(3, max(runs, default=0) + 1)  # a fence no excerpt line can close
        out.append(f"{fence}sh")
        out.extend(excerpt)
        out.append(fence)
        if o.hint:
            out += ["", f"What to do: {o.hint}."]
        out.append("")
    out += [f"## To check ({len(review)})", ""]
    out += [f"- {where}: {text}" for where, text in review] or ["Nothing."]
    for remark in result.remarks:
        out.append(f"- {remark}")
    out += ["", f"## Blanks to fill in patchset.yaml ({len(todo)})", ""]
    out += [f"- {t}" for t in todo]
    out += ["", "## Every command of the script", ""]
    out += ["| lines | command | became |", "|---|---|---|"]
    for row in result.rows:
        first = lines_of[row.start - 1].strip() if row.start <= len(lines_of) else ""
        where = str(row.start) if row.start == row.end else f"{row.start}-{row.end}"
        out.append(f"| {where} | `{_cell(first)}` | {_cell(_became(row.outcomes))} |")
    out.append("")
    return "\n".join(out)


def _became(outcomes: list[Outcome]) -> str:
    ids: list[str] = []
    for o in outcomes:
        if o.kind == "converted" and o.draft is not None and o.draft.id and o.draft.id not in ids:
            ids.append(o.draft.id)
    parts = []
    if ids:
        parts.append("patch " + ", ".join(ids))
    missing = [o for o in outcomes if o.kind == "unconverted"]
    if missing:
        parts.append(f"NOT CONVERTED ({missing[0].text})")
    if not parts:
        consumed = [o.text for o in outcomes if o.kind == "consumed"]
        parts.append(consumed[0] if consumed else "nothing to import")
    return "; ".join(parts)


def _write(
    out: Path, yaml_text: str, notes: str, files: dict[str, bytes | Path], force: bool
) -> None:
    """Write the draft's files into ``out``; a folder this call made is removed again when
    a write fails.

    Raises:
        InputError: ``out`` cannot be written (``/proc/x``, no permission, a full disk).
    """
    made = not out.exists()
    try:
        _write_files(out, yaml_text, notes, files, force)
    except OSError as exc:
        if made:
            shutil.rmtree(out, ignore_errors=True)
        raise InputError(f"--out cannot be written: {exc.strerror or exc}", file=out) from None


def _write_files(
    out: Path, yaml_text: str, notes: str, files: dict[str, bytes | Path], force: bool
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if force and (out / PATCHES_DIR).is_dir():
        shutil.rmtree(out / PATCHES_DIR)
    for rel, content in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, path)
        else:
            path.write_bytes(content)
    (out / "patchset.yaml").write_text(yaml_text, encoding="utf-8")
    (out / NOTES_NAME).write_text(notes, encoding="utf-8")
