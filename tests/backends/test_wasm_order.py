"""The wasm backend's order kernels on wasmtime against numpy and pyburn's cpu backend: stable
sorts both ways (NaN, -0.0 and 0.0, infinities, int32 extremes, ties, empty and one-element
rows, lengths that are not powers of two, a long row), argmax/argmin (first occurrence, the
first NaN wins both) over rows and columns, and cumsum/cumprod in the input dtype (integers
wrap, uint8 at 8 bits); every output buffer between canary bytes that must stay as they
were."""

from __future__ import annotations

import numpy as np
import pytest

from pyburn.backends.cpu.backend import CpuBackend
from pyburn.backends.wasm import native, order
from pyburn.backends.wasm.assemble import Module
from pyburn.backends.wasm.order import kernels, sort_scratch_bytes
from pyburn.dtypes import bool_, float32, int32, uint8

NUMPY = {float32: np.float32, int32: np.int32, uint8: np.uint8, bool_: np.bool_}
CANARY = bytes([0xA5, 0x5A, 0xC3, 0x3C]) * 8
CPU = CpuBackend()


@pytest.fixture(scope="module")
def wasm():
    engine = native.NativeEngine(256)  # 16 MiB
    return engine, engine.instantiate(Module(kernels()).binary())


class Buffers:
    """Buffers laid out from address 1024 on, each between two canaries."""

    def __init__(self, engine):
        self.engine = engine
        self.at = 1024
        self.placed: list[tuple[int, int]] = []

    def put(self, data: bytes) -> int:
        address = self.at + len(CANARY)
        self.engine.write(self.at, CANARY + data + CANARY)
        self.placed.append((address, len(data)))
        self.at = (address + len(data) + len(CANARY) + 15) // 16 * 16
        return address

    def empty(self, nbytes: int) -> int:
        """An output: filled with a pattern that no kernel writes by chance everywhere."""
        return self.put(bytes([0x77]) * nbytes)

    def check_canaries(self) -> None:
        for address, nbytes in self.placed:
            assert self.engine.read(address - len(CANARY), len(CANARY)) == CANARY
            assert self.engine.read(address + nbytes, len(CANARY)) == CANARY


