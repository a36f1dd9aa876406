"""Handlers of diffs and checkouts: ``git apply``/``am`` and ``patch`` (with the diff's
content: a here-document, a checked-in or downloaded file, a preprocessed copy), ``git clone``,
``git init`` + ``remote add`` + ``fetch`` + ``checkout`` (a fork branch), and builds of them."""

from __future__ import annotations

import posixpath
import re

from ..commands import (
    _SHA,
    _SHA40,
    _diff_files_engine,
    _read,
    diff_engine,
    handles,
    option_written,
    split_options,
)
from ..model import Mechanism, Target
from ..values import Val, dirname, join
from ..walk import Cmd, FileInfo, Stdin, Stream, Walker

# ---------------------------------------------------------------------------- diffs


def _diff_content(w: Walker, files: list[Val], stdin: Stdin | None) -> tuple[str | None, dict]:
    """The diff text (when known) and facts about where it comes from."""
    facts: dict[str, object] = {}
    if files:
        f = files[0]
        facts["patch_file"] = f.display()
        facts["file_name"] = posixpath.basename(f.text)
        info = w.files.get(f.text)
        if info is None:
            repo = w.repo_file(f)
            if repo is not None and w.root is not None:
                facts["repo_file"] = repo.relative_to(w.root.resolve()).as_posix()
                return _read(w, repo), facts
            return None, facts
        return _info_content(info, facts)
    if stdin is not None:
        if stdin.kind == "heredoc":
            facts["heredoc"] = (stdin.line, stdin.end_line)
            facts["quoted"] = stdin.quoted
            facts["delimiter"] = stdin.delimiter
            facts["runtime"] = stdin.runtime
            return stdin.text, facts
        if stdin.file is not None:
            if stdin.value is not None:
                facts["patch_file"] = stdin.value.display()
            return _info_content(stdin.file, facts)
        if stdin.value is not None:
            facts["patch_file"] = stdin.value.display()
            repo = w.repo_file(stdin.value)
            if repo is not None and w.root is not None:
                facts["repo_file"] = repo.relative_to(w.root.resolve()).as_posix()
                return _read(w, repo), facts
    return None, facts


def _info_content(info: FileInfo, facts: dict) -> tuple[str | None, dict]:
    if info.kind == "heredoc":
        facts["heredoc"] = (info.line, info.end_line)
        facts["quoted"] = info.quoted
        facts["delimiter"] = info.delimiter
        facts["runtime"] = info.runtime
    if info.url:
        facts["url"] = info.url
    if info.kind == "filtered":
        facts["filtered"] = info.note
        if info.source:
            facts["patch_file"] = info.source
    if info.kind == "repo" and info.source:
        facts["repo_file"] = info.source
    return info.text, facts


def emit_diff(
    w: Walker, cmd: Cmd, tool: str, folder: Val | None, files: list[Val], extra: dict
) -> None:
    content, facts = _diff_content(w, files, cmd.stdin)
    facts.update(extra)
    if folder is None:
        folder = w.state.cwd
    if folder is None:
        return  # the folder the script was started in: not known to be an engine's
    target = w.target(folder, written=extra.pop("written", None) or None)
    if target.root == "none":
        tree = w.engine_folder(folder.text)
        by_content = diff_engine(w, content) if tree is None and content else None
        if tree is not None:
            how = "an engine source tree"
        elif by_content is not None:  # `/opt/vllm-local`: its files are what the diff changes
            tree, how = (
                by_content[0],
                f"the diff changes {by_content[1]}, a file of {by_content[0]}",
            )
        else:
            return
        target = Target(folder.text, folder.display(), "engine-tree", tree, how)
    engine_files = content and _diff_files_engine(w, content)
    if target.root == "unknown" and not engine_files and w.live and not files and not cmd.stdin:
        return
    url = facts.get("url")
    w.emit(
        Mechanism.DIFF,
        tool,
        cmd,
        target,
        content=content,
        url=str(url) if url else None,
        details=facts,
    )


