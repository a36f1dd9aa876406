"""The HTML report in a real browser: headless Chromium, driven over its DevTools protocol on
a pipe (``--remote-debugging-pipe``: no port, no extra Python package), renders a report with
long patch ids and long URLs at 1280 and 800 px. The DOM then says whether anything sticks out
of the window, where each id and URL was broken into lines, and whether each reference's state
sits on the reference's row."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import struct
import subprocess
import zlib
from collections import Counter
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from github_standin import GitHubStandIn, build_engine_history, serve_engine
from patchbay.patchset.loading import load_patchset
from patchbay.upstream import GitHubClient
from patchbay.upstream.report import Report, build_report
from patchbay.upstream.report_formats import render

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Chromium at /usr/bin/chromium (apt-get install chromium; .ci/run installs it)",
)

# the issue's rule: an id or URL may wrap after one of these, nowhere else
BREAK_AFTER = "/-_.#?&"
LONG_REPO = "acme-inference-platform/engine_kernels.experimental-fork"
LONG_URL = (
    "https://lists.example.org/archives/engine-devel/2026-July/thread.html"
    "?id=attention_backend&part=2#msg-000123456789"
)
PATCHES = {
    "fix-attention-backend-selection_for_long-context.sliding-window-v2": [
        f"https://github.com/{LONG_REPO}/pull/11",
        "acme/engine#17",
        LONG_URL,
        f"{LONG_REPO}#14",
    ],
    "short": ["acme/engine#11"],
    "PagedAttentionFallback.for-cuda_12.4-and-rocm_6.1": [
        "acme/engine#17",
        f"https://github.com/{LONG_REPO}/pull/12#issuecomment-1234567890",
    ],
    "late-fix_backport": ["https://github.com/acme/engine/pull/14"],  # bump: a needed commit
    "local-tuning": [],
}
WIDTHS = (1280, 800)
Rendered = dict[int, dict[str, Any]]
WAIT = 30.0  # seconds to wait for any one answer of the browser before giving up on it


def _patchset_yaml(pin: str) -> str:
    lines = [
        "schema: 1",
        "name: engine",
        "image: {reference: example.invalid/engine:1.0}",
        f"components:\n  - {{distribution: engine, repository: acme/engine, commit: {pin}}}",
        "targets:\n  engine: {package: engine}",
        "patches:",
    ]
    for n, (pid, refs) in enumerate(PATCHES.items()):
        lines += [f"  - id: {pid}", "    kind: replace", "    target: engine"]
        lines.append(f"    description: patch {n}")
        if refs:
            lines.append("    upstream: [" + ", ".join(json.dumps(r) for r in refs) + "]")
        else:
            lines.append("    upstream_status: {status: Inappropriate, reason: local tuning}")
        lines.append(f"    edits: [{{file: engine/p{n}.py, old: 'A = 1', new: 'A = 2'}}]")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """The report of :data:`PATCHES`, answered by the GitHub stand-in (``acme/engine`` and a
    copy of it under a long name)."""
    tmp = tmp_path_factory.mktemp("browser")
    ids = build_engine_history(tmp / "engine")
    folder = tmp / "patchset"
    folder.mkdir()
    (folder / "patchset.yaml").write_text(_patchset_yaml(ids["P"]))
    with GitHubStandIn() as server:
        engine = serve_engine(server, tmp / "engine", ids)
        fork = server.add_repo(LONG_REPO, str(tmp / "engine"))
        fork.pulls.update(engine.pulls)
        fork.issues.update(engine.issues)
        client = GitHubClient(server.url, cache_dir=tmp / "cache")
        return build_report([load_patchset(folder)], client, today=date(2026, 9, 1))


@pytest.fixture(scope="module")
def page(report: Report, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report as ``patchbay report --format html`` writes it (redacted, as every format)."""
    path = tmp_path_factory.mktemp("page") / "report.html"
    path.write_text(render(report, "html"), encoding="utf-8")
    return path


