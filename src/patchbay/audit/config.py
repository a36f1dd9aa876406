"""Configuration of ``patchbay audit``: ``patchbay.toml``, or ``[tool.patchbay]`` in
``pyproject.toml``.

``patchbay.toml`` (keys at the top level) wins over ``pyproject.toml``, as ``ruff.toml`` does
over ``[tool.ruff]``. Every key is optional::

    [tool.patchbay]
    patchsets = ["patchsets"]          # patchset folders or files, or folders of patchsets
    waivers = ["waivers", "docs/waiver"]   # waiver folders (or one string); see DEFAULT_WAIVERS
    scripts = ["**/*.sh", "**/Dockerfile*", "**/*.py"]   # what the scanner reads
    exclude = ["tests/**"]             # never scanned
    engines = ["my-engine"]            # engine packages besides the defaults and components
    harness = ["my-eval-client"]       # evaluation harnesses besides the defaults (not engines)
    fail-on = "error"                  # lowest severity that makes the run exit 1
    expiry-warning-days = 30           # PB204: review date within this many days
    upstream-names = {flashinfer = "flashinfer-ai/flashinfer"}   # `project #N` -> owner/repo
    change-waiver = "docs/waiver/{pr}.md"   # --changed-since: the waiver a pull request files

    [tool.patchbay.severity]
    PB205 = "error"                    # or "warning", "note", "off"

    [[tool.patchbay.ignore]]
    rule = "PB303"
    paths = ["patchsets/old/**"]       # default: everywhere
    reason = "kept for the 0.3 image until it is retired"   # required

Unknown keys, unknown rule codes and ignores without a reason are bad input (exit 2), named by
``file:line``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from ..errors import InputError
from ..patchset.placeholders import placeholder_in
from ..patchset.validation import FieldError, check_field, convert, problem_of
from .rules import RESERVED, RULES, Severity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_ENGINES = (
    "vllm",
    "sglang",
    "sgl-kernel",
    "aiter",
    "triton",
    "pytorch-triton-rocm",
    "torch",
    "flashinfer",
    "flashinfer-python",
    "flash-attn",
    "xformers",
    "tensorrt-llm",
    "lmdeploy",
)
"""Engine distributions the scanner knows without configuration; a patchset's ``components``
and the ``engines`` key add more."""

DEFAULT_SCRIPTS = (
    "**/*.sh",
    "**/*.bash",
    "**/Dockerfile",
    "**/Dockerfile.*",
    "**/*.Dockerfile",
    "**/*.dockerfile",
    "**/Containerfile",
    "**/*.py",
)
"""Files the scanner reads; files without a suffix whose first line is a shell or Python
shebang are read too."""

DEFAULT_WAIVERS = ("waivers", "docs/waiver", "docs/waivers")
"""Folders of waiver documents read without configuration (the ones that exist): patchbay's
own ``waivers/``, and the ``docs/waiver/`` of benchmark repositories that keep waivers named
after pull requests (``docs/waiver/2508.md``)."""

SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".eggs",
        "build",
        "dist",
        "site-packages",
    }
)
"""Folders never walked (virtual environments, caches, build output)."""

SeverityName = Literal["error", "warning", "note"]


class Ignore(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A rule switched off for some paths, with the reason (required)."""

    rule: str
    paths: list[str] = msgspec.field(default_factory=lambda: ["**"])
    reason: str

    def __post_init__(self) -> None:
        check_field("rule", _check_code, self.rule)
        if len(self.reason.strip()) < 3 or placeholder_in(self.reason):
            raise FieldError("reason", "an ignore needs a reason (a sentence, not a placeholder)")
        self.reason = self.reason.strip()


