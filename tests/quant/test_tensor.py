"""QTensor against onnxruntime's quantization tool (the initializers of the model it writes:
scales and zero points bit for bit, the same integers), PyTorch's quantize_per_channel
(dequantized values within one step), block-wise int4 against a float64 numpy reference and
onnxruntime's ``compute_scale_zp_blocked`` (scales within one ulp); ``fake_quantize_dynamic``
against onnxruntime's DynamicQuantizeLinear + DequantizeLinear; on every device."""

from __future__ import annotations

import functools

import numpy as np
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper
from onnxruntime.quantization.quant_utils import compute_scale_zp_blocked

import pyburn
from pyburn.errors import ArgumentError, DeviceError, DTypeError, ShapeError
from pyburn.quant import QTensor, QuantScheme, fake_quantize_dynamic

from .references import ONNX_TYPES, ort_quantized

RNG = np.random.default_rng(3)
#: rows of very different ranges, one of zeros, one with no negative value; 37 columns
WEIGHT = (RNG.standard_normal((6, 37)) * np.array([[0.1], [1], [30], [0.01], [2], [0.5]])
          ).astype(np.float32)
WEIGHT[3] = 0
WEIGHT[5] = np.abs(WEIGHT[5]) + 0.1


def on(device, array: np.ndarray) -> pyburn.Tensor:
    return pyburn.tensor(array.tolist(), dtype=str(array.dtype), device=device)


def assert_same_as_onnxruntime(q: QTensor, found: dict[str, np.ndarray]) -> None:
    scheme = q.scheme
    np.testing.assert_array_equal(np.array(q.scale.tolist(), np.float32), found["w_scale"])
    zero = found["w_zero_point"].astype(np.int32)
    if q.zero_point is None:
        assert not zero.any()
    else:
        np.testing.assert_array_equal(np.array(q.zero_point.tolist()), zero)
    ints = found["w_quantized"].astype(np.int32).T
    np.testing.assert_array_equal(np.array(q.int_repr().tolist()), ints)
    spread = found["w_scale"].reshape(-1, 1) if scheme.granularity == "channel" else \
        found["w_scale"]
    want = (ints - zero.reshape(-1, 1)) * spread.astype(np.float64)
    np.testing.assert_allclose(np.array(q.dequantize().tolist()), want, rtol=1e-6, atol=0)


@functools.cache
def _dynamic(dtype: str, symmetric: bool, per_channel: bool) -> dict[str, np.ndarray]:
    return ort_quantized(WEIGHT, dtype, symmetric, per_channel)


DYNAMIC = [(dtype, symmetric, per_channel) for dtype in ("int8", "uint8")
           for symmetric in (True, False) for per_channel in (True, False)]


@pytest.mark.parametrize("dtype, symmetric, per_channel", DYNAMIC,
                         ids=[f"{d}-{'sym' if s else 'asym'}-{'channel' if c else 'tensor'}"
                              for d, s, c in DYNAMIC])
def test_weights_equal_onnxruntimes_quantize_dynamic(device, dtype, symmetric, per_channel):
    scheme = QuantScheme(dtype, symmetric, "channel" if per_channel else "tensor")
    q = QTensor.quantize(on(device, WEIGHT), scheme)
    assert q.device is device and q.shape == WEIGHT.shape
    assert_same_as_onnxruntime(q, _dynamic(dtype, symmetric, per_channel))


@pytest.mark.parametrize("dtype", ["int4", "uint4"])
def test_int4_per_channel_equals_onnxruntimes_qdq_weights(dtype):
    # (onnxruntime's tool quantizes 4-bit weights symmetrically whatever WeightSymmetric says)
    found = ort_quantized(WEIGHT, dtype, True, True, [WEIGHT[:2, :]])
    assert_same_as_onnxruntime(QTensor.quantize(on("cpu", WEIGHT),
                                                QuantScheme(dtype, True, "channel")), found)


