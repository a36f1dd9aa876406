"""The commands that change an engine: the handler registry and the dispatch to it.

Each handler (one module per command family in :mod:`.handlers`, registered with
:func:`handles`) gets the walker and one expanded :class:`~.walk.Cmd`, records the modifications
it makes (:meth:`~.walk.Walker.emit`) and returns what it prints (for pipes and ``$(...)``). A
command without a handler only counts through its redirections (``> file``). The walk reaches
:func:`run_command` through the table it is given (:data:`.handlers.COMMANDS`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from .model import Mechanism
from .values import SCRIPT_DIR, Val
from .walk import Cmd, FileInfo, Stream, Walker

Handler = Callable[[Walker, Cmd], "Stream | None"]
HANDLERS: dict[str, Handler] = {}

_SCRIPT = re.compile(r"\.(?:sh|bash)$|^/@script/")
_NAME = re.compile(r"[A-Za-z_][\w.+-]*")
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


@lru_cache(maxsize=1024)
def inert_command(name: str) -> bool:
    """A command name no handler judges (``vllm``, ``mkdir``, ``kill``): it changes an engine
    only through its redirections, and is neither a wrapper (``sudo``, ``env``...), an
    interpreter, ``pip`` nor ``patchbay`` (see :func:`run_command`)."""
    return (
        name not in HANDLERS
        and name not in _WRAPPERS
        and name != "patchbay"
        and not name.startswith("python")
        and re.match(r"^pip\d", name) is None
    )


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
    if cmd.name in ("command", "which", "type") and len(cmd.words) >= 1:
        found = lookup_command(cmd)  # `$(command -v python3)`: the command's name stands in
        if found is not None:
            w.print(found)
            return found
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
        if handler is None and cmd.path is not None:
            stream = run_path(w, cmd)
        else:
            stream = handler(w, cmd) if handler is not None else None
    stdout_redirected = False
    for op, target in cmd.redirects:
        if op == "<":
            continue
        if op[0].isdigit():  # `2> log`: another descriptor; what the command prints stays
            write_file(w, cmd, target, op.lstrip("0123456789"), None)
            continue
        write_file(w, cmd, target, op, stream)
        stream = Stream()
        stdout_redirected = True
    if stream is not None and stream.value is not None and not stdout_redirected:
        w.print(stream)
    return stream


def lookup_command(cmd: Cmd) -> Stream | None:
    """``command -v NAME``, ``which NAME``, ``type -P NAME``: what they print is where NAME is
    on ``PATH``, known only at run time; its base name is NAME, which is what a command run
    through it (``"$(command -v python3)" -m pip``) is judged by. None for another use of
    ``command`` (a wrapper) or ``type``."""
    words = [word.text for word in cmd.words]
    if cmd.name == "which":
        names = [x for x in words if not x.startswith("-")]
    elif cmd.name == "command" and words[0] in ("-v", "-V"):
        names = words[1:]
    elif cmd.name == "type" and words[0] in ("-p", "-P"):
        names = words[1:]
    else:
        return None
    if len(names) != 1 or not _NAME.fullmatch(names[0]):
        return None
    return Stream(Val(names[0]))


def run_path(w: Walker, cmd: Cmd) -> Stream | None:
    """A script run by its path (``./patch.sh``, ``"$DIR/fix.py" --apply``): a ``.py`` file as
    ``python3 path``, anything else as ``bash path`` (its ``#!`` line is not read: a file of
    the repository that is run this way is a script the walk follows either way)."""
    assert cmd.path is not None
    if cmd.path.text.endswith(".py"):
        return HANDLERS["python"](w, replace(cmd, name="python3", words=[cmd.path, *cmd.words]))
    argv = Cmd(cmd.name, [cmd.path, *cmd.words], "", {}, [], None, cmd.line, cmd.line, cmd.text)
    if not w.follow(cmd.path, argv, fresh=True) and _SCRIPT.search(cmd.path.text):
        w.cannot_follow(cmd.path, cmd.line, "runs")  # not a tool: `"$VENV/bin/aiperf"`
    return None


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
            text = src.text if src else None
            if src is None and cmd.stdin.value is not None:
                repo = w.repo_file(cmd.stdin.value)  # `tr -d '\r' < patches/x.patch > tmp`
                text = _read(w, repo) if repo is not None else None
            if text is not None and "\\r" in cmd.text and cmd.name in ("tr", "sed"):
                text = text.replace("\r\n", "\n")
            info = FileInfo(
                "filtered",
                text,
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


def diff_engine(w: Walker, content: str) -> tuple[str, str] | None:
    """(engine, path) when the files a diff changes are an engine's: a path whose first
    folder is an engine package (``vllm/envs.py``), or the second below ``python/`` or
    ``src/`` (``python/sglang/srt/x.py``, SGLang's layout). A folder a diff is applied in
    is then an engine's source tree, whatever it is called (``/opt/vllm-local``)."""
    for m in re.finditer(r"^(?:\+\+\+|---) (?:[ab]/)?(\S+)", content, re.M):
        path = m.group(1)
        for inner in (path, path.split("/", 1)[1] if path.startswith(("python/", "src/")) else ""):
            engine = w.engines.package_of(inner) if inner else None
            if engine is not None:
                return engine, path
    return None


def _diff_files_engine(w: Walker, content: str) -> bool:
    return diff_engine(w, content) is not None


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
    raw = _SELF_REFERENCE.sub("", value.text)
    old = set(before.split(":"))
    entries = [e for e in raw.split(":") if e and e not in old]
    if name == "PYTHONPATH":
        entries = [e for e in entries if not _harmless_entry(w, e)]
    elif name == "LD_PRELOAD" and not _preload_reaches_engine(w, entries, command):
        return
    if not entries:
        return
    details: dict[str, object] = {"variable": name, "command": command}
    content = ":".join(entries)
    if value.unknown and any("$" in e or "`" in e for e in entries):
        # shown as written, with why it is not known, never half-expanded
        written = _assigned_text(name, text)
        if written is not None:
            content = ":".join(
                e for e in _SELF_REFERENCE.sub("", written).split(":") if e and e != name
            )
        details["unresolved"] = value.unknown
    cmd = Cmd(name, [], name, {}, [], None, line, line, text)
    w.emit(Mechanism.INJECT, f"{name}=", cmd, None, content=content, details=details)


_SELF_REFERENCE = re.compile(r"\$\{(?:PYTHONPATH|LD_PRELOAD)[^}]*\}|\$(?:PYTHONPATH|LD_PRELOAD)\b")


def _assigned_text(name: str, text: str) -> str | None:
    """The value of ``NAME=VALUE`` as the statement writes it, unquoted (``$venv_site``)."""
    m = re.search(r"(?<![\w$])" + re.escape(name) + r"=(\"(?:[^\"\\]|\\.)*\"|'[^']*'|\S*)", text)
    if m is None:
        return None
    value = m.group(1)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value


def _preload_reaches_engine(w: Walker, entries: list[str], command: str | None) -> bool:
    """Whether an ``LD_PRELOAD`` can reach an engine process: a library of an engine (its
    path names an engine, or lies below an install root), one set for an engine's own
    command (``LD_PRELOAD=x vllm serve``), or one exported by a script that names an engine.
    Debugging wrappers (``fakeroot``, ``heaptrack``: ``LD_PRELOAD=lib "$@"``) in a script that
    names no engine preload into whatever they are given, which is no engine patching."""
    for entry in entries:
        if w.engines.named_in(entry) or "-packages/" in entry or entry.startswith("/@site"):
            return True
    if command is not None:
        return w.engines.is_engine(command)
    return w.names_engine


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
    if w.root is None:
        return False
    entry = entry.replace(SCRIPT_DIR, ".")
    entry = re.sub(r"^\$\{?PWD\}?|^\$\(pwd\)", ".", entry)
    script_dir = (w.root / w.chain[0]).parent
    for base in (script_dir, w.root):
        is_dir, names = w.inputs.folder(base / entry)
        if is_dir:
            if names is None:
                return False
            for item in names:
                if item in _HOOKS or item.endswith(".pth"):
                    return False
                if item.removesuffix(".py") in w.engines.imports:
                    return False
            return True
    return False


def _read(w: Walker, path: Path) -> str | None:
    """A repository file's text (recorded in the walk's inputs), None when unreadable."""
    try:
        return w.inputs.read_text(path)
    except OSError:
        return None


def written_args(cmd: Cmd) -> list[str]:
    """The command's arguments as the script wrote them, outer quotes removed (``$ROOT``,
    ``--directory=$META``), for messages; empty when the command has no syntax node."""
    if cmd.node is None:
        return []
    node = cmd.node
    if node.type == "redirected_statement":
        node = node.child_by_field_name("body") or node
    out = []
    for arg in node.children_by_field_name("argument"):
        data = arg.text.decode("utf-8", "replace") if arg.text else ""
        if len(data) >= 2 and data[0] == data[-1] and data[0] in "'\"":
            data = data[1:-1]
        out.append(data)
    return out


def _written_arg(cmd: Cmd, val: Val) -> str | None:
    """The argument that expanded to ``val``, as written."""
    for data in written_args(cmd):
        if data == val.text or ("$" in data and data.endswith(posixpath.basename(val.text))):
            return data
    return None


def option_written(cmd: Cmd, option: str) -> str | None:
    """The value of ``--option=VALUE`` (or ``--option VALUE``) as written, unquoted."""
    args = written_args(cmd)
    for k, text in enumerate(args):
        if text.startswith(option + "="):
            return text[len(option) + 1 :].strip("\"'")
        if text == option and k + 1 < len(args):
            return args[k + 1]
    return None
