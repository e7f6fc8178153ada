"""The quantized kernels (pyburn/quant/kernels.py, the "quant_matmul" capability on cpu,
wgpu and wasm, counted so that where a device offers it the capability is what ran; the
composite elsewhere) against float64 numpy references on every device: int8 and
int4, signed and unsigned, per tensor, per channel and block-wise (blocks of whole words,
which the kernels run, and of a part of a word, which the composite runs), rows whose length
is not a multiple of a word or a block, batch dims; the dynamic products against
onnxruntime's DynamicQuantizeLinear + MatMulInteger pipeline; bad input."""

from __future__ import annotations

import pytest

import pyburn
from pyburn.errors import ArgumentError, DTypeError, ShapeError
from pyburn.ops.capability import quantized as qcap
from pyburn.quant import kernels as qk

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

K = 13  # neither a multiple of a word (4 or 8 values) nor of the blocks below


def pack(q: np.ndarray, bits: int) -> np.ndarray:
    """Integers (N, K) as the packed int32 words (N, ceil(K / per_word)), written
    independently of pyburn: little-endian fields, zero padding."""
    per = 32 // bits
    n, k = q.shape
    words = -(-k // per)
    fields = np.zeros((n, words * per), np.int64)
    fields[:, :k] = q.astype(np.int64) & ((1 << bits) - 1)
    shifted = fields.reshape(n, words, per) << (np.arange(per) * bits)
    return shifted.sum(-1).astype(np.uint32).view(np.int32)


def weight(rng: np.random.Generator, n: int, k: int, bits: int, signed: bool, scheme: str,
           block: int, narrow_pairs: bool = False) -> dict:
    """Random integers of the type, their scale and zero point in the scheme's shape, and the
    float64 dequantized weight (N, K). `narrow_pairs`: the odd columns in [-1, 1], so that no
    pair of uint8 x int8 products along K passes int16 (255 * (128 + 1) > 32767 only with
    both of a pair wide): onnxruntime's AVX2 kernels add such pairs in int16 (vpmaddubsw)
    and saturate."""
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    q = rng.integers(low, high + 1, (n, k))
    if narrow_pairs:
        q[:, 1::2] = rng.integers(-1, 2, (n, k // 2))
    shape = {"tensor": (), "channel": (n,), "block": (n, -(-k // max(block, 1)))}[scheme]
    scale = rng.uniform(0.01, 0.1, shape).astype(np.float32)
    zero = None if scheme == "tensor" else rng.integers(low, high + 1, shape).astype(np.int32)
    if scheme == "block":
        spread = np.repeat(scale, block, axis=1)[:, :k].astype(np.float64)
        zeros = np.repeat(zero, block, axis=1)[:, :k]
    else:
        spread = np.broadcast_to(scale.reshape(-1, 1), (n, k)).astype(np.float64)
        zeros = 0 if zero is None else zero.reshape(-1, 1)
    return {"data": pack(q, bits), "scale": scale, "zero": zero, "q": q,
            "dense": (q - zeros) * spread}


def on(device: pyburn.Device, array: np.ndarray | None) -> pyburn.Tensor | None:
    return None if array is None else pyburn.from_numpy(np.array(array, order="C"), device)


def _counted(run, name: str, counts: dict[str, int]):
    def counted(*args):
        counts[name] += 1
        return run(*args)
    return counted


@pytest.fixture
def kernel_calls(monkeypatch):
    """How often the "quant_matmul" capability's backend calls ran (where the device offers
    it, the products must be those calls, not the composite)."""
    counts = {"quant_linear": 0, "quant_matmul_int": 0}
    for name in counts:
        monkeypatch.setattr(qcap, name, _counted(getattr(qcap, name), name, counts))
    return counts


#: (bits, signed, scheme, block, bias): every type, each scheme; blocks of whole words (one
#: word, several) and not
CASES = [(8, True, "tensor", 0, True), (8, False, "channel", 0, False),
         (8, True, "block", 8, True), (8, True, "block", 4, False), (8, False, "block", 6, True),
         (4, True, "channel", 0, True), (4, False, "tensor", 0, False),
         (4, True, "block", 16, False), (4, False, "block", 8, True)]


@pytest.mark.parametrize("bits, signed, scheme, block, biased", CASES,
                         ids=[f"{'' if s else 'u'}int{b}-{sc}{blk or ''}{'-bias' * bias}"
                              for b, s, sc, blk, bias in CASES])
def test_weight_only_linear_against_float64(device, kernel_calls, bits, signed, scheme, block,
                                            biased):
    rng = np.random.default_rng(bits * 10 + block)
    w = weight(rng, 6, K, bits, signed, scheme, block)
    x = rng.standard_normal((2, 3, K)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32) if biased else None
    got = qk.linear_weight_only(on(device, x), on(device, w["data"]), on(device, w["scale"]),
                                on(device, w["zero"]), bits=bits, signed=signed, block=block,
                                k=K, bias=on(device, bias))
    assert got.shape == (2, 3, 6) and got.dtype is pyburn.float32
    want = x.astype(np.float64) @ w["dense"].T + (0 if bias is None else bias)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    whole_words = block % (32 // bits) == 0
    assert kernel_calls["quant_linear"] == ("quant_matmul" in device.caps and whole_words)


def test_a_long_row_and_many_rows(device):
    """Rows longer than one kernel tile's words and more output rows than a tile."""
    rng = np.random.default_rng(1)
    k, n = 300, 70
    w = weight(rng, n, k, 4, True, "block", 32)
    x = rng.standard_normal((5, k)).astype(np.float32)
    got = qk.linear_weight_only(on(device, x), on(device, w["data"]), on(device, w["scale"]),
                                on(device, w["zero"]), bits=4, signed=True, block=32, k=k)
    np.testing.assert_allclose(got.numpy(), x.astype(np.float64) @ w["dense"].T,
                               rtol=1e-4, atol=1e-4)


def dynamic_reference(x: np.ndarray, w: dict, bias: np.ndarray | None,
                      per_row: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(int64 accumulator, float32 result) by DynamicQuantizeLinear's formulas in float32,
    the exact integer product and onnxruntime's rescale (the two scales multiplied first)."""
    axis = 1 if per_row else None
    low = np.minimum(x.min(axis=axis, keepdims=True), 0).astype(np.float32)
    high = np.maximum(x.max(axis=axis, keepdims=True), 0).astype(np.float32)
    scale = (np.where(high == low, np.float32(1), high - low) / np.float32(255))
    scale = scale.astype(np.float32).reshape(-1, 1)
    zero = np.clip(np.rint(-low.reshape(-1, 1) / scale), 0, 255)
    q = np.clip(np.rint(x / scale) + zero, 0, 255).astype(np.int64)
    wq = w["q"] if w["zero"] is None else w["q"] - w["zero"].reshape(-1, 1)
    acc = (q - zero.astype(np.int64)) @ wq.T
    y = acc.astype(np.float32) * (scale * w["scale"].reshape(1, -1)).astype(np.float32)
    return acc, y if bias is None else y + bias


@pytest.mark.parametrize("bits, signed, scheme, per_row", [
    (8, True, "tensor", False), (8, False, "channel", False), (4, True, "channel", True)],
    ids=["int8-tensor", "uint8-channel", "int4-channel-per-row"])
def test_dynamic_linear_against_float64(device, kernel_calls, bits, signed, scheme, per_row):
    rng = np.random.default_rng(bits)
    w = weight(rng, 6, K, bits, signed, scheme, 0)
    x = rng.standard_normal((4, K)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    got = qk.linear_dynamic(on(device, x), on(device, w["data"]), on(device, w["scale"]),
                            on(device, w["zero"]), bits=bits, signed=signed, k=K,
                            bias=on(device, bias), per_row=per_row)
    _, want = dynamic_reference(x, w, bias, per_row)
    # one activation quantization step on a device whose division is not correctly rounded
    step = float(np.abs(w["dense"]).sum(1).max()) * float(np.abs(x).max()) / 255
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=step)
    assert kernel_calls["quant_matmul_int"] == ("quant_matmul" in device.caps)


@pytest.mark.parametrize("signed, a_zero, b_zero, a_shape", [
    (True, None, "column", (5, K)), (False, "one", "one", (2, 3, K)),
    (True, "row", "one", (4, K))], ids=["int8-columns", "uint8-batched", "int8-rows"])
def test_matmul_integer_is_exact(device, kernel_calls, signed, a_zero, b_zero, a_shape):
    """ONNX's MatMulInteger on the packed kernels: exact against int64 numpy."""
    rng = np.random.default_rng(7)
    low, high = (-128, 128) if signed else (0, 256)
    a = rng.integers(0, 256, a_shape)
    b = rng.integers(low, high, (K, 6))
    zeros = {"one": rng.integers(0, 256, (1,)), "row": rng.integers(0, 256, (a_shape[0],)),
             None: None}
    za = zeros[a_zero]
    zb = rng.integers(low, high, (6,) if b_zero == "column" else (1,))
    got = qk.matmul_integer(on(device, a.astype(np.int32)),
                            None if za is None else on(device, za.astype(np.int32)),
                            on(device, b.astype(np.int32)), on(device, zb.astype(np.int32)),
                            signed=signed)
    centered = a - (0 if za is None else (za if a_zero == "one" else za[:, None]))
    np.testing.assert_array_equal(got.numpy(), centered @ (b - zb))
    assert got.dtype is pyburn.int32
    assert kernel_calls["quant_matmul_int"] == ("quant_matmul" in device.caps)


def test_dynamic_linear_equals_onnxruntimes_pipeline():
    """DynamicQuantizeLinear, MatMulInteger (per-channel zero points), Cast, Mul(scales),
    Mul, Add in onnxruntime give the very same float32 numbers on cpu (the weight's pairs
    narrow enough that onnxruntime's AVX2 kernel does not saturate: `weight`)."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    k, n = 40, 9
    w = weight(rng, n, k, 8, True, "channel", 0, narrow_pairs=True)
    bias = rng.standard_normal(n).astype(np.float32)
    inits = [numpy_helper.from_array(w["q"].T.astype(np.int8), "wq"),
             numpy_helper.from_array(w["zero"].astype(np.int8), "wz"),
             numpy_helper.from_array(w["scale"], "ws"), numpy_helper.from_array(bias, "b")]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulInteger", ["xq", "wq", "xz", "wz"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "ws"], ["s"]),
             helper.make_node("Mul", ["accf", "s"], ["y0"]),
             helper.make_node("Add", ["y0", "b"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [None, k])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [None, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = (rng.standard_normal((7, k)) * 3).astype(np.float32)
    want = session.run(None, {"x": x})[0]
    got = qk.linear_dynamic(on("cpu", x), on("cpu", w["data"]), on("cpu", w["scale"]),
                            on("cpu", w["zero"]), k=k, bias=on("cpu", bias))
    np.testing.assert_array_equal(got.numpy(), want)


def conv_reference(x: np.ndarray, dense: np.ndarray, shape: tuple, bias: np.ndarray | None,
                   **geometry) -> np.ndarray:
    weight64 = torch.from_numpy(dense.reshape(shape).astype(np.float64))
    b = None if bias is None else torch.from_numpy(bias.astype(np.float64))
    return torch.nn.functional.conv2d(torch.from_numpy(x.astype(np.float64)), weight64, b,
                                      **geometry).numpy()


GEOMETRY = {"stride": 2, "padding": 1, "dilation": 1, "groups": 2}


def test_weight_only_conv2d_against_torch_float64(device):
    rng = np.random.default_rng(5)
    shape = (4, 3, 3, 2)  # groups of 3 input channels, a 3x2 kernel
    w = weight(rng, 4, 18, 4, True, "block", 8)
    x = rng.standard_normal((2, 6, 7, 6)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    got = qk.conv2d_weight_only(on(device, x), on(device, w["data"]), on(device, w["scale"]),
                                on(device, w["zero"]), bits=4, signed=True, block=8,
                                weight_shape=shape, bias=on(device, bias), **GEOMETRY)
    want = conv_reference(x, w["dense"], shape, bias, **GEOMETRY)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_dynamic_conv2d_against_torch_on_the_integers(device):
    """ConvInteger's numbers: x quantized per tensor, padding with its zero point, the
    exact integer convolution (float64 torch on the integers), onnxruntime's rescale."""
    rng = np.random.default_rng(6)
    shape = (4, 3, 2, 2)
    w = weight(rng, 4, 12, 8, False, "channel", 0)
    x = rng.standard_normal((1, 6, 5, 5)).astype(np.float32)
    got = qk.conv2d_dynamic(on(device, x), on(device, w["data"]), on(device, w["scale"]),
                            on(device, w["zero"]), bits=8, signed=False, weight_shape=shape,
                            **GEOMETRY)
    low, high = np.float32(min(x.min(), 0)), np.float32(max(x.max(), 0))
    scale = np.float32((high - low) / np.float32(255))
    zero = np.clip(np.rint(-low / scale), 0, 255)
    centered = np.clip(np.rint(x / scale) + zero, 0, 255) - zero
    acc = conv_reference(centered, w["q"] - w["zero"].reshape(-1, 1), shape, None, **GEOMETRY)
    want = acc.astype(np.float32) * (scale * w["scale"]).reshape(1, -1, 1, 1)
    step = float(np.abs(w["dense"]).sum(1).max()) * float(np.abs(x).max()) / 255
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=step)


@pytest.mark.parametrize("signed, w_zero, pads, groups", [
    (False, "one", ((1, 0), (0, 2)), 1), (True, "channel", ((0, 1), (1, 1)), 2),
    (True, None, ((0, 0), (0, 0)), 3)], ids=["uint8-asymmetric", "int8-channels", "int8-none"])
def test_conv_integer_is_exact(device, kernel_calls, signed, w_zero, pads, groups):
    """ONNX's ConvInteger on the packed kernels, one product per group: exact against torch's
    float64 convolution of the centered integers (asymmetric pads filled with x's zero
    point, strides, a dilation)."""
    rng = np.random.default_rng(8)
    low, high = (-128, 128) if signed else (0, 256)
    x = rng.integers(0, 256, (2, 3 * groups, 6, 7))
    w = rng.integers(low, high, (2 * groups, 3, 2, 3))
    zx = rng.integers(0, 256, (1,))
    zw = {"one": rng.integers(low, high, (1,)), "channel": rng.integers(low, high, (2 * groups,)),
          None: None}[w_zero]
    got = qk.conv_integer(on(device, x.astype(np.int32)), on(device, zx.astype(np.int32)),
                          on(device, w.astype(np.int32)),
                          None if zw is None else on(device, zw.astype(np.int32)),
                          signed=signed, stride=(1, 2), pads=pads, dilation=(2, 1),
                          groups=groups)
    centered = np.pad(x - zx[0], ((0, 0), (0, 0), *pads))
    weights = w - (0 if zw is None else zw.reshape(-1, 1, 1, 1))
    want = torch.nn.functional.conv2d(torch.from_numpy(centered.astype(np.float64)),
                                      torch.from_numpy(weights.astype(np.float64)),
                                      stride=(1, 2), dilation=(2, 1), groups=groups).numpy()
    assert got.dtype is pyburn.int32 and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want.astype(np.int64))
    on_kernel = "quant_matmul" in device.caps
    assert kernel_calls["quant_matmul_int"] == (groups if on_kernel else 0)


def _call(**changes):
    rng = np.random.default_rng(0)
    w = weight(rng, 3, K, 8, True, "channel", 0)
    args = {"x": on("cpu", rng.standard_normal((2, K)).astype(np.float32)),
            "data": on("cpu", w["data"]), "scale": on("cpu", w["scale"]),
            "zero_point": on("cpu", w["zero"]), "bits": 8, "signed": True, "block": 0, "k": K}
    args.update(changes)
    return qk.linear_weight_only(**args)


@pytest.mark.parametrize("changes, error, message", [
    ({"bits": 6}, ArgumentError, "bits must be 4 or 8"),
    ({"k": K + 5}, ShapeError, r"shape \(N, 5\)"),
    ({"x": pyburn.zeros(2, K + 1, device="cpu")}, ShapeError, "x's last dim"),
    ({"data": pyburn.zeros(3, 4, device="cpu")}, DTypeError, "packed data must be int32"),
    ({"scale": pyburn.ones(4, device="cpu"), "zero_point": None}, ShapeError,
     r"\(\) per tensor or \(3,\)"),
    ({"block": 4}, ShapeError, r"block-wise scale .* must have shape \(3, 4\)"),
    ({"zero_point": pyburn.zeros(3, device="cpu")}, DTypeError, "zero_point must be int32"),
    ({"bias": pyburn.zeros(4, device="cpu")}, ShapeError, r"bias must have shape \(3,\)"),
], ids=["bits", "k", "x", "dtype", "scale", "block", "zero_dtype", "bias"])
def test_bad_input_says_what_is_wrong(changes, error, message):
    with pytest.raises(error, match=message):
        _call(**changes)
