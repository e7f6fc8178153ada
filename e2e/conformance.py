"""The conformance suite (tests/conformance) on the browser's WebGPU: pytest inside the site's
worker in headless Chromium, with pyburn's browser GpuRuntime on SwiftShader.

    python e2e/conformance.py [PYTEST_ARG...]     (default: -k wgpu, every wgpu test)

`make test` runs it last (alone: `make test-browser-conformance`; about a minute). pytest and
its dependencies come from build/pyodide-wheels (the wheels of the Pyodide run), the test
files and the golden file (build/conformance-golden.json, written by the desktop run) are
copied into the worker's file system, and pytest runs there on the devices the browser has
(wgpu, wgpu_nofusion, flex).
Exit status: pytest's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyburn.bench.web import chromium
from pyburn.web.serve import serving

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "site" / "dist"
WHEELS = ROOT / "build" / "pyodide-wheels"
FILES = ("tests/conftest.py", "tests/table_coverage.py", "tests/device_labels.py",
         "tests/conformance/*.py",
         "build/conformance-golden.json")
READY_MS = 120_000

PYTEST = """
import io, json, os, site, sys, zipfile
from pyodide.http import pyfetch

# pure wheels: unpacked into site-packages, as the page's loader installs pyburn's
for name in wheels:
    data = await (await pyfetch(base + "pytest-wheels/" + name)).bytes()
    zipfile.ZipFile(io.BytesIO(data)).extractall(site.getsitepackages()[0])
for path, text in files.items():
    os.makedirs(os.path.dirname("/repo/" + path), exist_ok=True)
    with open("/repo/" + path, "w") as file:
        file.write(text)
os.chdir("/repo")
sys.dont_write_bytecode = True
import pytest

int(pytest.main(["-p", "no:cacheprovider", *arguments]))
"""


def main(arguments: list[str]) -> int:
    """Run pytest with `arguments` in the page; print its output; return its exit status."""
    from playwright.sync_api import sync_playwright

    for needed, fix in ((SITE / ".built", "make site"), (WHEELS, "make test-pyodide"),
                        (ROOT / FILES[-1], "make test-desktop")):
        if not needed.exists():
            sys.exit(f"{needed} is missing: {fix}")
    files = {str(p.relative_to(ROOT)): p.read_text() for pattern in FILES
             for p in sorted(ROOT.glob(pattern))}
    wheels = sorted(p.name for p in WHEELS.glob("*.whl"))
    with serving({"/": SITE, "/pytest-wheels/": WHEELS}) as base, \
            sync_playwright() as playwright:
        browser = chromium.launch(playwright)
        try:
            page = browser.new_page()
            page.goto(base + "playground.html")
            page.wait_for_selector("body[data-ready]", timeout=READY_MS)
            page.evaluate("() => window.pyburn.on('stdout', (t) => console.log(t))")
            page.on("console", lambda message: print(message.text, end="", flush=True))
            setup = (f"base = {base!r}\nwheels = {wheels!r}\nfiles = {json.dumps(files)}\n"
                     f"arguments = {arguments!r}\n")
            return page.evaluate("(code) => window.pyburn.run(code)", setup + PYTEST)
        finally:
            browser.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["-q", "-k", "wgpu"]))
