"""Interpreters and installers: ``python`` (snippets, ``-m pip``, ``setup.py``) and ``pip``.

A Python snippet (here-document, ``-c``, a ``.py`` file of the repository) is read by
:mod:`..python`; each file it writes, copies or removes in the engine is one modification, its
``subprocess`` commands are judged as shell commands, and ``PYTHONPATH`` it sets is injection.
``pip install`` of an engine package is a modification (from a VCS URL, an archive, a wheel, a
local tree, or an index); harness packages are listed apart, never as engine changes.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .. import pysnippet
from ..commands import environment_change, handles, run_command
from ..engines import is_bytecode
from ..model import Mechanism, Modification, Target
from ..python import Effect, read_python
from ..values import Val, join, unknown
from ..walk import Cmd, Stream, Walker
from .diffs import _repo_of, mark_built

_SHA40 = re.compile(r"[0-9a-f]{40}")
_BUILDS = re.compile(
    r"\b(?:build\w*|compile\w*|jit\w*|get_module|load_module)\s*\(|\bsetup\.py\b|\bbdist|--build",
    re.IGNORECASE,
)
"""A build step in Python code: a call of ``build_module(...)``, ``compile_ops(...)``,
``jit_load(...)`` (a folder query such as ``get_user_jit_dir()`` is not one)."""


def _getenv(w: Walker, env: dict[str, Val]):
    def getenv(name: str) -> str | None:
        if name in env and env[name].text:
            return env[name].text
        values = w.state.vars.get(name)
        if values and values[0].text and (values[0].known or values[0].text.startswith("/@")):
            return values[0].text
        return None

    return getenv


@handles("python", "python3", "python2")
def cmd_python(w: Walker, cmd: Cmd) -> Stream | None:
    args = cmd.args
    words = list(cmd.words)
    while (
        words
        and words[0].text in ("-u", "-I", "-E", "-s", "-B", "-O", "-X")
        and words[0].text != "-"
    ):
        words.pop(0)
    args = [x.text for x in words]
    if args[:2] == ["-m", "pip"]:
        return pip(w, cmd, words[2:])
    if args[:2] == ["-m", "venv"] or args[:2] == ["-m", "virtualenv"]:
        folders = [x for x in words[2:] if not x.text.startswith("-")]
        w.venvs.update(x.text.rstrip("/") for x in folders)
        return None
    if args[:1] == ["-m"]:
        return None
    if args[:1] == ["-c"] and len(words) > 1:
        code = words[1].text
        argv = ["-c", *(x.text for x in words[2:])]
        return snippet(w, cmd, code, argv, words[2:], inline=True)
    stdin = cmd.stdin
    if (not args or args[0] == "-") and stdin is not None and stdin.text is not None:
        argv = ["-", *(x.text for x in words[1:])]
        return snippet(w, cmd, stdin.text, argv, words[1:], inline=False)
    if args and args[0].endswith(".py"):
        if posix_base(args[0]) == "setup.py":
            return setup_py(w, cmd, words[1:])
        repo = w.repo_file(words[0])
        if repo is not None and w.root is not None:
            text = w.inputs.read_text(repo)
            saved = w.chain
            relpath = repo.relative_to(w.root.resolve()).as_posix()
            w.result.sourced.append((cmd.line, relpath))  # run from this line
            # the statements are the file's own, reached from this script
            w.chain = (*w.chain, relpath)
            try:
                return snippet(
                    w, cmd, text, [x.text for x in words], words[1:], inline=False, file=words[0]
                )
            finally:
                w.chain = saved
    if words and not words[0].text.startswith("-"):
        w.cannot_follow(words[0], cmd.line, f"{cmd.name} runs")
    return None


def in_new_venv(w: Walker, cmd: Cmd) -> bool:
    """The command is run by the interpreter or ``pip`` of a virtual environment the script
    itself created (``python3 -m venv "$venv"`` then ``"$venv/bin/python" -m pip install``):
    what it installs goes into that environment, not into the image's engine. The folder is
    compared as written when it is known only at run time (the same ``$1/venv`` both times)."""
    if cmd.path is None or not w.venvs:
        return False
    folder = cmd.path.text.rsplit("/bin/", 1)[0] if "/bin/" in cmd.path.text else None
    return folder is not None and folder.rstrip("/") in w.venvs


def posix_base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def setup_py(w: Walker, cmd: Cmd, words: list[Val]) -> Stream | None:
    sub = words[0].text if words else ""
    folder = w.state.cwd
    if sub in ("install", "develop", "build", "build_ext", "bdist_wheel"):
        if mark_built(w, folder, cmd.line):
            return None
        if folder is not None and w.engine_folder(folder.text):
            engine = w.engine_folder(folder.text)
            w.emit(
                Mechanism.PIP if sub in ("install", "develop") else Mechanism.REBUILD,
                f"setup.py {sub}",
                cmd,
                Target(
                    folder.text,
                    w.state.cwd_written or folder.display(),
                    "engine-tree",
                    engine,
                    "an engine source tree",
                ),
                details={"source": "local", "editable": sub == "develop"},
            )
    return None


def snippet(
    w: Walker,
    cmd: Cmd,
    code: str,
    argv: list[str],
    arg_vals: list[Val],
    *,
    inline: bool,
    file: Val | None = None,
) -> Stream | None:
    """Judge Python code run by the script; returns what it prints."""
    argv_how = {}
    for k, v in enumerate(arg_vals, start=1):
        if v.installed or v.how:
            argv_how[k] = v
    facts = read_python(code, argv, _getenv(w, cmd.env))
    if facts.error and w.engines.named_in(code) is not None:  # its effects cannot be judged
        w.unresolved(cmd.line, f"the Python run by {cmd.text.strip()}", facts.error)
    for pkg in facts.packages:
        if pkg not in w.packages:
            w.packages.append(pkg)
    per_line = file is not None
    offset = 0
    python_effects(w, cmd, facts.effects, code, argv, per_line=per_line, offset=offset,
                   argv_vals=arg_vals, uncalled=facts.uncalled_lines)  # fmt: skip
    from ..python import printed_of

    value = printed_of(facts)
    if value is not None:
        how = "computed by Python"
        for needle in (
            "find_spec",
            "__file__",
            "__path__",
            "purelib",
            "platlib",
            "getsitepackages",
            "get_python_lib",
        ):
            if needle in code:
                how = f"computed with {needle}"
                break
        return Stream(Val(value, how if value.startswith("/@") else ""))
    if "Location" in code and "pip" in code:
        return None
    return None


def python_effects(
    w: Walker,
    cmd: Cmd,
    effects: list[Effect],
    code: str,
    argv: list[str],
    *,
    per_line: bool,
    offset: int,
    argv_vals: list[Val] | None = None,
    uncalled: set[int] | None = None,
) -> None:
    """Turn a Python program's effects into modifications (one per file it changes)."""
    strict: pysnippet.Analysis | None = None
    reason: str | None = None
    try:
        strict = pysnippet.analyse(code, argv, _getenv(w, cmd.env))
    except pysnippet.NotUnderstood as exc:
        reason = exc.reason
    argv_vals = argv_vals or []
    before = len(w.mods)
    for effect in effects:
        line_cmd = cmd
        if per_line:
            lines = code.splitlines()
            text = lines[effect.line - 1].strip() if effect.line <= len(lines) else cmd.text
            at = offset + effect.line
            line_cmd = Cmd(cmd.name, cmd.words, cmd.raw, cmd.env, [], None, at, at, text)
        if effect.kind == "shell":
            shell_effect(w, line_cmd, effect)
            continue
        if effect.kind == "env":
            environment_change(
                w, effect.path, Val(effect.text or "$(computed)"), line_cmd.line, line_cmd.text
            )
            if not effect.text and effect.path == "PYTHONPATH":
                pass
            continue
        if effect.kind == "remove" and is_bytecode(effect.path):
            continue  # byte-code cleanup: Python compiles the source again
        how = effect.how
        val = Val(
            effect.path,
            how if effect.path.startswith("/@") or "site-packages" in effect.path else "",
        )
        for k, v in enumerate(argv_vals, start=1):
            if f"sys.argv[{k}]" in how:
                how_k = f"sys.argv[{k}] = {v.display()}" + (f" ({v.how})" if v.how else "")
                val = Val(effect.path, how_k, "", v.origin)
        bare = not effect.path or (effect.path == effect.expr and not effect.path.startswith("/"))
        if bare and "site" not in effect.expr and "__file__" not in how:
            continue
        target = w.target(val, written=effect.expr)
        if target.root == "none":
            continue
        if target.root == "unknown":
            continue
        if target.how == "site-packages" or not target.how:
            target = Target(
                target.path, target.written, target.root, target.engine, how, target.origin
            )
        mechanism = {
            "write": Mechanism.WRITE,
            "edit": Mechanism.EDIT,
            "copy": Mechanism.COPY,
            "remove": Mechanism.REMOVE,
        }[effect.kind]
        if mechanism is Mechanism.WRITE and _reads(code, effect):
            mechanism = Mechanism.EDIT
        edits = list(effect.edits)
        details: dict[str, object] = {
            "python": code,
            "argv": argv,
            "inline": not per_line,
            "strict": strict,
            "stdin": cmd.stdin,
            "words": [x.text for x in cmd.words],
        }
        if strict is not None:
            for fe in strict.edits:
                if fe.file == effect.path:
                    edits = [(old, new) for old, new, _c in fe.edits]
                    details["counts"] = [c for _o, _n, c in fe.edits]
        if reason is not None:
            details["not_understood"] = reason
        tool = "python" if not per_line else f"python ({effect.kind})"
        mod = w.emit(
            mechanism,
            tool,
            line_cmd,
            target,
            edits=edits,
            content=code if not per_line else None,
            details=details,
        )
        if mod is not None and uncalled and effect.line in uncalled:
            mod.called = False
            mod.why = "in a Python function the code never calls"
        if (
            mod is not None
            and w.last_removal is not None
            and mechanism in (Mechanism.WRITE, Mechanism.EDIT)
            and target.path.endswith((".so", ".co", ".hsaco"))
        ):
            mod.mechanism = Mechanism.REBUILD
            mod.details["remove"] = w.last_removal.details.get("paths") or [
                w.last_removal.target.path if w.last_removal.target else ""
            ]
            w.last_removal = None
    if len(w.mods) == before and w.last_removal is not None and _BUILDS.search(code):
        # a build step (JIT, compile) run after engine files were removed: a rebuild
        removal = w.last_removal
        w.last_removal = None
        w.emit(
            Mechanism.REBUILD,
            "python",
            cmd,
            removal.target,
            content=code,
            details={
                "python": code,
                "argv": argv,
                "inline": not per_line,
                "remove": removal.details.get("paths") or [],
                "words": [x.text for x in cmd.words],
            },
        )


