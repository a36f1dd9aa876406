"""The commands that change an engine, one handler per command family.

Each handler gets the walker and one expanded :class:`~.walk.Cmd`, records the modifications it
makes (:meth:`~.walk.Walker.emit`) and returns what it prints (for pipes and ``$(...)``). A
command without a handler only counts through its redirections (``> file``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from pathlib import Path

from .model import Mechanism, Target
from .values import SCRIPT_DIR, Val, basename, dirname, join, unknown
from .walk import Cmd, FileInfo, Stdin, Stream, Walker

Handler = Callable[[Walker, Cmd], "Stream | None"]
HANDLERS: dict[str, Handler] = {}

_WRAPPERS = {"sudo", "env", "time", "nohup", "exec", "command", "nice", "stdbuf", "timeout"}
_HOOKS = ("sitecustomize.py", "usercustomize.py")
_SHA = re.compile(r"^[0-9a-f]{7,40}$")
_SHA40 = re.compile(r"^[0-9a-f]{40}$")
_TEMP_SUFFIXES = (".new", ".tmp", ".part", ".download", ".partial")


def handles(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            HANDLERS[name] = fn
        return fn

    return register


def split_options(
    words: list[Val], with_value: set[str]
) -> tuple[list[Val], dict[str, Val], list[str]]:
    """Positional words, options with their values (``-o X``, ``-oX``, ``--opt=X``), and the
    flags seen (in order)."""
    positional: list[Val] = []
    options: dict[str, Val] = {}
    flags: list[str] = []
    k = 0
    while k < len(words):
        w = words[k]
        a = w.text
        if a == "--":
            positional.extend(words[k + 1 :])
            break
        if a.startswith("--") and "=" in a:
            key, value = a.split("=", 1)
            options[key] = Val(value, w.how, w.unknown)
            flags.append(key)
        elif a in with_value:
            options[a] = words[k + 1] if k + 1 < len(words) else Val("")
            flags.append(a)
            k += 1
        elif a.startswith("-") and not a.startswith("--") and len(a) > 2 and a[:2] in with_value:
            options[a[:2]] = Val(a[2:], w.how, w.unknown)
            flags.append(a[:2])
        elif a.startswith("-") and a != "-":
            options[a] = Val("")
            flags.append(a)
        else:
            positional.append(w)
        k += 1
    return positional, options, flags


# ---------------------------------------------------------------------------- dispatch


def run_command(w: Walker, cmd: Cmd) -> Stream | None:
    """Judge one command: wrappers, prefixes (``VAR=x cmd``), functions, then its handler and
    its output redirections."""
    while cmd.name in _WRAPPERS and cmd.words:
        wrapper = cmd.name
        words = list(cmd.words)
        while words and (
            words[0].text.startswith("-") or (wrapper == "env" and "=" in words[0].text)
        ):
            flag = words.pop(0)
            if "=" in flag.text and wrapper == "env":
                key, _, value = flag.text.partition("=")
                cmd.env[key] = Val(value, flag.how, flag.unknown)
            elif flag.text in ("-u", "-g", "-n", "-s", "-k") and words:
                words.pop(0)
        if wrapper == "timeout" and words:
            words.pop(0)
        if not words:
            return None
        cmd.name = w.interpreter_name(
            words[0], Cmd(words[0].text, words[1:], "", {}, [], cmd.stdin, 0, 0, "")
        )
        cmd.words = words[1:]
    for name, value in cmd.env.items():
        environment_change(w, name, value, cmd.line, cmd.text, command=cmd.name)
    if cmd.name == "patchbay":
        return None  # declared patching
    fn = w.functions.get(cmd.name)
    stream: Stream | None
    if fn is not None:
        stream = w.call_function(fn, cmd)
    else:
        handler = HANDLERS.get(cmd.name)
        if handler is None and cmd.name.startswith("python"):
            handler = HANDLERS["python"]
        elif handler is None and re.match(r"^pip\d", cmd.name):
            handler = HANDLERS["pip"]
        stream = handler(w, cmd) if handler is not None else None
    for op, target in cmd.redirects:
        if op != "<":
            write_file(w, cmd, target, op, stream)
            stream = Stream()
    if stream is not None and stream.value is not None and not cmd.redirects:
        w.print(stream)
    return stream


def write_file(w: Walker, cmd: Cmd, dest: Val, op: str, stream: Stream | None = None) -> None:
    """A file written by a redirection (``cat > f <<EOF``, ``echo x >> f``) or ``tee``."""
    content: str | None = None
    if cmd.stdin is not None and cmd.stdin.kind in ("heredoc", "herestring"):
        content = cmd.stdin.text
    elif cmd.name in ("echo", "printf"):
        content = " ".join(cmd.args) + "\n"
    elif stream is not None and stream.file is not None:
        content = stream.file.text
    target = w.target(dest)
    base = posixpath.basename(dest.text)
    if target.root == "none":
        info = FileInfo("heredoc", content, line=cmd.line, end_line=cmd.end_line)
        if cmd.stdin is not None and cmd.stdin.kind == "heredoc":
            info.quoted = cmd.stdin.quoted
            info.delimiter = cmd.stdin.delimiter
            info.runtime = cmd.stdin.runtime
        elif cmd.stdin is not None and cmd.stdin.kind in ("file", "pipe"):
            src = cmd.stdin.file
            info = FileInfo(
                "filtered",
                src.text if src else None,
                url=src.url if src else None,
                source=cmd.stdin.value.text if cmd.stdin.value else None,
                line=cmd.line,
                end_line=cmd.end_line,
                note=cmd.text,
            )
        elif stream is not None and stream.file is not None:
            info = FileInfo("download", stream.file.text, url=stream.file.url, line=cmd.line)
        w.files[dest.text] = info
        if base in _HOOKS and content and w.engines.named_in(content):
            w.emit(Mechanism.INJECT, f"{_tool(cmd)} {base}", cmd, target, content=content)
        return
    if target.root == "unknown" and not _engine_evidence(w, dest.text, content):
        return
    if base in _HOOKS or (base.endswith(".pth") and target.root != "unknown"):
        w.emit(Mechanism.INJECT, f"{_tool(cmd)} {base}", cmd, target, content=content)
        return
    heredoc = cmd.stdin is not None and cmd.stdin.kind == "heredoc"
    w.emit(
        Mechanism.WRITE,
        _tool(cmd),
        cmd,
        target,
        content=content,
        details={"heredoc": heredoc, "append": op.endswith(">>")},
    )


def _tool(cmd: Cmd) -> str:
    return f"{cmd.name} >" if cmd.name not in ("tee",) else "tee"


def _engine_evidence(w: Walker, path: str, content: str | None) -> bool:
    """An unresolved path still counts when it, or the content, names an engine."""
    return bool(w.engines.named_in(path) or (content and _diff_files_engine(w, content)))


def _diff_files_engine(w: Walker, content: str) -> bool:
    for m in re.finditer(r"^(?:\+\+\+|---) (?:[ab]/)?(\S+)", content, re.M):
        if w.engines.package_of(m.group(1)) is not None:
            return True
    return False


# ---------------------------------------------------------------------------- environment


def environment_change(
    w: Walker,
    name: str,
    value: Val,
    line: int,
    text: str,
    command: str | None = None,
    before: str | None = None,
) -> None:
    """``PYTHONPATH``/``LD_PRELOAD`` set (exported, or for one command): module injection.
    Only entries the value adds to the variable's previous value (``before``) count."""
    if name not in ("PYTHONPATH", "LD_PRELOAD", "PYTHONSTARTUP"):
        return
    if before is None:
        previous = w.state.vars.get(name)
        before = previous[0].text if previous else ""
    raw = re.sub(r"\$\{PYTHONPATH[^}]*\}|\$PYTHONPATH\b", "", value.text)
    old = set(before.split(":"))
    entries = [e for e in raw.split(":") if e and e not in old]
    if name == "PYTHONPATH":
        entries = [e for e in entries if not _harmless_entry(w, e)]
    if not entries:
        return
    cmd = Cmd(name, [], name, {}, [], None, line, line, text)
    w.emit(
        Mechanism.INJECT,
        f"{name}=",
        cmd,
        None,
        content=":".join(entries),
        details={"variable": name, "command": command},
    )


