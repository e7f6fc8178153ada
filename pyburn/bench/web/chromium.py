"""Headless Chromium on local files: a static server for folders of this machine and the
browser launched the way pyburn's browser benchmarks and end-to-end tests (e2e/) use it.

Chromium is Debian's (``apt-get install chromium``), driven by Playwright (``pip install
playwright``, which downloads no browser here). It resolves no host name but localhost, so
nothing a page does can leave the machine; ``--enable-unsafe-webgpu`` gives it a WebGPU
adapter on SwiftShader (its CPU Vulkan) where there is no GPU.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: the browser: Debian's, unless $PYBURN_CHROMIUM names another
CHROMIUM = os.environ.get("PYBURN_CHROMIUM", "/usr/bin/chromium")
ARGS = ("--no-sandbox", "--disable-quic",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1")
WEBGPU = "--enable-unsafe-webgpu"


def unavailable_reason() -> str | None:
    """Why Chromium cannot be driven here (with the fix), or None."""
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM}: apt-get install chromium (or set PYBURN_CHROMIUM)"
    try:
        import playwright  # noqa: F401  (optional: playwright)
    except ImportError:
        return "playwright is not installed: pip install playwright (the dev extra has it)"
    return None


class _Mounted(http.server.SimpleHTTPRequestHandler):
    """Serves each URL prefix of `mounts` from its folder; quiet about requests."""

    mounts: Mapping[str, Path] = {}

    def translate_path(self, path: str) -> str:
        for prefix, folder in sorted(self.mounts.items(), key=lambda m: -len(m[0])):
            if path.startswith(prefix):
                self.directory = str(folder)
                return super().translate_path("/" + path[len(prefix):])
        return ""  # outside every mount: 404

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(mounts: Mapping[str, Path]) -> Iterator[str]:
    """Serves each folder of `mounts` ({"/": site, "/bench/": ...}) from 127.0.0.1 on a free
    port while the block runs; yields the base URL ("http://127.0.0.1:PORT/")."""
    handler = type("Handler", (_Mounted,), {"mounts": dict(mounts)})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(handler, directory="/"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def launch(playwright: Any, webgpu: bool = True) -> Any:
    """A headless Chromium (a Playwright ``Browser``), with WebGPU on SwiftShader unless
    `webgpu` is False (then the browser offers no adapter, as where WebGPU is unsupported)."""
    args = [*ARGS, WEBGPU] if webgpu else list(ARGS)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=args)
