"""Draft patches from the analyser's modifications (one function per mechanism).

Each function gets one :class:`~patchbay.analysis.Modification` (or the modifications of one
Python snippet, one unrolled loop) and either makes a draft (a ``converted`` outcome) or says
why it cannot (an ``unconverted`` outcome, with what to do). The rules are the import's: a diff
applied in site-packages becomes a ``diff`` patch; literal ``replace`` edits in Python become a
``replace`` patch; pinned ``pip install`` requirements become ``pip`` patches; downloads into the
engine become an ``artifact``; a rebuild after removing engine files becomes a ``command``.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..analysis import Mechanism, Modification
from ..analysis.values import display
from ..diff.parse import parse_diff
from ..errors import InputError
from .conversion import Context, Conversion
from .drafts import ArtifactDraft, CommandDraft, DiffDraft, PipDraft, ReplaceDraft
from .refs import github_source

_REPLACE_REMARK = (
    "Python `str.replace` changes every occurrence of the old text; a `replace` edit expects "
    "exactly `count` occurrences (default 1), and `patchbay status` shows a conflict when the "
    "file has another number."
)


def site_rel(path: str | None) -> str | None:
    """The path below site-packages (``vllm/envs.py``), or None."""
    if path is None:
        return None
    if path == "/@site":
        return ""
    if path.startswith("/@site/"):
        return posixpath.normpath(path[len("/@site/") :])
    m = re.search(r"/(?:site|dist)-packages(?:/|$)", path)
    if m is not None:
        return posixpath.normpath(path[m.end() :]) if path[m.end() :] else ""
    return None


# ---------------------------------------------------------------------------- diffs


def diff(c: Conversion, mod: Modification, ctx: Context) -> None:
    facts = mod.details
    tool = mod.tool
    label = str(facts.get("patch_file") or "standard input")
    if facts.get("reverse"):
        c.unconverted(
            mod,
            ctx,
            "reverse-applies a diff (takes a change out)",
            hint="revert is what `patchbay revert` does; drop it or make a diff of the result",
        )
        return
    if facts.get("runtime"):
        c.unconverted(
            mod,
            ctx,
            f"{tool} of {label}: the here-document <<{facts.get('delimiter')} is not quoted and "
            "expands values known only at run time",
            hint="quote the here-document delimiter (<<'EOF') or add the diff by hand",
        )
        return
    if mod.content is None:
        if mod.url:
            remote_diff(c, mod, ctx)
            return
        c.unconverted(
            mod,
            ctx,
            f"{tool} of {label}, a file the importer cannot find (a computed path, or not next "
            "to the script)",
            hint="add the diff to the patchset by hand",
        )
        return
    notes: list[str] = []
    content = mod.content.encode("utf-8", "surrogateescape")
    strip_text = str(facts.get("strip") or "")
    if strip_text.isdigit():
        strip = int(strip_text)
    elif tool.startswith("git"):
        strip = 1
    else:
        strip = 1 if re.search(rb"(?m)^--- a/", content) else 0
        notes.append(f"patch ran without -p; the importer chose strip level {strip}")
    for flag in ("fuzz",):
        if facts.get(flag):
            notes.append(
                f"the script allowed --fuzz={facts[flag]}; patchbay matches context exactly"
            )
    root = site_rel(mod.target.path if mod.target else None)  # `--directory` included
    try:
        parsed = parse_diff(
            content, source=Path(str(facts.get("file_name") or "diff")), strip=strip
        )
    except InputError as exc:
        c.unconverted(mod, ctx, f"{tool} of a diff that does not parse: {exc.reason}")
        return
    paths = [fp.path for fp in parsed.files]
    if root is None:
        tops = {p.split("/")[0] for p in paths}
        unknown = mod.target is None or mod.target.root == "unknown"
        if tops and tops <= set(c.packages) and unknown:
            root = ""
            notes.append(
                "where the script applies it is computed at run time; the target was inferred "
                "from the package names in the diff's paths"
            )
        else:
            where = "a folder computed at run time" if unknown else display(mod.target.path)  # type: ignore[union-attr]
            c.unconverted(
                mod,
                ctx,
                f"{tool} of {label} in {where}, which is not under the engine's site-packages",
                hint="only files under an installed package can be a patchbay target",
            )
            return
    key = (hashlib.sha256(content).hexdigest(), root, strip)
    if key in c.applied:
        first = c.applied[key]
        c.consumed(
            mod, ctx, f"applies the same diff again (first applied at line {first.first_line})"
        )
        return
    names = []
    if facts.get("delimiter"):
        names.append(str(facts["delimiter"]))
    if facts.get("file_name"):
        names.append(str(facts["file_name"]).rsplit(".", 1)[0])
    names.extend(posixpath.basename(p).rsplit(".", 1)[0] for p in paths[:1])
    repo_file = facts.get("repo_file")
    checked = (c.root / str(repo_file)) if repo_file else None
    spans: list[tuple[int, int]] = []
    comments: list[str] = []
    if facts.get("heredoc"):
        start, end = facts["heredoc"]  # type: ignore[misc]
        spans.append((start, end))
        comments = c.comments_of_line(start)
    draft = DiffDraft(
        spans=spans,
        comments=comments,
        names=names,
        content=content,
        root=root,
        strip=strip,
        paths=paths,
        copied_from=checked,
    )
    draft.notes.extend(notes)
    if facts.get("filtered"):
        draft.notes.append(f"the script preprocessed the patch file first (`{facts['filtered']}`)")
    if parsed.crlf_normalised:
        draft.notes.append("the diff has CRLF line endings")
    preamble = content.split(b"\n--- ", 1)[0].split(b"\ndiff --git ", 1)[0]
    for p in paths:
        top = p.split("/")[0]
        if p.endswith(".py") and root == "" and top not in c.packages:
            c.packages.append(top)
    for alt in mod.alternatives:
        if alt.content is not None and alt.content != mod.content:
            draft.notes.append(
                f"the script falls back to another change at line {alt.line} ({alt.tool}) when "
                "this one fails; the patchset has only this one"
            )
    c.applied[key] = draft
    what = "a diff" + (f" (checked-in {checked.name})" if checked else "")
    c.add(draft, mod, ctx, f"{what}, applied with {tool}", preamble.decode("utf-8", "replace"))


def remote_diff(c: Conversion, mod: Modification, ctx: Context) -> None:
    url = mod.url or ""
    source = github_source(url)
    root = site_rel(mod.target.path if mod.target else None)
    strip = str(mod.details.get("strip") or "1")
    if source is None or root is None or strip != "1" or "$" in url:
        c.unconverted(
            mod,
            ctx,
            f"{mod.tool} of a diff downloaded at run time from {url}",
            hint="download it once and add it as a diff, or declare an upstream `source`",
        )
        return
    repo, pr, commit = source
    ref = f"{repo}#{pr}" if pr is not None else f"{repo}@{commit}"
    key = (url, root, 1)
    if key in c.applied:
        c.consumed(mod, ctx, "applies the same downloaded diff again")
        return
    draft = DiffDraft(
        spans=[],
        names=[f"{repo.split('/')[-1]}-{pr or (commit or '')[:12]}"],
        root=root,
        strip=1,
        source=source,
    )
    draft.notes.append(
        f"the script downloaded {url} at every run; the patchset pins it with `source` (run "
        "`patchbay vendor` to fetch and lock it)"
    )
    c.applied[key] = draft
    c.add(draft, mod, ctx, f"an upstream diff ({ref}), applied with {mod.tool}", ref)


# ---------------------------------------------------------------------------- Python edits


def python_edits(c: Conversion, mods: list[Modification], ctx: Context) -> None:
    """The modifications of one Python snippet: one ``replace`` draft, or why not."""
    mod = mods[0]
    facts = mod.details
    reason = facts.get("not_understood")
    if reason and _helpers_only(str(facts.get("python") or ""), mods):
        helper_edits(c, mods, ctx)
        return
    if reason:
        c.unconverted(
            mod,
            ctx,
            f"Python the importer does not follow: {reason}",
            hint="rewrite it as `replace` edits with literal old and new text, or as a diff",
        )
        return
    strict = facts.get("strict")
    edits: list[tuple[str, str, str, int | None]] = []
    no_ops = False
    for fe in getattr(strict, "edits", []) or []:
        rel = site_rel(fe.file)
        if rel is None:
            c.unconverted(
                mod,
                ctx,
                f"Python edits {display(fe.file)}, which is not under the engine's site-packages",
            )
            return
        edits.extend((rel, old, new, count) for old, new, count in fe.edits if old != new)
        no_ops = no_ops or any(old == new for old, new, _ in fe.edits)
    if not edits:
        where = mod.target.written if mod.target else "a file"
        c.unconverted(
            mod,
            ctx,
            f"Python writes {where} into the engine install without literal replace() edits",
            hint="express the new content as a diff (a new file is a diff too)",
        )
        return
    stdin = facts.get("stdin")
    words = facts.get("words") or []
    inline = bool(words) and words[0] == "-c"
    delimiter = getattr(stdin, "delimiter", "") if stdin is not None else ""
    spans = []
    comments: list[str] = []
    if stdin is not None and not inline and getattr(stdin, "kind", "") == "heredoc":
        spans.append((stdin.line, stdin.end_line))
    draft = ReplaceDraft(
        spans=spans,
        comments=comments,
        names=[
            *([delimiter] if delimiter else []),
            posixpath.basename(edits[0][0]).rsplit(".", 1)[0] + "-edit",
        ],
        edits=edits,
    )
    for rel, old, new, count in edits:
        if old in new:
            draft.notes.append(
                f"in {rel}, the new text contains the old text, so the edit would still find its "
                "old text after applying: patchbay refuses such an edit as not idempotent; widen "
                "`old` to include what makes it unique, or make it a diff"
            )
        if count not in (None, 1):
            draft.notes.append(f"in {rel}, the script replaced only the first {count} occurrences")
    if no_ops:
        draft.notes.append("a replace() that changes nothing was left out")
    if getattr(strict, "unwritten", None):
        draft.notes.append("the snippet also edits text it never writes back: check the edits")
    c.remark(_REPLACE_REMARK)
    c.add(draft, mod, ctx, f"{len(edits)} literal replace edit(s) in Python")


def _helpers_only(code: str, mods: list[Modification]) -> bool:
    """Literal edits made through helper functions, with nothing the strict reader refuses
    besides the functions: no branch, no ``try``, no loop over computed values, every written
    file's edits known."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    if not any(isinstance(n, ast.FunctionDef) for n in tree.body):
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.Try, ast.While, ast.IfExp, ast.Lambda)):
            return False
        if isinstance(node, ast.For) and not isinstance(node.iter, (ast.List, ast.Tuple, ast.Name)):
            return False
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("sub", "subn"):
            return False
    return all(m.edits and all(old for old, _ in m.edits) for m in mods)


