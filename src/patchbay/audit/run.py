"""``run_audit``: load the patchsets and waivers of a repository, scan its scripts, and judge.

Data flows one way: configuration, then patchsets (bad ones are bad input, exit 2), then
waivers (likewise), then the checks and the scanner, then severities and ignores from the
configuration. Nothing is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis.engines import DEFAULT_HARNESS
from ..environment.projects import DEFAULT_PROJECTS
from ..errors import InputError
from ..patchset.inputfiles import MAX_YAML_BYTES, PATCHSET_FILENAMES, read_input_text
from .cache import ScriptCache, cache_disabled
from .config import AuditConfig, LoadedConfig, load_config, matches_any
from .rules import Finding, Severity, Suppression, relative
from .scanner import EngineNames, scan_tree, script_files
from .store import CacheFolder

if TYPE_CHECKING:
    # what only a repository with patchsets or waivers (or a change under audit) needs is
    # imported when it does: YAML, the patchset model, the waiver parser, the checks
    from ..patchset.model import Patchset
    from ..waivers import Translation, Waiver
    from .changes import Change
    from .documents import DocumentCache
    from .waived import ScriptLink


@dataclass
class AuditResult:
    """Everything one audit found.

    Attributes:
        root: the audited folder.
        config: the configuration used (and its file).
        patchsets: the loaded patchsets.
        waivers: the parsed waivers.
        findings: every finding, sorted by file and line; suppressed ones (in-source review
            annotations, configured ignores) carry their :class:`Suppression`, waived ones
            (script findings a waiver covers) their :class:`~.rules.WaivedBy`.
        today: the date review dates were judged against.
        translations: translated copies of waivers and of documentation, not audited.
        scripts: waiver id -> the scripts of the repository it links.
        change: with ``--changed-since``, the change under audit (script findings are limited
            to its files; PB107 judges the patching it adds).
        notes: what of the cache was ignored and why (:mod:`.store`), one line each, for the
            command to print on stderr; not part of the report.
    """

    root: Path
    config: LoadedConfig
    patchsets: list[Patchset]
    waivers: list[Waiver]
    findings: list[Finding] = field(default_factory=list)
    today: date = field(default_factory=date.today)
    translations: list[Translation] = field(default_factory=list)
    scripts: dict[str, list[ScriptLink]] = field(default_factory=dict)
    change: Change | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def active(self) -> list[Finding]:
        """Findings that count (neither suppressed nor waived)."""
        return [f for f in self.findings if f.suppression is None and f.waived_by is None]

    @property
    def suppressed(self) -> list[Finding]:
        """Findings an annotation or a configured ignore suppresses."""
        return [f for f in self.findings if f.suppression is not None]

    @property
    def waived(self) -> list[Finding]:
        """Script findings a waiver covers (shown, at severity note, but not counted)."""
        return [f for f in self.findings if f.suppression is None and f.waived_by is not None]

    @property
    def shown(self) -> list[Finding]:
        """What the table and GitHub formats print: the findings that count, and the waived
        ones (marked), in file and line order."""
        return [f for f in self.findings if f.suppression is None]

    def failing(self, fail_on: Severity) -> list[Finding]:
        """Active findings at or above ``fail_on``."""
        return [f for f in self.active if f.severity.rank >= fail_on.rank]

    def counts(self) -> dict[str, int]:
        """Active findings per severity, and the numbers waived and suppressed."""
        out = {s.value: 0 for s in (Severity.ERROR, Severity.WARNING, Severity.NOTE)}
        for f in self.active:
            out[f.severity.value] += 1
        out["waived"] = len(self.waived)
        out["suppressed"] = len(self.suppressed)
        return out

    def to_json(self) -> dict[str, Any]:
        """The JSON document of ``--format json`` (``schema_version`` 1, the key of every
        patchbay document; ``version`` is its old name, kept)."""
        return {
            "schema_version": 1,
            "version": 1,
            "root": str(self.root),
            "config": None if self.config.path is None else str(self.config.path),
            "today": self.today.isoformat(),
            "counts": self.counts(),
            "findings": [_finding_json(f) for f in self.findings],
            "patchsets": [
                {"name": ps.name, "path": relative(ps.path, self.root), "patches": len(ps.patches)}
                for ps in self.patchsets
            ],
            "waivers": [_waiver_json(w, self.root, self.scripts) for w in self.waivers],
            "translations": [
                {
                    "path": relative(t.path, self.root),
                    "of": relative(t.original, self.root),
                    "language": t.language,
                }
                for t in self.translations
            ],
            "change": None if self.change is None else self.change.to_json(),
        }


def _finding_json(f: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {
        "code": f.code,
        "name": f.rule.name,
        "severity": f.severity.value,
        "path": f.path,
        "line": f.line,
        "end_line": f.end_line,
        "message": f.message,
        "chain": list(f.chain),
        "suppressed": None,
        "waived": None,
    }
    if f.suppression is not None:
        out["suppressed"] = {"kind": f.suppression.kind, "reason": f.suppression.justification}
    if f.waived_by is not None:
        out["waived"] = {
            "waiver": f.waived_by.id,
            "path": f.waived_by.path,
            "status": f.waived_by.status,
            "script": f.waived_by.script,
        }
    return out


def _waiver_json(w: Waiver, root: Path, scripts: dict[str, list[ScriptLink]]) -> dict[str, Any]:
    fm = w.front_matter
    return {
        "id": w.id,
        "path": relative(w.path, root),
        "legacy": w.legacy,
        "status": w.status,
        "patches": w.patches,
        "owner": fm.owner if fm else None,
        "review_by": fm.review_by.isoformat() if fm and fm.review_by else None,
        "expires": fm.expires.isoformat() if fm and fm.expires else None,
        "scripts": [{"path": link.path, "line": link.line} for link in scripts.get(w.id, [])],
        "fields": {
            name: {
                "status": r.status,
                "line": r.line,
                "where": r.where,
                "placeholders": [
                    {"line": p.line, "text": p.text, "row": p.row} for p in r.placeholders
                ],
            }
            for name, r in w.fields.items()
        },
        "references": [
            {
                "text": r.text,
                "line": r.line,
                "form": r.form,
                "reference": r.canonical,
                "repository": r.repository,
                "number": r.number,
                "commit": r.commit,
                "resolved": r.resolved,
            }
            for r in w.references
        ],
    }


def find_patchsets(
    root: Path, entries: list[str], *, explicit: bool, documents: DocumentCache | None = None
) -> list[Patchset]:
    """Load the patchsets named by ``entries`` (relative to ``root``): a patchset folder or
    YAML file, or a folder whose subfolders are patchsets. With ``documents``, a YAML file
    parsed before is taken from that cache (and validated as always).

    Raises:
        InputError: an explicitly configured entry that does not exist; any patchset that does
            not load (see :func:`~patchbay.patchset.loading.load_patchset`).
    """
    out: list[Patchset] = []
    for entry in entries:
        path = root / entry
        if not path.exists():
            if explicit:
                raise InputError(f"configured patchset path {entry!r} does not exist", file=root)
            continue
        if path.is_file() or any((path / n).is_file() for n in PATCHSET_FILENAMES):
            out.append(_load_patchset(path, documents))
            continue
        for sub in sorted(p for p in path.iterdir() if p.is_dir()):
            if any((sub / n).is_file() for n in PATCHSET_FILENAMES):
                out.append(_load_patchset(sub, documents))
    return out


def _load_patchset(path: Path, documents: DocumentCache | None) -> Patchset:
    """:func:`~patchbay.patchset.loading.load_patchset`, with the YAML document from
    ``documents``."""
    from ..patchset.loading import find_patchset_file, load_patchset, patchset_from_document

    if documents is None:
        return load_patchset(path)
    yaml_path = find_patchset_file(path)
    text = read_input_text(yaml_path, limit=MAX_YAML_BYTES)
    return patchset_from_document(documents.yaml_document(yaml_path, text))


def _config_line(loaded: LoadedConfig, key: str) -> int | None:
    """The line of a top-level key in the configuration file (None: unknown)."""
    from .config import _key_line

    if loaded.path is None:
        return None
    try:
        text = loaded.path.read_text(encoding="utf-8")
    except OSError:
        return None
    prefix = "tool.patchbay" if loaded.path.name == "pyproject.toml" else ""
    return _key_line(text, prefix, (key,))


_FAILED = frozenset({"error", "timeout", "401", "403"})
"""Request outcomes that are no answer about a reference (5xx too): a run of only these
means the forge was not reached, not that no patch is fixed upstream."""


def upstream_checks(
    patchsets: list[Patchset],
    root: Path,
    *,
    api_url: str | None = None,
    cache_dir: Path | None = None,
    forge_cache: bool = True,
    today: date | None = None,
    image_python: str | None = None,
    image_root: Path | None = None,
) -> list[Finding]:
    """PB501: every patch whose upstream verdict is ``remove`` (the fix is in the pinned
    commit), from :func:`patchbay.upstream.status.upstream_findings`. With the pinned image
    (``image_python`` or ``image_root``), its files are content evidence exactly as in
    ``patchbay report --python`` (:mod:`patchbay.upstream.evidence`): a patch only part of
    which the image ships is no PB501, as the report calls it ``refresh``. ``forge_cache``
    false: the forge's answers are neither read from nor written to ``cache_dir/github``.

    Raises:
        InputError: ``api_url`` is not an http(s) URL (exit 2).
        RateLimitError: the forge's rate limit outlasts the wait bound (exit 1).
        GitHubError: the forge answered no request (unreachable, bad credentials; exit 1).
    """
    from ..options import default_cache_dir
    from ..upstream import GitHubClient, GitHubError, upstream_findings
    from ..upstream.evidence import pinned_evidence

    evidence = {}
    if image_python is not None or image_root is not None:
        if image_python is not None and image_root is not None:
            raise InputError("give --python or --image-root, not both")
        for ps in patchsets:
            by_id = pinned_evidence(ps, python=image_python, root=image_root)
            evidence.update({(ps.name, pid): [ev] for pid, ev in by_id.items()})

    # the client upstream_findings would make, kept to see whether the forge answered at all
    forge = (cache_dir or default_cache_dir()) / "github" if forge_cache else None
    client = GitHubClient.from_env(api_url, cache_dir=forge)
    try:
        found = upstream_findings(
            patchsets,
            client=client,
            api_url=api_url,
            cache_dir=cache_dir,
            today=today,
            evidence=evidence,
        )
    finally:
        client.close()
    stats = client.stats
    answered = [
        s for s in stats.statuses if s not in _FAILED and not (s.isdigit() and int(s) >= 500)
    ]
    if stats.requests and not answered:
        seen = ", ".join(f"{n} x {s}" for s, n in sorted(stats.statuses.items()))
        raise GitHubError(
            client.redact(
                f"--upstream: the GitHub API at {client.api} "
                f"answered none of "
                f"{stats.requests} request(s) ({seen}); check --api-url, the network and "
                "GITHUB_TOKEN"
            ),
            url=client.api,
        )
    return [
        Finding.of("PB501", relative(path, root), line, f"patch {patch_id}: {message}")
        for path, line, patch_id, message in found
    ]


def run_audit(
    root: Path,
    *,
    config_file: Path | None = None,
    today: date | None = None,
    upstream: bool = False,
    api_url: str | None = None,
    cache_dir: Path | None = None,
    changed_since: str | None = None,
    pull_request: int | None = None,
    script_cache: bool = True,
    image_python: str | None = None,
    image_root: Path | None = None,
) -> AuditResult:
    """Audit a repository.

    Args:
        root: the repository (or any folder holding patchsets, waivers and scripts).
        config_file: a ``patchbay.toml`` or ``pyproject.toml``; default: looked up in ``root``.
        today: the date review dates are judged against (default: today).
        upstream: ask the forge about every patch's upstream references (PB501).
        api_url: the GitHub API base for ``upstream`` (default ``$PATCHBAY_GITHUB_API`` or
            api.github.com).
        cache_dir: the cache folder (default ``$XDG_CACHE_HOME/patchbay``, else
            ``~/.cache/patchbay``): the forge's answers for ``upstream`` under ``github/``,
            the findings of scripts analysed before under ``audit/`` (:mod:`.cache`).
        changed_since: audit the change since the merge base of this ref and HEAD (work tree
            included, see :mod:`.changes`): script findings of its files only, and PB107 for
            the patching it adds without a waiver of its own (:mod:`.pull_request`).
        pull_request: the change's pull request number (``change-waiver`` names its waiver).
        script_cache: reuse (and record) the findings of scripts analysed before, the parsed
            documents and, with ``upstream``, the forge's answers; off when False
            (``patchbay audit --no-cache``) or when ``PATCHBAY_NO_CACHE`` is set
            (:func:`.cache.cache_disabled`): then nothing is read from or written to the cache.
        image_python, image_root: with ``upstream``, the pinned image (content evidence for
            PB501, see :func:`upstream_checks`).

    Returns:
        The :class:`AuditResult`.

    Raises:
        InputError: bad configuration (a configured waiver folder that does not exist), a
            patchset that does not load, a malformed waiver, a bad ``api_url``; with
            ``changed_since``, a root in no git repository or a ref that names no commit.
        GitHubError: with ``upstream``, the forge answered nothing or its rate limit ran out.
    """
    try:
        root = root.resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
        raise InputError("is a symlink loop, not a folder", file=root) from None
    if not root.is_dir():
        raise InputError("not a folder", file=root)
    loaded = load_config(root, config_file)
    cfg = loaded.config
    change = None
    if changed_since is not None:
        from .changes import read_change

        change = read_change(root, changed_since, pull_request=pull_request)
    folder = _cache_folder(script_cache, cache_dir)
    documents = None
    if folder is not None and _has_documents(root, cfg):
        from .documents import DocumentCache

        documents = DocumentCache(folder, root)
    patchsets = find_patchsets(
        root, cfg.patchsets, explicit="patchsets" in loaded.keys, documents=documents
    )
    components = [c for ps in patchsets for c in ps.spec.components]
    engines = EngineNames.build(
        cfg.engine_names(c.distribution for c in components),
        [t.package for ps in patchsets for t in ps.spec.targets.values() if t.package],
        [c.repository for c in components if c.repository],
        [*DEFAULT_HARNESS, *cfg.harness],
    )
    names = {c.distribution: c.repository for c in components if c.repository}
    names.update({repo.rsplit("/", 1)[-1]: repo for repo in names.values()})
    names = {**DEFAULT_PROJECTS, **names, **cfg.upstream_names}
    waivers, translations = _read_waivers(
        root,
        loaded,
        names=names,
        projects=engines.distributions | engines.imports,
        documents=documents,
    )
    if documents is not None:
        documents.save()
    links = None
    if waivers or change is not None:  # (with none, no script is linked and none is waived)
        from .waived import script_links

        links = script_links(
            waivers,
            root,
            cfg,
            lambda: [rel for rel, _ in script_files(root, cfg.scripts, cfg.exclude)],
        )
    by_waiver = links.by_waiver if links is not None else {}
    today = today or date.today()
    scope = [list(cfg.scripts), list(cfg.exclude)]
    scripts = ScriptCache(folder, root, engines, scope) if folder is not None else None
    findings: list[Finding] = []
    if patchsets or waivers:  # (with neither, these checks have nothing to find)
        from .checks import adoption_hint, check_coverage, check_patchsets, check_waivers

        hint = adoption_hint(list(patchsets), list(waivers), root)
        findings += [
            *check_patchsets(patchsets, root),
            *check_coverage(patchsets, waivers, root, scripts=by_waiver),
            *check_waivers(
                waivers,
                root,
                today=today,
                warning_days=cfg.expiry_warning_days,
                patchset_hint=hint,
            ),
        ]
    findings += [
        *scan_tree(
            root,
            cfg.scripts,
            cfg.exclude,
            engines,
            scripts,
        ),
    ]
    if upstream:
        findings += upstream_checks(
            patchsets,
            root,
            api_url=api_url,
            cache_dir=cache_dir,
            forge_cache=script_cache and not cache_disabled(),
            today=today,
            image_python=image_python,
            image_root=image_root,
        )
    elif image_python is not None or image_root is not None:
        raise InputError("--python and --image-root are content evidence for --upstream")
    if change is not None:
        from .pull_request import limit_to_change

        findings = limit_to_change(findings, change)
    kept = _configured(findings, cfg)
    if links is not None:
        from .waived import waive

        waive(kept, links, root)
    if change is not None:
        from .pull_request import check_change

        assert links is not None
        kept += _configured(check_change(change, kept, patchsets, waivers, links, root, cfg), cfg)
    kept.sort(key=Finding.sort_key)
    notes = [] if folder is None else list(folder.notes)
    stores = [c.store for c in (documents, scripts) if c is not None]
    notes += [s.note for s in stores if s.note is not None]  # entries whose seal did not check
    return AuditResult(
        root, loaded, patchsets, waivers, kept, today, translations, by_waiver, change, notes
    )


def _has_documents(root: Path, cfg: AuditConfig) -> bool:
    """Whether the repository may hold a patchset or a waiver to parse (a configured path
    that exists): else the documents' cache is not even opened."""
    return any((root / e).exists() for e in cfg.patchsets) or any(
        (root / e).is_dir() for e in cfg.waivers
    )


