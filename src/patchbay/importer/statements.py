"""What the import says about a command that changes no engine file: nothing to import (a
message, a check, a variable, a temporary file), or not converted (a command it does not know,
another script sourced, a clone), with what to do."""

from __future__ import annotations

import re

_MESSAGES = frozenset({"echo", "printf", "true", ":", "sleep", "sync", "date", "logger"})
_BUILTINS = frozenset(
    {
        "set",
        "shopt",
        "umask",
        "ulimit",
        "alias",
        "unalias",
        "shift",
        "return",
        "exit",
        "break",
        "continue",
        "wait",
        "false",
        "hash",
        "type",
        "which",
        "nproc",
        "uname",
        "id",
        "whoami",
        "trap",
        "getopts",
        "read",
        "history",
        "enable",
        "unset",
    }
)
_READERS = frozenset(
    {
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ls",
        "head",
        "tail",
        "wc",
        "sort",
        "uniq",
        "tr",
        "cut",
        "awk",
        "gawk",
        "sed",
        "diff",
        "cmp",
        "sha256sum",
        "sha1sum",
        "md5sum",
        "stat",
        "du",
        "df",
        "printenv",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "column",
        "jq",
        "seq",
        "file",
        "cat",
        "find",
        "tee",
        "env",
        "test",
        "[",
        "[[",
        "pwd",
        "xxd",
        "od",
        "less",
        "more",
        "nvidia-smi",
        "rocm-smi",
        "rocminfo",
        "hipconfig",
        "lscpu",
        "free",
        "mktemp",
    }
)
_GIT_READS = frozenset(
    {
        "diff",
        "status",
        "log",
        "show",
        "rev-parse",
        "describe",
        "ls-files",
        "branch",
        "config",
        "--version",
        "version",
        "remote",
    }
)
_BYTECODE = "removes bytecode caches (patchbay drops the stale bytecode of what it patches)"


def describe(name: str, raw: str, args: list[str], dest: str | None) -> tuple[str, str, str | None]:
    """What a command that changes no engine file became, for the notes.

    Args:
        name: the command's base name (``git``, ``python3``).
        raw: the name as written (``"$PYTHON"``).
        args: its arguments as written, quotes removed.
        dest: the target of its first output redirection as written, or None.

    Returns:
        ``(kind, text, hint)``: ``consumed`` (nothing to import) or ``unconverted`` (the patchset
        does not do it), the sentence, and what to do.
    """
    if name in ("cd", "pushd", "popd"):
        return ("consumed", "changes the working folder", None)
    if name in ("source", "."):
        return (
            "unconverted",
            f"sources another script ({' '.join(args[:1])})",
            "import that script separately",
        )
    if name == "patchbay":
        return ("consumed", "runs patchbay itself; nothing to import", None)
    if name in ("eval", "exec"):
        return ("unconverted", f"{name} of text built at run time", None)
    if name == "git":
        sub = next((a for a in args if not a.startswith("-")), "")
        if sub == "apply" and "--check" in args:
            return (
                "consumed",
                "checks whether the diff applies (patchbay decides from content)",
                None,
            )
        if sub in _GIT_READS:
            return ("consumed", f"git {sub}: reads; changes nothing", None)
        return (
            "unconverted",
            f"git {sub or '(no command)'}",
            "a clone or checkout that is built later belongs in a `pip` pin of a commit",
        )
    if name == "patch" and ("--dry-run" in args or "-C" in args):
        return (
            "consumed",
            "checks whether the diff applies (patchbay decides from content)",
            None,
        )
    if re.fullmatch(r"pip3?(\.\d+)?", name) or (name == "uv" and args[:1] == ["pip"]):
        sub = next((a for a in args if not a.startswith("-") and a != "pip"), "")
        if sub in ("show", "list", "freeze", "check", "config", "inspect", "debug", "index"):
            return ("consumed", f"pip {sub}: reads; changes nothing", None)
        return (
            "unconverted",
            f"pip {sub or '(no command)'}",
            "a pin can add or change a package, not remove one",
        )
    if name.startswith("python") or ("PY" in raw.upper() and raw.startswith(("$", '"$'))):
        if args[:2] == ["-m", "pip"]:
            sub = next((a for a in args[2:] if not a.startswith("-")), "")
            return ("consumed", f"pip {sub}: reads; changes nothing", None)
        if args[:2] in (["-m", "compileall"], ["-m", "py_compile"]):
            return (
                "consumed",
                "byte-compiles (patchbay drops the stale bytecode of what it patches)",
                None,
            )
        return ("consumed", "Python that reads or checks; changes nothing", None)
    if name in ("rm",):
        paths = [a for a in args if not a.startswith("-")]
        if all("__pycache__" in p or p.endswith(".pyc") for p in paths) and paths:
            return ("consumed", _BYTECODE, None)
        return ("consumed", "removes files outside the engine install", None)
    if name == "find":
        text = " ".join(args)
        if "__pycache__" in text or ".pyc" in text:
            return ("consumed", _BYTECODE, None)
        if any(a in ("-delete", "-exec", "-execdir") for a in args):
            return (
                "consumed",
                "runs find with -delete or -exec outside the engine install",
                None,
            )
        return ("consumed", "reads or checks; changes nothing", None)
    if name in ("curl", "wget"):
        return (
            "consumed",
            "downloads outside the engine install (a temporary folder, or printed)",
            None,
        )
    if name in ("cp", "mv", "install", "ln", "rsync", "tar", "unzip"):
        return ("consumed", f"{name} outside the engine install", None)
    if name in ("sed", "perl", "awk") and any(
        a.startswith(("-i", "--in-place")) or a == "inplace" for a in args
    ):
        return ("consumed", "edits a file outside the engine install", None)
    if name == "mkdir":
        return (
            "consumed",
            "creates folders (patchbay creates the folders a patch needs)",
            None,
        )
    if name in ("touch", "chmod", "chown", "truncate"):
        return ("consumed", f"{name} outside the engine install", None)
    if dest is not None or name == "tee":
        dest = dest or ""
        if name in ("echo", "printf") and dest in ("/dev/null", "/dev/stderr", "&2", "2"):
            return ("consumed", "prints a message", None)
        temp = (
            dest.startswith(("/tmp", '"$WS', "$WS", '"$TMP', "$TMP", '"$WORK')) or "mktemp" in dest
        )
        return (
            "consumed",
            f"writes {dest} into a temporary folder"
            if temp
            else f"writes {dest}, outside the engine install",
            None,
        )
    if name in _MESSAGES:
        return (
            "consumed",
            "prints a message" if name in ("echo", "printf") else "no effect on the engine",
            None,
        )
    if name in _BUILTINS:
        return ("consumed", f"shell built-in `{name}`; nothing to import", None)
    if name in ("test", "[", "[["):
        return ("consumed", "a test", None)
    if name in _READERS:
        return ("consumed", "reads or checks; changes nothing", None)
    return (
        "unconverted",
        f"runs {name}, which the importer does not convert",
        "keep it outside the patchset, or declare it as a `command` patch by hand",
    )
