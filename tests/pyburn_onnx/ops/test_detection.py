"""RoiAlign and NonMaxSuppression against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import DEVICES, check_node
from .runtime_reference import ort_outputs

RNG = np.random.default_rng(8)
ROIS = np.array([[0, 0, 9, 9], [0, 5, 4, 9], [5.5, 5.2, 9.1, 9.6], [-2, -1, 3, 12],
                 [1, 1, 1.2, 1.3]], np.float32)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("coordinates", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
def test_roi_align(dev: str, mode: str, coordinates: str, sampling_ratio: int) -> None:
    x = RNG.standard_normal((2, 3, 10, 10)).astype(np.float32)
    batch = np.array([0, 1, 1, 0, 1], np.int64)
    attrs = {"mode": mode, "coordinate_transformation_mode": coordinates,
             "output_height": 3, "output_width": 2, "sampling_ratio": sampling_ratio,
             "spatial_scale": 0.9}
    check_node("RoiAlign", [x, ROIS, batch], attrs, opset=16, device=dev, rtol=1e-4,
               atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_max_roi_pool(dev: str, scale: float) -> None:
    x = RNG.standard_normal((2, 3, 8, 9)).astype(np.float32)
    rois = np.array([[0, 0, 0, 7, 7], [1, 2, 3, 8, 6], [1, 5, 5, 5, 5], [0, -3, 2, 20, 30]],
                    np.float32)
    attrs = {"pooled_shape": [3, 2], "spatial_scale": scale}
    # onnx's reference has no MaxRoiPool
    check_node("MaxRoiPool", [x, rois], attrs, opset=1, device=dev,
               expected=ort_outputs("MaxRoiPool", [x, rois], attrs, opset=12))


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("limits", [(2, 0.5, None), (10, 0.3, 0.4), (0, 0.5, None),
                                    (3, 0.0, 0.2)])
def test_non_max_suppression(dev: str, center: int, limits: tuple) -> None:
    most, iou, score = limits
    corner = RNG.random((2, 8, 2)) * 4
    boxes = np.concatenate([corner, corner + RNG.random((2, 8, 2)) * 3 + 0.5], -1)
    boxes[0, 3] = boxes[0, 1]  # identical boxes
    scores = RNG.random((2, 3, 8)).astype(np.float32)
    scores[1, 0, 2] = scores[1, 0, 5]  # a tie
    inputs = [boxes.astype(np.float32), scores, np.array([most], np.int64),
              np.array([iou], np.float32)]
    if score is not None:
        inputs.append(np.array([score], np.float32))
    check_node("NonMaxSuppression", inputs, {"center_point_box": center}, opset=11, device=dev)
