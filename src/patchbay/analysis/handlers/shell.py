"""Handlers of the shell's own commands and of the ones that print paths: ``cd``, ``set``,
``source``/``bash`` (followed), ``echo``/``cat`` (what they print feeds pipes and ``$(...)``),
``dirname``/``realpath``/``mktemp``, filters, ``docker exec``."""

from __future__ import annotations

import re
from dataclasses import replace

from ..budget import MAX_DEPTH
from ..commands import (
    _read,
    handles,
    run_command,
    written_args,
)
from ..values import POSITIONAL, Val, basename, dirname, join, unknown
from ..walk import Cmd, FileInfo, Stream, Walker

# ---------------------------------------------------------------------------- the shell itself


def _written_at(cmd: Cmd, index: int) -> str | None:
    args = written_args(cmd)
    return args[index] if index < len(args) else None


@handles("cd", "pushd")
def cmd_cd(w: Walker, cmd: Cmd) -> Stream | None:
    words = [a for a in cmd.words if a.text not in ("-P", "-L", "--")]
    if not words:
        w.state.cwd, w.state.cwd_written = Val("~"), "~"
        return None
    dest = words[0]
    if dest.text == "-":
        w.state.cwd, w.state.cwd_written = None, None
        return None
    w.moved = True
    new = join(w.state.cwd, dest) if w.state.cwd is not None else dest
    if not dest.text.startswith(("/", "~")) and w.state.cwd is None:
        new = dest if dest.unknown or dest.text.startswith("/@") else Val(dest.text)
    w.state.cwd = new
    w.state.cwd_written = _written_at(cmd, 0) or dest.display()
    return None


@handles("popd")
def cmd_popd(w: Walker, cmd: Cmd) -> Stream | None:
    w.state.cwd, w.state.cwd_written = None, None
    return None


@handles("set")
def cmd_set(w: Walker, cmd: Cmd) -> Stream | None:
    args = cmd.args
    for k, a in enumerate(args):
        if re.match(r"^-[a-zA-Z]*e", a) or (
            a == "-o" and k + 1 < len(args) and args[k + 1] == "errexit"
        ):
            w.state.set_e = True
        if re.match(r"^\+[a-zA-Z]*e", a):
            w.state.set_e = False
    return None


@handles("source", ".")
def cmd_source(w: Walker, cmd: Cmd) -> Stream | None:
    if cmd.words and not w.follow(cmd.words[0], cmd, fresh=False):
        w.result.notes.append((cmd.line, f"sources {cmd.words[0].display()}, not followed"))
        w.cannot_follow(cmd.words[0], cmd.line, "sources")
    return None


@handles("bash", "sh", "zsh", "dash", "ksh")
def cmd_bash(w: Walker, cmd: Cmd) -> Stream | None:
    from ..syntax import parse_shell

    args = cmd.args
    flags = [a for a in args if a.startswith("-")]
    if any("c" in f.lstrip("-") for f in flags if not f.startswith("--")):
        k = next(i for i, a in enumerate(args) if a.startswith("-") and "c" in a.lstrip("-"))
        if k + 1 < len(cmd.words):
            text = cmd.words[k + 1].text
            try:
                source = parse_shell(text, w.src.path, cmd.line - 1)
            except Exception:  # an inner string that is not shell: nothing to judge
                return None
            _inline(w, source, flatten_lines=cmd.line)
        return None
    positional = [wd for wd in cmd.words if not wd.text.startswith("-")]
    if positional:
        if not w.follow(
            positional[0],
            Cmd(cmd.name, positional, "", {}, [], None, cmd.line, cmd.line, cmd.text),
            fresh=True,
        ):
            w.result.notes.append((cmd.line, f"runs {positional[0].display()}, not followed"))
            w.cannot_follow(positional[0], cmd.line, f"{cmd.name} runs")
        return None
    if cmd.stdin is not None and cmd.stdin.kind == "heredoc" and cmd.stdin.text is not None:
        try:
            source = parse_shell(cmd.stdin.text, w.src.path, cmd.stdin.line)
        except Exception:
            return None
        _inline(w, source)
    elif cmd.stdin is not None and cmd.stdin.kind == "pipe":
        text = _stdin_text(cmd)
        if text is None:  # `curl -fsSL https://.../install.sh | bash`: code known at run time
            node = cmd.node.parent if cmd.node is not None else None
            whole = w.src.text(node) if node is not None and node.type == "pipeline" else cmd.text
            first = whole.split("|", 1)[0].split()
            source = first[0] if first else "the command before it"
            w.unresolved(cmd.line, whole, f"{cmd.name} runs what {source} prints at run time")
            return None
        try:  # `printf 'sed -i ...' | bash`: the printed text is the script
            source = parse_shell(text, w.src.path, cmd.line - 1)
        except Exception:
            return None
        _inline(w, source, flatten_lines=cmd.line)
    return None


