"""Progress of long steps (downloads, pip and command steps, forge queries), on stderr.

The library reports here and never prints progress itself; no kind imports rich. On a terminal
(stderr is a TTY) a step is a live rich progress line (bytes and rate of a download; elapsed
time, the log file and the last line of output of a pip or command step; n of m forge
queries); off one (a CI log) each step prints plain lines: one when it starts (with its log
file, so a long step can be followed from the start) and one when it ends (with what it did and
how long it took). Announcements (a retry, a wait for a rate limit) are one line each, at once.
Nothing goes to stdout, so ``--format json`` output is untouched; :func:`silence`
(``--quiet``) turns all of it off. A program that never calls into the CLI (the library used
alone) gets the plain lines too: they are on stderr, one per step.

Usage::

    with progress.step("pip install triton==3.7.0", log=log_path) as s:
        for line in output:
            s.line(line)             # the last line of output, shown live on a terminal
    with progress.download(url, total=size) as d:
        d.advance(len(chunk))        # bytes
    with progress.count("upstream references", total=40) as c:
        c.advance()                  # one answered
        c.note("502 from the forge; retry 1 of 4 in 2 s")
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import IO, Any, TypeVar

T = TypeVar("T")

_state: dict[str, Any] = {"quiet": False, "live": None}  # live: the Step drawn on the terminal
_lock = threading.Lock()
_DRAIN_S = 5.0  # how long output is still read after the process exited


def silence(quiet: bool = True) -> None:
    """Turn progress off (``--quiet``), or on again with ``quiet=False``."""
    _state["quiet"] = quiet


def quiet() -> bool:
    """Whether progress is off."""
    return bool(_state["quiet"])


def _stderr_is_terminal() -> bool:
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def _write(text: str) -> None:
    """One plain line on stderr (redacted: a URL or a command line may hold a secret)."""
    from .redaction import redact

    with _lock:
        sys.stderr.write(redact(f"patchbay: {text}") + "\n")
        sys.stderr.flush()


def note(text: str) -> None:
    """Announce something at once (a retry, a wait): above the live step on a terminal."""
    if quiet():
        return
    live = _state["live"]
    if live is not None and live._live is not None:
        from .redaction import redact

        live._live.console.print(redact(f"patchbay: {text}"), markup=False, soft_wrap=True)
    else:
        _write(text)


def human_bytes(n: float) -> str:
    """``n`` bytes as ``512 B``, ``12.3 KiB``, ``4.0 MiB``, ``1.2 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # unreachable


