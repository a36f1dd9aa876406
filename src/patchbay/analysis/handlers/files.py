"""Handlers of file changes: in-place edits (``sed -i``, ``perl -i``, ``awk -i inplace``),
copies (``cp``, ``mv``, ``install``, ``ln``, ``rsync``, ``tee``, ``tar``, ``unzip``), downloads
(``curl``, ``wget``; a temporary name moved into place), removals (``rm``, ``find -delete``,
``find -exec``, ``xargs``) and builds (``make``)."""

from __future__ import annotations

import posixpath
import re

from ..commands import (
    _HOOKS,
    _TEMP_SUFFIXES,
    _engine_evidence,
    _read,
    _written_arg,
    handles,
    run_command,
    split_options,
    write_file,
)
from ..engines import is_bytecode
from ..model import Mechanism, Target
from ..values import Val, join
from ..walk import Cmd, FileInfo, Stream, Walker
from .diffs import mark_built
from .shell import cmd_filter

# ---------------------------------------------------------------------------- in-place edits


_S_COMMAND = re.compile(r"^s(.)(.*?)(?<!\\)\1(.*?)(?<!\\)\1([gI0-9]*)$", re.S)


def sed_edits(program: str) -> list[tuple[str, str]]:
    """Literal ``(old, new)`` pairs of a ``sed`` program made only of ``s/old/new/`` commands
    without regular-expression characters; empty when anything else is in it."""
    out = []
    for part in program.split(";"):
        part = part.strip()
        m = _S_COMMAND.match(part)
        if not m:
            return []
        old, new = m.group(2), m.group(3)
        if re.search(r"[\\.*\[\]^$+?(){}|]", old) or re.search(r"[\\&]", new):
            return []
        out.append((old, new))
    return out


@handles("sed")
def cmd_sed(w: Walker, cmd: Cmd) -> Stream | None:
    args = cmd.args
    in_place = any(
        a.startswith("--in-place")
        or (re.match(r"^-[a-zA-Z]*i", a) is not None and not a.startswith("--"))
        for a in args
    )
    if not in_place:
        return cmd_filter(w, cmd)
    positional, options, _ = split_options(cmd.words, {"-e", "--expression", "-f", "--file", "-l"})
    program = options.get("-e") or options.get("--expression")
    files = positional if (program is not None or "-f" in options) else positional[1:]
    if program is None and positional:
        program = positional[0]
    edit_files(
        w,
        cmd,
        "sed -i",
        files,
        program.text if program else "",
        sed_edits(program.text) if program else [],
    )
    return None


def edit_files(
    w: Walker, cmd: Cmd, tool: str, files: list[Val], program: str, edits: list[tuple[str, str]]
) -> None:
    for f in files:
        written = _written_arg(cmd, f) or f.display()
        target = w.target(f, written=written)
        if target.root == "none":
            continue
        evidence = _engine_evidence(w, f.text, None) or f.unknown.startswith("argument")
        if target.root == "unknown" and w.live and not evidence:
            continue
        w.emit(Mechanism.EDIT, tool, cmd, target, content=program, edits=list(edits))


@handles("perl")
def cmd_perl(w: Walker, cmd: Cmd) -> Stream | None:
    args = cmd.args
    if not any(re.match(r"^-[a-zA-Z]*i", a) for a in args):
        return None
    positional: list[Val] = []
    program = ""
    script_given = False
    k = 0
    while k < len(cmd.words):
        a = cmd.words[k].text
        k += 1
        if a == "--":
            positional.extend(cmd.words[k:])
            break
        if not a.startswith("-") or a == "-":
            positional.append(cmd.words[k - 1])
            continue
        for n, ch in enumerate(a[1:], start=2):
            if ch == "i":
                break
            if ch in "eEMI":
                if ch in "eE":
                    script_given = True
                    program = (
                        a[n:] if n < len(a) else (cmd.words[k].text if k < len(cmd.words) else "")
                    )
                if n == len(a) and k < len(cmd.words):
                    k += 1
                break
    files = positional if script_given else positional[1:]
    edit_files(w, cmd, "perl -i", files, program, [])
    return None


@handles("awk", "gawk")
def cmd_awk(w: Walker, cmd: Cmd) -> Stream | None:
    if any("inplace" in a for a in cmd.args):
        return cmd_awk_inplace(w, cmd)
    return cmd_filter(w, cmd)