def helper_edits(c: Conversion, mods: list[Modification], ctx: Context) -> None:
    """A ``replace`` draft from edits the snippet makes through its helper functions."""
    edits: list[tuple[str, str, str, int | None]] = []
    for mod in mods:
        rel = site_rel(mod.target.path if mod.target else None)
        if rel is None:
            c.unconverted(mod, ctx, "Python edits a file that is not under the engine's "
                          "site-packages")  # fmt: skip
            return
        edits.extend((rel, old, new, None) for old, new in mod.edits if old != new)
    mod = mods[0]
    stdin = mod.details.get("stdin")
    spans = []
    if stdin is not None and getattr(stdin, "kind", "") == "heredoc":
        spans.append((stdin.line, stdin.end_line))
    draft = ReplaceDraft(
        spans=spans,
        names=[posixpath.basename(edits[0][0]).rsplit(".", 1)[0] + "-edit"],
        edits=edits,
    )
    draft.notes.append(
        "the snippet makes these edits through its own helper functions; the importer followed "
        "them with literal arguments: check the edits"
    )
    c.remark(_REPLACE_REMARK)
    c.add(draft, mod, ctx, f"{len(edits)} literal replace edit(s) in Python helper functions")
    for other in mods[1:]:
        c.record(other, ctx, "converted", "a literal replace edit (same snippet)", draft=draft)