def _harmless_entry(w: Walker, entry: str) -> bool:
    """A folder that holds no start-up hook and no engine-named module: one of the repository,
    or one the script filled itself with harness-only files."""
    own = [(p, f) for p, f in w.files.items() if p.startswith(entry.rstrip("/") + "/")]
    if own:
        for p, f in own:
            base = posixpath.basename(p)
            if f.text is None:
                return False
            if base in _HOOKS or base.endswith(".pth"):
                if w.engines.named_in(f.text):
                    return False
            elif base.removesuffix(".py") in w.engines.imports:
                return False
        return True
    if entry.startswith(("/", "~")) or "$" in entry or w.root is None:
        return entry.startswith(SCRIPT_DIR) and _repo_folder_harmless(w, entry)
    return _repo_folder_harmless(w, entry)


def _repo_folder_harmless(w: Walker, entry: str) -> bool:
    import os

    if w.root is None:
        return False
    entry = entry.replace(SCRIPT_DIR, ".")
    entry = re.sub(r"^\$\{?PWD\}?|^\$\(pwd\)", ".", entry)
    script_dir = (w.root / w.chain[0]).parent
    for base in (script_dir, w.root):
        folder = (base / entry).resolve()
        if folder.is_dir():
            try:
                names = os.listdir(folder)
            except OSError:
                return False
            for item in names:
                if item in _HOOKS or item.endswith(".pth"):
                    return False
                if item.removesuffix(".py") in w.engines.imports:
                    return False
            return True
    return False


