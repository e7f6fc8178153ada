"""Conv, ConvTranspose, ConvInteger, QLinearConv and DeformConv against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn

from .helpers import DEVICES, check_node, run_pyburn, wgpu_device
from .runtime_reference import ort_outputs

RNG = np.random.default_rng(0)


def _f(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


CONV_CASES = {
    "1d": ((1, 2, 7), (3, 2, 3), {}),
    "2d_bias": ((2, 3, 6, 5), (4, 3, 3, 2), {"bias": True}),
    "3d": ((1, 2, 4, 5, 3), (2, 2, 2, 3, 2), {"pads": [1, 0, 1, 0, 1, 1]}),
    "strides_dilations": ((1, 2, 9, 8), (2, 2, 3, 3),
                          {"strides": [2, 3], "dilations": [2, 1], "pads": [1, 1, 1, 1]}),
    "asymmetric_pads": ((1, 1, 5, 6), (2, 1, 3, 3), {"pads": [0, 2, 1, 0], "strides": [2, 2]}),
    "group": ((1, 4, 5, 5), (6, 2, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),
    "depthwise": ((2, 3, 5, 4), (3, 1, 2, 2), {"group": 3}),
    "same_upper": ((1, 2, 7, 6), (2, 2, 3, 4), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    "same_lower": ((1, 2, 7, 6), (2, 2, 4, 3), {"auto_pad": "SAME_LOWER", "strides": [2, 1]}),
    "valid": ((1, 2, 7, 6), (2, 2, 3, 3), {"auto_pad": "VALID", "strides": [2, 2]}),
    "kernel_shape": ((1, 1, 5, 5), (1, 1, 3, 3), {"kernel_shape": [3, 3]}),
}


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv(dev: str, case: str) -> None:
    x_shape, w_shape, attrs = CONV_CASES[case]
    attrs = dict(attrs)
    inputs = [_f(*x_shape), _f(*w_shape)]
    if attrs.pop("bias", False):
        inputs.append(_f(w_shape[0]))
    # onnx's reference gets VALID's output size wrong when the stride does not divide it
    expected = ort_outputs("Conv", inputs, attrs, opset=22) if case == "valid" else None
    check_node("Conv", inputs, attrs, opset=22, device=dev, rtol=1e-4, atol=1e-5,
               expected=expected)


TRANSPOSE_CASES = {
    "1d": ((1, 2, 4), (2, 3, 3), {}),
    "2d_bias_strides": ((2, 2, 3, 4), (2, 3, 3, 2), {"strides": [2, 3], "bias": True}),
    "3d": ((1, 1, 2, 3, 2), (1, 2, 2, 2, 2), {"strides": [1, 2, 1]}),
    "pads": ((1, 1, 4, 4), (1, 2, 3, 3), {"strides": [2, 2], "pads": [1, 0, 2, 1]}),
    "output_padding": ((1, 1, 3, 3), (1, 2, 3, 3),
                       {"strides": [3, 2], "output_padding": [1, 1]}),
    "output_shape": ((1, 1, 3, 3), (1, 2, 3, 3), {"strides": [3, 2], "output_shape": [10, 8]}),
    "output_shape_smaller": ((1, 1, 3, 3), (1, 2, 3, 3),
                             {"strides": [2, 2], "output_shape": [5, 6]}),
    "same_upper": ((1, 1, 3, 3), (1, 2, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "same_lower": ((1, 1, 3, 4), (1, 2, 2, 3), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    "dilations": ((1, 1, 3, 3), (1, 1, 2, 2), {"dilations": [2, 2]}),
    "group": ((1, 4, 3, 3), (4, 3, 3, 3), {"group": 2, "strides": [2, 1]}),
}


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", list(TRANSPOSE_CASES))
def test_conv_transpose(dev: str, case: str) -> None:
    x_shape, w_shape, attrs = TRANSPOSE_CASES[case]
    attrs = dict(attrs)
    inputs = [_f(*x_shape), _f(*w_shape)]
    if attrs.pop("bias", False):
        inputs.append(_f(w_shape[1] * attrs.get("group", 1)))
    # onnx's reference mixes up the groups' output channels and cannot crop to a smaller
    # output_shape
    expected = ort_outputs("ConvTranspose", inputs, attrs, opset=22) if case in (
        "group", "output_shape_smaller") else None
    check_node("ConvTranspose", inputs, attrs, opset=22, device=dev, rtol=1e-4, atol=1e-5,
               expected=expected)


#: (x shape, w shape, attributes, whether the packed kernels run it: 1-d and 2-d do)
INTEGER_CASES = {
    "2d": ((1, 2, 5, 5), (3, 2, 2, 2), {"pads": [1, 0, 0, 1]}, True),
    "1d_group": ((2, 4, 9), (4, 2, 3), {"group": 2, "strides": [2], "pads": [2, 1]}, True),
    "3d": ((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), {"pads": [1, 0, 0, 0, 1, 1]}, False),
}


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", INTEGER_CASES)
def test_conv_integer(dev: str, case: str, monkeypatch) -> None:
    from pyburn.onnx.ops import conv as conv_ops

    x_shape, w_shape, attrs, packed = INTEGER_CASES[case]
    calls = []
    kernel = conv_ops.quant_kernels.conv_integer
    monkeypatch.setattr(conv_ops.quant_kernels, "conv_integer",
                        lambda *a, **k: calls.append(1) or kernel(*a, **k))
    x = RNG.integers(0, 255, x_shape).astype(np.uint8)
    w = RNG.integers(0, 255, w_shape).astype(np.uint8)
    check_node("ConvInteger", [x, w, np.uint8(12), np.uint8(130)], attrs, opset=10, device=dev)
    assert bool(calls) == packed


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("signed", [False, True])
def test_qlinear_conv(dev: str, signed: bool) -> None:
    kind, low, high = (np.int8, -128, 127) if signed else (np.uint8, 0, 255)
    x = RNG.integers(low, high, (1, 2, 5, 5)).astype(kind)
    w = RNG.integers(low, high, (3, 2, 3, 3)).astype(kind)
    bias = RNG.integers(-500, 500, 3).astype(np.int32)
    w_scale = np.array([0.01, 0.02, 0.015], np.float32)
    inputs = [x, np.float32(0.05), kind(3), w, w_scale, np.zeros(3, kind), np.float32(2.0),
              kind(5), bias]
    check_node("QLinearConv", inputs, {"pads": [1, 1, 1, 1]}, opset=10, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mask", [False, True])
def test_deform_conv(dev: str, mask: bool) -> None:
    x = _f(1, 4, 5, 4)
    w = _f(2, 2, 2, 2)
    offset = (_f(1, 2 * 4 * 2, 5, 4) * 1.5).astype(np.float32)
    inputs = [x, w, offset, _f(2)]
    if mask:
        inputs.append(RNG.random((1, 2 * 4, 5, 4)).astype(np.float32))
    check_node("DeformConv", inputs, {"group": 2, "offset_group": 2, "pads": [1, 1, 0, 0]},
               opset=19, device=dev, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("w_shape, group", [((4, 3, 3, 3), 2), ((2, 3, 3, 3), 1),
                                            ((3, 1, 3, 3), 2)])
def test_conv_refuses_channels_that_do_not_fit(dev: str, w_shape, group: int) -> None:
    with pytest.raises(pyburn.ShapeError):
        run_pyburn("Conv", [_f(1, 2, 5, 5), _f(*w_shape)], {"group": group}, opset=22,
                   device=dev)


@pytest.mark.parametrize("case", ["asymmetric_pads", "same_lower", "group"])
def test_conv_on_wgpu(case: str) -> None:
    dev = wgpu_device()
    x_shape, w_shape, attrs = CONV_CASES[case]
    check_node("Conv", [_f(*x_shape), _f(*w_shape)], attrs, opset=22, device=dev, rtol=1e-4,
               atol=1e-5)