def _stdin_text(cmd: Cmd) -> str | None:
    stdin = cmd.stdin
    if stdin is None:
        return None
    if stdin.text is not None:
        return stdin.text
    if stdin.file is not None:
        return stdin.file.text
    # what the command before the pipe printed (`printf '...' | bash`), when all of it is known
    return stdin.value.text if stdin.value is not None and stdin.value.known else None


@handles("shift")
def cmd_shift(w: Walker, cmd: Cmd) -> Stream | None:
    """``shift [N]``: the positional arguments lose their first N (1 by default); a count
    known only at run time leaves them unknown."""
    count = cmd.words[0].text if cmd.words else "1"
    if count.isdigit():
        w.state.args = list(w.state.args[int(count) :])
    else:
        w.state.args = [unknown(f"${k}", f"shift {count}") for k in range(1, 10)]
    return None


@handles("eval")
def cmd_eval(w: Walker, cmd: Cmd) -> Stream | None:
    """``eval WORDS``: the words joined by spaces are read again as shell and walked, at the
    line of the ``eval`` (as bash does: a part known only at run time stays as written and is
    expanded again; a command whose name is still unknown then is PB414). A string that is not
    shell the analyser can read is PB414 itself."""
    from ..syntax import parse_shell

    if not cmd.words:
        return None
    text = " ".join(word.text for word in cmd.words)
    if w.depth >= MAX_DEPTH:
        w.unresolved(cmd.line, cmd.text, "eval nests deeper than the analyser follows")
        return None
    try:
        source = parse_shell(text, w.src.path, cmd.line - 1)
    except Exception:  # a string that is not shell: what it runs cannot be judged
        w.unresolved(cmd.line, cmd.text, "the string is not shell the analyser can read")
        return None
    if source.root.has_error:
        why = next((word.unknown for word in cmd.words if word.unknown), "")
        w.unresolved(cmd.line, cmd.text, why or "the string is not shell the analyser can read")
        return None
    before, gaps = len(w.mods), len(w.result.unresolved)
    w.depth += 1
    try:
        _inline(w, source, flatten_lines=cmd.line)
    finally:
        w.depth -= 1
    for k in range(gaps, len(w.result.unresolved)):  # reached through the eval
        gap = w.result.unresolved[k]
        shown = cmd.text + (" ..." if cmd.end_line > cmd.line else "")
        if gap.what.startswith(("$(", "`")):  # `eval "$(python3 -c ...)"`
            gap = replace(gap, what=shown, why="the string is what a command prints when run")
        elif gap.what not in cmd.text:
            gap = replace(gap, what=f"{shown}, which {gap.what}")
        else:
            gap = replace(gap, what=shown)
        w.result.unresolved[k] = gap
    written = " ".join(cmd.text.split()[1:])
    frame = w.frames[-1]
    forwarded = frame.name is not None and frame.chain and POSITIONAL.search(written)
    for mod in w.mods[before:]:  # a path is written in the string's variables, not as shown
        if mod.target is not None and "/@" in mod.target.written:
            mod.target = replace(mod.target, written=f"{written}, run by eval")
        if forwarded:  # `wrap() { eval "$@"; }; wrap "sed -i ..."`: the call is the statement
            mod.line = mod.end_line = frame.line
            mod.chain = frame.chain
            mod.text = frame.text
    return None


def _inline(w: Walker, source: object, flatten_lines: int | None = None) -> None:
    saved = w.src
    before = len(w.mods)
    w.src = source  # type: ignore[assignment]
    try:
        w.block(source.root)  # type: ignore[attr-defined]
    finally:
        w.src = saved
    if flatten_lines is not None:
        for mod in w.mods[before:]:
            mod.line = mod.end_line = flatten_lines


@handles("echo", "printf")
def cmd_echo(w: Walker, cmd: Cmd) -> Stream | None:
    words = [a for a in cmd.words if not re.match(r"^-[neE]+$", a.text)]
    if cmd.name == "printf" and words and "%" in words[0].text:
        return Stream(_printf(words[0], words[1:]))
    if not words:
        return Stream(Val(""))
    out = words[0]
    for extra in words[1:]:
        out = out + Val(" ") + extra
    return Stream(out)


