"""The crash corpus the machine itself holds: every shell script its system packages installed.

Debian installs about a thousand shell scripts under ``/usr``, ``/etc`` and
``/var/lib/dpkg/info`` (maintainer scripts, init scripts, wrappers, helpers of ``dpkg``, ``apt``,
``git``, ``gcc``...). None of them touches an inference engine, and no one here wrote them: the
audit must neither crash nor hang on any, and must give no finding on them. They are copied
into a folder of the test's (with their paths below ``/``), so the audit reads a tree as it
reads a repository.

Used by ``tests/audit/test_real_corpus.py`` and ``benchmarks/bench_corpus.py``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

TOPS = ("/usr", "/etc", "/var/lib/dpkg/info")
_SKIP = ("/usr/share/doc", "/usr/share/locale", "/usr/share/man", "/usr/include", "/usr/src")
_MAINTAINER = (".postinst", ".preinst", ".postrm", ".prerm", ".config")


def _is_shell(path: str, name: str) -> bool:
    if name.endswith((".sh", ".bash")):
        return True
    if "." in name and not name.endswith(_MAINTAINER):
        return False
    try:
        with open(path, "rb") as fh:
            first = fh.read(128).split(b"\n", 1)[0]
    except OSError:
        return False
    if not first.startswith(b"#!"):
        return False
    interpreter = first[2:].strip().split(b" ")
    words = [w.rsplit(b"/", 1)[-1] for w in interpreter]
    return any(w in (b"sh", b"bash", b"dash") for w in words[:2])


def system_scripts() -> list[str]:
    """The absolute paths of the regular files below :data:`TOPS` that are shell scripts (a
    ``.sh``/``.bash`` suffix, or a ``sh``/``bash``/``dash`` ``#!`` line), sorted."""
    found: list[str] = []
    for top in TOPS:
        for folder, dirs, files in os.walk(top):
            if folder.startswith(_SKIP):
                dirs[:] = []
                continue
            for name in files:
                path = os.path.join(folder, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                if _is_shell(path, name):
                    found.append(path)
    return sorted(found)


def copy_system_scripts(into: Path) -> list[str]:
    """Copy :func:`system_scripts` into ``into`` (``/usr/bin/x`` -> ``into/usr/bin/x.sh``: the
    audit's default globs read ``*.sh``); returns their paths relative to ``into``."""
    out = []
    for path in system_scripts():
        rel = path.lstrip("/")
        if not rel.endswith((".sh", ".bash")):
            rel += ".sh"
        dest = into / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(path, dest)
        except OSError:
            continue
        out.append(rel)
    return out