def cmd_awk_inplace(w: Walker, cmd: Cmd) -> Stream | None:
    positional, _, _ = split_options(cmd.words, {"-i", "--include", "-v", "-f", "-F"})
    edit_files(
        w, cmd, "awk -i inplace", positional[1:], positional[0].text if positional else "", []
    )
    return None


# ---------------------------------------------------------------------------- copies, downloads


def _copy_like(w: Walker, cmd: Cmd, with_value: set[str]) -> None:
    positional, options, flags = split_options(cmd.words, with_value)
    dest = options.get("-t") or options.get("--target-directory")
    sources = positional
    if dest is None:
        if len(positional) < 2 and not (cmd.name == "install" and positional):
            return
        dest, sources = positional[-1], positional[:-1]
    for src in sources:
        base = posixpath.basename(src.text.rstrip("/"))
        final = dest
        into = (
            dest.text.endswith("/") or base in _HOOKS or base.endswith(".pth") or len(sources) > 1
        )
        if into and not dest.text.endswith((".py", ".pth", ".so", ".co")):
            final = Val(dest.text.rstrip("/") + "/" + base, dest.how, dest.unknown)
        target = w.target(final, written=_written_arg(cmd, dest) or dest.display())
        if target.root == "none":
            info = w.files.get(src.text)
            if info is None:  # a checked-in file copied somewhere (a hook into a temp folder)
                repo = w.repo_file(src)
                text = _read(w, repo) if repo is not None else None
                if text is not None:
                    info = FileInfo("repo", text, source=src.display(), line=cmd.line)
            if info is not None:
                w.files[final.text] = info
            if cmd.name == "mv":
                w.files.pop(src.text, None)
            continue
        if target.root == "unknown" and not _engine_evidence(w, final.text, None):
            continue
        if base in _HOOKS or (base.endswith(".pth")):
            w.emit(Mechanism.INJECT, cmd.name, cmd, target, content=src.display())
            continue
        info = w.files.get(src.text)
        if info is None and cmd.name == "mv":
            info = w.pending.get(src.text)
        if info is not None and info.kind == "download" and info.url:
            w.emit(Mechanism.DOWNLOAD, f"{cmd.name} of a download", cmd, target, url=info.url,
                   details={"downloaded_at": info.line})  # fmt: skip
            continue
        tool = "ln" if cmd.name == "ln" else cmd.name
        mechanism = Mechanism.COPY
        content = info.text if info is not None else None
        facts: dict[str, object] = {"source": src.display()}
        repo = w.repo_file(src)
        if repo is not None and w.root is not None:
            facts["repo_file"] = repo.relative_to(w.root.resolve()).as_posix()
        if _is_backup_restore(src):
            facts["restore"] = True
        w.emit(mechanism, tool, cmd, target, content=content, details=facts)
        if "-r" in flags or "-a" in flags or "-R" in flags:
            pass


def _is_backup_restore(src: Val) -> bool:
    return src.text.endswith((".orig", ".bak"))


@handles("cp")
def cmd_cp(w: Walker, cmd: Cmd) -> Stream | None:
    _copy_like(w, cmd, {"-t", "--target-directory", "-S", "--suffix"})
    return None


@handles("mv")
def cmd_mv(w: Walker, cmd: Cmd) -> Stream | None:
    _copy_like(w, cmd, {"-t", "--target-directory", "-S", "--suffix"})
    return None


@handles("install")
def cmd_install(w: Walker, cmd: Cmd) -> Stream | None:
    if cmd.words and cmd.words[0].text == "-d":
        return None
    _copy_like(w, cmd, {"-t", "-m", "-o", "-g", "-S", "--mode"})
    return None


@handles("ln")
def cmd_ln(w: Walker, cmd: Cmd) -> Stream | None:
    _copy_like(w, cmd, {"-t", "--target-directory", "-S"})
    return None


@handles("rsync")
def cmd_rsync(w: Walker, cmd: Cmd) -> Stream | None:
    _copy_like(w, cmd, {"-e", "--rsh", "--exclude", "--include"})
    return None


@handles("tee")
def cmd_tee(w: Walker, cmd: Cmd) -> Stream | None:
    for f in cmd.words:
        if not f.text.startswith("-"):
            write_file(w, cmd, f, ">>" if "-a" in cmd.args else ">")
    return None