# ---------------------------------------------------------------------------- pip


def _pinned(text: str) -> str | None:
    """A pinned PEP 508 requirement for a pip argument, or None."""
    if text.startswith("git+"):
        m = re.match(r"git\+(\S+?)@([0-9a-f]{40})(?:#egg=([\w.-]+))?$", text)
        if m is None or m.group(3) is None:
            return None
        return f"{m.group(3)} @ git+{m.group(1)}@{m.group(2)}"
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    if req.url:
        return text if re.match(r"git\+\S+@[0-9a-f]{40}$", req.url) else None
    return text if req.specifier else None


def _version_of(req: Requirement) -> str:
    for spec in req.specifier:
        if spec.operator in ("==", "==="):
            return spec.version
    if req.url:
        return req.url.rsplit("@", 1)[-1][:12]
    return "pin"


_REINSTALL = "the script passed {}; patchbay skips pip when the pin is already satisfied"
_PIP_NOTES = {"--force-reinstall": _REINSTALL, "-I": _REINSTALL, "--ignore-installed": _REINSTALL}
_PIP_QUIET = {
    "-q",
    "--quiet",
    "-qq",
    "-v",
    "--verbose",
    "--no-cache-dir",
    "--disable-pip-version-check",
    "--no-input",
    "-U",
    "--upgrade",
    "--pre",
    "--no-warn-script-location",
    "--no-warn-conflicts",
    "--break-system-packages",
    "--no-deps",
    "--no-build-isolation",
    "--system",
}


