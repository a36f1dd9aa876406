"""The audit's cache folder, and the sealed files in it that :mod:`.cache` and :mod:`.documents`
keep between runs: where they live, when a run believes them, and how they are written.

**The folder** (``$XDG_CACHE_HOME/patchbay/audit``, :class:`CacheFolder`) is trusted as ssh
trusts ``~/.ssh`` and its keys (OpenSSH's ``StrictModes``, ``"UNPROTECTED PRIVATE KEY FILE"``):
it and every file read from it must be a real folder or regular file (not a symbolic link),
owned by the user patchbay runs as, and not writable by group or others; the key file must not
even be readable by them. Anything else is ignored, with one note per run that says why and
what to do, and nothing is written to it or through it. Every file is opened relative to a
descriptor of the checked folder with ``O_NOFOLLOW``, so a folder swapped for a link after the
check is not followed either; the clean-up (:meth:`CacheFolder.prune`) looks at entries without
following links and removes only the user's own regular files. The folders above ``audit``
(``~/.cache`` may well be a link to another disk) are the user's business, not checked.

**The seal.** Each entry is stored with an HMAC-SHA256 (RFC 2104) over the store's kind, the
digest of the code that computed it (the analyser's, :func:`.cache.analyser_digest`, or the
parser's), its key (a content hash of what it was computed from) and its value, made with a
secret of 32 random bytes in ``key`` (mode 0600) in the folder. An entry is used only when its
seal checks: an entry edited by hand (findings emptied to call a patching script clean, a
waiver's fields rewritten) or copied from another user's cache is not believed. A plain hash
would not do: whoever edits the file can recompute it; the key is what an editor lacks. What
the seal cannot cover is a folder restored whole from somewhere else (a CI cache): it brings
its key with it, so the rule for CI is not to restore a cache that another ref can write
(docs/audit.md, "The cache"; ``patchbay audit --no-cache``).

**Content-addressed, shared by every clone** (:class:`SealedStore`). An entry's key is made of
what it was computed from (a script's repository-relative path, kind and bytes; a document's
text), never of where the repository is, and a file holds the entries of one code digest
(``scripts-<digest>.json``, ``documents-<digest>.json``) for every tree audited with it: a
second clone of the same commit in another folder, a CI checkout, a worktree find the same
file and the same entries. Each entry records the day it was last used; an entry not used for
:data:`KEEP_DAYS` is dropped when the file is next written, and a file not written for as long
(another patchbay version's, another set of engine names') is removed. A file is rewritten
(atomically, merged with what another run wrote meanwhile) only when an entry was added or
dropped, or when the days of the entries used are more than :data:`REFRESH_DAYS` old.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["KEEP_DAYS", "REFRESH_DAYS", "CacheFolder", "SealedStore"]

FORMAT = 3
"""The layout of a store file; a file of another layout is ignored (and replaced)."""

KEEP_DAYS = 30
"""Entries not used, and files not written, for this many days are removed."""

REFRESH_DAYS = 7
"""The day an entry was last used is written again once it is this many days old."""

KEY_NAME = "key"
"""The file of the secret the seals are made with (32 random bytes, hexadecimal)."""

_PREFIXES = ("scripts-", "documents-")
_TMP = ".tmp-"

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _today() -> int:
    return int(time.time() // 86400)


def _problem(st: os.stat_result, *, folder: bool, secret: bool = False) -> str | None:
    """Why a folder or file with this ``lstat``/``fstat`` is not trusted, or None."""
    if folder and not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if not folder and not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    uid = os.geteuid()
    if st.st_uid != uid:
        return f"is owned by uid {st.st_uid}, not by you (uid {uid})"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        return f"is writable by group or others (mode {mode:04o}; `chmod go-w` it)"
    if secret and mode & 0o077:
        return f"is readable by group or others (mode {mode:04o}; `chmod 600` it)"
    return None


class CacheFolder:
    """The audit's cache folder, trusted only as the module docstring says.

    Nothing is opened when it is made: each read or write opens the folder anew (a few system
    calls), checks it, and works relative to that descriptor. A folder or file found untrusted
    is left alone for the rest of the run.

    Args:
        path: the folder (``~/.cache/patchbay/audit``); created (mode 0700) on the first write.

    Attributes:
        notes: one line per folder or file ignored and why (each once), for the audit to print.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.notes: list[str] = []
        self._refused: set[str] = set()  # "" (the folder), or a file's name
        self._secret: bytes | None = None
        self._read_as: dict[str, tuple[int, int, int, int, int]] = {}  # name -> its stat read

    def note(self, name: str, why: str) -> None:
        """Record that ``name`` (a file of the folder, ``""`` for the folder) is ignored, and
        why; the first time only."""
        if name in self._refused:
            return
        self._refused.add(name)
        where = self.path / name if name else self.path
        self.notes.append(f"the audit's cache {where} {why}: ignored, nothing is written to it")

    @property
    def refused(self) -> bool:
        """The folder itself is not trusted (nothing is read from or written to it)."""
        return "" in self._refused

    def _open(self, *, create: bool) -> int | None:
        """A descriptor of the checked folder (to close), or None: missing (and not to be
        created), not creatable, or not trusted (noted)."""
        if self.refused:
            return None
        try:
            fd = os.open(self.path, _DIR)
        except FileNotFoundError:
            if not create:
                return None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                os.mkdir(self.path, 0o700)
            except FileExistsError:
                pass
            except OSError:
                return None  # a cache that cannot be written is skipped (it is only a cache)
            return self._open(create=False)
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                link = os.path.islink(self.path)
                self.note("", "is a symbolic link" if link else "is not a folder")
            return None
        why = _problem(os.fstat(fd), folder=True)
        if why is not None:
            os.close(fd)
            self.note("", why)
            return None
        return fd

    def _read(self, fd: int, name: str, *, secret: bool = False) -> bytes | None:
        """The bytes of file ``name`` of the folder ``fd``, when it is trusted (else noted)."""
        if name in self._refused:
            return None
        try:
            file = os.open(name, _READ, dir_fd=fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self.note(name, "is a symbolic link")
            return None
        try:
            st = os.fstat(file)
            why = _problem(st, folder=False, secret=secret)
            if why is not None:
                self.note(name, why)
                return None
            chunks = []
            while chunk := os.read(file, 1 << 20):
                chunks.append(chunk)
            self._read_as[name] = _identity(st)
            return b"".join(chunks)
        except OSError:
            return None
        finally:
            os.close(file)

    def read(self, name: str) -> bytes | None:
        """The bytes of the file ``name`` in the folder, or None: missing, unreadable, or not
        trusted (a link, another user's, writable by group or others: noted)."""
        fd = self._open(create=False)
        if fd is None:
            return None
        try:
            return self._read(fd, name)
        finally:
            os.close(fd)

    def unchanged_since_read(self, name: str) -> bool:
        """Whether the file ``name`` is still the one this run read last (same inode, size,
        times): no other run has replaced it since (every write is a new file renamed over
        the old one, so a new inode), nor has anything changed it in place."""
        seen = self._read_as.get(name)
        if seen is None or self.refused:
            return False
        fd = self._open(create=False)
        if fd is None:
            return False
        try:
            return _identity(os.stat(name, dir_fd=fd, follow_symlinks=False)) == seen
        except OSError:
            return False
        finally:
            os.close(fd)

    def _replaceable(self, fd: int, name: str) -> bool:
        """Whether the file ``name`` may be replaced: missing, or one this run would read."""
        if name in self._refused:
            return False
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        why = "is a symbolic link" if stat.S_ISLNK(st.st_mode) else _problem(st, folder=False)
        if why is not None:
            self.note(name, why)
            return False
        return True

    def _write_new(self, fd: int, data: bytes) -> str:
        """A new temporary file of the folder holding ``data`` (mode 0600); its name."""
        tmp = f"{_TMP}{os.getpid()}-{secrets.token_hex(6)}"
        file = os.open(tmp, _CREATE, 0o600, dir_fd=fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(file, view) :]
        except BaseException:
            os.close(file)
            os.unlink(tmp, dir_fd=fd)
            raise
        os.close(file)
        return tmp

    def write(self, name: str, data: bytes) -> bool:
        """Replace the file ``name`` with ``data`` atomically (a temporary file renamed over
        it), creating the folder if need be, then :meth:`prune`. Nothing is written to a
        folder or over a file that is not trusted (noted), and a cache that cannot be written
        is skipped (it is only a cache).

        Returns:
            True when the file was written.
        """
        fd = self._open(create=True)
        if fd is None:
            return False
        try:
            if not self._replaceable(fd, name):
                return False
            tmp = self._write_new(fd, data)
            try:
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except OSError:
                os.unlink(tmp, dir_fd=fd)
                raise
            self._prune(fd)
        except OSError:
            return False
        finally:
            os.close(fd)
        return True

    def secret(self, *, create: bool) -> bytes | None:
        """The key the seals are made with (:data:`KEY_NAME`), or None: there is none (and
        ``create`` is false, or it cannot be made), or it is not trusted (noted). A key file
        that holds no key (truncated) is replaced; two runs that make one at once agree on the
        first one linked in place."""
        if self._secret is not None:
            return self._secret
        fd = self._open(create=create)
        if fd is None:
            return None
        try:
            data = self._read(fd, KEY_NAME, secret=True)
            if data is not None:
                try:
                    key = bytes.fromhex(data.decode("ascii").strip())
                except ValueError:
                    key = b""
                if len(key) == 32:
                    self._secret = key
                    return key
                if not create or not self._replaceable(fd, KEY_NAME):
                    return None
                os.unlink(KEY_NAME, dir_fd=fd)
            elif KEY_NAME in self._refused:  # a key others can read or write: no seal holds
                self._refused.add("")
                return None
            elif not create:
                return None
            key = secrets.token_bytes(32)
            tmp = self._write_new(fd, key.hex().encode() + b"\n")
            try:
                os.link(tmp, KEY_NAME, src_dir_fd=fd, dst_dir_fd=fd)
            except FileExistsError:  # another run made one first: theirs
                os.unlink(tmp, dir_fd=fd)
                self._secret = None
                data = self._read(fd, KEY_NAME, secret=True)
                try:
                    key = bytes.fromhex((data or b"").decode("ascii").strip())
                except ValueError:
                    return None
                if len(key) != 32:
                    return None
            else:
                os.unlink(tmp, dir_fd=fd)
            self._secret = key
            return key
        except OSError:
            return None
        finally:
            os.close(fd)

    def prune(self) -> None:
        """Remove the store files not written for :data:`KEEP_DAYS` (and temporary files a
        killed run left, after a day). Links are not followed (nor removed), and only the
        user's own regular files are removed."""
        fd = self._open(create=False)
        if fd is None:
            return
        try:
            self._prune(fd)
        finally:
            os.close(fd)

    def _prune(self, fd: int) -> None:
        now = time.time()
        with os.scandir(fd) as it:
            names = [entry.name for entry in it]
        uid = os.geteuid()
        for name in names:
            if name.startswith(_PREFIXES) and name.endswith(".json"):
                cutoff = now - KEEP_DAYS * 86400
            elif name.startswith(_TMP):
                cutoff = now - 86400
            else:
                continue
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_uid == uid and st.st_mtime < cutoff:
                    os.unlink(name, dir_fd=fd)
            except OSError:
                continue


class SealedStore:
    """One file of the cache folder: values keyed by what they were computed from, each
    sealed (see the module docstring) and stamped with the day it was last used.

    Args:
        folder: the cache folder.
        kind: ``"scripts"`` or ``"documents"``: the file's name and a part of every seal.
        digest: the digest of the code the values were computed by (hexadecimal): it names
            the file (``<kind>-<digest[:24]>.json``) and is a part of every seal.

    Attributes:
        forged: entries found whose seal did not check (ignored and dropped).
    """

    def __init__(self, folder: CacheFolder, kind: str, digest: str) -> None:
        self.folder = folder
        self.kind = kind
        self.digest = digest
        self.name = f"{kind}-{digest[:24]}.json"
        self.path = folder.path / self.name
        self.today = _today()
        self.forged = 0
        self._entries: dict[str, object] = {}  # key -> {"p": value, "mac": hex, "used": day}
        self._used: set[str] = set()
        self._dropped: set[str] = set()
        self._dirty = False
        self._secret = folder.secret(create=False)
        self._load()

    def _load(self) -> None:
        data = self.folder.read(self.name)
        if data is None:
            return
        doc = _document(data, self.kind, self.digest)
        if doc is None:
            self._dirty = True  # another format's (or a broken) file: replaced when written
            return
        self._entries = doc["entries"]

    @property
    def note(self) -> str | None:
        """A line for the audit to print when entries whose seal did not check were met."""
        if not self.forged:
            return None
        what = "entry" if self.forged == 1 else "entries"
        return (
            f"the audit's cache {self.path} held {self.forged} {what} not sealed with your key "
            "(edited, or another user's): ignored"
        )

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        """The keys held (sealed or not: :meth:`get` checks)."""
        return iter(list(self._entries))

    def peek(self, key: str) -> object | None:
        """The value held under ``key`` as it is, its seal not checked (for tests and tools:
        what the audit uses goes through :meth:`get`)."""
        entry = self._entries.get(key)
        return entry.get("p") if isinstance(entry, dict) else None

    def last_used(self, key: str) -> int:
        """The day (since the epoch) the entry ``key`` was last used, 0 when unknown."""
        entry = self._entries.get(key)
        used = entry.get("used") if isinstance(entry, dict) else None
        return used if type(used) is int else 0

    def _seal(self, secret: bytes, key: str, value: object) -> str:
        message = json.dumps(
            [FORMAT, self.kind, self.digest, key, value],
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=True,
        )
        return hmac.new(secret, message.encode("ascii"), hashlib.sha256).hexdigest()

    def get(self, key: str) -> object | None:
        """The value stored under ``key`` when its seal checks (the entry is then kept for
        another :data:`KEEP_DAYS`), else None; an entry whose seal does not check is dropped
        and counted in :attr:`forged`."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._secret is None:  # no key: nothing can be checked (the entries go)
            self.drop(key)
            return None
        if not (isinstance(entry, dict) and isinstance(entry.get("mac"), str) and "p" in entry):
            self.drop(key)
            return None
        value = entry["p"]
        try:
            seal = self._seal(self._secret, key, value)
        except (TypeError, ValueError):
            seal = ""
        if not hmac.compare_digest(seal, entry["mac"]):
            self.forged += 1
            self.drop(key)
            return None
        self._used.add(key)
        return value

    def put(self, key: str, value: object) -> bool:
        """Store ``value`` (plain JSON data: what reading it back gives) under ``key``.

        Returns:
            False when it cannot be sealed (no key can be made, or the folder is not trusted):
            nothing is stored.
        """
        secret = self._secret or self.folder.secret(create=True)
        if secret is None:
            return False
        self._secret = secret
        self._entries[key] = {"p": value, "mac": self._seal(secret, key, value), "used": self.today}
        self._used.add(key)
        self._dropped.discard(key)
        self._dirty = True
        return True

    def drop(self, key: str) -> None:
        """Forget the entry ``key`` (also when the file is merged with another run's)."""
        if self._entries.pop(key, None) is not None:
            self._dirty = True
        self._used.discard(key)
        self._dropped.add(key)

    def save(self) -> bool:
        """Write the file when an entry was added or dropped, or the day of an entry used
        is :data:`REFRESH_DAYS` old; entries not used for :data:`KEEP_DAYS` are left out, and
        the entries another run wrote meanwhile are kept.

        Returns:
            True when the file was written.
        """
        for key in self._used:
            entry = self._entries.get(key)
            if isinstance(entry, dict) and self.today - self.last_used(key) >= REFRESH_DAYS:
                entry["used"] = self.today
                self._dirty = True
        if not self._dirty or self.folder.refused:
            return False
        theirs = None
        if not self.folder.unchanged_since_read(self.name):
            data = self.folder.read(self.name)  # what another run wrote since this one read it
            theirs = _document(data, self.kind, self.digest) if data is not None else None
        if theirs is not None:
            for key, entry in theirs["entries"].items():
                if key not in self._entries and key not in self._dropped:
                    self._entries[key] = entry
        cutoff = self.today - KEEP_DAYS
        entries = {k: e for k, e in self._entries.items() if self.last_used(k) >= cutoff}
        doc = {"format": FORMAT, "kind": self.kind, "digest": self.digest, "entries": entries}
        blob = json.dumps(doc, separators=(",", ":")).encode()
        if not self.folder.write(self.name, blob):
            return False
        self._entries = entries
        self._dirty = False
        return True


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What tells one version of a file from another without reading it (as git's index
    does): device, inode, size, modification and change times."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _document(data: bytes, kind: str, digest: str) -> dict | None:
    """The store file's JSON when it parses and has this layout, kind and digest, else None."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if (
        isinstance(doc, dict)
        and doc.get("format") == FORMAT
        and doc.get("kind") == kind
        and doc.get("digest") == digest
        and isinstance(doc.get("entries"), dict)
    ):
        return doc
    return None
