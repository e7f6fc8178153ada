"""Resize and Upsample against onnx's reference (onnxruntime for the legacy opsets)."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import DEVICES, check_node, reference
from .runtime_reference import ort_outputs

RNG = np.random.default_rng(3)
X = RNG.standard_normal((1, 2, 4, 5)).astype(np.float32)
EMPTY = np.zeros(0, np.float32)


def scales(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


def sizes(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


COORDINATES = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
               "half_pixel_symmetric"]
TARGETS = {
    "up_scales": (scales(1, 1, 2.0, 1.5), None),
    "down_scales": (scales(1, 1, 0.6, 0.5), None),
    "mixed_scales": (scales(1, 1, 1.7, 0.8), None),
    "up_sizes": (None, sizes(1, 2, 7, 9)),
    "down_sizes": (None, sizes(1, 2, 3, 1)),
}


def _inputs(target: str) -> list[np.ndarray | None]:
    given_scales, given_sizes = TARGETS[target]
    if given_sizes is not None:
        return [X, EMPTY, EMPTY, given_sizes]
    return [X, EMPTY, given_scales]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("coordinate", COORDINATES)
@pytest.mark.parametrize("nearest", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
def test_resize_nearest(dev: str, target: str, coordinate: str, nearest: str) -> None:
    attrs = {"mode": "nearest", "coordinate_transformation_mode": coordinate,
             "nearest_mode": nearest}
    check_node("Resize", _inputs(target), attrs, opset=19, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("coordinate", COORDINATES)
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_interpolating(dev: str, target: str, coordinate: str, mode: str) -> None:
    attrs = {"mode": mode, "coordinate_transformation_mode": coordinate}
    check_node("Resize", _inputs(target), attrs, opset=19, device=dev, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("a, exclude", [(-0.5, 1), (-0.75, 1), (-0.5, 0)])
def test_resize_cubic_options(dev: str, target: str, a: float, exclude: int) -> None:
    attrs = {"mode": "cubic", "cubic_coeff_a": a, "exclude_outside": exclude}
    check_node("Resize", _inputs(target), attrs, opset=19, device=dev, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_antialias(dev: str, target: str, mode: str) -> None:
    check_node("Resize", _inputs(target), {"mode": mode, "antialias": 1}, opset=19, device=dev,
               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("extrapolation", [0.0, 10.0])
def test_resize_tf_crop_and_resize(dev: str, mode: str, extrapolation: float) -> None:
    roi = np.array([0, 0, -0.2, 0.4, 1, 1, 0.7, 1.3], np.float32)
    attrs = {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize",
             "extrapolation_value": extrapolation}
    check_node("Resize", [X, roi, EMPTY, sizes(1, 2, 3, 6)], attrs, opset=19, device=dev,
               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axes", [[2, 3], [3, 2], [-1]])
@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
def test_resize_axes_and_policy(dev: str, axes: list[int], policy: str) -> None:
    target = sizes(*[7, 3][:len(axes)])
    attrs = {"mode": "linear", "axes": axes, "keep_aspect_ratio_policy": policy}
    # onnx's reference takes no negative axes: its answer for the same axes counted forward
    forward = {**attrs, "axes": [a % 4 for a in axes]}
    want = reference("Resize", [X, None, None, target], forward, opset=19)
    check_node("Resize", [X, None, None, target], attrs, opset=19, device=dev, rtol=1e-4,
               atol=1e-5, expected=want)
    factors = scales(*[1.5, 0.5][:len(axes)])
    attrs = {"mode": "nearest", "axes": axes}
    want = reference("Resize", [X, None, factors], {**attrs, "axes": forward["axes"]}, opset=19)
    check_node("Resize", [X, None, factors], attrs, opset=19, device=dev, expected=want)


@pytest.mark.parametrize("dev", DEVICES)
def test_resize_tf_crop_with_axes(dev: str) -> None:
    roi = np.array([0.1, 0.2, 0.8, 0.9], np.float32)
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
             "axes": [3, 2]}
    check_node("Resize", [X, roi, None, sizes(4, 3)], attrs, opset=19, device=dev, rtol=1e-4,
               atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
def test_resize_integers(dev: str) -> None:
    image = RNG.integers(0, 255, (1, 1, 4, 4)).astype(np.uint8)
    check_node("Resize", [image, None, scales(1, 1, 2, 1.5)], {"mode": "nearest"}, opset=19,
               device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("factors", [(1, 1, 2, 3), (1, 1, 0.5, 0.6), (1, 2, 1.5, 1)])
def test_legacy_resize_and_upsample(dev: str, mode: str, factors: tuple[float, ...]) -> None:
    given = scales(*factors)
    want = ort_outputs("Resize", [X, given], {"mode": mode}, opset=10)
    check_node("Resize", [X, given], {"mode": mode}, opset=10, device=dev, rtol=1e-5,
               atol=1e-6, expected=want)
    if min(factors) >= 1:
        want = ort_outputs("Upsample", [X, given], {"mode": mode}, opset=9)
        check_node("Upsample", [X, given], {"mode": mode}, opset=9, device=dev, rtol=1e-5,
                   atol=1e-6, expected=want)
        attrs = {"mode": mode, "scales": [float(f) for f in factors]}
        want = ort_outputs("Upsample", [X], attrs, opset=7)
        check_node("Upsample", [X], attrs, opset=7, device=dev, rtol=1e-5, atol=1e-6,
                   expected=want)
