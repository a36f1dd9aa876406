"""Pristine file contents: the bytes the image shipped, before anybody edited or patched them.

``capture`` diffs edits against them and ``rebase`` merges from them. They come, in order, from

1. the ledger: a file patchbay patched has its original kept under ``blobs/`` (see ledger.py);
2. the installed file itself, when its bytes still match its ``RECORD`` hash;
3. a pristine copy of the same distribution version: a wheel (``--wheel FILE``, or one fetched
   with the engine's own pip and its index settings, as ``patch-package`` fetches a fresh copy
   with npm), or the component's git repository at the commit the patchset pins
   (``--from-git DIR|URL``).

A copy is accepted only when its bytes match the ``RECORD`` hash of what the image installed
(PEP 376/627): a wheel of another build, or a repository at another commit, is refused and the
file that differs is named. A file of an editable checkout starts from what the checkout's git
``HEAD`` holds (see ownership.py). A file no ``RECORD`` lists and no checkout tracks was not
shipped: it is new.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..apply.ledger import Ledger
from ..diff.gitapply import run_git
from ..digests import digest
from ..errors import InputError, RefusedError
from .installed import RecordEntry, not_installed, read_record
from .ownership import (
    Checkout,
    checkout_executable,
    checkout_of,
    checkout_original,
    editable_checkouts,
    record_owners,
)
from .targets import Environment

PIP_TIMEOUT_S = 600


@dataclass
class Shipped:
    """What the image's distributions installed, read from their ``RECORD`` files.

    Attributes:
        entries: absolute normalised path -> its hashed RECORD entry.
        listed: every path RECORD lists, hashed or not.
        owner: absolute path -> the distribution that installed it.
        sites: distribution -> the folder its RECORD paths are relative to.
        versions: distribution -> its installed version, for one found outside the
            environment's distributions (:meth:`add_owners_of`).
        checkouts: the environment's editable installs (:meth:`add_owners_of`).
    """

    entries: dict[str, RecordEntry] = field(default_factory=dict)
    listed: set[str] = field(default_factory=set)
    owner: dict[str, str] = field(default_factory=dict)
    sites: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    checkouts: list[Checkout] = field(default_factory=list)

    def add(
        self, name: str, dist_info: Path, entries: list[RecordEntry], unhashed: set[str]
    ) -> None:
        """Take in the RECORD of distribution ``name`` (its entries, hashed and not)."""
        self.sites[name] = str(dist_info.parent)
        for entry in entries:
            self.entries[entry.path] = entry
            self.owner[entry.path] = name
        for path in unhashed:
            self.owner.setdefault(path, name)
        self.listed.update(e.path for e in entries)
        self.listed.update(unhashed)

    def add_owners_of(self, paths: list[str], env: Environment) -> None:
        """Take in the RECORD of every other installed distribution that lists one of ``paths``
        (a file of a package that is not a component is still that package's file), and the
        environment's editable checkouts (see ownership.py)."""
        for name, (info, version, entries, unhashed) in record_owners(
            paths, set(self.listed)
        ).items():
            self.add(name, info, entries, unhashed)
            if version is not None:
                self.versions[name] = version
        self.checkouts = editable_checkouts(env)

    def relative(self, path: str) -> str:
        """``path`` as RECORD (and the wheel) names it: relative to its distribution's site."""
        site = self.sites[self.owner[path]]
        return Path(os.path.relpath(path, site)).as_posix()


def read_shipped(env: Environment, distributions: list[str]) -> Shipped:
    """The RECORD entries of ``distributions`` in ``env``.

    Raises:
        InputError: a RECORD is missing or malformed (file and line named).
        RefusedError: a distribution is not installed (with ``--root``: no dist-info folder
            of it in the tree).
    """
    shipped = Shipped()
    for name in distributions:
        dist_info = env.dist_info.get(name)
        if dist_info is None:
            raise not_installed(env, name)
        entries, unhashed = read_record(dist_info)
        shipped.add(name, dist_info, entries, unhashed)
    return shipped


def matches_record(entry: RecordEntry, data: bytes) -> bool:
    """Whether ``data`` has the hash RECORD gives for ``entry``."""
    return digest(entry.algorithm, data) == entry.digest


class PristineCopy:
    """A source of pristine files of one distribution version (a wheel, a repository)."""

    label: str = ""

    def candidates(self, distribution: str, rel: str) -> list[bytes]:
        """Contents this copy holds for the path ``rel`` that ``distribution`` installed
        (relative to the site folder, as RECORD names it); several when the copy cannot tell
        which file is meant; none when it is no copy of that distribution."""
        raise NotImplementedError

    def executable(self, distribution: str, rel: str, data: bytes) -> bool | None:
        """Whether this copy's file ``rel`` with the bytes ``data`` is executable (the
        owner's ``x``, the one bit git and wheels keep), or None when the copy does not hold
        that file."""
        return None


class WheelCopy(PristineCopy):
    """A wheel file: its members are named exactly as RECORD names the installed files, and
    its file name says which distribution it is (the wheel binary distribution format).

    Raises:
        InputError: the file is not a readable wheel (zip), or its name is no wheel name.
    """

    def __init__(self, path: Path) -> None:
        from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

        self.path = path
        self.label = f"wheel {path}"
        try:
            name = parse_wheel_filename(path.name)[0]
        except InvalidWheelFilename as exc:
            raise InputError(f"not a wheel file name: {exc}", file=path) from None
        self.distribution = canonicalize_name(name)
        self._canonical = canonicalize_name
        try:  # opened once: an engine's wheel lists thousands of members
            self._zip = zipfile.ZipFile(path)
            self._infos = {info.filename: info for info in self._zip.infolist()}
        except (OSError, zipfile.BadZipFile) as exc:
            raise InputError(f"not a readable wheel: {exc}", file=path) from None

    def candidates(self, distribution: str, rel: str) -> list[bytes]:
        info = self._member(distribution, rel)
        if info is None:
            return []
        try:
            return [self._zip.read(info)]
        except (OSError, zipfile.BadZipFile, zlib.error) as exc:
            raise InputError(f"not a readable wheel: {rel}: {exc}", file=self.path) from None

    def executable(self, distribution: str, rel: str, data: bytes) -> bool | None:
        """From the member's Unix mode (the high bits of ``external_attr``), which pip applies
        when it installs the wheel (any ``x`` bit set makes the installed file executable)."""
        info = self._member(distribution, rel)
        return None if info is None else bool((info.external_attr >> 16) & 0o111)

    def _member(self, distribution: str, rel: str) -> zipfile.ZipInfo | None:
        if self._canonical(distribution) != self.distribution:
            return None
        return self._infos.get(rel)


class FetchedWheels(PristineCopy):
    """The wheel of each installed ``distribution==version``, downloaded on first use with the
    engine's own pip (``pip download --no-deps``), so with the engine's index settings (its pip
    configuration and ``PIP_*`` variables), as ``patch-package`` asks npm for a fresh copy.

    Args:
        env: the engine environment (its interpreter and installed versions).
        folder: a scratch folder for the downloads.
        versions: installed versions of distributions beyond ``env.distributions`` (those
            :meth:`Shipped.add_owners_of` found).
    """

    def __init__(
        self, env: Environment, folder: Path, versions: dict[str, str] | None = None
    ) -> None:
        self.env, self.folder = env, folder
        self.versions = versions or {}
        self.label = "a wheel fetched with the engine's pip"
        self._wheels: dict[str, WheelCopy] = {}

    def candidates(self, distribution: str, rel: str) -> list[bytes]:
        wheel = self._wheels.get(distribution)
        if wheel is None:
            version = self.env.distributions.get(distribution) or self.versions.get(distribution)
            if version is None or self.env.python is None:
                return []
            wheel = self._wheels[distribution] = WheelCopy(
                self._download(self.env.python, distribution, version)
            )
            self.label = f"{wheel.path.name}, fetched with the engine's pip"
        return wheel.candidates(distribution, rel)

    def executable(self, distribution: str, rel: str, data: bytes) -> bool | None:
        wheel = self._wheels.get(distribution)
        if wheel is None and not self.candidates(distribution, rel):
            return None
        wheel = self._wheels.get(distribution)
        return None if wheel is None else wheel.executable(distribution, rel, data)

    def _download(self, python: str, distribution: str, version: str) -> Path:
        dest = Path(tempfile.mkdtemp(prefix="pip-", dir=self.folder))
        args = [python, "-m", "pip", "--no-input", "--disable-pip-version-check"]
        args += ["download", "--quiet", "--no-deps", "--only-binary", ":all:", "--dest"]
        args += [str(dest), f"{distribution}=={version}"]
        try:
            proc = subprocess.run(
                args, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            raise RefusedError(
                f"pip download {distribution}=={version} did not finish within "
                f"{PIP_TIMEOUT_S} s; give the wheel with --wheel FILE"
            ) from None
        wheels = sorted(dest.glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
            last = lines[-1].strip() if lines else f"exit {proc.returncode}"
            raise RefusedError(
                f"cannot fetch a pristine copy: pip download {distribution}=={version}: {last}; "
                "give the wheel with --wheel FILE, or the repository with --from-git",
                file=python,
            )
        return wheels[0]


class GitCopy(PristineCopy):
    """The component's repository at the commit the patchset pins. An installed path is looked
    up by suffix (``demo_engine/envs.py`` is ``src/demo_engine/envs.py`` in a src layout); when
    several files end the same way, each is a candidate and the RECORD hash decides.

    Args:
        source: a local repository folder, or a URL ``git clone`` understands (cloned into
            ``folder`` on first use, without a checkout).
        distribution: the component the repository is the source of.
        commit: the 40-hex commit.
        folder: a scratch folder for the clone.
    """

    def __init__(self, source: str, distribution: str, commit: str, folder: Path) -> None:
        self.source, self.commit, self.folder = source, commit, folder
        self.distribution = distribution
        self.label = f"repository {source} at {commit[:12]}"
        self._repo: Path | None = None
        self._names: list[str] = []

    def _open(self) -> Path:
        if self._repo is not None:
            return self._repo
        local = Path(self.source)
        if local.is_dir():
            repo = local.resolve()
            status, _ = run_git(["rev-parse", "--git-dir"], repo, ok=(0, 128))
            if status != 0:
                raise InputError(
                    "--from-git: not a git repository (give the repository's top folder)",
                    file=repo,
                )
        else:
            repo = Path(tempfile.mkdtemp(prefix="git-", dir=self.folder)) / "repo.git"
            run_git(["clone", "--quiet", "--bare", self.source, str(repo)], self.folder)
        status, _ = run_git(["cat-file", "-e", f"{self.commit}^{{commit}}"], repo, ok=(0, 1, 128))
        if status != 0 and not local.is_dir():
            run_git(["fetch", "--quiet", "origin", self.commit], repo)
        elif status != 0:
            raise RefusedError(
                f"commit {self.commit} is not in the repository (fetch it first)", file=repo
            )
        _, out = run_git(["ls-tree", "-r", "-z", "--name-only", self.commit], repo)
        self._names = [n for n in out.decode("utf-8", "surrogateescape").split("\0") if n]
        self._repo = repo
        return repo

    def candidates(self, distribution: str, rel: str) -> list[bytes]:
        if distribution != self.distribution:
            return []
        repo = self._open()
        found = [n for n in self._names if n == rel or n.endswith("/" + rel)]
        out = []
        for name in sorted(found, key=len):
            _, data = run_git(["cat-file", "blob", f"{self.commit}:{name}"], repo)
            out.append(data)
        return out

    def executable(self, distribution: str, rel: str, data: bytes) -> bool | None:
        """From the tree entry's mode (``100755``) of the file with these bytes."""
        if distribution != self.distribution:
            return None
        repo = self._open()
        for name in sorted((n for n in self._names if n == rel or n.endswith("/" + rel)), key=len):
            _, listing = run_git(["ls-tree", "-z", self.commit, "--", name], repo)
            mode = listing.split(b" ", 1)[0]
            _, blob = run_git(["cat-file", "blob", f"{self.commit}:{name}"], repo)
            if blob == data:
                return mode == b"100755"
        return None


class Pristine:
    """Finds the image's original bytes of installed files (see the module docstring).

    Args:
        env: the engine environment.
        ledger: its ledger (originals of the files patchbay patched).
        patchset_name: whose ledger entries count.
        shipped: the RECORD entries, or None when there is no interpreter (``--root``): the
            files on disk are then taken as shipped unless the ledger has their original.
        copies: pristine copies to try, in order, for a file whose bytes no longer match RECORD.
    """

    def __init__(
        self,
        env: Environment,
        ledger: Ledger,
        patchset_name: str,
        shipped: Shipped | None,
        copies: list[PristineCopy],
    ) -> None:
        self.env, self.ledger, self.shipped, self.copies = env, ledger, shipped, copies
        # how the file on disk is read (target, rel) -> bytes | None; a caller that reads it
        # too (capture's Tree) sets its own, so a large file is read once
        self.read_current: Callable[[str, str], bytes | None] | None = None
        self._firsts: dict[tuple[str, str], str | None] = {}
        self._modes: dict[tuple[str, str], int | None] = {}
        for entry in ledger.entries(patchset_name):
            for rec in entry.files:
                self._firsts.setdefault((rec.target, rec.path), rec.before)
                self._modes.setdefault((rec.target, rec.path), rec.mode_before)

    def from_ledger(self, target: str, rel: str) -> bool:
        """Whether the ledger holds the original of this file."""
        return (target, rel) in self._firsts

    def original(self, target: str, rel: str) -> tuple[bytes | None, str]:
        """The image's bytes of ``rel`` under ``target`` (None: the image has no such file),
        and where they came from (for messages).

        Raises:
            RefusedError: the ledger's copy is gone; a pristine copy's bytes do not match RECORD
                (the file is named); no source holds the file.
        """
        if (target, rel) in self._firsts:
            digest = self._firsts[(target, rel)]
            if digest is None:
                return None, "the ledger (patchbay created it)"
            data = self.ledger.blob(digest)
            if data is None:
                raise RefusedError(
                    f"the ledger's original of {rel} is missing or damaged "
                    f"({self.ledger.blob_dir / digest})",
                    file=self.ledger.path,
                )
            return data, "the ledger"
        path = os.path.normpath(os.path.join(self.env.roots[target], rel))
        on_disk = _read(path) if self.read_current is None else self.read_current(target, rel)
        if self.shipped is None:
            return on_disk, "the image"
        entry = self.shipped.entries.get(path)
        if entry is None:
            checkout = checkout_of(path, self.shipped.checkouts)
            if checkout is not None:
                return checkout_original(checkout, path)
            return None, "not in RECORD (a new file)"
        if on_disk is not None and matches_record(entry, on_disk):
            return on_disk, "the image (matches RECORD)"
        return self._from_copies(path, entry)

    def executable(self, target: str, rel: str, data: bytes | None) -> bool | None:
        """Whether the image's file ``rel`` (with the bytes ``data``, as :meth:`original`
        gave them) was executable: the mode the ledger kept from before patchbay's first patch
        of it, the editable checkout's ``HEAD``, or the pristine copy's (a wheel member's mode,
        a tree entry's), in that order; None when none of them can tell (a file no RECORD
        lists, no copy holding it).

        Raises:
            RefusedError: as :meth:`original`, when a copy must be fetched and cannot be.
        """
        if data is None:
            return None
        if (target, rel) in self._modes:
            mode = self._modes[(target, rel)]
            return None if mode is None else bool(mode & 0o100)
        path = os.path.normpath(os.path.join(self.env.roots[target], rel))
        if self.shipped is None:
            return None
        entry = self.shipped.entries.get(path)
        if entry is None:
            checkout = checkout_of(path, self.shipped.checkouts)
            return None if checkout is None else checkout_executable(checkout, path)
        distribution, shipped_rel = self.shipped.owner[path], self.shipped.relative(path)
        for copy in self.copies:
            found = copy.executable(distribution, shipped_rel, data)
            if found is not None:
                return found
        return None

    def _from_copies(self, path: str, entry: RecordEntry) -> tuple[bytes, str]:
        assert self.shipped is not None
        rel = self.shipped.relative(path)
        distribution = self.shipped.owner[path]
        refused = []
        for copy in self.copies:
            found = copy.candidates(distribution, rel)
            for data in found:
                if matches_record(entry, data):
                    return data, f"{copy.label} (matches RECORD)"
            if found:
                refused.append(copy.label)
        if refused:
            raise RefusedError(
                f"{rel}: the pristine copy from {refused[0]} does not match the RECORD hash of "
                f"what the image installed ({entry.algorithm}, RECORD line {entry.line}): another "
                "version or build; give the copy of this very image",
                file=path,
            )
        where = ", ".join(c.label for c in self.copies) or "no pristine copy was given"
        raise RefusedError(
            f"{rel} differs from RECORD and no pristine copy holds it ({where}); give the "
            "image's wheel with --wheel FILE or its repository with --from-git DIR|URL",
            file=path,
        )


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
