"""Real HTTP servers on 127.0.0.1 for the tests: a package index, a download host, a forge.

``Server`` serves routes (path -> list of responses, the last one repeated) from a thread;
a response may fail with a status, answer late (a timeout for the client), or carry bytes.
Every request is logged, so tests can count what a command asked for.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from patchbay.carry.selfcarry import write_wheel


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    # a slow body: sent in chunks of this many bytes with ``chunk_delay`` seconds between
    chunk: int = 0
    chunk_delay: float = 0.0


class Server:
    """A threaded HTTP server on a free port of 127.0.0.1; use as a context manager."""

    def __init__(self) -> None:
        self.routes: dict[str, list[Response]] = {}
        self.log: list[tuple[str, dict[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # http.server's naming
                server.log.append((self.path, dict(self.headers)))
                path = self.path.split("?", 1)[0]
                queue = server.routes.get(path)
                if not queue:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                response = queue.pop(0) if len(queue) > 1 else queue[0]
                if response.delay:
                    time.sleep(response.delay)
                self.send_response(response.status)
                for key, value in response.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(response.body)))
                self.end_headers()
                if not response.chunk:
                    self.wfile.write(response.body)
                    return
                for start in range(0, len(response.body), response.chunk):
                    self.wfile.write(response.body[start : start + response.chunk])
                    self.wfile.flush()
                    time.sleep(response.chunk_delay)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def add(self, path: str, *responses: Response) -> None:
        self.routes[path] = list(responses)

    def requests_for(self, prefix: str) -> int:
        return sum(1 for path, _ in self.log if path.startswith(prefix))

    def serve_index(self, wheels: list[Path]) -> str:
        """Serve ``wheels`` as a PEP 503 simple index; returns the index URL."""
        by_name: dict[str, list[Path]] = {}
        for wheel in wheels:
            name = wheel.name.split("-")[0].lower().replace("_", "-")
            by_name.setdefault(name, []).append(wheel)
            self.add(f"/files/{wheel.name}", Response(body=wheel.read_bytes()))
        for name, files in by_name.items():
            links = "".join(
                f'<a href="/files/{w.name}#sha256={hashlib.sha256(w.read_bytes()).hexdigest()}">'
                f"{w.name}</a>\n"
                for w in files
            )
            page = f"<html><body>\n{links}</body></html>\n".encode()
            self.add(f"/simple/{name}/", Response(body=page, headers={"Content-Type": "text/html"}))
        return f"{self.url}/simple/"


def make_wheel(folder: Path, name: str, version: str, requires: list[str] | None = None) -> Path:
    """Write a minimal pure-Python wheel (binary distribution format, PEP 427) with one module
    ``<name>.py`` holding ``VERSION``."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{dist}.py": f'VERSION = "{version}"\n'.encode(),
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            + "".join(f"Requires-Dist: {r}\n" for r in requires or [])
        ).encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: patchbay-tests\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    write_wheel(wheel, files, info)
    return wheel
