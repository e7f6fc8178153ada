"""The draw-a-digit page on a `pyburn serve` process (remote.html): the page's Python, under
Pyodide, reaches the server over the browser's own WebSocket; digits drawn there are read
with the probabilities the desktop's cpu backend computes, and a server that does not let the
page in is reported, not hung on. Each test starts its own server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from test_mnist import LAST_INPUT, PASTE, PREDICT, best, desktop_probabilities, stroke_rows

from pyburn.data.datasets import MNIST
from pyburn.models import load_mnist
from pyburn.remote.process import ServerProcess

IMAGES = 5


@pytest.fixture(scope="module")
def test_digits() -> list[tuple[list[list[int]], int]]:
    """The first test images of MNIST (rows of bytes) and their labels."""
    images, labels = MNIST(train=False, device="flex").tensors()
    return list(zip(images[:IMAGES].tolist(), labels[:IMAGES].tolist()))


@pytest.fixture(scope="module")
def server(site: str) -> Iterator[ServerProcess]:
    """``pyburn serve --device cpu`` letting the site's pages in."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(site))
    with ServerProcess("cpu", "--origin", origin) as served:
        yield served


def test_digits_are_read_on_the_server(module_web: object, server: ServerProcess,
                                       test_digits: list, site_dir: Path,
                                       screenshot: object) -> None:
    page = module_web.open(f"remote.html?server={server.url}")
    model = load_mnist(site_dir / "data" / "mnist.safetensors", device="cpu")
    right = 0
    for image, label in test_digits:
        page.evaluate(PASTE, image)
        result = page.evaluate(PREDICT)
        assert result["device"] == server.address
        probabilities = result["probabilities"]
        right += best(probabilities) == label
        expected = desktop_probabilities(model, page.evaluate(LAST_INPUT))
        assert probabilities == pytest.approx(expected, abs=1e-5)
    assert right >= IMAGES - 1, f"{right} of {IMAGES} digits read right on the server"
    page.click("#clear")
    stroke_rows(page, test_digits[0][0])
    assert best(page.evaluate(PREDICT)["probabilities"]) == test_digits[0][1]
    assert page.inner_text("#timing").endswith(f"pyburn serve at {server.url}")
    assert page.locator("#notice").is_hidden()
    screenshot(page, "remote")


def test_a_server_that_does_not_let_the_page_in_is_reported(web: object,
                                                            test_digits: list) -> None:
    with ServerProcess("cpu") as closed:  # no --origin: pages are refused
        page = web.open(f"remote.html?server={closed.url}")
        page.evaluate(PASTE, test_digits[0][0])
        result = page.evaluate(PREDICT)
    assert "cannot reach" in result["error"]
    notice = page.inner_text("#notice")
    assert closed.url in notice and "pyburn serve --device cpu --origin" in notice