def _reads(code: str, effect: Effect) -> bool:
    """A write that may be an edit: the code reads some file, and the path written is not
    one the reader resolved (a resolved path read first is already an ``edit`` effect)."""
    if effect.path.startswith("/"):
        return False
    return ".read(" in code or "read_text(" in code or "fileinput" in code


def shell_effect(w: Walker, cmd: Cmd, effect: Effect) -> None:
    """A command run by ``subprocess``/``os.system``: judged as if the script ran it."""
    from ..syntax import parse_shell

    saved = (w.state.cwd, w.state.cwd_written)
    if effect.cwd is not None:
        w.state.cwd = Val(effect.cwd, effect.how if effect.cwd.startswith("/@") else "")
        w.state.cwd_written = effect.how or effect.cwd
    try:
        if effect.argv:
            words = [Val(a) for a in effect.argv]
            inner = Cmd(
                words[0].text.rsplit("/", 1)[-1],
                words[1:],
                words[0].text,
                {},
                [],
                None,
                cmd.line,
                cmd.end_line,
                cmd.text,
            )
            run_command(w, inner)
        elif effect.text:
            try:
                source = parse_shell(effect.text, w.src.path, cmd.line - 1)
            except Exception:
                return
            saved_src = w.src
            before = len(w.mods)
            w.src = source
            try:
                w.block(source.root)
            finally:
                w.src = saved_src
            for mod in w.mods[before:]:
                mod.line = mod.end_line = cmd.line
    finally:
        w.state.cwd, w.state.cwd_written = saved


