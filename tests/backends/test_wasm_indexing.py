"""The wasm backend's indexing kernels on wasmtime: gather, scatter, index_select, nonzero
(and its count), where against numpy, and the casts against pyburn's cpu backend, on several
shapes (outer and inner of 1, odd lengths, empty ones), edge values and out-of-range
indices; every output sits between canary bytes, every input too (so that a read past an
input would show), and starts as garbage (so that every element must be written)."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.backends.wasm import indexing, native
from pyburn.backends.wasm.assemble import Module
from pyburn.dtypes import bool_, float32, int32, uint8

NUMPY = {float32: np.float32, int32: np.int32, uint8: np.uint8, bool_: np.bool_}
BY_SIZE = {1: np.uint8, 4: np.int32}
CANARY = bytes([0xA5]) * 16
GARBAGE = 0x5A
I32_MIN, I32_MAX = -(2**31), 2**31 - 1


@pytest.fixture(scope="module")
def kernels():
    engine = native.NativeEngine(16)
    return engine, engine.instantiate(Module(indexing.kernels()).binary())


class Arena:
    """Buffers laid out from address 1024, each between two canaries."""

    def __init__(self, engine: native.NativeEngine):
        self.engine = engine
        self.top = 1024
        self.buffers: list[tuple[int, int]] = []

    def put(self, data: bytes) -> int:
        at = self.top + len(CANARY)
        self.engine.write(self.top, CANARY + data + CANARY)
        self.buffers.append((at, len(data)))
        # the next one 16-byte aligned, or 4 or 8 bytes past that (kernels take any address)
        end = at + len(data) + len(CANARY)
        self.top = -(-end // 16) * 16 + 4 * (len(self.buffers) % 3)
        return at

    def output(self, nbytes: int) -> int:
        return self.put(bytes([GARBAGE]) * nbytes)

    def read(self, at: int, nbytes: int, dtype) -> np.ndarray:
        return np.frombuffer(self.engine.read(at, nbytes), dtype).copy()

    def check_canaries(self) -> None:
        for at, nbytes in self.buffers:
            assert self.engine.read(at - len(CANARY), len(CANARY)) == CANARY
            assert self.engine.read(at + nbytes, len(CANARY)) == CANARY


def _data(dtype, shape, rng) -> np.ndarray:
    """Random elements of `dtype` (a numpy dtype): any bits for the 4-byte ones."""
    if dtype is np.bool_:
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def _indices(length: int, shape, rng) -> tuple[np.ndarray, np.ndarray]:
    """int32 indices, a fifth of them out of range, and which are in range."""
    index = rng.integers(0, max(length, 1), shape).astype(np.int32)
    wild = np.array([-1, length, length + 1, I32_MIN, I32_MAX, -length], np.int32)
    spots = rng.random(shape) < 0.2
    index[spots] = rng.choice(wild, size=int(spots.sum()))
    return index, (index >= 0) & (index < length)


# ---- gather ----------------------------------------------------------------------------------

GATHER_SHAPES = [(1, 5, 4, 1), (3, 7, 9, 1), (2, 5, 3, 3), (1, 1, 6, 9), (4, 3, 2, 17),
                 (2, 6, 0, 3), (1, 0, 5, 2), (0, 3, 3, 3)]  # (outer, x_len, idx_len, inner)


@pytest.mark.parametrize("size", indexing.SIZES)
@pytest.mark.parametrize("outer, x_len, idx_len, inner", GATHER_SHAPES)
def test_gather_matches_take_along_axis(kernels, size, outer, x_len, idx_len, inner):
    engine, exports = kernels
    rng = np.random.default_rng(outer * 1000 + x_len * 100 + idx_len * 10 + inner)
    x = _data(BY_SIZE[size], (outer, x_len, inner), rng)
    index, valid = _indices(x_len, (outer, idx_len, inner), rng)
    arena = Arena(engine)
    at_x, at_index = arena.put(x.tobytes()), arena.put(index.tobytes())
    at_out = arena.output(index.size * size)
    exports[f"gather_{size}"](at_out, at_x, at_index, outer, x_len, idx_len, inner)
    if x_len:
        want = np.take_along_axis(x, np.where(valid, index, 0), axis=1)
    else:
        want = np.zeros(index.shape, x.dtype)
    want[~valid] = 0
    got = arena.read(at_out, index.size * size, x.dtype).reshape(index.shape)
    np.testing.assert_array_equal(got, want)
    arena.check_canaries()


# ---- scatter ---------------------------------------------------------------------------------

SCATTER_SHAPES = [(1, 5, 9, 1), (3, 4, 7, 1), (2, 5, 6, 3), (1, 1, 5, 7), (2, 3, 11, 5),
                  (2, 6, 0, 3), (3, 0, 4, 2)]  # (outer, out_len, idx_len, inner)


def _values(dtype, shape, rng) -> np.ndarray:
    """src and x values: floats whose sums depend on their order."""
    if dtype is np.float32:
        scale = rng.choice(np.array([1.0, 1e-3, 1e8, -1e8], np.float32), shape)
        return (rng.standard_normal(shape).astype(np.float32) * scale).astype(np.float32)
    return _data(dtype, shape, rng)


def _scatter_reference(x, index, src, add: bool) -> np.ndarray:
    """Element by element in row-major order: integer sums wrap, bools OR."""
    out = x.copy()
    with np.errstate(over="ignore"):
        for (o, j, i), k in np.ndenumerate(index):
            if not 0 <= k < x.shape[1]:
                continue
            if not add:
                out[o, k, i] = src[o, j, i]
            elif out.dtype == np.bool_:
                out[o, k, i] = out[o, k, i] | src[o, j, i]
            else:
                out[o, k, i] = out.dtype.type(out[o, k, i] + src[o, j, i])
    return out


@pytest.mark.parametrize("dtype", indexing.DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("reduce", ["assign", "add"])
@pytest.mark.parametrize("outer, out_len, idx_len, inner", SCATTER_SHAPES)
def test_scatter_matches_row_major_writes(kernels, dtype, reduce, outer, out_len, idx_len,
                                          inner):
    engine, exports = kernels
    rng = np.random.default_rng(outer * 1000 + out_len * 100 + idx_len * 10 + inner)
    np_dtype = NUMPY[dtype]
    x = _values(np_dtype, (outer, out_len, inner), rng)
    src = _values(np_dtype, (outer, idx_len, inner), rng)
    index, _ = _indices(out_len, (outer, idx_len, inner), rng)
    arena = Arena(engine)
    at_index, at_src = arena.put(index.tobytes()), arena.put(src.tobytes())
    at_out = arena.put(x.tobytes())
    exports[f"scatter_{dtype.name}"](at_out, at_index, at_src, outer, out_len, idx_len, inner,
                                     int(reduce == "add"))
    want = _scatter_reference(x, index, src, reduce == "add")
    got = arena.read(at_out, x.nbytes, np_dtype).reshape(x.shape)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))  # bits (NaN too)
    arena.check_canaries()


def test_scatter_add_accumulates_in_row_major_order(kernels):
    engine, exports = kernels
    x = np.zeros((1, 2, 1), np.float32)
    src = np.array([1e8, 1.0, -1e8, 1.0], np.float32).reshape(1, 4, 1)
    index = np.zeros((1, 4, 1), np.int32)
    arena = Arena(engine)
    at_index, at_src, at_out = (arena.put(a.tobytes()) for a in (index, src, x))
    exports["scatter_float32"](at_out, at_index, at_src, 1, 2, 4, 1, 1)
    # ((1e8 + 1) - 1e8) + 1 in float32: the first 1 is lost
    assert arena.read(at_out, 8, np.float32).tolist() == [1.0, 0.0]


# ---- index_select ----------------------------------------------------------------------------

#: (outer, x_len, n_index, inner): runs below and at or above indexing.BULK bytes
SELECT_SHAPES = [(1, 5, 7, 1), (3, 4, 9, 1), (2, 5, 6, 3), (1, 1, 4, 15), (2, 7, 5, 16),
                 (3, 6, 4, 70), (2, 4, 0, 3), (2, 0, 3, 20), (1, 9, 3, 64)]


@pytest.mark.parametrize("size", indexing.SIZES)
@pytest.mark.parametrize("outer, x_len, n_index, inner", SELECT_SHAPES)
def test_index_select_matches_take(kernels, size, outer, x_len, n_index, inner):
    engine, exports = kernels
    rng = np.random.default_rng(outer * 1000 + x_len * 100 + n_index * 10 + inner)
    x = _data(BY_SIZE[size], (outer, x_len, inner), rng)
    index, valid = _indices(x_len, (n_index,), rng)
    arena = Arena(engine)
    at_x, at_index = arena.put(x.tobytes()), arena.put(index.tobytes())
    nbytes = outer * n_index * inner * size
    at_out = arena.output(nbytes)
    exports[f"index_select_{size}"](at_out, at_x, at_index, outer, x_len, n_index, inner)
    want = np.zeros((outer, n_index, inner), x.dtype)
    want[:, valid] = x[:, index[valid]]
    got = arena.read(at_out, nbytes, x.dtype).reshape(want.shape)
    np.testing.assert_array_equal(got, want)
    arena.check_canaries()


# ---- nonzero ---------------------------------------------------------------------------------

NONZERO_SHAPES = [(), (1,), (7,), (3, 5), (2, 3, 4), (17,), (4, 1, 33), (0,), (2, 0, 3),
                  (5, 16)]


def _sparse(dtype, shape, rng, density: float) -> np.ndarray:
    """Elements of which about `density` are nonzero; floats with -0.0 among the zeros and
    NaN and infinities among the others."""
    keep = rng.random(shape) < density
    if dtype is np.float32:
        values = rng.choice(np.array([1.5, -2.0, np.nan, np.inf, -np.inf, 1e-45, -1e-45],
                                     np.float32), shape)
        zeros = rng.choice(np.array([0.0, -0.0], np.float32), shape)
        return np.where(keep, values, zeros).astype(np.float32)
    if dtype is np.bool_:
        return keep
    values = _data(dtype, shape, rng)
    values[values == 0] = 1
    return np.where(keep, values, 0).astype(dtype)


@pytest.mark.parametrize("dtype", indexing.DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", NONZERO_SHAPES, ids=str)
@pytest.mark.parametrize("density", [0.0, 0.3, 1.0])
def test_nonzero_matches_argwhere(kernels, dtype, shape, density):
    engine, exports = kernels
    rng = np.random.default_rng(len(shape) * 100 + int(np.prod(shape)) + int(density * 10))
    x = _sparse(NUMPY[dtype], shape, rng, density)
    n, rank = x.size, len(shape)
    arena = Arena(engine)
    at_x = arena.put(x.tobytes())
    at_shape = arena.put(np.array(shape, np.int32).tobytes())
    at_out = arena.output(n * rank * 4)
    count = exports[f"count_nonzero_{dtype.name}"](at_x, n)
    assert count == np.count_nonzero(x)
    assert exports[f"nonzero_{dtype.name}"](at_out, at_x, n, rank, at_shape) == count
    want = np.argwhere(x).astype(np.int32)
    got = arena.read(at_out, count * rank * 4, np.int32).reshape(count, rank)
    np.testing.assert_array_equal(got, want.reshape(count, rank))
    arena.check_canaries()


# ---- where -----------------------------------------------------------------------------------

@pytest.mark.parametrize("size", indexing.SIZES)
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 15, 16, 17, 33, 100])
def test_where_matches_numpy(kernels, size, n):
    engine, exports = kernels
    rng = np.random.default_rng(n * 10 + size)
    cond = rng.random(n) < 0.5
    a, b = _data(BY_SIZE[size], n, rng), _data(BY_SIZE[size], n, rng)
    arena = Arena(engine)
    at_cond, at_a, at_b = (arena.put(v.tobytes()) for v in (cond, a, b))
    at_out = arena.output(n * size)
    exports[f"where_{size}"](at_out, at_cond, at_a, at_b, n)
    np.testing.assert_array_equal(arena.read(at_out, n * size, a.dtype), np.where(cond, a, b))
    arena.check_canaries()


# ---- cast ------------------------------------------------------------------------------------

_FLOAT_EDGES = [
    0.0, -0.0, 0.4, -0.6, 1.5, -1.5, 2.9999, -2.9999, 127.9, 255.0, 255.9, 256.0, 257.5, -1.0,
    -255.5, -256.5, 1e-45, -1e-45, 16777217.0, 2147483520.0, 2**31, -(2**31), -(2**31) - 1e3,
    2**31 + 256, -(2**31) - 256, 4294967040.0, 4294967296.0, 4294967552.0, 3 * 2**32 + 2**20,
    2**54 + 2**31, -(2**54) - 2**31, 2**55, 2**55 + 2**32, 2**62, 2**63 - 2**39, 2**63,
    -(2**63), 2**64, 3e38, -3e38, 3.4028234663852886e38, np.inf, -np.inf, np.nan, -np.nan,
]
_INT_EDGES = [0, 1, -1, 127, 128, 255, 256, -255, -256, 257, I32_MAX, I32_MIN, 16777217,
              16777219, -16777219, 2**31 - 64, 2**31 - 65, -(2**31) + 64, 2**24 + 3]


def _cast_inputs(dtype) -> np.ndarray:
    """Edge values and random ones: floats over many magnitudes, in and out of int32's
    range."""
    rng = np.random.default_rng(7)
    if dtype is float32:
        # first whole vectors of 4 and 16 within +-2**31 (SIMD), but for one 2**31 (which
        # saturates there) and -2**31 (which does not); then the edges, then any magnitude
        inside = rng.uniform(-2e9, 2e9, 64)
        inside[[3, 21, 40, 47]] = [2**31, 2147483520.0, -(2**31), -2147483520.0]
        magnitude = 2.0 ** rng.uniform(-12, 75, 300)
        signs = rng.choice([-1.0, 1.0], 300)
        return np.concatenate([inside.astype(np.float32), np.array(_FLOAT_EDGES, np.float32),
                               (magnitude * signs).astype(np.float32)])
    if dtype is int32:
        return np.concatenate([np.array(_INT_EDGES, np.int32), _data(np.int32, 300, rng)])
    if dtype is uint8:
        return np.concatenate([np.arange(256, dtype=np.uint8), _data(np.uint8, 45, rng)])
    return rng.random(301) < 0.5


@pytest.mark.parametrize("source, target", indexing.CASTS,
                         ids=[f"{a.name}-{b.name}" for a, b in indexing.CASTS])
def test_cast_matches_the_cpu_backend(kernels, source, target):
    engine, exports = kernels
    x = _cast_inputs(source)
    want = pyburn.tensor(x, dtype=source, device="cpu").cast(target).numpy()
    assert want.dtype == NUMPY[target]
    size = np.dtype(NUMPY[target]).itemsize
    for n in [len(x), 0, 1, 3, 4, 5, 15, 16, 17, 33]:
        arena = Arena(engine)
        at_x = arena.put(x[:n].tobytes())
        at_out = arena.output(n * size)
        exports[f"cast_{source.name}_{target.name}"](at_out, at_x, n)
        got = arena.read(at_out, n * size, NUMPY[target])
        np.testing.assert_array_equal(got.view(np.uint8), want[:n].view(np.uint8),
                                      err_msg=f"n={n}, x={x[:n]}")
        arena.check_canaries()


@pytest.mark.parametrize("target", [float32, int32, uint8], ids=lambda d: d.name)
def test_a_bool_is_any_nonzero_byte(kernels, target):
    """Bools are 0 or 1, but a cast from bool reads any other byte as true too (as where
    reads its condition)."""
    engine, exports = kernels
    x = np.concatenate([np.arange(256), np.arange(256)[::-1]]).astype(np.uint8)[:509]
    want = (x != 0).astype(NUMPY[target])
    arena = Arena(engine)
    at_x = arena.put(x.tobytes())
    at_out = arena.output(want.nbytes)
    exports[f"cast_bool_{target.name}"](at_out, at_x, x.size)
    np.testing.assert_array_equal(arena.read(at_out, want.nbytes, want.dtype), want)
    arena.check_canaries()


def test_float_to_int_casts_wrap_as_python_ints(kernels):
    """The cpu backend's rule spelled out: int(v) modulo 2**32 (NaN and infinities 0)."""
    engine, exports = kernels
    x = np.array(_FLOAT_EDGES, np.float32)
    want = np.array([int(v) % 2**32 if np.isfinite(v) else 0 for v in x.tolist()], np.uint32)
    arena = Arena(engine)
    at_x = arena.put(x.tobytes())
    at_int, at_byte = arena.output(x.size * 4), arena.output(x.size)
    exports["cast_float32_int32"](at_int, at_x, x.size)
    exports["cast_float32_uint8"](at_byte, at_x, x.size)
    np.testing.assert_array_equal(arena.read(at_int, x.size * 4, np.uint32), want)
    np.testing.assert_array_equal(arena.read(at_byte, x.size, np.uint8), want & 0xFF)
    arena.check_canaries()


def test_kernels_are_named_and_exported_once(kernels):
    _, exports = kernels
    names = [f.name for f in indexing.kernels()]
    assert len(names) == len(set(names)) == len(exports)
    assert sum(name.startswith("cast_") for name in names) == 12