def _bits(a: np.ndarray) -> np.ndarray:
    """Arrays compared bit for bit (floats: -0.0 is not 0.0, NaN is NaN)."""
    return a.view(np.uint32) if a.dtype == np.float32 else a


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal, and floats bit for bit where neither is NaN (NaN's payload may differ after
    arithmetic)."""
    assert got.shape == want.shape
    if want.dtype == np.float32:
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        keep = ~np.isnan(want)
        np.testing.assert_array_equal(_bits(got[keep]), _bits(want[keep]))
    else:
        np.testing.assert_array_equal(got, want)


# ---- inputs --------------------------------------------------------------------------------

SPECIAL = {
    float32: [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-45, -1e-45,
              3.4028235e38, -3.4028235e38, 0.5],
    int32: [-2**31, 2**31 - 1, 0, -1, 1, -2**31 + 1, 2**31 - 2, 7],
    uint8: [0, 255, 1, 128, 127, 254],
    bool_: [False, True],
}


def _data(dtype, shape, rng, mode: str) -> np.ndarray:
    """Random data of `mode`: "ties" (a few distinct values), "wide" (the whole range),
    "special" (the dtype's edge values, NaN and ±0.0 among them), "equal" (one value)."""
    np_dtype = NUMPY[dtype]
    if mode == "equal":
        return np.full(shape, SPECIAL[dtype][-1], np_dtype)
    if mode == "special":
        return np.array(SPECIAL[dtype], np_dtype)[rng.integers(0, len(SPECIAL[dtype]), shape)]
    if dtype is bool_:
        return rng.random(shape) < 0.5
    if mode == "ties":
        values = rng.integers(-3, 4, shape) if dtype is not uint8 else rng.integers(0, 5, shape)
        return values.astype(np_dtype)
    if dtype is float32:
        return rng.standard_normal(shape).astype(np.float32) * 100
    info = np.iinfo(np_dtype)
    return rng.integers(info.min, info.max, shape, dtype=np_dtype, endpoint=True)


# ---- sort ----------------------------------------------------------------------------------

SORT_SHAPES = [(1, 0), (3, 0), (0, 5), (5, 1), (3, 2), (2, 15), (2, 16), (3, 17), (2, 33),
               (1, 100), (2, 257), (3, 1000)]
MODES = ["ties", "wide", "special", "equal"]


def _sort(wasm, x: np.ndarray, descending: bool, dtype) -> None:
    engine, exports = wasm
    rows, length = x.shape
    buffers = Buffers(engine)
    src = buffers.put(x.tobytes())
    values = buffers.empty(x.nbytes)
    indices = buffers.empty(4 * x.size)
    scratch = buffers.empty(sort_scratch_bytes(length, dtype))
    exports[f"sort_{dtype.name}"](values, indices, src, rows, length, int(descending), scratch)
    want_values, want_indices = CPU.sort(x, 1, descending)
    got_values = np.frombuffer(engine.read(values, x.nbytes), x.dtype).reshape(x.shape)
    got_indices = np.frombuffer(engine.read(indices, 4 * x.size), np.int32).reshape(x.shape)
    np.testing.assert_array_equal(got_indices, want_indices)
    np.testing.assert_array_equal(_bits(got_values), _bits(want_values))  # NaN payloads too
    assert engine.read(src, x.nbytes) == x.tobytes()
    buffers.check_canaries()


SORTS = [(d, s, m) for d in order.SORT_DTYPES for s in SORT_SHAPES for m in MODES
         if d is not bool_ or m != "wide"]


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("dtype, shape, mode", SORTS,
                         ids=[f"{d.name}-{r}x{n}-{m}" for d, (r, n), m in SORTS])
def test_a_sort_matches_the_cpu_backend(wasm, dtype, shape, mode, descending):
    x = _data(dtype, shape, np.random.default_rng(shape[1] * 7 + len(mode)), mode)
    _sort(wasm, x, descending, dtype)


def test_the_cpu_reference_is_numpy_stable_argsort():
    """The reference's descending order, spelled out: equal values (-0.0 and 0.0 among them)
    in their original order, NaN first."""
    x = np.array([[1.0, np.nan, 0.0, -0.0, 1.0, np.nan, -np.inf]], np.float32)
    _, order = CPU.sort(x, 1, True)
    assert order.tolist() == [[1, 5, 0, 4, 2, 3, 6]]
    _, order = CPU.sort(x, 1, False)
    assert order.tolist() == [[6, 2, 3, 0, 4, 1, 5]]


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("dtype", [float32, int32, uint8], ids=lambda d: d.name)
def test_a_long_row_sorts(wasm, dtype, descending):
    rng = np.random.default_rng(5)
    x = _data(dtype, (1, 100_003), rng, "ties" if dtype is uint8 else "wide")
    if dtype is float32:
        x[0, rng.integers(0, x.shape[1], 500)] = np.nan
        x[0, rng.integers(0, x.shape[1], 500)] = -0.0
        x[0, rng.integers(0, x.shape[1], 500)] = 0.0
    _sort(wasm, x, descending, dtype)


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_sorted_and_reversed_rows_sort(wasm, descending):
    """Runs already in order (the merge's shortcut) and in reverse."""
    x = np.stack([np.arange(300, dtype=np.int32), np.arange(300, dtype=np.int32)[::-1],
                  np.arange(300, dtype=np.int32) // 7])
    _sort(wasm, x, descending, int32)


# ---- argmax, argmin ------------------------------------------------------------------------

ARG_SHAPES = [(3, 11, 1), (2, 1, 1), (4, 7, 1), (2, 8, 1), (3, 9, 1), (2, 9, 7), (1, 4, 8),
              (2, 5, 3), (2, 1, 5), (2, 6, 4), (1, 100_003, 1), (2, 300, 5)]
ARGS = [(op, d, s, m) for op in ("argmax", "argmin") for d in order.ARG_DTYPES for s in ARG_SHAPES
        for m in MODES if d is not bool_ or m != "wide"]


def _arg(wasm, op: str, x: np.ndarray, dtype) -> np.ndarray:
    engine, exports = wasm
    outer, length, inner = x.shape
    buffers = Buffers(engine)
    src = buffers.put(x.tobytes())
    out = buffers.empty(4 * outer * inner)
    exports[f"arg_{op}_{dtype.name}"](out, src, outer, length, inner)
    buffers.check_canaries()
    return np.frombuffer(engine.read(out, 4 * outer * inner), np.int32).reshape(outer, inner)


@pytest.mark.parametrize("op, dtype, shape, mode", ARGS,
                         ids=[f"{o}-{d.name}-{'x'.join(map(str, s))}-{m}"
                              for o, d, s, m in ARGS])
def test_an_arg_reduction_matches_numpy(wasm, op, dtype, shape, mode):
    x = _data(dtype, shape, np.random.default_rng(sum(shape) + len(mode)), mode)
    want = getattr(np, op)(x, axis=1).astype(np.int32)
    np.testing.assert_array_equal(_arg(wasm, op, x, dtype), want)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("shape", [(1, 13, 1), (1, 13, 6)], ids=["rows", "columns"])
def test_the_first_nan_wins(wasm, op, shape):
    """Whichever lane or tail the NaNs fall in, the first one's index."""
    for first in range(shape[1]):
        for second in range(first, shape[1]):
            x = np.linspace(-5, 5, np.prod(shape), dtype=np.float32).reshape(shape)
            x[0, first], x[0, second] = np.nan, -np.nan
            x[0, 0] = np.inf if first else x[0, 0]
            got = _arg(wasm, op, x, float32)
            np.testing.assert_array_equal(got, np.full(got.shape, first, np.int32))


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_ties_across_lanes_take_the_first(wasm, op):
    """A row whose best value appears in several lanes, in each order."""
    for positions in [(3, 1), (2, 9), (11, 5, 6), (8, 0), (12, 13)]:
        x = np.zeros((1, 14, 1), np.int32)
        x[0, list(positions), 0] = 9 if op == "argmax" else -9
        assert _arg(wasm, op, x, int32).item() == min(positions)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_an_empty_length_gives_zeros(wasm, op):
    got = _arg(wasm, op, np.zeros((3, 0, 5), np.float32), float32)
    np.testing.assert_array_equal(got, np.zeros((3, 5), np.int32))


# ---- scans ---------------------------------------------------------------------------------

SCAN_SHAPES = [(3, 11, 1), (2, 1, 1), (2, 0, 3), (2, 9, 7), (1, 4, 8), (2, 5, 3), (3, 6, 4),
               (1, 100_003, 1), (2, 50, 9)]
SCAN_MODES = ["ties", "wide", "special"]
SCANS = [(op, d, s, m) for op in ("sum", "prod") for d in order.SCAN_DTYPES for s in SCAN_SHAPES
         for m in SCAN_MODES]


def _scan(wasm, op: str, x: np.ndarray, dtype) -> np.ndarray:
    engine, exports = wasm
    outer, length, inner = x.shape
    buffers = Buffers(engine)
    src = buffers.put(x.tobytes())
    out = buffers.empty(x.nbytes)
    exports[f"scan_{op}_{dtype.name}"](out, src, outer, length, inner)
    buffers.check_canaries()
    assert engine.read(src, x.nbytes) == x.tobytes()
    return np.frombuffer(engine.read(out, x.nbytes), x.dtype).reshape(x.shape)


@pytest.mark.parametrize("op, dtype, shape, mode", SCANS,
                         ids=[f"{o}-{d.name}-{'x'.join(map(str, s))}-{m}"
                              for o, d, s, m in SCANS])
def test_a_scan_matches_numpy(wasm, op, dtype, shape, mode):
    x = _data(dtype, shape, np.random.default_rng(sum(shape) + len(mode)), mode)
    if dtype is float32 and mode != "special":
        x = (x / 64 + 1).astype(np.float32)  # products that neither vanish nor overflow
    with np.errstate(all="ignore"):
        want = (np.cumsum if op == "sum" else np.cumprod)(x, axis=1, dtype=x.dtype)
    _same(_scan(wasm, op, x, dtype), want)


@pytest.mark.parametrize("op, values, want", [
    ("sum", [250, 10, 255, 1], [250, 4, 3, 4]),
    ("prod", [16, 16, 3, 255], [16, 0, 0, 0]),
    ("prod", [255, 255, 7], [255, 1, 7]),
])
def test_uint8_scans_wrap_at_8_bits(wasm, op, values, want):
    for inner in (1, 4):  # the scalar and the vector path
        x = np.repeat(np.array(values, np.uint8)[None, :, None], inner, axis=2)
        got = _scan(wasm, op, x, uint8)
        np.testing.assert_array_equal(got[0, :, 0], want)


def test_int32_scans_wrap(wasm):
    x = np.array([2**31 - 1, 1, 2**31 - 1, -5], np.int32)[None, :, None]
    for op in ("sum", "prod"):
        want = (np.cumsum if op == "sum" else np.cumprod)(x, axis=1, dtype=np.int32)
        for inner in (1, 4):
            got = _scan(wasm, op, np.repeat(x, inner, axis=2), int32)
            np.testing.assert_array_equal(got, np.repeat(want, inner, axis=2))


def test_a_scan_keeps_the_first_elements_sign_of_zero(wasm):
    x = np.array([-0.0, -0.0, 0.0], np.float32)[None, :, None]
    for inner in (1, 4):
        got = _scan(wasm, "sum", np.repeat(x, inner, axis=2), float32)
        assert np.signbit(got[0, :, 0]).tolist() == [True, True, False]