# ---------------------------------------------------------------------------- pip

_PIP_WITH_VALUE = {
    "-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
    "--find-links", "--target", "-t", "--prefix", "--root", "--upgrade-strategy", "--no-binary",
    "--only-binary", "--platform", "--python-version", "--implementation", "--abi", "--src",
    "-C", "--config-settings", "--global-option", "--build-option", "--trusted-host", "--proxy",
    "--retries", "--timeout", "--exists-action", "--cache-dir", "--log", "--python", "--report",
    "--progress-bar", "--root-user-action",
}  # fmt: skip


@handles("pip", "pip3")
def cmd_pip(w: Walker, cmd: Cmd) -> Stream | None:
    return pip(w, cmd, cmd.words)


@handles("uv")
def cmd_uv(w: Walker, cmd: Cmd) -> Stream | None:
    if cmd.words and cmd.words[0].text == "pip":
        return pip(w, cmd, cmd.words[1:])
    return None


def pip(w: Walker, cmd: Cmd, words: list[Val]) -> Stream | None:
    if not words:
        return None
    if in_new_venv(w, cmd):
        return None  # `"$venv/bin/python" -m pip` of a venv the script made: not the image's
    sub = words[0].text
    rest = words[1:]
    if sub == "show":
        return Stream(Val("/@site", "pip show"))
    if sub == "uninstall":
        for x in rest:
            if not x.text.startswith("-"):
                w.uninstalled[x.text.lower()] = cmd.line
        return None
    if sub != "install":
        return None
    joined, options, flags = split_install(rest)
    facts = {"options": options, "flags": flags, "env": {k: v.text for k, v in cmd.env.items()}}
    for key in ("-r", "--requirement"):
        if key in options:
            harness(w, cmd, f"{key} {options[key]}", {**facts, "source": "requirements-file"})
    if not joined and not any(k in options for k in ("-r", "--requirement")):
        harness(w, cmd, "", {**facts, "source": "none"})
    for spec, editable in joined:
        requirement(w, cmd, spec, editable, facts)
    return None


