"""`pyburn dash --web`: the dashboard over run folders as a local web page. The server sends
a static page (``page/``: HTML, CSS and one script, nothing from elsewhere) and each run's
events as they are written: ``GET /runs`` names the runs, ``GET /events?run=K&from=N`` gives
the events of run K from byte N of its log (`follow.read_since`), which the page asks for
every second. It binds to 127.0.0.1 unless told otherwise, and every connection has a time
limit."""

from __future__ import annotations

import http.server
import json
import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from ..runlog import EVENTS
from .follow import read_since

PAGE = Path(__file__).with_name("page")
#: the page's files and their types
FILES = {"/": ("index.html", "text/html; charset=utf-8"),
         "/dash.js": ("dash.js", "text/javascript; charset=utf-8"),
         "/events.js": ("events.js", "text/javascript; charset=utf-8"),
         "/dash.css": ("dash.css", "text/css; charset=utf-8")}
#: seconds a connection may stay silent before it is closed
CONNECTION_SECONDS = 30


class DashHandler(http.server.BaseHTTPRequestHandler):
    """The page, the run names and the runs' events."""

    #: (name, folder) of each run, in order
    runs: Sequence[tuple[str, Path]] = ()
    timeout = CONNECTION_SECONDS

    def do_GET(self) -> None:  # noqa: N802  (http.server's name)
        url = urlsplit(self.path)
        if url.path in FILES:
            name, kind = FILES[url.path]
            self._send(200, kind, (PAGE / name).read_bytes())
        elif url.path == "/runs":
            self._json({"runs": [name for name, _ in self.runs]})
        elif url.path == "/events":
            query = parse_qs(url.query)
            try:
                k, offset = int(query["run"][0]), int(query.get("from", ["0"])[0])
                _, folder = self.runs[k]
            except (KeyError, ValueError, IndexError):
                self._send(400, "text/plain", b"/events?run=K&from=N: K a run's index")
                return
            events, following, again = read_since(folder / EVENTS, max(offset, 0))
            self._json({"events": _strict(events), "next": following, "again": again})
        else:
            self._send(404, "text/plain", b"not found")

    def _json(self, value: object) -> None:
        self._send(200, "application/json", json.dumps(value, allow_nan=False,
                                                       default=str).encode())

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the page asks every second."""


def _strict(value: object) -> object:
    """`value` with every float that is not finite as null (JSON has no NaN: the page draws
    a gap there, as the terminal does)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strict(v) for v in value]
    return value


def make_server(runs: Sequence[tuple[str, Path]], host: str = "127.0.0.1",
                port: int = 0) -> http.server.ThreadingHTTPServer:
    """A server of `runs` (name, folder) on `host`:`port` (0: a free one), not yet serving."""
    handler = type("Handler", (DashHandler,), {"runs": tuple(runs)})
    server = http.server.ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


@contextmanager
def serving(runs: Sequence[tuple[str, Path]]) -> Iterator[str]:
    """Serves `runs` from 127.0.0.1 on a free port while the block runs; yields the URL."""
    server = make_server(runs)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(CONNECTION_SECONDS)