def reference_blocks(weight: np.ndarray, scheme: QuantScheme):
    """Block-wise quantization in float64 numpy, from the formulas (float32 for the
    division, as onnxruntime's QuantizeLinear): scales, zero points, integers."""
    n, k = weight.shape
    size = scheme.block_size
    blocks = -(-k // size)
    padded = np.zeros((n, blocks * size), np.float64)
    padded[:, :k] = weight
    grouped = padded.reshape(n, blocks, size)
    low, high = np.minimum(grouped.min(-1), 0), np.maximum(grouped.max(-1), 0)
    qmin, qmax = scheme.qrange
    if scheme.symmetric:
        high = np.maximum(-low, high)
        low = -high
    scale = (high - low) / (qmax - qmin)
    degenerate = scale < np.finfo(np.float32).tiny  # all zeros: scale 1, zero point 0
    scale[degenerate] = 1
    zero = np.round((qmin + qmax) / 2 if scheme.symmetric else qmin - low / scale) + 0 * scale
    zero[degenerate] = 0
    scale32 = scale.astype(np.float32)
    spread = np.repeat(scale32, size, axis=1)[:, :k]
    ints = np.rint(weight.astype(np.float32) / spread) + np.repeat(zero, size, axis=1)[:, :k]
    return scale32, zero.astype(np.int32), np.clip(ints, *scheme.type_range).astype(np.int32)


BLOCKED = [QuantScheme("int4", True, "block", 16), QuantScheme("uint4", False, "block", 8),
           QuantScheme("int8", False, "block", 32)]


@pytest.mark.parametrize("scheme", BLOCKED, ids=QuantScheme.describe)
def test_block_wise_against_float64_and_onnxruntime(device, scheme):
    q = QTensor.quantize(on(device, WEIGHT), scheme)
    scale, zero, ints = reference_blocks(WEIGHT.astype(np.float64), scheme)
    assert q.scale.shape == scale.shape == (6, -(-37 // scheme.block_size))
    np.testing.assert_array_equal(np.array(q.scale.tolist(), np.float32), scale)
    np.testing.assert_array_equal(np.array(q.int_repr().tolist()), ints)
    ort_zero, ort_scale = compute_scale_zp_blocked(WEIGHT, ONNX_TYPES[scheme.dtype], 1,
                                                   scheme.block_size, scheme.symmetric)
    # (its blocked variant subtracts the range's ends in float32, compute_scale_zp in float64:
    # the scales may differ by one ulp)
    ulp = np.spacing(ort_scale)
    assert np.all(np.abs(np.array(q.scale.tolist(), np.float32) - ort_scale) <= ulp)
    got_zero = np.zeros_like(zero) if q.zero_point is None else np.array(q.zero_point.tolist())
    np.testing.assert_array_equal(got_zero, ort_zero.astype(np.int32))
    np.testing.assert_array_equal(got_zero, zero)
    steps = np.repeat(scale, scheme.block_size, axis=1)[:, :37]
    error = np.abs(np.array(q.dequantize().tolist()) - WEIGHT)
    assert np.all(error <= steps / 2 * (1 + 1e-5) + 1e-30)


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")  # deprecated, still the reference
@pytest.mark.parametrize("scheme", [QuantScheme("int8", True, "channel"),
                                    QuantScheme("uint8", False, "channel")],
                         ids=QuantScheme.describe)
def test_dequantized_values_within_one_step_of_torch(scheme):
    q = QTensor.quantize(on("cpu", WEIGHT), scheme)
    scale = torch.tensor(q.scale.tolist(), dtype=torch.float64)
    zero = torch.tensor(q.zero_point.tolist() if q.zero_point is not None else [0] * 6)
    theirs = torch.quantize_per_channel(torch.from_numpy(WEIGHT), scale, zero, 0,
                                        torch.qint8 if scheme.signed else torch.quint8)
    diff = np.abs(np.array(q.dequantize().tolist()) - theirs.dequantize().numpy())
    assert np.all(diff <= scale.numpy()[:, None] * (1 + 1e-6))


def test_a_convolution_weight_is_quantized_as_a_matrix_and_keeps_its_shape():
    weight = pyburn.randn(4, 3, 3, 3, device="flex")
    q = QTensor.quantize(weight, QuantScheme("int8", True, "channel"))
    assert (q.shape, q.rows, q.cols, q.data.shape) == ((4, 3, 3, 3), 4, 27, (4, 7))
    flat = QTensor.quantize(weight.reshape(4, 27), QuantScheme("int8", True, "channel"))
    assert q.int_repr().tolist() == flat.int_repr().tolist()
    assert q.dequantize().shape == (4, 3, 3, 3)
    assert q.nbytes == 4 * 7 * 4 + 4 * 4
    assert repr(q) == ("QTensor(shape=(4, 3, 3, 3), scheme=int8 symmetric per-channel, "
                       "device=flex, nbytes=128)")


def test_a_calibrated_range_replaces_the_tensors_own():
    x = pyburn.tensor([[0.1, 0.2], [0.3, 0.4]], device="flex")
    scheme = QuantScheme("uint8", False, "tensor")
    q = QTensor.quantize(x, scheme, rmin=-1.0, rmax=1.55)
    scales, zeros = scheme.qparams([-1.0], [1.55])
    assert q.scale.item() == scales[0] and q.zero_point.item() == zeros[0]
    per_channel = QTensor.quantize(x, QuantScheme("uint8", False, "channel"),
                                   rmin=[0.0, 0.0], rmax=[1.0, 2.0])
    assert per_channel.scale.tolist() == pytest.approx([1 / 255, 2 / 255])
    with pytest.raises(ArgumentError, match="a number or 2 numbers"):
        QTensor.quantize(x, QuantScheme("uint8", False, "channel"), rmin=[0.0])


def test_moving_between_devices_keeps_everything(device):
    q = QTensor.quantize(on("flex", WEIGHT), QuantScheme("uint4", False, "block", 8))
    moved = q.to(device)
    assert moved.device is device and moved.scheme == q.scheme
    for mine, theirs in ((moved.data, q.data), (moved.scale, q.scale),
                         (moved.zero_point, q.zero_point)):
        assert mine.to_bytes() == theirs.to_bytes()


def _dynamic_quantize_linear(x: np.ndarray) -> np.ndarray:
    graph = helper.make_graph(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
         helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])], "dq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize("shift", [0.0, 3.0, -3.0])
def test_dynamic_fake_quantization_equals_onnxruntimes(device, shift):
    x = (RNG.standard_normal((4, 33)) + shift).astype(np.float32)
    got = np.array(fake_quantize_dynamic(on(device, x)).tolist(), np.float32)
    np.testing.assert_array_equal(got, _dynamic_quantize_linear(x))
    zeros = np.zeros((2, 3), np.float32)
    assert fake_quantize_dynamic(on(device, zeros)).tolist() == zeros.tolist()


def test_bad_input_is_refused():
    scheme = QuantScheme()
    with pytest.raises(DTypeError, match="only floating-point tensors"):
        QTensor.quantize(pyburn.zeros(2, 2, dtype="int32", device="flex"), scheme)
    with pytest.raises(ShapeError, match="empty"):
        QTensor.quantize(pyburn.zeros(0, 2, device="flex"), scheme)
    with pytest.raises(ShapeError, match="at least one dim"):
        QTensor.quantize(pyburn.tensor(1.0, device="flex"), scheme)
    with pytest.raises(ArgumentError, match="QuantScheme"):
        QTensor.quantize(pyburn.ones(2, 2, device="flex"), "int8")
    with pytest.raises(ArgumentError, match="not finite"):
        QTensor.quantize(pyburn.tensor([[1.0, float("inf")]], device="flex"), scheme)
    good = QTensor.quantize(pyburn.ones(2, 5, device="flex"), scheme)
    with pytest.raises(ShapeError, match=r"data must be int32 \(2, 2\)"):
        QTensor(good.data.reshape(4), good.scale, None, scheme, (2, 5))
    with pytest.raises(ArgumentError, match="has no zero point"):
        QTensor(good.data, good.scale, good.scale.int(), scheme, (2, 5))
    with pytest.raises(DeviceError, match="scale is on cpu"):
        QTensor(good.data, good.scale.to("cpu"), None, scheme, (2, 5))