def split_install(args: list[Val]) -> tuple[list[tuple[Val, bool]], dict[str, str], list[str]]:
    """The words after ``pip install`` as pip's option parser reads them: the requirements
    (each with whether it is ``-e``; ``name @ url`` written as three words is one), the options
    with a value (``--opt V`` and ``--opt=V``; the first of a repeated one), and the flags."""
    specs: list[tuple[Val, bool]] = []
    options: dict[str, str] = {}
    flags: list[str] = []
    k = 0
    while k < len(args):
        a = args[k].text
        if a in ("-e", "--editable") and k + 1 < len(args):
            specs.append((args[k + 1], True))
            k += 2
            continue
        if a.startswith("--editable="):
            specs.append((Val(a.split("=", 1)[1]), True))
        elif a in _PIP_WITH_VALUE:
            options.setdefault(a, args[k + 1].text if k + 1 < len(args) else "")
            k += 1
        elif a.startswith("--") and "=" in a:
            key, value = a.split("=", 1)
            options.setdefault(key, value)
        elif a.startswith("-"):
            flags.append(a)
        else:
            specs.append((args[k], False))
        k += 1
    joined: list[tuple[Val, bool]] = []
    for spec, editable in specs:
        if joined and (spec.text == "@" or joined[-1][0].text.endswith(" @")):
            joined[-1] = (Val(f"{joined[-1][0].text} {spec.text}"), joined[-1][1])
        else:
            joined.append((spec, editable))
    return joined, options, flags


def harness(w: Walker, cmd: Cmd, text: str, details: dict) -> None:
    """A package that is not an engine's: kept apart (the import may still pin it)."""
    w.installs.append(
        Modification(Mechanism.PIP, "pip install", cmd.line, max(cmd.end_line, cmd.line),
                     content=text, chain=w.chain, text=cmd.text, details=dict(details))
    )  # fmt: skip