def _cache_folder(wanted: bool, cache_dir: Path | None) -> CacheFolder | None:
    """The run's cache folder (one for the documents and the scripts: its notes once), or
    None when the cache is off."""
    if not wanted or cache_disabled():
        return None
    from ..options import default_cache_dir

    return CacheFolder((cache_dir or default_cache_dir()) / "audit")


def _configured(findings: list[Finding], cfg: AuditConfig) -> list[Finding]:
    """The findings with their configured severities (rules switched off left out) and the
    configured ignores as suppressions."""
    kept = []
    for finding in findings:
        severity = cfg.severity_of(finding.code)
        if severity is None:
            continue
        finding.severity = severity
        if finding.suppression is None:
            for ignore in cfg.ignore:
                if ignore.rule == finding.code and matches_any(finding.path, ignore.paths):
                    finding.suppression = Suppression("external", ignore.reason)
                    break
        kept.append(finding)
    return kept


def _read_waivers(
    root: Path,
    loaded: LoadedConfig,
    *,
    names: dict[str, str],
    projects: frozenset[str],
    documents: DocumentCache | None = None,
) -> tuple[list[Waiver], list[Translation]]:
    """The waivers of every configured waiver folder (a folder listed twice, or inside
    another, is read once), and the translated copies found next to them; with
    ``documents``, a waiver parsed before is taken from that cache.

    Raises:
        InputError: an explicitly configured folder that does not exist; a malformed waiver.
    """
    cfg = loaded.config
    explicit = "waivers" in loaded.keys
    if not any((root / entry).is_dir() for entry in cfg.waivers) and not explicit:
        return [], []  # no waiver folder: nothing to read (nor the waiver parser to import)
    from ..waivers import parse_waiver, read_waiver_text, waiver_files

    waivers: list[Waiver] = []
    translations: list[Translation] = []
    seen = _SeenFiles()
    for entry in cfg.waivers:
        folder = root / entry
        if explicit and not folder.is_dir():
            what = "is not a folder" if folder.exists() else "does not exist"
            raise InputError(
                f"configured waivers folder {entry!r} {what}",
                file=loaded.path or root,
                line=_config_line(loaded, "waivers"),
            )
        files = waiver_files(folder)
        for path in files.waivers:
            if seen.first(path):
                if documents is None:
                    waivers.append(parse_waiver(path, names=names, projects=projects))
                else:
                    text = read_waiver_text(path)
                    waivers.append(documents.waiver(path, text, names=names, projects=projects))
        for t in files.translations:
            if seen.first(t.path):
                translations.append(t)
    return waivers, translations


class _SeenFiles:
    """Files met so far, compared resolved (symbolic links and ``..`` followed, as
    :meth:`Path.resolve`): one ``stat`` each, and ``resolve`` (a system call per path
    component) only for files that share an inode with one met before."""

    def __init__(self) -> None:
        self._by_inode: dict[tuple[int, int] | Path, list[Path]] = {}

    def first(self, path: Path) -> bool:
        """True the first time ``path`` (resolved) is met."""
        try:
            st = os.stat(path)
            inode: tuple[int, int] | Path = (st.st_dev, st.st_ino)
        except OSError:  # missing, unreadable, a symlink loop: the reader says which
            inode = path
        met = self._by_inode.setdefault(inode, [])
        if met:
            key = path.resolve()
            if any(other.resolve() == key for other in met):
                return False
        met.append(path)
        return True