def index_options(options: dict[str, str], flags: list[str]) -> dict:
    """The :class:`~.drafts.PipDraft` fields a ``pip install``'s options and flags give (as
    :func:`patchbay.analysis.handlers.installs.split_install` reads them): ``index_url``,
    ``extra_index_urls``, ``find_links``, ``no_deps``, ``no_build_isolation``."""
    return {
        "index_url": options.get("-i") or options.get("--index-url"),
        "extra_index_urls": [u for u in [options.get("--extra-index-url")] if u],
        "find_links": [u for u in [options.get("-f") or options.get("--find-links")] if u],
        "no_deps": "--no-deps" in flags,
        "no_build_isolation": "--no-build-isolation" in flags,
    }


def pip(c: Conversion, mods: list[Modification], ctx: Context, engine: dict[int, bool]) -> None:
    """The requirements of one ``pip install``: a ``pip`` draft each, or why not."""
    facts = mods[0].details
    options: dict[str, str] = dict(facts.get("options") or {})  # type: ignore[arg-type]
    flags: list[str] = list(facts.get("flags") or [])  # type: ignore[arg-type]
    env: dict[str, str] = dict(facts.get("env") or {})  # type: ignore[arg-type]
    for key in ("-r", "--requirement", "-t", "--target", "--prefix", "--root"):
        if key in options:
            c.unconverted(
                mods[0],
                ctx,
                f"pip install {key} {options[key]}",
                hint="pin each package with its version (a `pip` patch per requirement)",
            )
            return
    if "--user" in flags:
        c.unconverted(
            mods[0],
            ctx,
            "pip install --user",
            hint="pin each package with its version (a `pip` patch per requirement)",
        )
        return
    notes: list[str] = []
    for flag in flags:
        if flag in _PIP_NOTES:
            notes.append(_PIP_NOTES[flag].format(flag))
        elif flag not in _PIP_QUIET and flag not in ("-e", "--editable"):
            notes.append(f"the script passed {flag}; the pin does not")
    for key in ("-c", "--constraint"):
        if key in options:
            notes.append(
                f"the script passed a constraints file ({options[key]}); the pin ignores it"
            )
    if "--trusted-host" in options:
        notes.append(
            f"the script trusted the host {options['--trusted-host']}; patchbay has no such option"
        )
    made: list[tuple[Modification, PipDraft]] = []
    for mod in mods:
        d = mod.details
        text = str(mod.content or "")
        if d.get("source") == "none":
            c.unconverted(mod, ctx, "pip install without a requirement the importer can read")
            continue
        if d.get("source") == "computed" or "$" in text:
            c.unconverted(mod, ctx, "pip install of a requirement computed at run time")
            continue
        if d.get("editable") or d.get("source") == "local":
            c.unconverted(
                mod,
                ctx,
                f"pip install {'-e ' if d.get('editable') else ''}{text}",
                hint="pin each package with its version (a `pip` patch per requirement)",
            )
            continue
        requirement = _pinned(text)
        if requirement is None:
            c.unconverted(
                mod,
                ctx,
                f"pip install {text}: not pinned to a version (or to a commit)",
                hint="give the version the image should have: name==version",
            )
            continue
        sources = index_options(options, flags)
        given = [sources["index_url"], *sources["extra_index_urls"], *sources["find_links"]]
        runtime = [v for v in given if v and computed_url(v)]
        if runtime:
            c.unconverted(
                mod,
                ctx,
                f"pip install {text} from {', '.join(runtime)}, computed at run time",
                hint="write the index URL or folder out and import again, or import with "
                "--observe (the run shows the value)",
            )
            continue
        req = Requirement(requirement)
        name = canonicalize_name(req.name)
        draft = PipDraft(
            spans=[],
            names=[f"{name}-{_version_of(req)}"],
            requirement=requirement,
            name=name,
            **sources,
            build_env={k: v for k, v in env.items() if "$" not in v},
        )
        draft.notes.extend(notes)
        one_package_source(draft)
        if not any(str(s.operator) in ("==", "===") for s in req.specifier) and not req.url:
            draft.notes.append(f"{requirement} is a range, not an exact pin")
        if not engine.get(id(mod), False):
            draft.harness = True
            draft.notes.append(
                f"{req.name} is not an engine package (a harness tool?); it was imported because "
                "it is pinned: consider installing it outside the engine's patchset"
            )
        made.append((mod, draft))
    if len(made) > 1:
        for _, d in made:
            others = ", ".join(o.requirement for _, o in made if o is not d)
            d.notes.append(
                f"the script installed it together with {others} in one pip run; the patchset "
                "pins each on its own"
            )
    for mod, d in made:
        key = (d.requirement, repr((d.index_url, d.extra_index_urls, d.find_links)))
        if key in c.pins:
            c.consumed(
                mod,
                ctx,
                f"installs {d.requirement} again (pinned at line {c.pins[key].first_line})",
            )
            continue
        c.pins[key] = d
        c.add(d, mod, ctx, f"a package pin ({d.requirement})")


