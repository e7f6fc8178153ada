"""Classify 2-D points in a web page with an ONNX model (`model.onnx`, which
`examples/web/export_model.py` trains and exports).

The page calls `predict` with a Float32Array of x, y pairs and gets a Float32Array of class
probabilities, shape [N, 3]; `main` shows it on a few points when the default page opens.
"""

from __future__ import annotations

from pathlib import Path

import pyburn
from pyburn import nn, onnx

MODEL = onnx.load(Path(__file__).with_name("model.onnx"))


def predict(points) -> pyburn.Tensor:
    """The probability of each class for each point: `points` holds x, y pairs (a page's
    Float32Array, or anything `pyburn.tensor` takes)."""
    xy = pyburn.tensor(points, dtype="float32").reshape(-1, 2)
    with pyburn.no_grad():
        return nn.functional.softmax(MODEL(xy), dim=1)


async def main() -> list[int]:
    """The class of a few points, printed and returned (read with the `_async` form, which
    works in every browser)."""
    points = [0.0, 0.5, -0.5, 0.0, 0.3, -0.3, 0.8, 0.1]
    classes = await predict(points).argmax(dim=1).tolist_async()
    for (x, y), label in zip(zip(points[::2], points[1::2]), classes):
        print(f"({x:+.1f}, {y:+.1f}) -> class {label}")
    return classes
