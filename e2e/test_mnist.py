"""The draw-a-digit page on WebGPU, wasm and flex: real MNIST test digits, pasted as pixels and
drawn with the mouse, are read right, with the probabilities the desktop's cpu backend
computes from the same input."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

import pyburn
from pyburn.data.datasets import MNIST
from pyburn.models import load_mnist
from pyburn.nn import functional as F

DEVICES = ("wgpu", "wasm", "flex")
#: how the page names each device after a prediction
NAMES = {"wgpu": "WebGPU", "wasm": "wasm", "flex": "flex"}
IMAGES = 10
#: the canvas is 280×280: ten canvas pixels per MNIST pixel
CELL = 10
#: pixels at least this bright are drawn over when digits are drawn with the mouse
BRIGHT = 128

# Paints a 28×28 image of bytes onto the canvas, one 10×10 square per pixel.
PASTE = """(pixels) => {
  const canvas = document.getElementById("canvas");
  const pen = canvas.getContext("2d");
  pen.fillStyle = "#000";
  pen.fillRect(0, 0, canvas.width, canvas.height);
  pixels.forEach((row, y) => row.forEach((v, x) => {
    pen.fillStyle = `rgb(${v},${v},${v})`;
    pen.fillRect(x * 10, y * 10, 10, 10);
  }));
}"""
PREDICT = "async () => { await window.mnistDemo.predict(); return window.mnistDemo.lastResult; }"
LAST_INPUT = "() => Array.from(window.mnistDemo.lastInput)"
STATS = """
from pyburn.backends.wgpu import stats
{"precompiled": stats().pipelines_precompiled, "compiled": stats().pipelines_compiled}
"""


@pytest.fixture(scope="module")
def digits() -> list[tuple[list[list[int]], int]]:
    """The first test images of MNIST (rows of bytes) and their labels."""
    images, labels = MNIST(train=False, device="flex").tensors()
    return list(zip(images[:IMAGES].tolist(), labels[:IMAGES].tolist()))


@pytest.fixture(scope="module")
def desktop_model(site_dir: Path) -> pyburn.nn.Module:
    """The model the site serves, loaded on the desktop's cpu backend."""
    return load_mnist(site_dir / "data" / "mnist.safetensors", device="cpu")


def desktop_probabilities(model: pyburn.nn.Module, image: list[float]) -> list[float]:
    """What the cpu backend computes for the 784 values the page fed its model."""
    with pyburn.no_grad():
        x = pyburn.tensor(image, device="cpu").reshape(1, 1, 28, 28)
        return F.softmax(model(x), dim=1)[0].tolist()


@dataclass
class MnistPage:
    """The page, opened with its device switch on `device`."""

    page: object
    device: str


@pytest.fixture(scope="module", params=DEVICES)
def mnist(request: pytest.FixtureRequest, module_web: object) -> MnistPage:
    """The page with its device switch on one of `DEVICES`."""
    return MnistPage(module_web.open(f"mnist.html?device={request.param}"), request.param)


def stroke_rows(page: object, image: list[list[int]]) -> None:
    """Draws `image` with the mouse, as a hand colouring it in would: the pen is two pixels
    wide, so one horizontal stroke covers a pair of rows; each run of bright pixels of a pair
    gets a stroke that stays within the run (the round pen reaches a pixel past both ends)."""
    box = page.locator("#canvas").bounding_box()
    for y in range(0, len(image), 2):
        row = [max(pair) for pair in zip(*image[y:y + 2])]
        x = 0
        while x < len(row):
            if row[x] < BRIGHT:
                x += 1
                continue
            end = x
            while end + 1 < len(row) and row[end + 1] >= BRIGHT:
                end += 1
            left, right = (x + 1) * CELL, end * CELL
            if right < left:  # a run of one or two pixels: a dot in its middle
                left = right = (x + end + 1) * CELL / 2
            middle = box["y"] + (y + 1) * CELL
            page.mouse.move(box["x"] + left, middle)
            page.mouse.down()
            page.mouse.move(box["x"] + right, middle)
            page.mouse.up()
            x = end + 1


def best(probabilities: list[float]) -> int:
    """The class with the highest probability."""
    return probabilities.index(max(probabilities))


def test_pasted_digits_match_the_desktop(mnist: MnistPage, digits: list, desktop_model: object,
                                         screenshot: object) -> None:
    right = 0
    for image, label in digits:
        mnist.page.evaluate(PASTE, image)
        result = mnist.page.evaluate(PREDICT)
        assert result["device"] == mnist.device
        probabilities = result["probabilities"]
        right += best(probabilities) == label
        expected = desktop_probabilities(desktop_model, mnist.page.evaluate(LAST_INPUT))
        assert probabilities == pytest.approx(expected, abs=1e-4)
    assert right >= 9, f"{right} of {len(digits)} digits read right on {mnist.device}"
    assert mnist.page.inner_text("#answer") == str(best(probabilities))
    assert mnist.page.locator(".track.best").get_attribute("data-digit") == str(best(probabilities))
    screenshot(mnist.page, f"mnist-pasted-{mnist.device}")


def test_drawn_digits_are_read(mnist: MnistPage, digits: list, screenshot: object) -> None:
    right = 0
    for image, label in digits:
        mnist.page.click("#clear")
        stroke_rows(mnist.page, image)
        right += best(mnist.page.evaluate(PREDICT)["probabilities"]) == label
    assert right >= 9, f"{right} of {len(digits)} drawn digits read right on {mnist.device}"
    timing = mnist.page.inner_text("#timing")
    assert timing.endswith(NAMES[mnist.device]), timing
    screenshot(mnist.page, f"mnist-drawn-{mnist.device}")


@pytest.mark.parametrize("mnist", ["wgpu"], indirect=True)
def test_the_first_prediction_on_webgpu_compiles_nothing_new(mnist: MnistPage, site_dir: Path,
                                                             digits: list) -> None:
    """The site's build recorded the first prediction's kernels on the desktop's wgpu
    device; the page compiled them while Python started, so its first prediction (made
    while the page loaded) compiled none of its own."""
    recorded = json.loads((site_dir / "kernels.json").read_text())
    mnist.page.evaluate(PASTE, digits[0][0])
    mnist.page.evaluate(PREDICT)
    counts = mnist.page.evaluate("(code) => window.pyburn.run(code)", STATS)
    assert counts == {"precompiled": len(recorded), "compiled": 0}