@handles("tar")
def cmd_tar(w: Walker, cmd: Cmd) -> Stream | None:
    args = cmd.args
    first = args[0] if args else ""
    extract = any(
        a == "--extract" or (a.startswith("-") and not a.startswith("--") and "x" in a)
        for a in args
    )
    extract = extract or (bool(first) and not first.startswith("-") and "x" in first)
    if not extract:
        return None
    _, options, _ = split_options(cmd.words, {"-C", "--directory", "-f", "--file"})
    dest = options.get("-C") or options.get("--directory") or w.state.cwd
    if dest is None:
        return None
    target = w.target(
        dest, written=(options.get("-C") or options.get("--directory") or dest).display()
    )
    if target.root in ("site-packages", "engine-tree"):
        w.emit(Mechanism.COPY, "tar -x", cmd, target)
    return None


@handles("unzip")
def cmd_unzip(w: Walker, cmd: Cmd) -> Stream | None:
    _, options, _ = split_options(cmd.words, {"-d"})
    dest = options.get("-d") or w.state.cwd
    if dest is not None:
        target = w.target(dest)
        if target.root in ("site-packages", "engine-tree"):
            w.emit(Mechanism.COPY, "unzip", cmd, target)
    return None


def _urls(words: list[Val]) -> list[Val]:
    return [
        x
        for x in words
        if re.match(r"^(?:https?|ftp)://", x.text) or (x.unknown and "URL" in x.text.upper())
    ]


@handles("curl")
def cmd_curl(w: Walker, cmd: Cmd) -> Stream | None:
    positional, options, flags = split_options(
        cmd.words,
        {"-o", "--output", "--output-dir", "-H", "-d", "-X", "-u", "-A", "-e", "--header", "--data",
         "--retry", "--retry-delay", "--max-time", "-m", "--connect-timeout", "-w", "--write-out",
         "--cacert", "-T", "--upload-file", "--data-binary"},
    )  # fmt: skip
    urls = _urls(positional) or positional[:1]
    url = urls[0] if urls else None
    dest = options.get("-o") or options.get("--output")
    if dest is None and ("-O" in flags or "--remote-name" in flags) and url is not None:
        base = Val(posixpath.basename(url.text.split("?")[0]))
        folder = options.get("--output-dir") or w.state.cwd
        dest = join(folder, base) if folder is not None else base
    return download(w, cmd, "curl -o", url, dest)


@handles("wget")
def cmd_wget(w: Walker, cmd: Cmd) -> Stream | None:
    positional, options, _ = split_options(
        cmd.words,
        {
            "-O",
            "--output-document",
            "-P",
            "--directory-prefix",
            "--header",
            "-t",
            "--tries",
            "-T",
            "--timeout",
        },
    )
    url = (_urls(positional) or positional[:1] or [None])[0]
    dest = options.get("-O") or options.get("--output-document")
    for k, word in enumerate(cmd.words):  # a cluster: `-qO-`, `-qO FILE`
        m = re.fullmatch(r"-[a-zA-Z]+O(.*)", word.text)
        if m and dest is None:
            rest = m.group(1)
            dest = Val(rest) if rest else (cmd.words[k + 1] if k + 1 < len(cmd.words) else None)
    if dest is not None and dest.text == "-":
        return download(w, cmd, "wget -O", url, None)
    if dest is None and url is not None:
        folder = options.get("-P") or options.get("--directory-prefix") or w.state.cwd
        base = Val(posixpath.basename(url.text.split("?")[0]))
        dest = join(folder, base) if folder is not None else base
    return download(w, cmd, "wget -O", url, dest)


def download(w: Walker, cmd: Cmd, tool: str, url: Val | None, dest: Val | None) -> Stream | None:
    url_text = url.text if url is not None else None
    if dest is None:  # printed: `curl URL | git apply`
        info = FileInfo("download", None, url=url_text, line=cmd.line)
        return Stream(None, info)
    target = w.target(dest)
    if target.root == "none" or dest.text.endswith(_TEMP_SUFFIXES):
        info = FileInfo("download", None, url=url_text, line=cmd.line)
        if target.root == "none":
            w.files[dest.text] = info
        else:
            w.pending[dest.text] = info
        return None
    if target.root == "unknown" and not _engine_evidence(w, dest.text, None):
        return None
    mod = w.emit(Mechanism.DOWNLOAD, tool, cmd, target, url=url_text)
    if mod is not None and url is not None and not url.known:
        mod.resolved = False
        mod.why = f"the URL {url.display()} is not known before the script runs"
    return None


# ---------------------------------------------------------------------------- removals