def _printf(fmt: Val, args: list[Val]) -> Val:
    """What ``printf FORMAT ARGS...`` prints: each ``%s``/``%d`` conversion takes the next
    argument (the format is reused while arguments are left, as printf(1) does), ``%%`` is
    ``%``; a conversion with no argument left prints nothing. An unknown argument keeps its
    written form and makes the whole value unknown."""
    pieces = re.split(r"(%%|%[-+ #0-9.]*[sdbiuxXoqfgec])", fmt.text)
    out = Val("")
    k = 0
    while True:
        for piece in pieces:
            if piece == "%%":
                out = out + Val("%")
            elif piece.startswith("%") and len(piece) > 1:
                if k < len(args):
                    out = out + args[k]
                k += 1
            else:
                out = out + Val(piece.replace("\\n", "\n"), fmt.how, fmt.unknown)
        if k >= len(args) or not any(p.startswith("%") and p != "%%" for p in pieces):
            break
    return Val(out.text.rstrip("\n"), out.how, out.unknown, out.origin)


@handles("cat")
def cmd_cat(w: Walker, cmd: Cmd) -> Stream | None:
    files = [a for a in cmd.words if not a.text.startswith("-")]
    if files:
        f = files[0]
        info = w.files.get(f.text)
        if info is None:
            repo = w.repo_file(f)
            if repo is not None:
                info = FileInfo("repo", _read(w, repo), source=str(repo), line=cmd.line)
        return Stream(unknown(f"$(cat {f.display()})", "the content of a file"), info)
    if cmd.stdin is not None:
        if cmd.stdin.kind in ("heredoc", "herestring"):
            return Stream(
                Val(cmd.stdin.text.strip())
                if cmd.stdin.text and "\n" not in cmd.stdin.text.strip()
                else None,
                FileInfo(
                    "heredoc",
                    cmd.stdin.text,
                    line=cmd.stdin.line,
                    end_line=cmd.stdin.end_line,
                    quoted=cmd.stdin.quoted,
                ),
            )
        return Stream(cmd.stdin.value, cmd.stdin.file)
    return None


@handles("grep", "egrep", "cut", "head", "tail", "tr", "xargs-echo", "sort", "uniq")
def cmd_filter(w: Walker, cmd: Cmd) -> Stream | None:
    """A filter: it prints what it reads (nothing for ``grep -q``). ``awk`` and ``sed``
    without in-place editing come here from their handlers in :mod:`.files`."""
    if cmd.name == "grep" and any(a in ("-q", "--quiet", "-l", "-c") for a in cmd.args):
        return None
    if cmd.stdin is not None:
        return Stream(cmd.stdin.value, cmd.stdin.file)
    return None


@handles("dirname")
def cmd_dirname(w: Walker, cmd: Cmd) -> Stream | None:
    return Stream(dirname(cmd.words[0])) if cmd.words else None


@handles("basename")
def cmd_basename(w: Walker, cmd: Cmd) -> Stream | None:
    return Stream(basename(cmd.words[0])) if cmd.words else None


@handles("realpath", "readlink")
def cmd_realpath(w: Walker, cmd: Cmd) -> Stream | None:
    words = [a for a in cmd.words if not a.text.startswith("-")]
    if not words:
        return None
    v = words[0]
    if not v.text.startswith(("/", "~")) and w.state.cwd is not None:
        v = join(w.state.cwd, v)
    return Stream(v)


@handles("pwd")
def cmd_pwd(w: Walker, cmd: Cmd) -> Stream | None:
    return Stream(w.state.cwd if w.state.cwd is not None else unknown("$(pwd)", "the start folder"))


@handles("mktemp")
def cmd_mktemp(w: Walker, cmd: Cmd) -> Stream | None:
    return Stream(w.new_tmp())


@handles("docker", "podman")
def cmd_docker(w: Walker, cmd: Cmd) -> Stream | None:
    rest = list(cmd.words)
    if rest[:1] and rest[0].text == "container":
        rest = rest[1:]
    if not rest or rest[0].text != "exec":
        return None
    rest = rest[1:]
    workdir = None
    with_value = {"-u", "--user", "-w", "--workdir", "-e", "--env", "--env-file"}
    while rest and rest[0].text.startswith("-"):
        flag = rest.pop(0)
        if flag.text in with_value and rest:
            value = rest.pop(0)
            if flag.text in ("-w", "--workdir"):
                workdir = value
    if len(rest) < 2:
        return None
    saved = (w.state.cwd, w.state.cwd_written)
    w.state.cwd, w.state.cwd_written = workdir, workdir.display() if workdir else None
    inner = Cmd(
        rest[1].text.rsplit("/", 1)[-1],
        rest[2:],
        rest[1].text,
        {},
        [],
        None,
        cmd.line,
        cmd.end_line,
        cmd.text,
        cmd.node,
    )
    inner.name = w.interpreter_name(rest[1], inner)
    try:
        run_command(w, inner)
    finally:
        w.state.cwd, w.state.cwd_written = saved
    return None