# ---------------------------------------------------------------------------- the shell itself


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
    new = join(w.state.cwd, dest) if w.state.cwd is not None else dest
    if not dest.text.startswith(("/", "~")) and w.state.cwd is None:
        new = dest if dest.unknown or dest.text.startswith("/@") else Val(dest.text)
    w.state.cwd = new
    w.state.cwd_written = _written(cmd, 0) or dest.display()
    return None


def _written(cmd: Cmd, index: int) -> str | None:
    """The argument as the script wrote it, unquoted (``$VLLM_DIR``)."""
    if cmd.node is None:
        return None
    args = [c for c in cmd.node.children_by_field_name("argument")]
    if cmd.node.type == "redirected_statement":
        body = cmd.node.child_by_field_name("body")
        args = list(body.children_by_field_name("argument")) if body is not None else []
    if index >= len(args):
        return None
    data = args[index].text.decode("utf-8", "replace") if args[index].text else ""
    if len(data) >= 2 and data[0] == data[-1] and data[0] in "'\"":
        data = data[1:-1]
    return data


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
    return None


@handles("bash", "sh", "zsh", "dash", "ksh")
def cmd_bash(w: Walker, cmd: Cmd) -> Stream | None:
    from .syntax import parse_shell

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
        return None
    if cmd.stdin is not None and cmd.stdin.kind == "heredoc" and cmd.stdin.text is not None:
        try:
            source = parse_shell(cmd.stdin.text, w.src.path, cmd.stdin.line)
        except Exception:
            return None
        _inline(w, source)
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
        words = words[1:]
    if not words:
        return Stream(Val(""))
    out = words[0]
    for extra in words[1:]:
        out = out + Val(" ") + extra
    return Stream(out)


@handles("cat")
def cmd_cat(w: Walker, cmd: Cmd) -> Stream | None:
    files = [a for a in cmd.words if not a.text.startswith("-")]
    if files:
        f = files[0]
        info = w.files.get(f.text)
        if info is None:
            repo = w.repo_file(f)
            if repo is not None:
                info = FileInfo("repo", _read(repo), source=str(repo), line=cmd.line)
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


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


@handles("grep", "egrep", "awk", "cut", "head", "tail", "tr", "xargs-echo", "sort", "uniq", "gawk")
def cmd_filter(w: Walker, cmd: Cmd) -> Stream | None:
    if cmd.name in ("awk", "gawk") and any("inplace" in a for a in cmd.args):
        return cmd_awk_inplace(w, cmd)
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


@handles("which", "command-v")
def cmd_which(w: Walker, cmd: Cmd) -> Stream | None:
    return Stream(cmd.words[-1]) if cmd.words else None


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
                return _read(repo), facts
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
                return _read(repo), facts
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
        if content and _diff_files_engine(w, content) and False:
            pass
        return
    target = w.target(folder, written=extra.pop("written", None) or None)
    if target.root == "none":
        tree = w.engine_folder(folder.text)
        if tree is None:
            return
        target = Target(folder.text, folder.display(), "engine-tree", tree, "an engine source tree")
    if target.root == "unknown" and not (content and _diff_files_engine(w, content)):
        if not w.live:
            pass
        elif not files and cmd.stdin is None:
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
        extra: dict[str, object] = {"written": folder_written}
        if "--directory" in options:
            extra["directory"] = options["--directory"].text
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


def _written_arg(cmd: Cmd, val: Val) -> str | None:
    if cmd.node is None:
        return None
    node = cmd.node
    if node.type == "redirected_statement":
        node = node.child_by_field_name("body") or node
    for arg in node.children_by_field_name("argument"):
        data = arg.text.decode("utf-8", "replace") if arg.text else ""
        if len(data) >= 2 and data[0] == data[-1] and data[0] in "'\"":
            data = data[1:-1]
        if data == val.text or ("$" in data and data.endswith(posixpath.basename(val.text))):
            return data
    return None


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
        if "__pycache__" in f.text or f.text.endswith((".pyc", "*.pyc")):
            continue
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
    cache = name is not None and ("__pycache__" in name or name.endswith(".pyc"))
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
    if name is not None and ("__pycache__" in name or name.endswith(".pyc")):
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
    if "__pycache__" in item.text or item.text.endswith(".pyc"):
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


from . import installs as _installs  # noqa: E402,F401  (registers pip and python)
