"""Symbolic values of the walk: words whose text is known, computed from an install root, or
unknown, and the walk's state (variables, working folder, positional arguments)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from .model import ENGINE_DIR, SITE, TMP

SCRIPT_DIR = "/@script"
"""Stands for the folder of the script being walked (``$(dirname "$0")``)."""

POSITIONAL = re.compile(r'"?\$\{?(?:@|\*|[1-9])\}?"?')
"""A word that is the positional arguments, or one of them (``"$@"``, ``$*``, ``"$1"``): what a
helper function was called with."""

PYTHON_VAR = re.compile(r"(?:^|_)PY(?:THON)?\d*(?:BIN|EXE|CMD)?(?:_|$)")
"""A variable named as a Python interpreter by a word of its name (``$PYTHON``, ``$PY_BIN``,
``$VLLM_PYTHON``), not by a substring (``$APPLY_PYTORCH_FIX`` is no interpreter)."""
PIP_VAR = re.compile(r"(?:^|_)(?:PIP\d*(?:BIN|CMD)?|UV)(?:_|$)")
"""A variable named as pip (``$PIP``, ``$PIP_CMD``, ``$UV``), not ``$PIPELINE_STEP``."""

MAX_ALTERNATIVES = 4
"""Values kept per variable (branches that assign different values); more are dropped."""


@dataclass(eq=True, unsafe_hash=True, slots=True)
class Val:
    """A word's value (a plain value: never changed once made; not ``frozen`` only because a
    frozen dataclass is four times slower to make, and the walk makes many).

    Attributes:
        text: the value; :data:`~.model.SITE`, :data:`~.model.TMP` and :data:`SCRIPT_DIR` stand
            for computed folders; an unknown part stays as written (``$1``).
        how: where a computed (install-root) part comes from, for a reader.
        unknown: why part of ``text`` is not known ("" when it is all known).
        origin: how an install root was computed (``computed with find_spec``), kept when
            ``how`` names the variable it went through.
    """

    text: str
    how: str = ""
    unknown: str = ""
    origin: str = ""

    def __add__(self, other: Val) -> Val:
        return Val(
            self.text + other.text,
            self.how or other.how,
            self.unknown or other.unknown,
            self.origin or other.origin,
        )

    @property
    def known(self) -> bool:
        return not self.unknown

    @property
    def installed(self) -> bool:
        """Under site-packages (computed or literal)."""
        t = self.text
        return t.startswith(SITE) or "/site-packages" in t or "/dist-packages" in t

    @property
    def temporary(self) -> bool:
        t = self.text
        return t.startswith((TMP, "/tmp/", "/var/tmp/", "/dev/shm/")) or t in ("/tmp", TMP)

    def display(self) -> str:
        """The text for people: computed folders named, never a placeholder."""
        return display(self.text)


def display(text: str) -> str:
    """``/@site/vllm`` -> ``<site-packages>/vllm``; ``/@tmp1`` -> ``<temporary folder>``."""
    out = text.replace(SITE, "<site-packages>").replace(SCRIPT_DIR, "<script folder>")
    out = re.sub(re.escape(ENGINE_DIR) + r"/([\w.]+\(\))", r"<the folder \1 returns>", out)
    while TMP in out:
        at = out.index(TMP)
        end = at + len(TMP)
        while end < len(out) and out[end].isdigit():
            end += 1
        out = out[:at] + "<temporary folder>" + out[end:]
    return out


def unknown(written: str, why: str) -> Val:
    return Val(written, "", why)


def join(base: Val, rel: Val) -> Val:
    """``rel`` taken from the folder ``base`` (an absolute ``rel`` stays)."""
    if rel.text.startswith(("/", "~")):
        return rel
    text = posixpath.normpath(posixpath.join(base.text, rel.text)) if rel.text else base.text
    return Val(text, base.how or rel.how, base.unknown or rel.unknown, base.origin or rel.origin)


def dirname(v: Val) -> Val:
    text = v.text.rstrip("/")
    parent = posixpath.dirname(text) if "/" in text else "."
    if text == SITE or (text.startswith(TMP) and "/" not in text[1:]):
        parent = posixpath.dirname(text)
    return Val(parent or "/", v.how, v.unknown, v.origin)


def basename(v: Val) -> Val:
    return Val(posixpath.basename(v.text.rstrip("/")), v.how, v.unknown, v.origin)


@dataclass
class State:
    """The walk's state at one point of the script.

    Attributes:
        vars: variable -> its possible values (arrays as several values in ``arrays``).
        arrays: array variable -> its items.
        exported: names exported to child processes.
        cwd: the working folder (None: the folder the script was started in).
        cwd_written: ``cwd`` as the script wrote it (``$VLLM_DIR``), for messages.
        args: the positional arguments (``$1``...).
        set_e: the script stops on a failure.
    """

    vars: dict[str, list[Val]] = field(default_factory=dict)
    arrays: dict[str, list[Val]] = field(default_factory=dict)
    exported: set[str] = field(default_factory=set)
    cwd: Val | None = None
    cwd_written: str | None = None
    args: list[Val] = field(default_factory=list)
    set_e: bool = False

    def copy(self) -> State:
        """A copy to walk a branch with. The value lists are shared, never changed in place
        (every assignment stores a new list, :meth:`merge` makes new ones), so a copy costs
        one dictionary copy, not one list per variable."""
        return State(
            dict(self.vars),
            dict(self.arrays),
            set(self.exported),
            self.cwd,
            self.cwd_written,
            list(self.args),
            self.set_e,
        )

    def merge(self, other: State) -> None:
        """Take in the values of another branch (each variable keeps the values of both, at
        most :data:`MAX_ALTERNATIVES`); a variable neither branch changed is skipped at once."""
        mine_vars = self.vars
        for name, values in other.vars.items():
            mine = mine_vars.get(name)
            if mine is values:
                continue
            if mine is None:
                mine_vars[name] = values
                continue
            merged = mine
            for v in values:
                if len(merged) >= MAX_ALTERNATIVES:
                    break
                if v not in merged:
                    if merged is mine:
                        merged = list(mine)
                    merged.append(v)
            if merged is not mine:
                mine_vars[name] = merged
        for name, items in other.arrays.items():
            self.arrays.setdefault(name, items)
        self.exported |= other.exported
        if self.cwd is None and other.cwd is not None:
            self.cwd, self.cwd_written = other.cwd, other.cwd_written
        self.set_e = self.set_e or other.set_e
