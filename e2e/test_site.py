"""The site as a whole: the front page and its links, and what a visitor sees where WebGPU has
no adapter (the pages fall back to the wasm device and say so)."""

from __future__ import annotations

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