# ---------------------------------------------------------------------------- files


# a shell expansion known only at run time: $(...), ${...}, $NAME, $1, $@, `...`; or a glob's *
_EXPANSION = re.compile(r"\$(?:\([^)]*\)|\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?])|`[^`]*`|\*")
_URL_USERINFO = re.compile(r"^[a-z][a-z0-9+.-]*://[^@/\s]+@", re.I)


def runtime_pattern(text: str, part: str, *, glob: bool = False) -> str:
    """A regular expression (its source) matching what ``text`` becomes once the shell expanded
    it: each expansion known only at run time (:data:`_EXPANSION`) stands for ``part``, and,
    with ``glob``, each ``*`` for any run of characters but ``/`` (a literal ``*`` otherwise)."""
    out, pos = [], 0
    for m in _EXPANSION.finditer(text):
        if m[0] == "*" and not glob:
            continue
        out.append(re.escape(text[pos : m.start()]))
        out.append("[^/]*" if m[0] == "*" else part)
        pos = m.end()
    out.append(re.escape(text[pos:]))
    return "".join(out)


def computed_url(url: str | None) -> bool:
    """A URL holding a shell variable or command substitution, known only at run time
    (``$DOWNLOADS/k.co``, ``${BASE}/x``, ``$(cat url.txt)``): no patch can name it as
    written. A ``${NAME}`` in the user information is not one: that is the credential
    reference a patchset may hold (:mod:`patchbay.envrefs`)."""
    if not url or ("$" not in url and "`" not in url):
        return False
    return any(m[0] != "*" for m in _EXPANSION.finditer(_URL_USERINFO.sub("", url)))


def url_pattern(url: str) -> re.Pattern[str]:
    """A pattern matching what ``url`` became once bash expanded it (each expansion stands for
    a run of characters that are neither space nor quote)."""
    return re.compile(runtime_pattern(url, "[^\\s'\"]+"))