class AuditConfig(
    msgspec.Struct,
    forbid_unknown_fields=True,
    kw_only=True,
    # only the spelled keys (fail-on), so that a near miss (fail_on) is an unknown key
    rename={
        "upstream_names": "upstream-names",
        "fail_on": "fail-on",
        "expiry_warning_days": "expiry-warning-days",
        "change_waiver": "change-waiver",
    },
):
    """The audit's settings (defaults apply to every key that is absent)."""

    patchsets: list[str] = msgspec.field(default_factory=lambda: ["patchsets"])
    # one folder may be given as a string
    waivers: str | list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_WAIVERS))
    scripts: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_SCRIPTS))
    exclude: list[str] = msgspec.field(default_factory=list)
    engines: list[str] = msgspec.field(default_factory=list)
    harness: list[str] = msgspec.field(default_factory=list)
    upstream_names: dict[str, str] = msgspec.field(default_factory=dict)
    fail_on: SeverityName = "error"
    expiry_warning_days: Annotated[int, msgspec.Meta(ge=0)] = 30
    severity: dict[str, Literal["error", "warning", "note", "off"]] = msgspec.field(
        default_factory=dict
    )
    ignore: list[Ignore] = msgspec.field(default_factory=list)
    change_waiver: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.waivers, str):
            self.waivers = [self.waivers]
        if not self.waivers:
            raise FieldError("waivers", "name at least one waiver folder")
        for key, globs in (("scripts", self.scripts), ("exclude", self.exclude)):
            for glob in globs:
                check_field(key, _relative_glob, glob)
        for code in self.severity:
            check_field("severity", _check_code, code)
        for name, repo in self.upstream_names.items():
            if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
                raise FieldError("upstream-names", f"{name}: {repo!r} is not owner/repo")
        if self.change_waiver is not None:
            check_field("change-waiver", _pull_request_template, self.change_waiver)

    def new_waiver_folder(self, root: Path) -> str:
        """Where ``patchbay waiver new`` writes: the first configured waiver folder that exists
        under ``root``, else the first one."""
        return next((w for w in self.waivers if (root / w).is_dir()), self.waivers[0])

    def change_waiver_path(self, pull_request: int) -> str | None:
        """The waiver file a pull request files (``change-waiver`` with ``{pr}`` replaced), or
        None when ``change-waiver`` is not set."""
        if self.change_waiver is None:
            return None
        return self.change_waiver.replace("{pr}", str(pull_request))

    def severity_of(self, code: str) -> Severity | None:
        """The effective severity of a rule, or None when it is switched off."""
        value = self.severity.get(code)
        if value == "off":
            return None
        return Severity(value) if value else RULES[code].severity

    def engine_names(self, extra: Iterable[str] = ()) -> frozenset[str]:
        """Normalised engine distribution names: defaults, ``engines`` and ``extra``."""
        return frozenset(normalise_name(n) for n in (*DEFAULT_ENGINES, *self.engines, *extra) if n)


