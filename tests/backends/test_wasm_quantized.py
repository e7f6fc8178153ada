"""The wasm backend's "quant_matmul" kernels (pyburn/backends/wasm/quantized.py) on wasmtime:
the weight-only product against float64 numpy and the integer one against exact int64
numpy, for every weight type, with canary bytes around every buffer and each input in turn
placed at the very end of the memory, so that a read past it traps: rows of x and of the
weight on and off the kernels' steps (k % 16, % 8, % 4 not 0, k below a vector), several
tiles of weight rows and an odd last one, rows of x in groups of four and the rest, blocks
of one word and more, per-tensor and per-channel parameters read through zero strides, with
and without zero points and bias; the integer product at its extreme values over a long
row; then through the backend: the capability runs for the public functions."""

from __future__ import annotations

import numpy as np
import pytest
from quant.test_kernels import pack

import pyburn
from backends.test_wasm_rows import Buffers, count_calls
from pyburn.backends.wasm import native, quantized
from pyburn.backends.wasm.assemble import Module
from pyburn.quant import kernels as qk


@pytest.fixture(scope="module")
def wasm():
    engine = native.NativeEngine(64)  # 4 MiB
    return engine, engine.instantiate(Module(quantized.kernels()).binary())


def _range(bits: int, signed: bool) -> tuple[int, int]:
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


class Placed(Buffers):
    """Buffers between canaries, but one input (`last`) ending where the memory does."""

    def __init__(self, engine, last: str):
        super().__init__(engine)
        self.last = last

    def input(self, name: str, array: np.ndarray) -> int:
        data = np.ascontiguousarray(array).tobytes()
        if name != self.last:
            return self.put(data)
        address = self.engine.size() - len(data)
        self.engine.write(address, data)
        return address


#: (bits, signed, m, n, k, block (0: one per row), scheme, zero point, bias)
LINEAR = [(8, True, 5, 17, 37, 8, "block", True, True),
          (8, False, 1, 3, 100, 0, "channel", True, True),
          (4, True, 6, 18, 29, 16, "block", True, False),
          (4, False, 4, 2, 64, 0, "tensor", True, True),
          (8, True, 2, 1, 3, 0, "tensor", False, False),
          (4, True, 9, 35, 200, 32, "block", False, True),
          (8, False, 3, 20, 18, 4, "block", True, False),
          (4, False, 1, 5, 9, 8, "block", True, True)]


def _parameter(scheme: str, n: int, blocks: int, make) -> tuple[np.ndarray, tuple[int, int],
                                                                np.ndarray]:
    """A (n, blocks) parameter as the kernel reads it: its stored values, their (row, block)
    strides in bytes (per tensor and per channel: expanded views, stride 0), and the
    (n, blocks) values."""
    stored = make({"tensor": (1,), "channel": (n,), "block": (n, blocks)}[scheme])
    strides = {"tensor": (0, 0), "channel": (4, 0), "block": (4 * blocks, 4)}[scheme]
    spread = np.broadcast_to(stored.reshape((-1, 1) if scheme != "block" else (n, blocks)),
                             (n, blocks))
    return stored, strides, spread


@pytest.mark.parametrize("bits, signed, m, n, k, block, scheme, zeroed, biased", LINEAR,
                         ids=[f"{'' if c[1] else 'u'}int{c[0]}-{c[2]}x{c[3]}x{c[4]}-{c[6]}"
                              f"{c[5] or ''}" for c in LINEAR])