def artifact(c: Conversion, mods: list[Modification], ctx: Context) -> None:
    """Downloads into the engine (those of one unrolled loop share one draft)."""
    files: list[tuple[str, str]] = []
    notes: list[str] = []
    for mod in mods:
        rel = site_rel(mod.target.path if mod.target else None)
        if computed_url(mod.url):
            c.unconverted(
                mod,
                ctx,
                "downloads from a URL computed at run time",
                hint="write the URL out, and import again",
            )
            return
        if rel is None or not mod.url:
            where = mod.target.written if mod.target else "a computed path"
            c.unconverted(
                mod,
                ctx,
                f"downloads {mod.url} to {where}, outside the engine's site-packages",
                hint="an artifact's destination must be under an installed package",
            )
            return
        if mod.url.startswith("http://"):
            notes.append(f"{mod.url} is plain http: marked `insecure_http: true`; prefer https")
        if (mod.url, rel) not in files:
            files.append((mod.url, rel))
    dests = [d for _, d in files]
    folder = posixpath.basename(posixpath.dirname(dests[0])) or "files"
    name = (
        f"download-{folder}"
        if len(files) > 1
        else "download-" + posixpath.basename(dests[0]).split(".")[0]
    )
    draft = ArtifactDraft(spans=[], names=[name], files=files, group=None)
    draft.notes.extend(notes)
    c.add(draft, mods[0], ctx, "a download into the engine")
    for mod in mods[1:]:
        c.record(mod, ctx, "converted", "a download into the engine (same loop)", draft=draft)


def rebuild(c: Conversion, mod: Modification, ctx: Context) -> None:
    """A rebuild after engine files were removed: a ``command`` draft with its ``remove``."""
    removal = c.removal
    c.removal = []
    words = [str(w) for w in mod.details.get("words") or []]
    argv = ["{python}", *words]
    code = mod.details.get("python")
    if words in ([], ["-"]) and isinstance(code, str) and code.strip():
        argv = ["{python}", "-c", code]  # the build here-document itself is the command
    elif any("/@" in a or "$" in a for a in argv[1:2]) or not words:
        c.removal = removal
        c.unconverted(
            mod,
            ctx,
            "a rebuild whose command line depends on paths computed at run time",
            hint="write the command with paths relative to the target, as a `command` patch",
        )
        return
    remove: list[str] = []
    spans: list[tuple[int, int]] = []
    comments: list[str] = []
    for rm_mod, rm_ctx, _row in removal:
        for path in rm_mod.details.get("paths") or [rm_mod.target.path if rm_mod.target else ""]:
            rel = site_rel(str(path))
            if rel and rel not in remove:
                remove.append(rel)
        spans.append((rm_mod.line, rm_mod.end_line))
        comments.extend(t for t in rm_ctx.comments if t not in comments)
    if not remove:
        for path in mod.details.get("remove") or []:
            rel = site_rel(str(path))
            if rel and rel not in remove:
                remove.append(rel)
    draft = CommandDraft(spans=spans, comments=comments, names=[], argv=argv, remove=remove)
    for rel in remove:
        if re.search(r"\.(so|pyd|hsaco|co)$", rel):
            draft.output = rel
            break
    stem = draft.output or (remove[0] if remove else "")
    draft.names.append("rebuild-" + posixpath.basename(stem).split(".")[0] if stem else "rebuild")
    draft.notes.append(
        "`after` lists every earlier file patch; keep only the ones this rebuild depends on"
    )
    c.add(draft, mod, ctx, "a rebuild step")
    for rm_mod, rm_ctx, row in removal:
        rel = site_rel(rm_mod.target.path if rm_mod.target else None)
        c.record(
            rm_mod, rm_ctx, "converted", f"removes {rel} before the rebuild", draft=draft, row=row
        )


def sed_replace(c: Conversion, mod: Modification, ctx: Context) -> bool:
    """``sed -i 's/OLD/NEW/'`` with literal text (no regular-expression character in OLD, no
    ``&`` or back-reference in NEW: :func:`patchbay.analysis.handlers.files.sed_edits`) of a
    file below site-packages: one ``replace`` draft. sed changes the first occurrence on every
    line (every one with ``g``); the edit expects exactly one occurrence in the file, and
    ``status`` says conflict when there are more: never a silent difference. False when the
    file's place is not known (the caller lists the statement as not converted)."""
    rel = site_rel(mod.target.path if mod.target else None)
    if not rel or re.search(r"[$*?`\[]", rel):  # a path known only at run time, or a glob
        return False
    edits = [(rel, old, new, None) for old, new in mod.edits if old and old != new]
    if not edits:
        return False
    base = posixpath.basename(rel).rsplit(".", 1)[0]
    draft = ReplaceDraft(spans=[], names=[f"{base}-edit"], edits=edits)
    draft.notes.append(
        "sed changed every line holding the old text; the `replace` edit expects it exactly "
        "once in the file (set `count` if it occurs more often)"
    )
    for _rel, old, new, _count in edits:
        if old in new:
            draft.notes.append(
                f"in {rel}, the new text contains the old text: widen `old` so that the edit "
                "is idempotent, or make it a diff"
            )
    c.add(draft, mod, ctx, f"{len(edits)} literal sed edit(s)")
    return True