class DevTools:
    """Chromium in headless mode, spoken to over the DevTools protocol on a pipe: JSON messages
    ended by a NUL byte, commands on the browser's fd 3, answers and events on its fd 4."""

    def __init__(self, profile: Path) -> None:
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # above 9, so that bash's 3<& and 4>& cannot overwrite one with the other (dash's
        # redirections take one digit only: bash it is)
        child_in = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
        child_out = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
        for fd in (to_browser_r, from_browser_w):
            os.close(fd)
        args = [
            "--headless",
            "--no-sandbox",  # a local page of our own; containers often lack the sandbox
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            "about:blank",
        ]
        self.log = profile.with_suffix(".log")
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                ["/bin/bash", "-c", 'exec "$0" "$@" 3<&"$CDP_IN" 4>&"$CDP_OUT"', CHROMIUM, *args],
                pass_fds=(child_in, child_out),
                env={**os.environ, "CDP_IN": str(child_in), "CDP_OUT": str(child_out)},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        os.close(child_in)
        os.close(child_out)
        self.write, self.read = to_browser_w, from_browser_r
        self.buffer = b""
        self.events: list[dict[str, Any]] = []
        self.next_id = 0

    def _message(self) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            ready, _, _ = select.select([self.read], [], [], WAIT)
            chunk = os.read(self.read, 1 << 20) if ready else b""
            if not chunk:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise AssertionError(f"Chromium stopped answering; its log ends:\n{tail}")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (events that come first are kept)."""
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.write, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._message()
            if answer.get("id") != self.next_id:
                self.events.append(answer)
                continue
            assert "error" not in answer, f"{method}: {answer['error']}"
            return answer.get("result", {})

    def wait_for(self, method: str, session: str) -> None:
        """Wait for the event ``method`` of ``session`` (one already received counts)."""
        while True:
            for n, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self.events[n]
                    return
            self.events.append(self._message())

    def close(self) -> None:
        """Ask the browser to quit; kill it if it does not."""
        with contextlib.suppress(AssertionError, OSError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.write)
        os.close(self.read)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevTools]:
    """One headless Chromium for the module, with a fresh profile."""
    tools = DevTools(tmp_path_factory.mktemp("chromium") / "profile")
    yield tools
    tools.close()


# Runs in the page, given the ids and references to look for. It finds them by their text, not
# by the report's markup (the innermost table element whose whole text is one of them) and says:
# each element's horizontal extent; each id's text cut into the lines it was rendered on (one
# Range per character: a new line starts where a character sits lower than the one before);
# each reference's first line and the state text drawn at that height in the "state" column;
# each table row's cells in the "upstream" and "state" columns, with their tops.
MEASURE = """((ids, refs) => {
  const view = document.documentElement.clientWidth;
  const chars = (el) => {
    const out = [];
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (let i = 0; i < n.data.length; i++) {
        const r = document.createRange();
        r.setStart(n, i); r.setEnd(n, i + 1);
        const box = r.getBoundingClientRect();
        out.push({ch: n.data[i], top: box.top, height: box.height, x: box.left + box.width / 2});
      }
    }
    return out;
  };
  const lines = (list) => {
    const out = [];
    let top = null;
    for (const c of list) {
      if (top === null || c.top > top + c.height / 2) {
        out.push({top: c.top, text: ""});
        top = c.top;
      }
      out[out.length - 1].text += c.ch;
    }
    return out;
  };
  const holding = (text) => {
    const found = [...document.querySelectorAll("table tbody td, table tbody td *")]
      .filter((el) => el.textContent === text);
    return found.filter((el) => !found.some((other) => other !== el && el.contains(other)));
  };
  const column = (name) => {
    const th = [...document.querySelectorAll("thead th")].find((h) => h.textContent === name);
    const box = th.getBoundingClientRect();
    return [box.left, box.right];
  };
  const [upLeft, upRight] = column("upstream");
  const [stLeft, stRight] = column("state");
  const stateLines = lines([...document.querySelectorAll("table tbody")].flatMap(chars)
    .filter((c) => c.x > stLeft && c.x < stRight && c.ch.trim()));
  const wide = [];
  for (const el of document.body.querySelectorAll("*")) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    if (box.left < -0.5 || box.right > view + 0.5) {
      wide.push(`${el.tagName.toLowerCase()}.${el.className} ${box.left}..${box.right}`);
    }
  }
  const within = (el, left, right) => {
    const box = el.getBoundingClientRect();
    return box.left >= left - 1 && box.right <= right + 1;
  };
  return JSON.stringify({
    view, scrollWidth: document.documentElement.scrollWidth, wide,
    scrollers: [...document.querySelectorAll("body *")]
      .filter((el) => getComputedStyle(el).overflowX !== "visible")
      .map((el) => [el.scrollWidth, el.clientWidth]),
    ids: ids.map((text) => ({text, found: holding(text).map((el) => lines(chars(el))
      .map((l) => l.text))})),
    refs: refs.map((text) => ({text, found: holding(text).map((el) => {
      const first = chars(el)[0];
      const state = stateLines.find((l) => Math.abs(l.top - first.top) < 1);
      return state ? state.text : null;
    })})),
    rows: [...document.querySelectorAll("table tbody tr")].map((tr) => {
      const ref = [...tr.cells].filter((td) => within(td, upLeft, upRight));
      const state = [...tr.cells].filter((td) => within(td, stLeft, stRight));
      return {
        ref: ref.map((td) => td.textContent), state: state.map((td) => td.textContent),
        tops: [...ref, ...state].map((td) => td.getBoundingClientRect().top),
      };
    }),
  });
})"""


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _png_pixels(data: bytes) -> bytes:
    """The decompressed image data of a PNG (its IDAT chunks)."""
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return zlib.decompress(idat)


@pytest.fixture(scope="module")
def rendered(
    browser: DevTools, page: Path, report: Report, tmp_path_factory: pytest.TempPathFactory
) -> Rendered:
    """Width -> the page's measurements and its screenshot file, one browser tab for both."""
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    browser.send("Page.enable", session)
    shots = tmp_path_factory.mktemp("screenshots")
    ids = sorted({row.assessment.patch_id for row in report.rows} | set(_refs(report)))
    expression = f"{MEASURE}({json.dumps(ids)}, {json.dumps(sorted(set(_refs(report))))})"
    out: Rendered = {}
    for width in WIDTHS:
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=width,
            height=900,
            deviceScaleFactor=1,
            mobile=False,
        )
        browser.send("Page.navigate", session, url=page.as_uri())
        browser.wait_for("Page.loadEventFired", session)
        value = browser.send("Runtime.evaluate", session, expression=expression, returnByValue=True)
        assert "exceptionDetails" not in value, value["exceptionDetails"]
        measured = json.loads(value["result"]["value"])
        shot = browser.send("Page.captureScreenshot", session, format="png")
        png = shots / f"report-{width}.png"
        png.write_bytes(base64.b64decode(shot["data"]))
        out[width] = {**measured, "png": png}
    browser.send("Target.closeTarget", targetId=target)
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_screenshot_is_a_png_of_the_window(rendered: Rendered, width: int) -> None:
    data = rendered[width]["png"].read_bytes()
    assert _png_size(data) == (width, 900)
    assert len(set(_png_pixels(data))) > 2, "a blank screenshot"


