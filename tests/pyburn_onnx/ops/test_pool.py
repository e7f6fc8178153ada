"""MaxPool, AveragePool, LpPool, the Global pools and MaxUnpool against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import DEVICES, check_node, run_pyburn, wgpu_device
from .runtime_reference import ort_outputs

RNG = np.random.default_rng(1)


def _f(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


WINDOW_CASES = {
    "1d": ((1, 2, 9), {"kernel_shape": [3]}),
    "2d_strides": ((2, 2, 7, 8), {"kernel_shape": [3, 2], "strides": [2, 3]}),
    "3d": ((1, 1, 4, 5, 6), {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2]}),
    "pads": ((1, 2, 5, 5), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    "asymmetric_pads": ((1, 1, 6, 5), {"kernel_shape": [3, 2], "pads": [2, 0, 0, 1],
                                       "strides": [2, 2]}),
    "ceil": ((1, 1, 4, 4), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    "ceil_pads": ((1, 1, 5, 6), {"kernel_shape": [2, 3], "strides": [2, 2], "ceil_mode": 1,
                                 "pads": [1, 0, 1, 0]}),
    "dilations": ((1, 2, 7, 7), {"kernel_shape": [2, 2], "dilations": [2, 3]}),
    "same_upper": ((1, 1, 5, 6), {"kernel_shape": [3, 2], "auto_pad": "SAME_UPPER",
                                  "strides": [2, 2]}),
    "same_lower": ((1, 1, 5, 6), {"kernel_shape": [2, 3], "auto_pad": "SAME_LOWER"}),
    "valid": ((1, 1, 5, 6), {"kernel_shape": [2, 3], "auto_pad": "VALID", "strides": [2, 2]}),
}


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", list(WINDOW_CASES))
def test_max_pool(dev: str, case: str) -> None:
    shape, attrs = WINDOW_CASES[case]
    x = _f(*shape)
    # onnx's reference has no Indices with dilations or 3 dims, and VALID's size is wrong
    expected = ort_outputs("MaxPool", [x], attrs, opset=12, outputs=2,
                           out_types=[np.float32, np.int64])
    check_node("MaxPool", [x], attrs, opset=12, device=dev, outputs=2, expected=expected)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", list(WINDOW_CASES))
def test_max_pool_values_only(dev: str, case: str) -> None:
    # a node that uses only Y: the device's max pooling capability (cpu) takes ONNX's pads
    # as they are, the composite (flex) pads first
    shape, attrs = WINDOW_CASES[case]
    x = _f(*shape)
    expected = ort_outputs("MaxPool", [x], attrs, opset=12)
    check_node("MaxPool", [x], {**attrs, "outputs_used": 1}, opset=12, device=dev,
               expected=expected)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", ["2d_strides", "pads", "asymmetric_pads", "ceil"])
def test_max_pool_column_major_indices(dev: str, case: str) -> None:
    shape, attrs = WINDOW_CASES[case]
    attrs = {**attrs, "storage_order": 1}
    x = _f(*shape)
    expected = ort_outputs("MaxPool", [x], attrs, opset=12, outputs=2,
                           out_types=[np.float32, np.int64])
    check_node("MaxPool", [x], attrs, opset=12, device=dev, outputs=2, expected=expected)


@pytest.mark.parametrize("dev", DEVICES)
def test_max_pool_integers(dev: str) -> None:
    # onnx's reference reads the pads of integer pools wrongly
    for x, attrs in [
            (RNG.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8),
             {"kernel_shape": [2, 2], "pads": [1, 1, 0, 0]}),
            (RNG.integers(-128, 127, (1, 2, 5, 5)).astype(np.int8),
             {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})]:
        check_node("MaxPool", [x], attrs, opset=12, device=dev,
                   expected=ort_outputs("MaxPool", [x], attrs, opset=12))


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("include_pad", [0, 1])
@pytest.mark.parametrize("case", list(WINDOW_CASES))
def test_average_pool(dev: str, case: str, include_pad: int) -> None:
    shape, attrs = WINDOW_CASES[case]
    attrs = {**attrs, "count_include_pad": include_pad}
    x = _f(*shape)
    # onnxruntime and onnx's reference disagree on VALID; follow the spec (onnxruntime)
    expected = ort_outputs("AveragePool", [x], attrs, opset=19) if case == "valid" else None
    check_node("AveragePool", [x], attrs, opset=19, device=dev, rtol=1e-5, atol=1e-6,
               expected=expected)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("case", ["1d", "pads", "asymmetric_pads", "dilations", "same_upper"])
def test_lp_pool(dev: str, case: str, p: int) -> None:
    shape, attrs = WINDOW_CASES[case]
    check_node("LpPool", [_f(*shape)], {**attrs, "p": p}, opset=18, device=dev, rtol=1e-4,
               atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 2, 4, 3), (1, 2, 2, 3, 2)])
def test_global_pools(dev: str, op: str, shape: tuple[int, ...]) -> None:
    # onnx's reference has no GlobalLpPool and a GlobalMaxPool for 2-d inputs only
    x = _f(*shape)
    check_node(op, [x], {}, opset=2 if op == "GlobalLpPool" else 1, device=dev,
               rtol=1e-5, atol=1e-6, expected=ort_outputs(op, [x], {}, opset=12))


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("with_shape", [False, True])
def test_max_unpool(dev: str, with_shape: bool) -> None:
    x = _f(1, 2, 4, 4)
    pooled, indices = (t.numpy() for t in run_pyburn(
        "MaxPool", [x], {"kernel_shape": [2, 2], "strides": [2, 2]}, opset=12, device="cpu"))
    inputs = [pooled, indices.astype(np.int64)]
    if with_shape:
        inputs.append(np.array([1, 2, 5, 6], np.int64))  # zero-extends the pooled-from shape
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    check_node("MaxUnpool", inputs, attrs, opset=11, device=dev)


def test_max_pool_indices_on_wgpu() -> None:
    """On a device without int64, Indices come back as int32 with the same values."""
    dev = wgpu_device()
    shape, attrs = WINDOW_CASES["asymmetric_pads"]
    x = _f(*shape)
    expected = ort_outputs("MaxPool", [x], attrs, opset=12, outputs=2,
                           out_types=[np.float32, np.int64])
    check_node("MaxPool", [x], attrs, opset=12, device=dev, outputs=2, expected=expected)
