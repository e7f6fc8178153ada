"""The normalization operators against onnx's reference (onnxruntime where the reference
is wrong)."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import DEVICES, check_node, reference, wgpu_device
from .runtime_reference import ort_outputs

RNG = np.random.default_rng(2)


def _f(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (2, 3, 4, 5)])
@pytest.mark.parametrize("opset", [9, 15])
def test_batch_normalization(dev: str, shape: tuple[int, ...], opset: int) -> None:
    c = shape[1]
    inputs = [_f(*shape), _f(c), _f(c), _f(c), RNG.random(c).astype(np.float32) + 0.5]
    # onnx's reference runs opset 9 as training (its momentum is never None)
    expected = ort_outputs("BatchNormalization", inputs, {"epsilon": 1e-3}, opset=opset)
    check_node("BatchNormalization", inputs, {"epsilon": 1e-3}, opset=opset, device=dev,
               rtol=1e-5, atol=1e-5, expected=expected)


@pytest.mark.parametrize("dev", DEVICES)
def test_batch_normalization_training(dev: str) -> None:
    var = RNG.random(3).astype(np.float32) + 0.5
    check_node("BatchNormalization", [_f(2, 3, 4, 5), _f(3), _f(3), _f(3), var],
               {"training_mode": 1, "momentum": 0.8}, opset=15, device=dev, outputs=3,
               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 2, 3, 4), (1, 2, 2, 3, 2)])
def test_instance_normalization(dev: str, shape: tuple[int, ...]) -> None:
    c = shape[1]
    check_node("InstanceNormalization", [_f(*shape), _f(c), _f(c)], {"epsilon": 1e-4},
               opset=6, device=dev, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
@pytest.mark.parametrize("with_bias", [False, True])
def test_layer_normalization(dev: str, axis: int, with_bias: bool) -> None:
    x = _f(2, 3, 4)
    normalized = x.shape[axis % 3:]
    inputs = [x, _f(*normalized)] + ([_f(*normalized)] if with_bias else [])
    check_node("LayerNormalization", inputs, {"axis": axis, "epsilon": 1e-3}, opset=17,
               device=dev, outputs=3, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis", [1, -1])
def test_layer_normalization_of_y_alone_on_wgpu(axis: int) -> None:
    # with only Y used, one call of the device's layer_norm kernel
    dev = wgpu_device()
    x = _f(2, 3, 4)
    inputs = [x, _f(*x.shape[axis % 3:]), _f(*x.shape[axis % 3:])]
    expected = reference("LayerNormalization", inputs, {"axis": axis}, opset=17)
    check_node("LayerNormalization", inputs, {"axis": axis, "outputs_used": 1}, opset=17,
               device=dev, rtol=1e-4, atol=1e-5, expected=expected)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_rms_normalization(dev: str, axis: int) -> None:
    x = _f(2, 3, 4)
    check_node("RMSNormalization", [x, _f(*x.shape[axis % 3:])], {"axis": axis}, opset=23,
               device=dev, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("groups", [1, 2, 4])
def test_group_normalization(dev: str, opset: int, groups: int) -> None:
    x = _f(2, 4, 3, 2)
    params = groups if opset == 18 else 4
    check_node("GroupNormalization", [x, _f(params), _f(params)],
               {"num_groups": groups, "epsilon": 1e-3}, opset=opset, device=dev, rtol=1e-4,
               atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_lp_normalization(dev: str, p: int, axis: int) -> None:
    x = _f(3, 4, 2)
    x[0, 0, :] = 0.0  # a zero norm along the last axis
    attrs = {"p": p, "axis": axis}
    # onnx's reference sums x^p, not |x|^p
    check_node("LpNormalization", [x], attrs, opset=22, device=dev, rtol=1e-5, atol=1e-6,
               expected=ort_outputs("LpNormalization", [x], attrs, opset=22))


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_lrn(dev: str, size: int) -> None:
    x = _f(2, 5, 3, 3)
    attrs = {"size": size, "alpha": 2e-3, "beta": 0.7, "bias": 1.5}
    # onnx's reference loops over the batch instead of the channels, and onnxruntime takes
    # odd sizes only: the spec's formula in float64
    x64 = x.astype(np.float64)
    total = np.zeros_like(x64)
    for c in range(5):
        low, high = max(0, c - (size - 1) // 2), min(5, c + -(-(size - 1) // 2) + 1)
        total[:, c] = (x64[:, low:high] ** 2).sum(1)
    want = (x64 / (1.5 + 2e-3 / size * total) ** 0.7).astype(np.float32)
    check_node("LRN", [x], attrs, opset=13, device=dev, rtol=1e-5, atol=1e-6, expected=[want])


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axes", [None, [1], [0, 2, 3], [-1, -2]])
def test_mean_variance_normalization(dev: str, axes: list[int] | None) -> None:
    attrs = {} if axes is None else {"axes": axes}
    check_node("MeanVarianceNormalization", [_f(2, 3, 4, 5)], attrs, opset=13, device=dev,
               rtol=1e-4, atol=1e-5)
