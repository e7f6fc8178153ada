"""The end-to-end harness: the built site (site/dist, `make site`) served from 127.0.0.1,
Debian's Chromium driven by Playwright (launched by ``pyburn.bench.web.chromium``, which the
browser benchmarks share), and a network closed to everything else.

Every page a test opens is watched: a request to anything but the local server is refused
and recorded, and so is any uncaught script error; both fail the test at its end. Chromium
also resolves no host name but localhost, so nothing can leave even past the router.
Screenshots go to build/e2e/.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from pyburn.bench.web import chromium
from pyburn.web.serve import serving

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "site" / "dist"
SHOTS = ROOT / "build" / "e2e"
#: Pyodide's start plus a page's first work, on a slow machine
READY_MS = 120_000
LOCAL_HOSTS = {"127.0.0.1", "localhost"}


@pytest.fixture(scope="session")
def site_dir() -> Path:
    """site/dist, the built site."""
    if not (SITE / ".built").exists():
        pytest.fail("site/dist is not built: run `make site` (or `make test`)")
    return SITE


@pytest.fixture(scope="session")
def site(site_dir: Path) -> Iterator[str]:
    """The base URL of site/dist, served on a free port of 127.0.0.1."""
    with serving({"/": site_dir}) as base:
        yield base


@pytest.fixture(scope="session")
def playwright() -> Iterator[object]:
    """Playwright's sync API (pip install playwright: the dev extra has it)."""
    reason = chromium.unavailable_reason()
    if reason:
        pytest.fail(f"the end-to-end tests cannot run: {reason}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="session")
def browser(playwright: object) -> Iterator[object]:
    """Chromium with WebGPU (SwiftShader)."""
    launched = chromium.launch(playwright, webgpu=True)
    yield launched
    launched.close()


@pytest.fixture(scope="session")
def browser_without_webgpu(playwright: object) -> Iterator[object]:
    """Chromium whose WebGPU has no adapter, as on a machine where it is unsupported."""
    launched = chromium.launch(playwright, webgpu=False)
    yield launched
    launched.close()


class Watched:
    """A browser context whose requests and errors are recorded (see the module docstring)."""

    def __init__(self, browser: object, site: str):
        self.site = site
        self.context = browser.new_context(accept_downloads=True,
                                           viewport={"width": 1280, "height": 900})
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)

    def _route(self, route: object) -> None:
        url = route.request.url
        if urlsplit(url).hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort("blockedbyclient")

    def open(self, path: str) -> object:
        """A new page at `path` of the site, once it says it is ready (``body[data-ready]``)."""
        page = self.context.new_page()
        page.on("pageerror", lambda error: self.errors.append(f"{path}: {error}"))
        page.goto(self.site + path)
        page.wait_for_selector("body[data-ready]", timeout=READY_MS)
        return page

    def close(self) -> None:
        self.context.close()

    def check(self) -> None:
        """Fail when anything tried to leave localhost or a script failed."""
        assert not self.blocked, f"requests that tried to leave localhost: {self.blocked}"
        assert not self.errors, f"uncaught errors in the pages: {self.errors}"


def _watched(browser: object, site: str) -> Iterator[Watched]:
    watched = Watched(browser, site)
    try:
        yield watched
        watched.check()
    finally:
        watched.close()


@pytest.fixture
def web(browser: object, site: str) -> Iterator[Watched]:
    """A watched context of the WebGPU browser, for one test."""
    yield from _watched(browser, site)


@pytest.fixture(scope="module")
def module_web(browser: object, site: str) -> Iterator[Watched]:
    """A watched context of the WebGPU browser shared by a module's tests (a page loaded once
    serves them all)."""
    yield from _watched(browser, site)


@pytest.fixture
def web_without_webgpu(browser_without_webgpu: object, site: str) -> Iterator[Watched]:
    """A watched context of the browser without a WebGPU adapter."""
    yield from _watched(browser_without_webgpu, site)


@pytest.fixture(scope="session")
def screenshot() -> Callable[[object, str], Path]:
    """Saves a page's screenshot as build/e2e/NAME.png (a test artifact)."""
    SHOTS.mkdir(parents=True, exist_ok=True)

    def save(page: object, name: str) -> Path:
        path = SHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save