@handles("rm")
def cmd_rm(w: Walker, cmd: Cmd) -> Stream | None:
    positional, _, _ = split_options(cmd.words, set())
    removed = []
    for f in positional:
        if is_bytecode(f.text) or f.text in w.pending:
            continue  # byte-code, or the script's own download to a temporary name
        target = w.target(f, written=_written_arg(cmd, f) or f.display())
        if target.root in ("site-packages", "engine-tree") and (
            target.site_relative != "" or target.root == "engine-tree"
        ):
            removed.append(target)
    if removed:
        mod = w.emit(
            Mechanism.REMOVE, "rm", cmd, removed[0], details={"paths": [t.path for t in removed]}
        )
        if mod is not None:
            w.last_removal = mod
    return None


@handles("find")
def cmd_find(w: Walker, cmd: Cmd) -> Stream | None:
    words = cmd.words
    roots: list[Val] = []
    k = 0
    while k < len(words) and not words[k].text.startswith(("-", "(", "!")):
        roots.append(words[k])
        k += 1
    roots = roots or [w.state.cwd or Val(".")]
    name: str | None = None
    found_type = None
    deletes = False
    execs: list[list[Val]] = []
    while k < len(words):
        a = words[k].text
        if a in ("-name", "-iname", "-path") and k + 1 < len(words):
            name = words[k + 1].text
            k += 1
        elif a == "-type" and k + 1 < len(words):
            found_type = words[k + 1].text
            k += 1
        elif a == "-delete":
            deletes = True
        elif a in ("-exec", "-execdir", "-ok", "-okdir"):
            j = k + 1
            while j < len(words) and words[j].text not in (";", "+", "\\;"):
                j += 1
            execs.append(words[k + 1 : j])
            k = j
        k += 1
    del found_type
    cache = name is not None and is_bytecode(name)
    for root in roots:
        found = Val(
            f"{root.text.rstrip('/')}/{name or '*'}",
            root.how or f"found by find under {root.display()}",
            root.unknown,
        )
        if deletes and not cache:
            target = w.target(
                found, written=f"{root.display()} -name {name}" if name else root.display()
            )
            if target.root in ("site-packages", "engine-tree"):
                mod = w.emit(Mechanism.REMOVE, "find -delete", cmd, target)
                if mod is not None:
                    w.last_removal = mod
        for sub in execs:
            if not sub:
                continue
            argv = [
                Val(x.text.replace("{}", found.text), found.how, found.unknown)
                if "{}" in x.text
                else x
                for x in sub
            ]
            inner = Cmd(
                argv[0].text.rsplit("/", 1)[-1],
                argv[1:],
                argv[0].text,
                {},
                [],
                None,
                cmd.line,
                cmd.end_line,
                cmd.text,
                cmd.node,
            )
            if inner.name == "rm" and cache:
                continue
            run_command(w, inner)
    if not roots:
        return None
    root = roots[0]
    if cache:
        return Stream(Val(f"{root.text.rstrip('/')}/{name}", root.how, root.unknown))
    return Stream(Val(f"{root.text.rstrip('/')}/{name or '*'}", root.how, root.unknown or ""))


@handles("xargs")
def cmd_xargs(w: Walker, cmd: Cmd) -> Stream | None:
    words = [x for x in cmd.words]
    while words and words[0].text.startswith("-"):
        flag = words.pop(0).text
        if flag in ("-I", "-n", "-P", "-d", "-L") and words:
            words.pop(0)
    if not words or cmd.stdin is None or cmd.stdin.value is None:
        return None
    item = cmd.stdin.value
    if is_bytecode(item.text):
        return None
    inner = Cmd(
        words[0].text.rsplit("/", 1)[-1],
        [*words[1:], item],
        words[0].text,
        {},
        [],
        None,
        cmd.line,
        cmd.end_line,
        cmd.text,
        cmd.node,
    )
    return run_command(w, inner)


# ---------------------------------------------------------------------------- builds


@handles("make", "cmake", "ninja")
def cmd_make(w: Walker, cmd: Cmd) -> Stream | None:
    folder = w.state.cwd
    for k, a in enumerate(cmd.args):
        if a in ("-C", "--build", "-B") and k + 1 < len(cmd.words):
            folder = join(folder, cmd.words[k + 1]) if folder is not None else cmd.words[k + 1]
    if folder is None:
        return None
    if mark_built(w, folder, cmd.line):
        return None
    engine = w.engine_folder(folder.text)
    target = w.target(folder)
    if engine is not None or target.root == "site-packages":
        w.emit(
            Mechanism.REBUILD,
            cmd.name,
            cmd,
            target
            if target.root != "none"
            else Target(
                folder.text, folder.display(), "engine-tree", engine, "an engine source tree"
            ),
        )
    return None
