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


def _integer_model(op: str):
    """A one-node MatMulInteger or ConvInteger model whose int8 weight and zero point are
    initializers, and its numpy reference."""
    import onnx
    from onnx import helper, numpy_helper

    if op == "MatMulInteger":
        shape, x_shape, out = (6, 5), (3, 6), (3, 5)
    else:
        shape, x_shape, out = (4, 2, 3, 3), (1, 2, 5, 5), (1, 4, 3, 3)
    node = helper.make_node(op, ["x", "w", "xz", "wz"], ["y"])
    inits = [numpy_helper.from_array(np.uint8(7), "xz"),
             numpy_helper.from_array(RNG.integers(-5, 5, shape[0] if op == "ConvInteger"
                                                  else shape[1]).astype(np.int8), "wz"),
             numpy_helper.from_array(RNG.integers(-128, 127, shape).astype(np.int8), "w")]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.UINT8, list(x_shape))], [helper.make_tensor_value_info(
            "y", TensorProto.INT32, list(out))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)

    def want(x: np.ndarray, w: np.ndarray, wz: np.ndarray) -> np.ndarray:
        import torch

        xc = x.astype(np.int64) - 7
        if op == "MatMulInteger":
            return xc @ (w.astype(np.int64) - wz)
        wc = w.astype(np.int64) - wz.reshape(-1, 1, 1, 1)
        return torch.nn.functional.conv2d(torch.from_numpy(xc).double(),
                                          torch.from_numpy(wc).double()).numpy().astype(np.int64)
    return model, x_shape, want


@pytest.mark.parametrize("op", ["MatMulInteger", "ConvInteger"])
def test_a_constant_weight_is_packed_once(monkeypatch, op):
    """The runner keeps a node's packed weight (its memo) while the same weight comes in, and
    packs again when the module's weight is another tensor."""
    import pyburn
    import pyburn.onnx
    from pyburn.quant import kernels

    packed = []
    real = kernels.pack
    monkeypatch.setattr(kernels, "pack", lambda *a, **k: packed.append(1) or real(*a, **k))
    model, x_shape, want = _integer_model(op)
    module = pyburn.onnx.load(model.SerializeToString(), device="cpu")
    state = {k: v.numpy() for k, v in module.state_dict().items()}
    for _ in range(3):
        x = RNG.integers(0, 255, x_shape).astype(np.uint8)
        got = module(pyburn.tensor(x, device="cpu")).numpy()
        np.testing.assert_array_equal(got, want(x, state["w"], state["wz"]))
    assert len(packed) == 1
    state["w"] = RNG.integers(-128, 127, state["w"].shape).astype(state["w"].dtype)
    module.load_state_dict({k: pyburn.tensor(v, device="cpu") for k, v in state.items()})
    got = module(pyburn.tensor(x, device="cpu")).numpy()
    np.testing.assert_array_equal(got, want(x, state["w"], state["wz"]))
    assert len(packed) == 2
