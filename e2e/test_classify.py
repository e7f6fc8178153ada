"""The classify page on wasm and WebGPU: the page's generated shapes, one of each class, reach
the model as the desktop renders them, and the page's top class (and its probabilities, within
1e-4) is what the desktop's cpu backend gives for the same pixels with the same weights; a
circle drawn with the mouse is read as a circle."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

import pyburn
from pyburn import models, store
from pyburn.data.shapes import CLASSES, ShapesDataset
from pyburn.nn import functional as F

DEVICES = ("wasm", "wgpu")
#: how the page names each device after a prediction
NAMES = {"wgpu": "WebGPU", "wasm": "wasm"}
WEIGHTS = "data/shapes-resnet18.safetensors"
#: py/classify.py's shapes: their seed and number
SAMPLE_SEED, SAMPLES = 3, 1 << 30
SAMPLE = """async (index) => {
  await window.classifyDemo.sample(index);
  const demo = window.classifyDemo;
  return { sample: demo.lastSample, result: demo.lastResult, input: Array.from(demo.lastInput) };
}"""
PREDICT = """async () => {
  await window.classifyDemo.predict();
  return { result: window.classifyDemo.lastResult,
           input: Array.from(window.classifyDemo.lastInput) };
}"""


@pytest.fixture(scope="module")
def desktop_model(site_dir: Path) -> pyburn.nn.Module:
    """The model the site serves, built by the zoo on the desktop's cpu backend."""
    about = store.load_metadata(site_dir / WEIGHTS)
    return models.create(about["model"], site_dir / WEIGHTS, device="cpu", **about["config"])


def desktop_probabilities(model: pyburn.nn.Module, pixels: list[int]) -> list[float]:
    """What the cpu backend gives for the bytes the page fed its model."""
    recipe = replace(model.entry.preprocessing, resize=None, crop=None)
    with pyburn.no_grad():
        image = pyburn.tensor(pixels, dtype="uint8", device="cpu").reshape(1, 3, 32, 32)
        return F.softmax(model(recipe(image)), dim=1)[0].tolist()


def best(probabilities: list[float]) -> int:
    return probabilities.index(max(probabilities))


@dataclass
class ClassifyPage:
    """The page, opened with its device switch on `device`."""

    page: object
    device: str


@pytest.fixture(scope="module", params=DEVICES)
def classify(request: pytest.FixtureRequest, module_web: object) -> ClassifyPage:
    return ClassifyPage(module_web.open(f"classify.html?device={request.param}"), request.param)


def check_read(classify: ClassifyPage, read: dict, model: pyburn.nn.Module) -> int:
    """The page's top class, checked against the desktop's on the page's input."""
    result = read["result"]
    assert result["device"] == classify.device
    expected = desktop_probabilities(model, read["input"])
    assert best(result["probabilities"]) == best(expected)
    assert max(map(abs, (a - b for a, b in zip(result["probabilities"], expected)))) < 1e-4
    return best(result["probabilities"])


def test_a_generated_shape_of_each_class(classify: ClassifyPage, desktop_model: object,
                                         screenshot: object) -> None:
    shapes = ShapesDataset(SAMPLES, seed=SAMPLE_SEED, device="flex")
    first = {}
    for index in range(40):  # the first of each class (about 8 tries)
        first.setdefault(shapes[index][1], index)
        if len(first) == len(CLASSES):
            break
    right = 0
    for label, index in sorted(first.items()):
        read = classify.page.evaluate(SAMPLE, index)
        assert read["sample"] == {"index": index, "label": CLASSES[label]}
        # the canvas gave back the shape's own pixels
        image = (shapes[index][0] * 255).round().cast(pyburn.uint8)
        assert read["input"] == image.reshape(-1).tolist()
        right += check_read(classify, read, desktop_model) == label
    assert right >= len(CLASSES) - 1
    assert NAMES[classify.device] in classify.page.inner_text("#timing")
    assert "held-out generated shapes" in classify.page.inner_text("#model")
    assert "registry entry's" in classify.page.inner_text("#preprocessing")
    screenshot(classify.page, f"classify-{classify.device}")


def test_a_circle_drawn_with_the_mouse(classify: ClassifyPage, desktop_model: object) -> None:
    page = classify.page
    page.click("#clear")
    box = page.locator("#canvas").bounding_box()
    x, y, radius = box["x"] + 128, box["y"] + 128, 80
    page.mouse.move(x + radius, y)
    page.mouse.down()
    for step in range(1, 41):
        angle = 2 * math.pi * step / 40
        page.mouse.move(x + radius * math.cos(angle), y + radius * math.sin(angle))
    page.mouse.up()
    read = page.evaluate(PREDICT)
    assert CLASSES[check_read(classify, read, desktop_model)] == "circle"
    assert page.inner_text("#answer") == "circle"