class Step:
    """One long step; a context manager (see the module docstring). Thread-safe: workers of
    one step may call :meth:`advance` and :meth:`note` concurrently.

    Args:
        title: what is being done, e.g. ``pip install triton==3.7.0``.
        kind: ``step`` (elapsed time, last line), ``download`` (bytes, rate) or ``count``
            (n of ``total``).
        total: bytes to download, or items to count; None when unknown.
        log: the file that receives the step's whole output, named from the start.
    """

    def __init__(
        self, title: str, *, kind: str = "step", total: int | None = None, log: Any = None
    ) -> None:
        self.title = title
        self.kind = kind
        self.total = total
        self.log = None if log is None else os.fspath(log)
        self.done = 0
        self.last = ""
        self.exit_code: int | None = None  # of the step's process, set by :func:`run`
        self.started = 0.0
        self._live: Any = None
        self._task: Any = None

    # -- reporting --------------------------------------------------------------------------

    def advance(self, n: int = 1) -> None:
        """``n`` more bytes (download) or items (count) done."""
        with _lock:
            self.done += n
        if self._live is not None:
            self._live.update(self._task, completed=self.done)

    def line(self, text: str) -> None:
        """The step's latest line of output (shown live on a terminal)."""
        text = text.strip()
        if not text:
            return
        self.last = text
        if self._live is not None:
            from .redaction import redact

            self._live.update(self._task, last=_start_of(redact(text), 300))

    def note(self, text: str) -> None:
        """Announce something about this step at once (a retry, a wait)."""
        if quiet():
            return
        if self._live is not None:
            from .redaction import redact

            self._live.console.print(
                redact(f"patchbay: {self.title}: {text}"), markup=False, soft_wrap=True
            )
        else:
            _write(f"{self.title}: {text}")

    # -- the context manager ----------------------------------------------------------------

    def __enter__(self) -> Step:
        self.started = time.monotonic()
        if quiet():
            return self
        if _stderr_is_terminal():
            self._start_live()
        else:
            _write(self._start_text())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if quiet():
            return
        if self._live is not None:
            self._live.stop()
            self._live = None
            _state["live"] = None
        _write(self._end_text(failed=exc_type is not None))

    def _start_text(self) -> str:
        if self.kind == "download":
            size = f" ({human_bytes(self.total)})" if self.total else ""
            return f"{self.title}{size}"
        if self.kind == "count":
            return f"{self.title}: {self.total if self.total is not None else '?'} to do"
        return f"{self.title}: started" + (f" (log: {self.log})" if self.log else "")

    def _end_text(self, *, failed: bool) -> str:
        elapsed = time.monotonic() - self.started
        how = "failed after" if failed else "done in"
        if self.kind == "download":
            rate = self.done / elapsed if elapsed > 0 else 0.0
            return (
                f"{self.title}: {human_bytes(self.done)} {how} {elapsed:.1f} s "
                f"({human_bytes(rate)}/s)"
            )
        if self.kind == "count":
            of = f" of {self.total}" if self.total is not None else ""
            return f"{self.title}: {self.done}{of} {how} {elapsed:.1f} s"
        if self.exit_code:
            failed, how = True, f"exited with status {self.exit_code} after"
        last = f"; last line: {_start_of(self.last, 200)}" if failed and self.last else ""
        log = f" (log: {self.log})" if self.log else ""
        return f"{self.title}: {how} {elapsed:.1f} s{log}{last}"

    def _start_live(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TransferSpeedColumn,
        )
        from rich.table import Column

        from .redaction import RedactedStream

        # the stream as it is now: while live, rich sends sys.stderr to the display itself
        console = Console(file=RedactedStream("stderr", target=sys.stderr), highlight=False)
        # one line that always shows the elapsed time: a long title (a rebuild's whole argv)
        # and the last line of output are cut, with an ellipsis, to what is left of the width
        fixed = 12  # the spinner, the elapsed time and the gaps between columns
        if self.kind == "download":
            fixed += 24 + 22 + 12  # bar, bytes of total, rate
        elif self.kind == "count":
            fixed += 24 + 12  # bar, n/m
        room = max(console.width - fixed, 20)
        title_width = max(min(len(self.title), room * 3 // 5), 10)
        last_width = max(room - title_width, 8)

        def cut(width: int) -> Column:
            return Column(no_wrap=True, overflow="ellipsis", max_width=width, min_width=0)

        columns: list[Any] = [
            SpinnerColumn(),
            TextColumn("{task.description}", table_column=cut(title_width)),
        ]
        if self.kind == "download":
            columns += [BarColumn(bar_width=24), DownloadColumn(), TransferSpeedColumn()]
        elif self.kind == "count":
            columns += [BarColumn(bar_width=24), MofNCompleteColumn()]
        columns += [
            TimeElapsedColumn(),
            TextColumn(
                "{task.fields[last]}", style="dim", markup=False, table_column=cut(last_width)
            ),
        ]
        # stdout stays stdout (a command's own lines, --format json); stderr lines print above
        self._live = Progress(*columns, console=console, transient=True, redirect_stdout=False)
        if self.log:
            console.print(f"patchbay: {self.title}: log: {self.log}", markup=False, soft_wrap=True)
        self._task = self._live.add_task(self.title, total=self.total, last="")
        if _state["live"] is None:  # one live line at a time; a nested step prints plain lines
            self._live.start()
            _state["live"] = self
        else:
            self._live = None
            _write(self._start_text())


def _start_of(text: str, n: int) -> str:
    """``text``, cut to its first ``n`` characters with an ellipsis: a line is read from its
    start (pip's ``WARNING: Retrying ...``, a compiler's ``file:line: error``)."""
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def step(title: str, *, log: Any = None) -> Step:
    """A pip or command step: elapsed time, the log file, the last line of output."""
    return Step(title, kind="step", log=log)


def download(title: str, *, total: int | None = None) -> Step:
    """A download of ``total`` bytes (None: unknown): bytes so far and the rate."""
    return Step(title, kind="download", total=total)


def count(title: str, *, total: int | None) -> Step:
    """``total`` items (forge queries) done one by one: n of m."""
    return Step(title, kind="count", total=total)


class Later(Step):
    """A count of items shown only on a terminal, and only once it has run ``after`` seconds:
    a run that ends sooner prints nothing, and a CI log gets no line per item. Each
    :meth:`item` names the item that starts (the one before it is done); the live line shows
    n of m and the current item, and disappears at the end (the caller prints its summary).

    Args:
        title: what is counted, e.g. ``audit: scripts``.
        total: how many items.
        after: seconds before the line appears.
    """

    def __init__(self, title: str, *, total: int, after: float) -> None:
        super().__init__(title, kind="count", total=total)
        self.after = after
        self._off = False
        self._seen = 0  # items started

    def __enter__(self) -> Later:
        self.started = time.monotonic()
        self._off = quiet() or not _stderr_is_terminal()
        return self

    def item(self, name: str) -> None:
        """``name`` starts; the items before it are done."""
        if self._off:
            return
        done, self._seen = self._seen, self._seen + 1
        if self._live is None:
            if time.monotonic() - self.started < self.after:
                return
            if _state["live"] is not None:  # another live line is drawn: stay quiet
                self._off = True
                return
            self._start_live()
        self.done = done
        self.line(name)
        self._live.update(self._task, completed=done)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
            _state["live"] = None


def later(title: str, *, total: int, after: float | None = None) -> Later:
    """A :class:`Later` count: ``after`` seconds (default ``$PATCHBAY_PROGRESS_AFTER``, else
    2) before it shows on a terminal."""
    if after is None:
        try:
            after = float(os.environ.get("PATCHBAY_PROGRESS_AFTER", "2"))
        except ValueError:
            after = 2.0
    return Later(title, total=total, after=after)


def each(
    items: Sequence[T], title: str, name: Callable[[T], str], *, after: float | None = None
) -> Iterator[T]:
    """``items`` one by one, counted by a :func:`later` line (``name(item)`` shown as the
    current one): ``for rel, kind in progress.each(files, "audit: scripts", first)``."""
    with later(title, total=len(items), after=after) as shown:
        for item in items:
            shown.item(name(item))
            yield item


def follow(stream: IO[bytes], s: Step, write: Callable[[bytes], object]) -> threading.Thread:
    """Start a thread that reads ``stream`` line by line until its end, hands every line to
    ``write`` and shows it as the step's last line; returns the started thread. The stream is
    closed at its end; a sink closed under a straggler's output stops the copy quietly."""

    def copy() -> None:
        with stream:
            try:
                for raw in iter(stream.readline, b""):
                    write(raw)
                    s.line(raw.decode("utf-8", "replace"))
            except (OSError, ValueError):
                pass

    reader = threading.Thread(target=copy, name="patchbay-output", daemon=True)
    reader.start()
    return reader


def run(
    argv: list[str],
    *,
    title: str,
    log: Any = None,
    sink: IO[bytes] | None = None,
    timeout: float | None = None,
    text: bool = False,
    **popen: Any,
) -> subprocess.CompletedProcess[Any]:
    """Run ``argv`` as a :func:`step` whose last line of output is shown as it comes: the
    process's stdout (stderr joined to it) is read line by line, written to ``sink`` (a binary
    file) when given, else kept and returned.

    Args:
        argv: the command (an argument list).
        title, log: the step's title and log file (named from the start).
        sink: where the output goes (then ``stdout`` of the result is empty).
        timeout: seconds; past it the process is killed (as :func:`subprocess.run` does).
        text: return ``stdout`` decoded as UTF-8 (errors replaced) instead of bytes.
        popen: further :class:`subprocess.Popen` arguments (``cwd``, ``env``).

    Raises:
        subprocess.TimeoutExpired: ``timeout`` passed (the output so far is its ``output``).
        OSError: the command cannot be started (``FileNotFoundError``, ``PermissionError``).
    """
    kept: list[bytes] = []
    with step(title, log=log) as s:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            **popen,
        )

        assert proc.stdout is not None
        reader = follow(proc.stdout, s, sink.write if sink is not None else kept.append)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            reader.join(_DRAIN_S)
            out = b"".join(kept)
            raise subprocess.TimeoutExpired(
                argv, timeout or 0.0, output=out.decode("utf-8", "replace") if text else out
            ) from None
        except BaseException:  # Ctrl-C: the step's process does not outlive it
            proc.kill()
            proc.wait()
            raise
        # a process it left running may hold the pipe open: do not wait for it forever
        reader.join(_DRAIN_S)
        s.exit_code = code
    out = b"".join(kept)
    return subprocess.CompletedProcess(argv, code, out.decode("utf-8", "replace") if text else out)