def unconvertible(c: Conversion, mod: Modification, ctx: Context) -> None:
    """What the import never converts: in-place edits, whole-file writes, copies, clones,
    injection; said with the statement's own words."""
    m = mod.mechanism
    tool = mod.tool.split()[0]
    literal = m is Mechanism.EDIT and mod.tool == "sed -i" and bool(mod.edits)
    if literal and sed_replace(c, mod, ctx):
        return
    if m is Mechanism.EDIT:
        c.unconverted(
            mod,
            ctx,
            f"edits a file in place with {tool}",
            hint="rewrite it as a `replace` patch (literal old and new text) or a diff",
        )
    elif m is Mechanism.WRITE:
        raw = _redirect_target(mod.text) or (mod.target.written if mod.target else "a file")
        c.unconverted(
            mod,
            ctx,
            f"writes {raw} (a file of the engine install) with {tool}",
            hint="express the new content as a diff (a new file is a diff too)",
        )
    elif m is Mechanism.COPY:
        src = mod.details.get("source") or "a file"
        c.unconverted(
            mod,
            ctx,
            f"{tool} of {src} into the engine install",
            hint="a new file is a diff that creates it; a binary file can be an "
            "artifact served from a URL",
        )
    elif m is Mechanism.VCS:
        c.unconverted(
            mod,
            ctx,
            mod.tool,
            hint="a clone or checkout that is built later belongs in a `pip` pin of a commit",
        )
    elif m is Mechanism.INJECT:
        variable = mod.details.get("variable")
        if variable:
            c.unconverted(
                mod,
                ctx,
                f"adds {mod.content} to {variable}: code the engine picks up at run time",
                hint="make it a patch of the installed files, or set it "
                "where the engine is started",
            )
        else:
            where = mod.target.written if mod.target else "a start-up hook"
            c.unconverted(
                mod,
                ctx,
                f"writes {where}, a start-up hook that can monkey-patch the engine",
                hint="make it a patch of the installed files",
            )
    elif m is Mechanism.REMOVE:
        c.unconverted(mod, ctx, f"{mod.tool} removes files of the engine install")
    else:
        c.unconverted(mod, ctx, f"changes the engine ({mod.describe()})")


def _redirect_target(text: str) -> str | None:
    m = re.search(r">>?\s*(\"[^\"]*\"|'[^']*'|\S+)", text)
    return m.group(1) if m else None


def one_package_source(draft: PipDraft) -> None:
    """Give the pin one package source, as validation requires
    (:func:`patchbay.patchset.model.package_source_problem`): the script's extra index becomes
    the pin's only index, its links without an index the only source, each with a note (pip
    took the best match of them and the primary index, which the patch no longer consults)."""
    if draft.extra_index_urls:
        extra = draft.extra_index_urls
        if draft.index_url is None:
            draft.index_url, draft.extra_index_urls = extra[0], extra[1:]
        if draft.extra_index_urls:
            draft.notes.append(
                f"the script also named {', '.join(draft.extra_index_urls)} as an extra index; "
                "left out: pip takes the best match across indexes, so give one index"
            )
            draft.extra_index_urls = []
        draft.notes.append(
            f"the script's --extra-index-url {extra[0]}: pip took {draft.requirement} from "
            "whichever of it and the primary index (PyPI) matched best; the patch takes it from "
            f"{draft.index_url} only (index_url), so check its dependencies are there too, or "
            "pin with no_deps"
        )
    if draft.find_links and draft.index_url is None:
        draft.no_index = True
        draft.notes.append(
            f"the script's --find-links {draft.find_links[0]} next to the primary index: the "
            "patch installs from the links only (no_index), so a build of the same name on "
            "PyPI is never taken"
        )
