"""The site as a whole: the front page and its links, and what a visitor sees where WebGPU has
no adapter (the pages fall back to the wasm device and say so)."""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "site"))
import pages  # noqa: E402  (site/pages.py: the shared head and navigation)

from pyburn.errors import WebBuildError  # noqa: E402

PASTE_ONE = """() => {
  const pen = document.getElementById("canvas").getContext("2d");
  pen.fillStyle = "#fff";
  pen.fillRect(130, 60, 20, 160);
}"""


def test_the_front_page_links_every_page(web: object, screenshot: object) -> None:
    page = web.context.new_page()
    page.goto(web.site + "index.html")
    links = page.eval_on_selector_all("main a", "links => links.map(a => a.getAttribute('href'))")
    assert links == ["mnist.html", "train.html", "cartpole.html", "classify.html",
                     "generate.html", "playground.html", "remote.html", "bench.html"]
    screenshot(page, "index")


def test_without_webgpu_the_pages_say_so_and_use_wasm(web_without_webgpu: object,
                                                      screenshot: object) -> None:
    page = web_without_webgpu.open("mnist.html")
    notice = page.locator("#notice")
    assert notice.is_visible()
    assert "WebGPU is not available here" in notice.inner_text()
    assert "pyburn runs on wasm (its WebAssembly SIMD kernels) instead" in notice.inner_text()
    assert page.is_disabled('input[value="wgpu"]')
    assert page.is_checked('input[value="wasm"]')
    page.evaluate(PASTE_ONE)
    result = page.evaluate("async () => { await window.mnistDemo.predict(); "
                           "return window.mnistDemo.lastResult; }")
    assert result["device"] == "wasm"
    assert page.inner_text("#answer") == "1"
    screenshot(page, "mnist-without-webgpu")


class _Navigation(HTMLParser):
    """The header's links of a page, and which are marked as the current page."""

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.links, self.current = False, [], []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        found = dict(attrs)
        self.inside = self.inside or tag == "nav"
        if self.inside and tag == "a":
            self.links.append(found["href"])
            if found.get("aria-current") == "page":
                self.current.append(found["href"])

    def handle_endtag(self, tag: str) -> None:
        self.inside = self.inside and tag != "nav"


def test_every_built_page_links_the_others_and_marks_its_own(site_dir: Path) -> None:
    """site/pages.py wraps each source: every page of the build has the header's links in
    NAV's order, its own marked current (none on the front page), its title and scripts."""
    built = sorted(p.name for p in site_dir.glob("*.html") if p.name != "board.html")
    assert built == sorted([name for name, _ in pages.NAV] + ["index.html"])
    for name in built:
        text = (site_dir / name).read_text(encoding="utf-8")
        navigation = _Navigation()
        navigation.feed(text)
        assert navigation.links == [page for page, _ in pages.NAV], name
        assert navigation.current == ([] if name == "index.html" else [name]), name
        assert text.count("<title>") == 1 and text.startswith("<!doctype html>"), name


@pytest.mark.parametrize("source", ["  <main></main>\n", "  <title>t</title>\n<p>no main</p>"])
def test_a_page_source_without_its_title_or_main_is_refused(source: str) -> None:
    with pytest.raises(WebBuildError, match="must begin with a <title> line"):
        pages.render("x.html", source)


def test_a_part_a_source_names_is_written_in_place_and_an_unknown_one_refused() -> None:
    page = pages.render("x.html", "  <title>t</title>\n  <main>\n    <!-- devices -->\n"
                                  "  </main>\n")
    assert '\n    <fieldset>\n      <legend>device</legend>\n' in page
    assert 'value="wasm"' in page and "<!-- devices -->" not in page
    with pytest.raises(WebBuildError, match="no part named 'nothing'"):
        pages.render("x.html", "  <title>t</title>\n  <main>\n  <!-- nothing -->\n")