@handles("git")
def cmd_git(w: Walker, cmd: Cmd) -> Stream | None:
    folder = w.state.cwd
    folder_written = w.state.cwd_written
    words = list(cmd.words)
    while words and words[0].text.startswith("-"):
        flag = words.pop(0)
        if flag.text in ("-C", "-c", "--git-dir", "--work-tree") and words:
            value = words.pop(0)
            if flag.text == "-C":
                folder = join(folder, value) if folder is not None else value
                folder_written = value.display()
    if not words:
        return None
    sub, rest = words[0].text, words[1:]
    if sub in ("apply", "am"):
        positional, options, flags = split_options(
            rest, {"--directory", "-p", "--exclude", "--include", "-C", "--whitespace"}
        )
        if any(f in ("--check", "--stat", "--numstat", "--summary") for f in flags):
            return None
        tool = "git apply" if sub == "apply" else "git am"
        directory = options.get("--directory")
        if directory is not None:  # the patch's paths are taken below DIR (git-apply(1))
            folder = join(folder, directory) if folder is not None else directory
            folder_written = option_written(cmd, "--directory") or directory.display()
        extra: dict[str, object] = {"written": folder_written}
        if directory is not None:
            extra["directory"] = directory.text
        if "-p" in options:
            extra["strip"] = options["-p"].text
        if "-R" in flags or "--reverse" in flags:
            extra["reverse"] = True
        if "--3way" in flags or "-3" in flags:
            extra["threeway"] = True
        emit_diff(w, cmd, tool, folder, positional, extra)
    elif sub == "clone":
        git_clone(w, cmd, rest, folder)
    elif sub == "init":
        positional, _, _ = split_options(rest, {"-b", "--initial-branch"})
        where = (
            join(folder, positional[0])
            if positional and folder is not None
            else (positional[0] if positional else folder)
        )
        if where is not None:
            w.repos[where.text] = {"line": cmd.line}
    elif sub == "remote" and rest and rest[0].text == "add" and len(rest) >= 3:
        key = folder.text if folder is not None else "."
        w.repos.setdefault(key, {"line": cmd.line})["url"] = rest[2].text
    elif sub == "fetch":
        key = folder.text if folder is not None else "."
        repo = w.repos.get(key)
        positional, _, _ = split_options(rest, {"--depth", "-j", "--jobs"})
        url = repo.get("url") if repo else None
        if len(positional) >= 1 and positional[0].text.startswith(("http", "git@", "ssh:")):
            url = positional[0].text
        ref = positional[-1].text if len(positional) >= 2 else None
        name = _repo_name(str(url)) if url else None
        if name and w.engines.is_engine(name):
            engine = w.engines.package_of(name.replace("-", "_")) or name
            where = folder if folder is not None else Val(".")
            w.clones[where.text] = (engine, cmd.line)
            mod = w.emit(
                Mechanism.VCS,
                "git fetch",
                cmd,
                Target(
                    where.text,
                    folder_written or where.display(),
                    "engine-tree",
                    engine,
                    "a fetched checkout",
                ),
                url=str(url),
                ref=ref,
                pinned=bool(ref and _SHA40.match(ref)),
                details={"folder": where.text, "built_at": None},
            )
            if mod is not None:
                w.vcs.append(mod)
    elif sub in ("checkout", "reset", "switch"):
        positional, _, _ = split_options(rest, {"-b", "-B"})
        ref = positional[0].text if positional else ""
        key = folder.text if folder is not None else "."
        for mod in w.vcs:
            inside = key == mod.details.get("folder") or key.endswith(
                "/" + str(mod.details.get("folder", "")).rsplit("/", 1)[-1]
            )
            if inside or len(w.vcs) == 1:
                if _SHA.match(ref) or ref.startswith("$"):
                    mod.pinned = True
                    mod.ref = ref
                elif ref and ref != "FETCH_HEAD":
                    mod.ref = mod.ref or ref
    elif sub in ("cherry-pick", "merge", "pull") and folder is not None:
        engine = w.engine_folder(folder.text)
        if engine is not None:
            w.emit(
                Mechanism.DIFF,
                f"git {sub}",
                cmd,
                Target(
                    folder.text,
                    folder_written or folder.display(),
                    "engine-tree",
                    engine,
                    "an engine checkout",
                ),
                content=" ".join(a.text for a in rest),
            )
    return None


