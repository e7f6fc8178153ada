"""QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger and QLinearMatMul
against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from .helpers import DEVICES, check_node, reference, run_pyburn

RNG = np.random.default_rng(10)
X = (RNG.standard_normal((3, 4, 6)) * 40).astype(np.float32)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("zero", [None, np.uint8(128), np.int8(-3)])
def test_quantize_per_tensor(dev: str, zero) -> None:
    inputs = [X, np.float32(0.7)] + ([] if zero is None else [zero])
    check_node("QuantizeLinear", inputs, {}, opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_quantize_per_axis(dev: str, axis: int) -> None:
    n = X.shape[axis]
    scale = (RNG.random(n) + 0.2).astype(np.float32)
    zero = RNG.integers(0, 50, n).astype(np.uint8)
    check_node("QuantizeLinear", [X, scale, zero], {"axis": axis}, opset=13, device=dev)
    check_node("DequantizeLinear", [RNG.integers(0, 255, X.shape).astype(np.uint8), scale, zero],
               {"axis": axis}, opset=19, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis, block", [(1, 2), (2, 4), (0, 3)])
def test_blocked(dev: str, axis: int, block: int) -> None:
    shape = list(X.shape)
    shape[axis] = -(-shape[axis] // block)
    scale = (RNG.random(shape) + 0.2).astype(np.float32)
    zero = RNG.integers(-20, 20, shape).astype(np.int8)
    attrs = {"axis": axis, "block_size": block}
    check_node("QuantizeLinear", [X, scale, zero], attrs, opset=21, device=dev)
    q = RNG.integers(-128, 127, X.shape).astype(np.int8)
    check_node("DequantizeLinear", [q, scale, zero], attrs, opset=21, device=dev)


# the quantized types pyburn cannot tell from the zero point's held dtype: named by
# output_dtype, as the loader passes them
TYPED = {
    "int16": (TensorProto.INT16, np.int16(-7)),
    "uint16": (TensorProto.UINT16, np.uint16(30000)),
    "int4": (TensorProto.INT4, None),
    "uint4": (TensorProto.UINT4, None),
    "float8e4m3fn": (TensorProto.FLOAT8E4M3FN, None),
    "float8e5m2": (TensorProto.FLOAT8E5M2, None),
}


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("kind", list(TYPED))
@pytest.mark.parametrize("saturate", [0, 1])
def test_quantize_output_dtype(dev: str, kind: str, saturate: int) -> None:
    code, zero = TYPED[kind]
    floating = kind.startswith("float")
    if saturate == 0 and not floating:
        pytest.skip("saturate applies to float8 only")
    x = X * 20 if floating else X
    inputs = [x, np.float32(0.3)] + ([] if zero is None else [zero])
    attrs = {"saturate": saturate} if floating else {}
    # the reference refuses output_dtype next to a zero point; pyburn needs it there
    want = reference("QuantizeLinear", inputs, attrs if zero is not None else
                     {**attrs, "output_dtype": code}, opset=21)[0]
    out = run_pyburn("QuantizeLinear", inputs, {**attrs, "output_dtype": code}, opset=21,
                     device=dev)[0]
    np.testing.assert_array_equal(out.numpy().astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("dev", DEVICES)
def test_dequantize_int32(dev: str) -> None:
    q = RNG.integers(-1000, 1000, (4, 5)).astype(np.int32)
    check_node("DequantizeLinear", [q, np.float32(0.01)], {}, opset=19, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("x", [X, np.abs(X), -np.abs(X), np.zeros((2, 3), np.float32)])
def test_dynamic_quantize_linear(dev: str, x: np.ndarray) -> None:
    check_node("DynamicQuantizeLinear", [x], {}, opset=11, device=dev, outputs=3)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("zeros", ["none", "scalar", "vector"])
def test_matmul_integer(dev: str, zeros: str) -> None:
    a = RNG.integers(0, 255, (3, 4) if zeros == "vector" else (2, 3, 4)).astype(np.uint8)
    b = RNG.integers(0, 255, (4, 5)).astype(np.uint8)
    inputs = [a, b]
    if zeros == "scalar":
        inputs += [np.uint8(12), np.uint8(200)]
    elif zeros == "vector":
        inputs += [RNG.integers(0, 255, 3).astype(np.uint8),
                   RNG.integers(0, 255, 5).astype(np.uint8)]
    want = None
    if zeros == "vector":
        # neither onnx's reference nor onnxruntime takes the spec's per-row zero point of a
        a64, b64 = a.astype(np.int64) - inputs[2][:, None], b.astype(np.int64) - inputs[3]
        want = [(a64 @ b64).astype(np.int32)]
    check_node("MatMulInteger", inputs, {}, opset=10, device=dev, expected=want)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("kind", [np.uint8, np.int8])
def test_qlinear_matmul(dev: str, kind) -> None:
    low, high = (0, 255) if kind is np.uint8 else (-128, 127)
    a = RNG.integers(low, high, (2, 3, 4)).astype(kind)
    b = RNG.integers(low, high, (4, 5)).astype(kind)
    inputs = [a, np.float32(0.05), kind(3), b, np.float32(0.02), kind(5), np.float32(0.3),
              kind(10)]
    check_node("QLinearMatMul", inputs, {}, opset=21, device=dev)
