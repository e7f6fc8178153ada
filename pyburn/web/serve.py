"""`pyburn web serve`: a static file server for builds, on 127.0.0.1 unless told otherwise.

It sends the MIME types pages need (``application/wasm`` lets browsers compile WebAssembly
while it downloads; module scripts must be JavaScript), serves a file's precompressed ``.br``
or ``.gz`` copy to a browser that accepts it, and adds the cross-origin isolation headers
(COOP/COEP, which ``SharedArrayBuffer`` and so threads need) where the build asks for them.
Every connection has a time limit, so no client holds the server.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

#: the MIME types a build's files need, beyond Python's defaults
TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
         ".json": "application/json", ".whl": "application/zip", ".zip": "application/zip",
         ".safetensors": "application/octet-stream", ".onnx": "application/octet-stream"}
#: the precompressed copies, best first: Content-Encoding name, file suffix
ENCODINGS = (("br", ".br"), ("gzip", ".gz"))
ISOLATION = {"Cross-Origin-Opener-Policy": "same-origin",
             "Cross-Origin-Embedder-Policy": "require-corp",
             "Cross-Origin-Resource-Policy": "same-origin"}
#: seconds a connection may stay silent before it is closed
CONNECTION_SECONDS = 30


class StaticHandler(http.server.SimpleHTTPRequestHandler):
    """Serves each URL prefix of `mounts` from its folder, precompressed where it can."""

    mounts: Mapping[str, Path] = {}
    isolated = False
    quiet = True
    timeout = CONNECTION_SECONDS
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **TYPES}

    def translate_path(self, path: str) -> str:
        path = path.split("?", 1)[0].split("#", 1)[0]
        for prefix, folder in sorted(self.mounts.items(), key=lambda m: -len(m[0])):
            if path.startswith(prefix):
                self.directory = str(folder)
                return super().translate_path("/" + path[len(prefix):])
        return ""  # outside every mount: 404

    def send_head(self):  # type: ignore[no-untyped-def]
        path = self.translate_path(self.path)
        if path and os.path.isfile(path):
            accepted = {part.split(";")[0].strip()
                        for part in self.headers.get("Accept-Encoding", "").split(",")}
            for encoding, suffix in ENCODINGS:
                if encoding in accepted and os.path.isfile(path + suffix):
                    return self._send_encoded(path, path + suffix, encoding)
        return super().send_head()

    def _send_encoded(self, path: str, encoded: str, encoding: str):  # type: ignore[no-untyped-def]
        """Headers for `path`, whose body is its precompressed copy `encoded`."""
        file = open(encoded, "rb")  # noqa: SIM115  (closed by copyfile's caller)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Length", str(os.fstat(file.fileno()).st_size))
        self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        return file

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")
        if self.isolated:
            for name, value in ISOLATION.items():
                self.send_header(name, value)
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        if not self.quiet:
            super().log_message(format, *args)


def wants_isolation(folder: Path) -> bool:
    """Whether the build in `folder` asks for cross-origin isolation (its manifest says so)."""
    manifest = folder / "pyburn-web.json"
    try:
        return bool(json.loads(manifest.read_text()).get("isolated", False))
    except (OSError, ValueError):
        return False


def make_server(mounts: Mapping[str, Path], host: str = "127.0.0.1", port: int = 0,
                isolated: bool = False, quiet: bool = True) -> http.server.ThreadingHTTPServer:
    """A threading server of `mounts` ({"/": build, "/bench/": ...}) on `host`:`port` (0: a
    free one), not yet serving."""
    handler = type("Handler", (StaticHandler,),
                   {"mounts": dict(mounts), "isolated": isolated, "quiet": quiet})
    server = http.server.ThreadingHTTPServer((host, port),
                                             functools.partial(handler, directory="/"))
    server.daemon_threads = True
    return server


@contextmanager
def serving(mounts: Mapping[str, Path], isolated: bool = False) -> Iterator[str]:
    """Serves `mounts` from 127.0.0.1 on a free port while the block runs; yields the base
    URL ("http://127.0.0.1:PORT/")."""
    server = make_server(mounts, isolated=isolated)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
