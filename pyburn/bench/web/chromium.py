"""Headless Chromium on local files, launched the way pyburn's browser benchmarks and
end-to-end tests (e2e/) use it; they serve their folders with `pyburn.web.serve.serving`.

Chromium is Debian's (``apt-get install chromium``), driven by Playwright (``pip install
playwright``, which downloads no browser here). It resolves no host name but localhost, so
nothing a page does can leave the machine; ``--enable-unsafe-webgpu`` gives it a WebGPU
adapter on SwiftShader (its CPU Vulkan) where there is no GPU.
"""

from __future__ import annotations

import os
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


def launch(playwright: Any, webgpu: bool = True) -> Any:
    """A headless Chromium (a Playwright ``Browser``), with WebGPU on SwiftShader unless
    `webgpu` is False (then the browser offers no adapter, as where WebGPU is unsupported)."""
    args = [*ARGS, WEBGPU] if webgpu else list(ARGS)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=args)
