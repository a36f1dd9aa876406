"""Dockerfiles: instructions from tree-sitter-dockerfile, ``RUN`` bodies walked as shell.

``ENV``/``ARG`` set variables (``ENV PYTHONPATH=...`` is injection), ``WORKDIR`` is the working
folder of every later ``RUN``, ``COPY``/``ADD`` into an installed location is a copy into the
engine, and each ``RUN`` (shell form, exec form, BuildKit here-document) is a shell script of its
own walked with the same state.
"""

from __future__ import annotations

import json
from pathlib import Path

from .commands import environment_change, run_command
from .engines import EngineNames
from .handlers import COMMANDS
from .model import Mechanism, ScriptAnalysis
from .syntax import Node, parse_dockerfile, parse_shell
from .values import Val
from .walk import Cmd, Walker


def analyse_dockerfile(
    text: str, path: str, engines: EngineNames, root: Path | None = None
) -> ScriptAnalysis:
    """The modifications a Dockerfile makes (see the module docstring)."""
    data, tree = parse_dockerfile(text)
    walker = Walker(parse_shell("", path), path, engines, root, commands=COMMANDS)
    walker.result.kind = "dockerfile"
    walker.script_text = text
    walker.note_annotations(parse_shell(text, path))

    def node_text(node: Node) -> str:
        return data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    workdir: Val | None = None
    for ins in tree.root_node.named_children:
        line = ins.start_point[0] + 1
        kind = ins.type
        if kind in ("env_instruction", "arg_instruction"):
            for pair in ins.named_children:
                parts = [c for c in pair.named_children]
                if len(parts) >= 2:
                    name = node_text(parts[0])
                    value = _expand(walker, node_text(parts[1]).strip("\"'"))
                    environment_change(walker, name, value, line, node_text(ins).split("\n")[0])
                    walker.set_var(name, [value], line)
                elif len(parts) == 1 and kind == "arg_instruction":
                    walker.state.vars.setdefault(node_text(parts[0]), [Val("")])
        elif kind == "workdir_instruction":
            paths = [c for c in ins.named_children if c.type == "path"]
            if paths:
                workdir = _expand(walker, node_text(paths[0]))
        elif kind in ("copy_instruction", "add_instruction"):
            paths = [c for c in ins.named_children if c.type == "path"]
            if len(paths) >= 2:
                dest = _expand(walker, node_text(paths[-1]))
                target = walker.target(dest, written=node_text(paths[-1]), cwd=workdir)
                cmd = Cmd(
                    "COPY", [], "COPY", {}, [], None, line, line, node_text(ins).split("\n")[0]
                )
                if target.root in ("site-packages", "engine-tree"):
                    tool = "COPY" if kind == "copy_instruction" else "ADD"
                    base = dest.text.rsplit("/", 1)[-1]
                    mechanism = (
                        Mechanism.INJECT
                        if base in ("sitecustomize.py", "usercustomize.py") or base.endswith(".pth")
                        else Mechanism.COPY
                    )
                    walker.emit(mechanism, tool, cmd, target, content=node_text(paths[0]))
        elif kind == "run_instruction":
            _run(walker, ins, data, workdir, node_text)
    result = walker.result
    result.modifications = sorted(walker.mods, key=lambda m: m.line)
    result.installs = list(walker.installs)
    result.inputs = walker.inputs.probes
    return result


def _expand(walker: Walker, text: str) -> Val:
    """``${SITE}/vllm`` with the variables set by earlier ``ENV``/``ARG``."""
    source = parse_shell(f"__x={text}\n", walker.path)
    node = source.root.named_children[0] if source.root.named_children else None
    value = node.child_by_field_name("value") if node is not None else None
    saved = walker.src
    walker.src = source
    try:
        return walker.word(value) if value is not None else Val(text)
    finally:
        walker.src = saved


def _run(walker: Walker, ins: Node, data: bytes, workdir: Val | None, node_text) -> None:
    walker.state.cwd = workdir
    walker.state.cwd_written = workdir.display() if workdir is not None else None
    shell = next((c for c in ins.named_children if c.type == "shell_command"), None)
    exec_form = next((c for c in ins.named_children if c.type == "json_string_array"), None)
    heredoc = next((c for c in ins.named_children if c.type == "heredoc_block"), None)
    offset = ins.start_point[0]
    if heredoc is not None:
        marker = node_text(shell) if shell is not None else ""
        lines = [node_text(c) for c in heredoc.named_children if c.type == "heredoc_line"]
        body = "\n".join(lines) + "\n"
        interpreter = marker.split()[-1] if len(marker.split()) > 1 else "sh"
        if interpreter.startswith("python"):
            cmd = Cmd(
                "python3",
                [Val("-")],
                "python3",
                {},
                [],
                None,
                offset + 1,
                heredoc.end_point[0] + 1,
                marker,
            )
            from .walk import Stdin

            cmd.stdin = Stdin("heredoc", body, line=offset + 1, end_line=heredoc.end_point[0] + 1)
            run_command(walker, cmd)
            return
        source = parse_shell(body, walker.path, offset + 1)
        _walk(walker, source)
        return
    if exec_form is not None:
        try:
            argv = json.loads(node_text(exec_form))
        except ValueError:
            return
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            return
        if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in ("sh", "bash") and argv[1] == "-c":
            _walk(walker, parse_shell(argv[2], walker.path, offset))
            return
        words = [_expand(walker, a) for a in argv]
        cmd = Cmd(
            words[0].text.rsplit("/", 1)[-1],
            words[1:],
            argv[0],
            {},
            [],
            None,
            offset + 1,
            offset + 1,
            node_text(ins),
        )
        run_command(walker, cmd)
        return
    if shell is not None:
        start = shell.start_byte
        text = data[start : shell.end_byte].decode("utf-8", "replace")
        _walk(walker, parse_shell(text, walker.path, shell.start_point[0]))


def _walk(walker: Walker, source) -> None:
    saved = walker.src
    walker.src = source
    try:
        walker.block(source.root)
    finally:
        walker.src = saved