def requirement(w: Walker, cmd: Cmd, spec: Val, editable: bool, facts: dict) -> None:
    text = spec.text.strip()
    if not spec.known and not text.startswith("/@"):
        harness(w, cmd, text, {**facts, "source": "computed", "requirement": text})
        return
    name, url = "", text
    m = re.match(r"^([\w.\[\],-]+)\s*@\s*(\S+)$", text)
    if m:
        name, url = m.group(1).split("[")[0], m.group(2)
    details = {**facts, "requirement": text, "editable": editable}
    if re.match(r"^(?:git|hg|svn|bzr)\+", url):
        repo = _repo_of(url.split("+", 1)[1])
        egg = re.search(r"[#&]egg=([\w.-]+)", url)
        names = [n for n in (name, egg.group(1) if egg else "", repo[1] if repo else "") if n]
        engine = next((n for n in names if w.engines.is_engine(n)), None)
        if engine is None:
            harness(w, cmd, text, details)
            return
        path = url.split("://", 1)[-1].split("#")[0]
        ref = path.rsplit("@", 1)[1] if "@" in path.split("/", 1)[-1] else None
        fork = None
        if repo:
            upstream = w.engines.upstreams.get(repo[1].lower())
            if upstream and upstream.split("/")[0].lower() != repo[0].lower():
                fork = f"{repo[0]}/{repo[1]}"
                details["upstream"] = upstream
        details.update({"source": "vcs", "engine": engine, "fork": fork, "repo": repo})
        pinned = bool(ref and _SHA40.fullmatch(ref))
        w.emit(Mechanism.PIP, "pip install", cmd, None, url=url, ref=ref, pinned=pinned,
               content=text, details=details)  # fmt: skip
        return
    if re.match(r"^https?://", url):
        base = url.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        repo = _repo_of(url)
        dist = name or (base.split("-")[0] if base.endswith((".whl", ".tar.gz", ".zip")) else "")
        candidates = [n for n in (dist, repo[1] if repo else "") if n]
        engine = next((n for n in candidates if w.engines.is_engine(n)), None)
        if engine is None:
            harness(w, cmd, text, details)
            return
        details.update(
            {"source": "wheel-url" if base.endswith(".whl") else "archive-url", "engine": engine}
        )
        w.emit(Mechanism.PIP, "pip install", cmd, None, url=url, content=text, details=details)
        return
    base = text.rstrip("/").rsplit("/", 1)[-1]
    if base.endswith(".whl"):
        dist = base.split("-")[0]
        if w.engines.is_engine(dist):
            details.update({"source": "wheel", "engine": dist})
            w.emit(Mechanism.PIP, "pip install", cmd, None, content=text, details=details)
        else:
            harness(w, cmd, text, details)
        return
    is_path = (
        editable
        or text.startswith((".", "/", "~", "$", "@"))
        or "/" in text
        or spec.text.startswith("/@")
    )
    if is_path:
        cwd = w.state.cwd
        if cwd is None and text in (".", "./"):  # `cd "$(mktemp -d)"`, `cd -`: not known
            cwd = unknown("$PWD", "the working folder, not known before the script runs")
        folder = cwd if text in (".", "./") else (join(cwd, spec) if cwd is not None else spec)
        folder_only = Val(re.sub(r"\[.*\]$", "", folder.text), folder.how, folder.unknown)
        if mark_built(w, folder_only, cmd.line) or mark_built(w, Val(text), cmd.line):
            return
        engine = w.engine_folder(folder_only.text) if folder is not None else None
        if (
            engine is None
            and text.endswith((".tar.gz", ".zip"))
            and w.engines.is_engine(base.split("-")[0])
        ):
            engine = base.split("-")[0]
        if engine is None:  # `pip uninstall X`, then X from a local tree: a replacement
            leaf = folder_only.text.rstrip("/").rsplit("/", 1)[-1].lower()
            engine = next((n for n in w.uninstalled if n in leaf), None)
        if engine is None and folder_only.unknown:  # ... from a folder not known before
            engine = next((n for n in reversed(w.uninstalled) if w.engines.is_engine(n)), None)
        if engine is None and folder is not None:
            parts = folder_only.text.rstrip("/").split("/")
            engine = next((p for p in reversed(parts) if w.engines.is_engine(p)), None)
            if (
                engine is None
                and parts[-1] == "python"
                and len(parts) > 1
                and w.engines.is_engine(parts[-2])
            ):
                engine = parts[-2]
        if engine is None:
            harness(w, cmd, text, details)
            return
        replaced = w.uninstalled.get(engine.lower())
        details.update({"source": "local", "engine": engine, "folder": folder_only.display()})
        if replaced:
            details["replaces"] = replaced
        w.emit(
            Mechanism.PIP,
            "pip install",
            cmd,
            Target(
                folder_only.text,
                folder_only.display(),
                "engine-tree",
                engine,
                "an engine source tree",
            ),
            content=text,
            details=details,
        )
        return
    req = _requirement(text)
    if req is None or not w.engines.is_engine(req[0]):
        harness(w, cmd, text, details)
        return
    name, specifier = req
    index_pin = None if specifier else pinned_index(details.get("options", {}))
    pin = specifier or (f"pinned by the index {index_pin}" if index_pin else "latest")
    details.update({"source": "index", "engine": name, "pin": pin})
    w.emit(Mechanism.PIP, "pip install", cmd, None, content=text,
           pinned=specifier.startswith("==") or index_pin is not None,
           details=details)  # fmt: skip


_INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links")
_PINNED_INDEX = re.compile(r"/(?:[0-9a-f]{40}|[0-9a-f]{12,39}|v?\d+\.\d+(?:\.\d+)?[\w.+-]*)(?:/|$)")
"""A segment of an index URL that fixes what it serves: a commit (``wheels.vllm.ai/<sha>``,
full or abbreviated to 12+ digits) or a release (``releases/expanded_assets/v0.5.3-rocm``)."""


def pinned_index(options: dict[str, str]) -> str | None:
    """The index or find-links URL of a ``pip install`` that serves one build: a URL with a
    commit or a release in its path (vLLM's per-commit wheel index, a GitHub release's
    assets). A requirement without a version from such an index is pinned by it, not
    "latest". None when no option names one."""
    for key in _INDEX_OPTIONS:
        url = options.get(key, "")
        if url.startswith(("http://", "https://")) and _PINNED_INDEX.search(url.split("://", 1)[1]):
            return url
    return None


_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_SPEC = r"(?:==|!=|<=|>=|<|>|~=)[0-9]+(?:\.[0-9]+)*"
_PLAIN_REQUIREMENT = re.compile(
    rf"({_NAME})(?:\[{_NAME}(?:,{_NAME})*\])?((?:{_SPEC})(?:,{_SPEC})*)?", re.ASCII
)
"""A requirement of the plain kind scripts write (``pandas``, ``lm-eval[api]``,
``swebench==4.1.0``, ``datasets>=4.7.0,<5``): a project name as PEP 508 allows it, extras,
and comparisons with release numbers; no space, marker, URL, wildcard or pre-release."""


def _plain_requirement(text: str) -> tuple[str, str] | None:
    """(name, specifier) of a plain requirement (:data:`_PLAIN_REQUIREMENT`) as ``packaging``
    gives them (the name as written; the comparisons sorted, joined by commas), or None when
    ``packaging`` is to judge it (another form, ``~=`` of one number, an operator twice)."""
    m = _PLAIN_REQUIREMENT.fullmatch(text)
    if m is None:
        return None
    specs = m.group(2).split(",") if m.group(2) else []
    operators = [spec.rstrip("0123456789.") for spec in specs]
    if len(set(operators)) != len(operators):
        return None
    if any(op == "~=" and "." not in spec for op, spec in zip(operators, specs, strict=True)):
        return None
    return m.group(1), ",".join(sorted(specs))


@lru_cache(maxsize=4096)
def _requirement(text: str) -> tuple[str, str] | None:
    """(name, specifier) of a PEP 508 requirement, or None: not one (scripts repeat the same
    harness installs; parsing one is the dearest step of a ``pip install``). A plain one
    is read here (:func:`_plain_requirement`: the answer ``packaging`` gives); for any other
    ``packaging`` is imported at the first one (importing it costs more than a warm audit's
    analysis of one script)."""
    plain = _plain_requirement(text)
    if plain is not None:
        return plain
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    return req.name, str(req.specifier)


__all__ = ["Modification", "cmd_pip", "cmd_python"]