@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_is_wider_than_the_window(rendered: Rendered, width: int) -> None:
    got = rendered[width]
    assert got["view"] == width
    assert got["wide"] == [], "elements past the window's edges"
    assert got["scrollWidth"] <= width
    for scroll_width, client_width in got["scrollers"]:
        assert scroll_width <= client_width, "the table scrolls sideways"


def _refs(report: Report) -> list[str]:
    """The references as the report shows them, one per (patch, reference)."""
    return [s.ref.short for row in report.rows for s in row.assessment.refs]


@pytest.mark.parametrize("width", WIDTHS)
def test_ids_and_urls_wrap_only_after_their_separators(rendered: Rendered, width: int) -> None:
    wrapped = set()
    for item in rendered[width]["ids"]:
        assert item["found"], f"{item['text']!r} is not the whole text of any table element"
        for lines in item["found"]:
            assert "".join(lines) == item["text"]
            for line in lines[:-1]:
                assert line[-1] in BREAK_AFTER, f"{item['text']!r} broken inside a word: {lines}"
            if len(lines) > 1:
                wrapped.add(item["text"])
    if width == 800:  # the long ones cannot fit on one line there: the check above is not idle
        assert LONG_URL in wrapped
        assert f"{LONG_REPO}#11" in wrapped


@pytest.mark.parametrize("width", WIDTHS)
def test_each_state_is_on_its_references_row(
    rendered: Rendered, report: Report, width: int
) -> None:
    got = rendered[width]
    # the state drawn level with the first line of each reference is that reference's state
    states = Counter((item["text"], state) for item in got["refs"] for state in item["found"])
    expected = Counter((s.ref.short, s.label) for row in report.rows for s in row.assessment.refs)
    assert states == expected
    # one row per reference (a patch without any: one row of dashes), both cells at one top
    rows = got["rows"]
    want: list[tuple[str, str]] = []
    for row in report.rows:
        refs = row.assessment.refs
        want += [(s.ref.short, s.label) for s in refs] if refs else [("—", "—")]
    assert [(r["ref"], r["state"]) for r in rows] == [([a], [b]) for a, b in want]
    for r in rows:
        assert r["tops"][0] == r["tops"][1], r
