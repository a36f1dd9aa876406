"""The one exception hierarchy of patchbay.

Every expected failure is a :class:`PatchbayError` carrying the file, the line, the patch id and
the reason, so the CLI can print it as one line and map it to an exit code. Anything else that
escapes is a bug and keeps its traceback.

Exit codes follow the convention of ``git apply`` and linters: 0 success or nothing to do,
1 refused or failed with nothing changed, 2 bad input or usage.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (apply's no-op path)
if TYPE_CHECKING:
    from os import PathLike
    from typing import Any


class PatchbayError(Exception):
    """Base class of expected failures.

    Args:
        reason: what went wrong, one sentence without a trailing period.
        file: the file the problem is in (a patchset YAML, a patch file, a target file).
        line: 1-based line in ``file``, when known.
        patch_id: the id of the patch concerned, when there is one.
        details: further lines (e.g. one per failing hunk), printed under the first line.
    """

    exit_code = 1

    def __init__(
        self,
        reason: str,
        *,
        file: str | PathLike[str] | None = None,
        line: int | None = None,
        patch_id: str | None = None,
        details: list[str] | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.file = file  # type: ignore[assignment]
        self.line = line
        self.patch_id = patch_id
        self.details = list(details or [])

    @property
    def file(self) -> str | None:
        """The file the problem is in, as a string (paths and bytes are converted)."""
        return self._file

    @file.setter
    def file(self, value: object) -> None:
        if value is None:
            self._file = None
        elif isinstance(value, bytes):
            self._file = value.decode("utf-8", "surrogateescape")
        else:
            self._file = str(value)

    def location(self) -> str:
        """``file:line`` (or ``file``, or empty) for the start of the message."""
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file

    def __str__(self) -> str:
        parts = [p for p in (self.location(), self.patch_id and f"patch {self.patch_id}") if p]
        head = ": ".join([*parts, self.reason])
        return "\n".join([head, *("  " + d for d in self.details)])


class InputError(PatchbayError):
    """Bad input: malformed YAML, a schema violation, a corrupt diff, a missing file (exit 2)."""

    exit_code = 2


class RefusedError(PatchbayError):
    """patchbay refused to act and changed nothing: wrong image, conflict, lock held (exit 1)."""

    exit_code = 1


class ApplyFailed(PatchbayError):
    """A write failed part-way; every file the run touched was restored (exit 1)."""

    exit_code = 1


class EnvironmentProbeError(PatchbayError):
    """The engine interpreter could not be run or did not answer as expected (exit 2)."""

    exit_code = 2


class SourceUnreachable(RefusedError):
    """A package index, a find-links URL or a git remote could not be reached, so a dry run
    that failed says nothing about the patch itself (exit 1, nothing changed).

    Args:
        place: what could not be reached, as a phrase (``index unreachable: HOST:PORT
            (REASON)``).
    """

    exit_code = 1

    def __init__(self, reason: str, *, place: str, **kwargs: Any) -> None:
        super().__init__(reason, **kwargs)
        self.place = place


class Interrupted(PatchbayError):
    """A run was stopped by a signal (SIGINT: exit 130, SIGTERM: exit 143, i.e. 128 plus the
    signal number, as a shell reports it) after its changes were rolled back."""

    def __init__(self, reason: str, *, signum: int, **kwargs: object) -> None:
        super().__init__(reason, **kwargs)  # type: ignore[arg-type]
        self.exit_code = 128 + signum


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by the SIGTERM handler a :class:`~patchbay.apply.transaction.
    Transaction` installs, so ``docker stop`` or a CI cancel rolls the run back as Ctrl-C does
    (a ``BaseException``: no ``except Exception`` on the way swallows it)."""
