"""What a statement runs besides its own command: the scripts of the repository the walk
follows (``source x.sh``, ``bash x.sh``, ``python3 x.py``, ``./x.sh``), the files it finds
there, and the code it cannot see (:class:`~.model.Unresolved`, the audit's PB414): ``eval``
of a string known only at run time, a computed command name, a script that is not there."""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

from .model import Unresolved
from .streams import Cmd
from .syntax import Node, parse_shell
from .values import PIP_VAR, PYTHON_VAR, SCRIPT_DIR, State, Val

_COMPUTED_PART = re.compile(r"[$`<>(){}]")
_SCRIPT_FILE = re.compile(r"\.(?:sh|bash|py)$")
_LITERAL_WORD = re.compile(r"[A-Za-z_][\w.+-]*")


class RunningMixin:
    """Scripts run and code unseen, for :class:`~.walk.Walker` (it holds the state)."""

    def computed_name(self, name: Val, words: list[Val], node: Node) -> tuple[Val, list[Val]]:
        """The command of a statement whose name is known only at run time.

        A variable the script never sets, followed by a literal command (``$SUDO pip
        install x``, ``$TIMEOUT python3 y.py``), is read as bash reads it when the variable is
        empty: the command is the next word. An interpreter variable (``$PYTHON x.py``) is
        left to :meth:`interpreter_name`. Anything else runs code the walk cannot see: it is
        recorded as :class:`~.model.Unresolved` (the audit's PB414)."""
        if " " in name.text.strip() and not name.known:  # `$CMD` of "tool $ARGS": split
            first, *rest = name.text.split()
            if not _COMPUTED_PART.search(first.rsplit("/", 1)[-1]):
                why = name.unknown if _COMPUTED_PART.search(first) else ""
                return Val(first, "", why), [Val(r, "", name.unknown) for r in rest] + words
        if not _COMPUTED_PART.search(name.text.rsplit("/", 1)[-1]):
            return name, words  # `"$VENV/bin/aiperf"`: the folder is unknown, not the command
        if name.unknown.endswith("is not set by the script") and words:
            first = words[0]
            if first.known and _LITERAL_WORD.fullmatch(first.text):
                return first, words[1:]
        written = self.src.text(node.child_by_field_name("name") or node)
        var = re.sub(r"[^A-Za-z_]", "", written.split(":")[0]).upper()
        if PYTHON_VAR.search(var) or PIP_VAR.search(var):
            return name, words  # an interpreter: see interpreter_name
        self.unresolved(self.src.line(node), self.src.text(node), name.unknown)
        return name, words

    def unresolved(self, line: int, what: str, why: str) -> None:
        """Record a statement that runs code the walk cannot see (:class:`~.model.Unresolved`),
        once per line, in a script that names an engine and on a path the script runs (not
        in a function it never calls, whose words are all unknown)."""
        if not self.live or not self.names_engine:
            return
        path = self.chain[-1]
        if any(u.path == path and u.line == line for u in self.result.unresolved):
            return
        what = " ".join(what.split())
        if len(what) > 200:  # a long command line: its start names what it runs
            what = what[:197] + "..."
        self.result.unresolved.append(Unresolved(path, line, what, why))

    def follow(self, rel: Val, cmd: Cmd, *, fresh: bool) -> bool:
        """Walk a script of the same repository (``source x.sh``, ``bash x.sh``)."""
        path = self.repo_file(rel)
        if path is None or self.root is None:
            return False
        relpath = path.relative_to(self.root).as_posix()
        if relpath in self.chain or len(self.chain) > 8:
            return True
        try:
            text = self.inputs.read_text(path)
            source = parse_shell(text, relpath)
        except (OSError, ValueError):
            return False
        except Exception as exc:  # a syntax error in the followed file: a note, not a crash
            self.result.notes.append((cmd.line, f"{relpath} could not be read: {exc}"))
            return False
        self.result.sourced.append((cmd.line, relpath))
        if relpath not in self.result.followed_annotations:
            self.note_annotations(source, self.result.followed_annotations.setdefault(relpath, {}))
        saved = (self.src, self.chain, self.state)
        self.src, self.chain = source, (*self.chain, relpath)
        if fresh:
            state = State(exported=set(self.state.exported))
            state.vars = {k: v for k, v in self.state.vars.items() if k in self.state.exported}
            state.args = list(cmd.words[1:])
            self.state = state
        try:
            self.block(source.root)
        finally:
            sourced_state = self.state
            self.src, self.chain, self.state = saved
            if not fresh:
                self.state = sourced_state
        return True

    def cannot_follow(self, rel: Val, line: int, verb: str) -> None:
        """A script a statement runs (``bash x``, ``source x``, ``python3 x.py``, ``./x``) that
        the walk could not follow: :meth:`unresolved` when it may be code the audit never
        reads. That is a path of the script's own folder (``$(dirname "$0")/fix.py``, or a
        bare ``./x.sh`` or ``x.py`` before any ``cd``) with no such file in the repository (a
        relative path with folders, ``benchmarks/serve.py``, may be in any checkout), or a path
        known only at run time that cannot be placed in the repository: neither its known
        leading folders (``benchmarks/$NAME.sh``) nor its known trailing part
        (``$WS_PATH/sync.py``, ``$GITHUB_WORKSPACE/runners/x.py``) name something the
        repository has, whose scripts the audit reads on their own. A path elsewhere (a system
        tool, a checkout the script made, a path above the repository), a virtual
        environment's ``bin/activate`` and a file of ``$HOME`` are not the repository's."""
        if self.root is None:
            return
        text = rel.text
        if text.endswith("/bin/activate") or text.startswith(("$HOME/", "${HOME}/", "~/")):
            return
        if not rel.known:
            here = posixpath.dirname(self.chain[-1]) or "."
            text = text.replace(SCRIPT_DIR, here)  # the script's folder, repository-relative
            if not self.placed_in_repo(text):
                self.unresolved(line, f"{verb} {text}", rel.unknown)
            return
        if text.startswith(SCRIPT_DIR + "/"):
            inner = posixpath.join(posixpath.dirname(self.chain[-1]), text[len(SCRIPT_DIR) + 1 :])
        elif text in self.files:
            return  # a file the script wrote itself (a here-document), judged where written
        elif not self.moved and "/" not in text.removeprefix("./") and _SCRIPT_FILE.search(text):
            inner = posixpath.join(posixpath.dirname(self.chain[-1]), text)
        else:
            return
        inner = posixpath.normpath(inner)
        if inner.startswith("../"):
            return  # above the repository: the walk does not know where it runs from
        there = os.path.lexists(posixpath.join(self.root_text, inner))
        why = (
            "the file is there but cannot be read (not a regular file, a symlink loop, or no "
            "permission)"
            if there
            else "no such file is in the repository"
        )
        self.unresolved(line, f"{verb} {inner}", why)

    def placed_in_repo(self, text: str) -> bool:
        """A path known only in part names a folder or file of the repository (see
        :meth:`cannot_follow`)."""
        parts = text.split("/")
        computed = [k for k, part in enumerate(parts) if _COMPUTED_PART.search(part)]
        if not computed:
            return False
        here = posixpath.dirname(self.chain[-1])
        root = self.root_text
        lead = "/".join(parts[: computed[0]])
        if lead and not lead.startswith("/"):
            for base in ("", here) if lead.startswith(here + "/") or lead == here else (here, ""):
                if self.inputs.folder(Path(root, base, lead))[0]:
                    return True
        tail = "/".join(parts[computed[-1] + 1 :])
        if tail:
            for base in (here, ""):
                if self.inputs.isfile(posixpath.join(root, base, tail)):
                    return True
        return False

    def repo_file(self, val: Val) -> Path | None:
        """A file of the repository that a path word names (relative to the script's folder,
        the working folder, or the repository), or None."""
        if self.root is None or not val.known:
            return None
        cwd = self.state.cwd.text if self.state.cwd is not None else None
        key = (val.text, self.chain[-1], cwd)
        if key not in self._repo_files:
            self._repo_files[key] = self._repo_file(val.text)
        return self._repo_files[key]

    def _repo_file(self, text: str) -> Path | None:
        script_dir = posixpath.dirname(self.chain[-1])
        candidates = []
        if text.startswith(SCRIPT_DIR):
            candidates.append(posixpath.join(script_dir, text[len(SCRIPT_DIR) :].lstrip("/")))
        elif not text.startswith("/"):
            if self.state.cwd is not None and self.state.cwd.text.startswith(SCRIPT_DIR):
                rel = self.state.cwd.text[len(SCRIPT_DIR) :].lstrip("/")
                candidates.append(posixpath.join(script_dir, rel, text))
            candidates += [posixpath.join(script_dir, text), text]
        root = self.root_text
        for c in candidates:
            full = posixpath.normpath(posixpath.join(root, c))
            if not full.startswith(root + "/"):
                continue
            if self.inputs.isfile(full):
                return Path(full)
        return None

    @property
    def root_text(self) -> str:
        if self._root_text is None:
            self._root_text = str(self.root.resolve()) if self.root is not None else ""
        return self._root_text