def normalise_name(name: str) -> str:
    """PEP 503 normalisation (``Flash_Attn`` -> ``flash-attn``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _relative_glob(glob: str) -> str:
    """A glob of the ``scripts``/``exclude`` settings: relative to the audited root, as
    ``.gitignore`` patterns are; one that starts with ``/`` or climbs out with ``..`` could
    never match a file of the tree, and an audit that reads nothing must not say "clean"."""
    if not glob:
        raise ValueError("an empty glob matches nothing")
    if glob.startswith("/") or ".." in glob.split("/"):
        raise ValueError(f"{glob!r}: globs are relative to the repository (no leading /, no ..)")
    return glob


def _pull_request_template(value: str) -> str:
    rest = value.replace("{pr}", "")
    if rest == value or "{" in rest or "}" in rest:
        raise ValueError(f"{value!r} must hold {{pr}} (the pull request number) and no other {{}}")
    if value.startswith("/") or "\\" in value or ".." in value.split("/"):
        raise ValueError(f"{value!r} must be a path relative to the repository, with '/'")
    return value


def _check_code(code: str) -> str:
    if code in RESERVED:
        raise ValueError(f"{code} is reserved ({RESERVED[code]}) and not implemented yet")
    if code not in RULES:
        raise ValueError(f"unknown rule {code!r} (rules: PB101-{max(RULES)})")
    return code


@dataclass
class LoadedConfig:
    """The settings, the file they came from (None: defaults) and the keys that file sets
    (``"patchsets" in keys``: the folders were named, so a missing one is an error)."""

    config: AuditConfig
    path: Path | None
    keys: frozenset[str] = frozenset()


def load_config(root: Path, config_file: Path | None = None) -> LoadedConfig:
    """Find and read the audit configuration.

    Args:
        root: the audited folder; ``patchbay.toml``, then ``pyproject.toml`` are looked for
            there.
        config_file: an explicit ``patchbay.toml`` (keys at the top level) or ``pyproject.toml``
            (keys under ``[tool.patchbay]``).

    Raises:
        InputError: unreadable file, invalid TOML, an unknown key, a value of the wrong type, an
            unknown or reserved rule code, an ignore without a reason; with ``file:line``.
    """
    if config_file is not None:
        if not config_file.is_file():
            raise InputError("configuration file not found", file=config_file)
        candidates = [config_file]
    else:
        candidates = [root / "patchbay.toml", root / "pyproject.toml"]
    for path in candidates:
        if not path.is_file():
            continue
        text = _read(path)
        data = _parse(text, path)
        in_pyproject = path.name == "pyproject.toml"
        if in_pyproject:
            tool = data.get("tool", {})
            if not isinstance(tool, dict):
                line = _key_line(text, "", ("tool",))
                raise InputError("tool must be a table ([tool])", file=path, line=line)
            section = tool.get("patchbay")
        else:
            section = data
        if section is None:
            if config_file is not None:
                return LoadedConfig(AuditConfig(), path)
            continue
        prefix = "tool.patchbay" if in_pyproject else ""
        if not isinstance(section, dict):
            line = _key_line(text, "tool", ("patchbay",))
            raise InputError(f"[{prefix}] must be a table", file=path, line=line)
        try:
            return LoadedConfig(convert(section, AuditConfig), path, frozenset(section))
        except msgspec.ValidationError as exc:
            raise _config_error(exc, section, text, path, prefix) from None
    return LoadedConfig(AuditConfig(), None)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", file=path) from None


def _parse(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        line = int(m.group(1)) if m else None
        raise InputError(f"invalid TOML: {reason}", file=path, line=line) from None


def _config_error(
    exc: msgspec.ValidationError, section: dict[str, Any], text: str, path: Path, prefix: str
) -> InputError:
    loc, msg = problem_of(exc, AuditConfig, section)
    where = ".".join(str(p) for p in loc)
    return InputError(
        f"audit configuration: {where}: {msg}", file=path, line=_key_line(text, prefix, loc)
    )


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?")


def _key_line(text: str, prefix: str, loc: tuple[Any, ...]) -> int | None:
    """The line of a configuration key: TOML parsers give values without positions, so this
    follows the table headers (``[a.b]``, the n-th ``[[a.b]]``) and finds ``key =``."""
    lines = text.splitlines()
    table = prefix
    want_table = prefix
    keys = [p for p in loc if isinstance(p, str)]
    index = next((p for p in loc if isinstance(p, int)), None)
    # an array of tables entry ("ignore", 2, "reason") lives under the 3rd [[...ignore]]
    if index is not None and keys:
        want_table = ".".join(p for p in (prefix, keys[0]) if p)
        keys = keys[1:]
    elif len(keys) > 1:
        want_table = ".".join(p for p in (prefix, keys[0]) if p)
        keys = keys[1:]
    seen_arrays = -1
    fallback = None
    for n, line in enumerate(lines, start=1):
        m = _HEADER.match(line)
        if m:
            table = m.group(2)
            if fallback is None and table == ".".join(p for p in (prefix, str(loc[0])) if p):
                fallback = n  # [tool.patchbay.severity] itself
            if m.group(1) == "[[" and table == want_table:
                seen_arrays += 1
                if index is not None and seen_arrays == index:
                    fallback = n
            continue
        in_table = table == want_table and (index is None or seen_arrays == index)
        if in_table and keys and re.match(rf"\s*\"?{re.escape(keys[0])}\"?\s*=", line):
            return n
        if table == prefix and re.match(rf"\s*\"?{re.escape(str(loc[0]))}\"?\s*=", line):
            fallback = fallback or n
    return fallback


@lru_cache(maxsize=512)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob over ``/``-separated relative paths as a regex: ``**`` crosses folders, ``*``
    and ``?`` do not; a pattern without ``/`` matches at any depth (as in ``.gitignore``)."""
    if "/" not in pattern:
        pattern = "**/" + pattern
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


@lru_cache(maxsize=64)
def globs_regex(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """The globs as one regex: its ``match`` is :func:`matches_any` (None: no glob)."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{glob_regex(p).pattern})" for p in patterns))


def matches_any(path: str, patterns: Iterable[str]) -> bool:
    """True when the relative ``path`` matches one of the globs (see :func:`glob_regex`)."""
    return any(glob_regex(p).match(path) for p in patterns)