def _repo_name(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git").split("@")[0]


def _repo_of(url: str) -> tuple[str, str] | None:
    m = re.match(
        r"^(?:\w+://)?(?:[^@/]+@)?[^/:]+[/:]([\w.-]+)/([\w.-]+?)(?:\.git)?(?:[@/#?]|$)", url
    )
    return (m.group(1), m.group(2)) if m else None


def git_clone(w: Walker, cmd: Cmd, rest: list[Val], folder: Val | None) -> None:
    positional, options, _ = split_options(
        rest,
        {"-b", "--branch", "--depth", "-c", "--config", "--filter", "-o", "--origin",
         "--reference", "-j", "--jobs", "--revision", "--shallow-since"},
    )  # fmt: skip
    if not positional:
        return
    url = positional[0].text
    name = _repo_name(url)
    if not w.engines.is_engine(name):
        return
    dest = positional[1] if len(positional) > 1 else Val(name)
    where = join(folder, dest) if folder is not None else dest
    engine = name
    w.clones[where.text] = (engine, cmd.line)
    branch = options.get("-b") or options.get("--branch")
    revision = options.get("--revision")
    mod = w.emit(
        Mechanism.VCS,
        "git clone",
        cmd,
        Target(where.text, dest.display(), "engine-tree", engine, f"cloned at line {cmd.line}"),
        url=url,
        ref=(revision or branch).text if (revision or branch) else None,
        pinned=revision is not None,
        details={"folder": where.text, "built_at": None, "branch": branch.text if branch else None},
    )
    if mod is not None:
        w.vcs.append(mod)


def mark_built(w: Walker, folder: Val | None, line: int) -> bool:
    """A build or install of a folder this script cloned: the clone's modification records
    the line. True when the folder is such a clone."""
    if folder is None:
        return False
    for mod in w.vcs:
        f = str(mod.details.get("folder", ""))
        if folder.text.rstrip("/") == f.rstrip("/") or folder.text.startswith(f.rstrip("/") + "/"):
            if mod.details.get("built_at") is None:
                mod.details["built_at"] = line
            return True
    return False


@handles("patch")
def cmd_patch(w: Walker, cmd: Cmd) -> Stream | None:
    positional, options, flags = split_options(
        cmd.words,
        {"-d", "--directory", "-i", "--input", "-p", "-o", "--output", "-r", "-B", "-F",
         "--fuzz", "-V", "-z", "-D", "--strip"},
    )  # fmt: skip
    if "--dry-run" in flags or "-C" in flags or "--check" in flags:
        return None
    folder = w.state.cwd
    written = w.state.cwd_written
    directory = options.get("-d") or options.get("--directory")
    if directory is not None:
        folder = join(folder, directory) if folder is not None else directory
        written = directory.display()
    files = (
        [options.get("-i") or options["--input"]]
        if ("-i" in options or "--input" in options)
        else []
    )
    extra: dict[str, object] = {"written": written}
    if "-p" in options:
        extra["strip"] = options["-p"].text
    fuzz = options.get("-F") or options.get("--fuzz")
    if fuzz is not None:
        extra["fuzz"] = fuzz.text
    if "-R" in flags or "--reverse" in flags:
        extra["reverse"] = True
    if positional:
        # patch [ORIGINAL [PATCHFILE]]: the file patched, and the patch when given
        original = positional[0]
        target_folder = dirname(join(folder, original) if folder is not None else original)
        if len(positional) > 1:
            files = [positional[1]]
        t = w.target(
            join(folder, original) if folder is not None else original, written=original.display()
        )
        if t.root != "none":
            content, facts = _diff_content(w, files, cmd.stdin)
            facts.update({k: v for k, v in extra.items() if k != "written"})
            w.emit(Mechanism.DIFF, "patch", cmd, t, content=content, details=facts)
            return None
        folder = target_folder
    emit_diff(w, cmd, "patch", folder, files, extra)
    return None