def test_the_weight_only_kernel_matches_float64(wasm, bits, signed, m, n, k, block, scheme,
                                                zeroed, biased):
    engine, exports = wasm
    rng = np.random.default_rng(k * 7 + n)
    per = 32 // bits
    words = -(-k // per)
    block = block or words * per
    blocks = -(-k // block)
    low, high = _range(bits, signed)
    q = rng.integers(low, high + 1, (n, k))
    scale, scale_strides, scales = _parameter(
        scheme, n, blocks, lambda s: rng.uniform(0.01, 0.1, s).astype(np.float32))
    zero, zero_strides, zeros = _parameter(
        scheme, n, blocks, lambda s: rng.integers(low, high + 1, s).astype(np.int32))
    if not zeroed:
        zeros = np.zeros_like(zeros)
    x = rng.standard_normal((m, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    def spread(p: np.ndarray) -> np.ndarray:
        return np.repeat(p, block, axis=1)[:, :k]
    dense = (q - spread(zeros)) * spread(scales).astype(np.float64)
    want = x.astype(np.float64) @ dense.T + (bias if biased else 0)
    row_bytes = 4 * words * per
    tile = min(quantized.TILE, n)
    inputs = ["x", "data", "scale"] + ["zero"] * zeroed + ["bias"] * biased
    for last in inputs:
        buffers = Placed(engine, last)
        at = {"x": buffers.input("x", x), "data": buffers.input("data", pack(q, bits)),
              "scale": buffers.input("scale", scale),
              "zero": buffers.input("zero", zero) if zeroed else 0,
              "bias": buffers.input("bias", bias) if biased else 0}
        out, scratch = buffers.empty(4 * m * n), buffers.empty(tile * row_bytes)
        exports["quant_linear_" + quantized.type_name(bits, signed)](
            out, at["x"], at["data"], m, n, k, words, block // per, at["scale"], *scale_strides,
            at["zero"], *(zero_strides if zeroed else (0, 0)), at["bias"], scratch, tile,
            row_bytes)
        buffers.check()
        np.testing.assert_allclose(buffers.read(out, (m, n)), want, rtol=1e-5, atol=1e-5)


#: (bits, signed, m, n, k, x zero point: "row", "one" (stride 0) or None, weight zero point)
INTEGER = [(8, True, 5, 17, 37, "one", False), (8, False, 1, 3, 100, "row", True),
           (4, True, 6, 18, 29, None, True), (4, False, 4, 2, 5, "row", True),
           (8, True, 9, 35, 8, "one", True), (4, False, 2, 1, 3, None, False)]


@pytest.mark.parametrize("bits, signed, m, n, k, x_zero, zeroed", INTEGER,
                         ids=[f"{'' if c[1] else 'u'}int{c[0]}-{c[2]}x{c[3]}x{c[4]}-{c[5]}"
                              for c in INTEGER])
def test_the_integer_kernel_is_exact(wasm, bits, signed, m, n, k, x_zero, zeroed):
    engine, exports = wasm
    rng = np.random.default_rng(k * 3 + n)
    low, high = _range(bits, signed)
    q = rng.integers(low, high + 1, (n, k))
    zero = rng.integers(low, high + 1, (n, 1)).astype(np.int32)
    a = rng.integers(0, 256, (m, k)).astype(np.int32)
    a_zero = rng.integers(0, 256, (m if x_zero == "row" else 1, 1)).astype(np.int32)
    centered = a.astype(np.int64) - (a_zero if x_zero else 0)
    want = centered @ (q - (zero if zeroed else 0)).T
    _run_integer(engine, exports, bits, signed, a, a_zero if x_zero else None, q,
                 zero if zeroed else None, want)


def _run_integer(engine, exports, bits, signed, a, a_zero, q, zero, want) -> None:
    """The integer kernel with each input in turn at the end of the memory."""
    (m, k), n = a.shape, q.shape[0]
    words = -(-k // (32 // bits))
    row_bytes = 2 * (-(-k // 8) * 8)
    tile = min(quantized.TILE, n)
    inputs = ["a", "data"] + ["a_zero"] * (a_zero is not None) + ["zero"] * (zero is not None)
    for last in inputs:
        buffers = Placed(engine, last)
        at_a, at_data = buffers.input("a", a), buffers.input("data", pack(q, bits))
        at_zero = 0 if zero is None else buffers.input("zero", zero)
        at_a_zero = 0 if a_zero is None else buffers.input("a_zero", a_zero)
        a_zero_row = 0 if a_zero is None or a_zero.shape[0] == 1 else 4
        out = buffers.empty(4 * m * n)
        scratch, x_pack = buffers.empty(tile * row_bytes), buffers.empty(m * row_bytes)
        exports["quant_matmul_int_" + quantized.type_name(bits, signed)](
            out, at_a, at_data, m, n, k, words, words, at_zero, 4, 0, at_a_zero, a_zero_row,
            x_pack, scratch, tile, row_bytes)
        buffers.check()
        got = np.frombuffer(engine.read(out, 4 * m * n), np.int32).reshape(m, n)
        np.testing.assert_array_equal(got, want)


def test_the_integer_kernel_at_its_extremes(wasm):
    """Products of +-255 by +-255 over the longest row whose sums int32 holds for any
    values (33,025: 255 * 255 * 33,025 < 2^31), one output at that bound."""
    engine, exports = wasm
    k = 33025
    q = np.repeat([[-128], [127], [-128]], k, axis=1)
    q[2, 1::2] = 127
    zero = np.array([[127], [-128], [0]], np.int32)  # q - zero: -255, +255, mixed
    a = np.repeat([[0], [255]], k, axis=1).astype(np.int32)
    a_zero = np.array([[255], [0]], np.int32)  # a - a_zero: -255, +255
    want = (a.astype(np.int64) - a_zero) @ (q - zero).T
    assert want.max() == 255 * 255 * k and want.min() == -255 * 255 * k
    _run_integer(engine, exports, 8, True, a, a_zero, q, zero, want)


# ---- through the backend -----------------------------------------------------------------

@pytest.fixture
def calls(monkeypatch):
    """How often each of the backend's capability methods ran."""
    return count_calls(monkeypatch, pyburn.device("wasm"), ("quant_linear", "quant_matmul_int"))


def test_the_public_functions_run_the_kernels(calls):
    """Views (a flipped x, a narrowed weight of a convolution group, a per-tensor scale's
    expansion) and the dynamic product's expanded zero point, on a fresh wasm device."""
    dev = pyburn.device("wasm")
    assert "quant_matmul" in dev.caps
    rng = np.random.default_rng(4)
    n, k = 7, 21
    q = rng.integers(-8, 8, (n, k))
    x = rng.standard_normal((6, k)).astype(np.float32)
    tx = pyburn.from_numpy(x[::-1].copy(), dev).flip(0)
    data = pyburn.from_numpy(pack(q, 4), dev)
    scale = np.float32(0.05)
    got = qk.linear_weight_only(tx, data.narrow(0, 2, 5), pyburn.tensor(float(scale), device=dev),
                                None, bits=4, signed=True, block=0, k=k)
    want = x.astype(np.float64) @ (q[2:] * np.float64(scale)).T
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    assert calls["quant_linear"] == 1
    dynamic = qk.linear_dynamic(tx, data, pyburn.from_numpy(np.full(n, scale), dev), None,
                                bits=4, signed=True, k=k)
    assert calls["quant_matmul_int"] == 1
    np.testing.assert_allclose(dynamic.numpy(), x @ (q * np.float64(scale)).T, rtol=0,
                               atol=float(np.abs(q * scale).sum(1).max()) * 4 / 255)
