"""The cpu (numpy) backend, primitive by primitive, through the backend protocol.

Every input goes in with ``from_bytes`` (contiguous, or made strided with the backend's own
slice/flip/permute) and every result comes out with ``to_bytes``. References are independent
of the code under test: the pure-Python scalar functions of ``pyburn.ops.elementwise`` for
elementwise ops, ``math.erf``, Python loops and ``sorted`` for indexing and sorting,
``pyburn.random.random_words`` for random bits, and float64 numpy for reductions and matmul.
Any numpy warning fails a test: the backend must compute IEEE results quietly.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from itertools import combinations, product

import pytest

np = pytest.importorskip("numpy")

from pyburn.backends.cpu import create, sums, unavailable_reason  # noqa: E402
from pyburn.backends.cpu.backend import NUMPY_DTYPES  # noqa: E402
from pyburn.dtypes import (  # noqa: E402
    ALL_DTYPES,
    DType,
    bool_,
    float16,
    float32,
    float64,
    int32,
    int64,
    uint8,
)
from pyburn.ops.elementwise import BINARY, UNARY, ElementwiseOp  # noqa: E402
from pyburn.random import random_words  # noqa: E402

pytestmark = pytest.mark.filterwarnings("error")

BE = create(0)
FLOATS = (float16, float32, float64)
INTS = (uint8, int32, int64)
NUMERIC = INTS + FLOATS
DTYPES_OF_DOMAIN = {"float": FLOATS, "numeric": NUMERIC, "rounding": NUMERIC,
                    "compare": ALL_DTYPES, "logical": ALL_DTYPES, "bitwise": (bool_,) + INTS}
# (relative, absolute) error allowed against a float64 reference rounded to the dtype: one or
# two roundings of the dtype (numpy's float32 transcendental functions are SIMD, ~1-4 ulp).
TOL = {float16: (2e-3, 1e-5), float32: (1e-6, 2e-7), float64: (1e-14, 1e-300)}
LAYOUTS = ("contiguous", "stepped", "flipped", "transposed")
FLOAT_SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -3.0,
                  20.0, 1e-3]


def ids(value):
    """Readable parametrize ids for dtypes."""
    return value.name if isinstance(value, DType) else None


# ---- moving data in and out through the protocol -----------------------------------------

def put(array, dtype: DType, layout: str = "contiguous"):
    """A handle holding `array` as `dtype`, contiguous or as a strided view made by the
    backend itself."""
    a = np.asarray(array).astype(NUMPY_DTYPES[dtype])
    if layout == "contiguous" or a.ndim == 0 or a.size == 0:
        return BE.from_bytes(a.tobytes(), a.shape, dtype)
    if layout == "stepped":  # every other element of a twice-as-wide tensor
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        wide[..., ::2] = a
        h = BE.from_bytes(wide.tobytes(), wide.shape, dtype)
        return BE.slice(h, [0] * a.ndim, wide.shape, [1] * (a.ndim - 1) + [2])
    if layout == "flipped":  # negative strides on every axis
        h = BE.from_bytes(np.flip(a).tobytes(), a.shape, dtype)
        return BE.flip(h, tuple(range(a.ndim)))
    assert layout == "transposed"
    if a.ndim < 2:
        return put(a, dtype, "flipped")
    swap = tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2)
    h = BE.from_bytes(a.transpose(swap).tobytes(), a.transpose(swap).shape, dtype)
    return BE.permute(h, swap)


def get(h, dtype: DType):
    """The values of handle `h` read back with ``to_bytes``; checks its dtype on the way."""
    assert isinstance(h, np.ndarray), f"handle is a {type(h).__name__}, not an ndarray"
    assert h.dtype == NUMPY_DTYPES[dtype], f"handle dtype {h.dtype}, expected {dtype.name}"
    data = BE.to_bytes(h, h.shape, dtype)
    assert isinstance(data, bytes) and len(data) == h.size * dtype.itemsize
    return np.frombuffer(data, NUMPY_DTYPES[dtype]).reshape(h.shape)


def assert_same(got, want, dtype: DType, scale=None) -> None:
    """Equal shapes; equal values for ints and bools; for floats NaN where NaN, the same
    infinities, and finite values within TOL, relative to `scale` where that is larger (the
    sum of magnitudes for accumulations, whose rounding errors scale with it)."""
    want = np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    if not dtype.is_floating_point:
        want = want.astype(NUMPY_DTYPES[dtype])
        bad = got != want
        assert not bad.any(), f"got {got[bad][:8]}, expected {want[bad][:8]}"
        return
    with np.errstate(all="ignore"):  # the references' own arithmetic may overflow
        _assert_close(got.astype(np.float64), want.astype(np.float64), dtype, scale)


def _assert_close(g, w, dtype: DType, scale) -> None:
    nan = np.isnan(w)
    assert (np.isnan(g) == nan).all(), f"NaN at {np.argwhere(np.isnan(g) != nan)[:8]}"
    inf = np.isinf(w)
    assert (g[inf] == w[inf]).all() and not np.isinf(g[~inf]).any(), (
        f"infinities differ: got {g[inf | np.isinf(g)]}, expected {w[inf | np.isinf(g)]}")
    rel, absolute = TOL[dtype]
    finite = ~(nan | inf)
    limit = absolute + rel * (np.abs(w) if scale is None else np.maximum(np.abs(w), scale))
    error = np.abs(g - w)
    bad = finite & (error > np.broadcast_to(limit, w.shape))
    assert not bad.any(), f"got {g[bad][:8]}, expected {w[bad][:8]} ({dtype.name})"


def sample(shape, dtype: DType, rng, low: float = -4.0, high: float = 4.0):
    """Random values of `dtype`, with special values planted: NaN, infinities, zeros for
    floats; the extremes, 0 and +-1 for integers."""
    if dtype is bool_:
        return rng.random(shape) < 0.5
    if dtype.is_floating_point:
        values, specials = rng.uniform(low, high, shape), FLOAT_SPECIALS
    else:
        info = np.iinfo(NUMPY_DTYPES[dtype])
        values = rng.integers(max(info.min, -50), 50, shape, endpoint=True)
        specials = [info.min, info.max, 0, 1, info.max - 1] + ([-1] if info.min else [])
    flat = values.reshape(-1)
    spots = rng.permutation(flat.size)[:len(specials)]
    flat[spots] = np.array(specials, dtype=flat.dtype)[:spots.size]
    return values.astype(NUMPY_DTYPES[dtype])


# ---- elementwise references from the op table --------------------------------------------

def wrap(value: int, dtype: DType) -> int:
    """A Python int wrapped into the range of integer `dtype`."""
    info = np.iinfo(NUMPY_DTYPES[dtype])
    return (value - int(info.min)) % (1 << (8 * dtype.itemsize)) + int(info.min)


def table_reference(entry: ElementwiseOp, inputs, dtype: DType, out: DType):
    """`entry`'s scalar functions applied element by element in Python, then stored as `out`."""
    fn = entry.py_int if entry.py_int is not None and not dtype.is_floating_point else entry.py
    results = []
    for args in zip(*(x.reshape(-1).tolist() for x in inputs)):
        try:
            results.append(fn(*args))
        except (ArithmeticError, ValueError):
            results.append(entry.safe(*args))
    shape = inputs[0].shape
    if out is bool_:
        return np.array([bool(v) for v in results], dtype=bool).reshape(shape)
    if out.is_floating_point:
        with np.errstate(over="ignore"):  # float64 results beyond float16's range
            return np.array(results, dtype=np.float64).astype(NUMPY_DTYPES[out]).reshape(shape)
    return np.array([wrap(int(v), out) for v in results], NUMPY_DTYPES[out]).reshape(shape)


# a backend never meets an op with `on_bool` on bool (the tensor layer calls the other op)
UNARY_CASES = [(e, d) for e in UNARY.values() for d in DTYPES_OF_DOMAIN[e.domain]
               if not (e.on_bool and d is bool_)]
BINARY_CASES = [(e, d) for e in BINARY.values() for d in DTYPES_OF_DOMAIN[e.domain]
                if not (e.on_bool and d is bool_)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("entry", "dtype"), UNARY_CASES,
                         ids=[f"{e.name}-{d.name}" for e, d in UNARY_CASES])
def test_unary(entry, dtype, layout):
    x = sample((7, 9), dtype, np.random.default_rng(1))
    out = bool_ if entry.returns_bool else dtype
    got = get(BE.unary(entry.name, put(x, dtype, layout), out), out)
    assert_same(got, table_reference(entry, [x], dtype, out), out)


def _binary_inputs(entry: ElementwiseOp, dtype: DType, rng):
    a, b = sample((13, 17), dtype, rng), sample((13, 17), dtype, rng)
    if dtype.is_floating_point:  # every pair of special values, in the first rows
        pairs = np.array(list(product(FLOAT_SPECIALS, repeat=2))).T
        a.reshape(-1)[:pairs.shape[1]] = pairs[0]
        b.reshape(-1)[:pairs.shape[1]] = pairs[1]
    elif entry.name == "pow":  # exponents a test can afford, negative ones included
        b = rng.integers(0 if dtype is uint8 else -4, 13, b.shape).astype(b.dtype)
    elif entry.name in ("left_shift", "right_shift") and dtype is not bool_:
        # counts past the width, and negative ones, give 0 (or -1 shifting a negative right)
        low = 0 if dtype is uint8 else -3
        b = rng.integers(low, 8 * dtype.itemsize + 4, b.shape).astype(b.dtype)
    return a, b


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("entry", "dtype"), BINARY_CASES,
                         ids=[f"{e.name}-{d.name}" for e, d in BINARY_CASES])
def test_binary(entry, dtype, layout):
    a, b = _binary_inputs(entry, dtype, np.random.default_rng(2))
    out = bool_ if entry.returns_bool else dtype
    got = get(BE.binary(entry.name, put(a, dtype, layout), put(b, dtype), out), out)
    assert_same(got, table_reference(entry, [a, b], dtype, out), out)


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
@pytest.mark.parametrize("dtype", INTS, ids=ids)
def test_integer_division_by_zero_gives_zero(op, dtype):
    a = np.array([7, 0, 1, 200 if dtype is uint8 else -7], NUMPY_DTYPES[dtype])
    got = get(BE.binary(op, put(a, dtype), put(np.zeros(4), dtype), dtype), dtype)
    assert (got == 0).all()


def test_integer_pow_with_negative_exponents():
    a = np.array([1, -1, -1, 2, -2, 0, 1, 5], np.int32)
    b = np.array([-3, -3, -2, -1, -1, -1, 0, 2], np.int32)
    got = get(BE.binary("pow", put(a, int32), put(b, int32), int32), int32)
    assert got.tolist() == [1, -1, 1, 0, 0, 0, 1, 25]


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
def test_elementwise_zero_dim_and_empty(dtype):
    for shape in ((), (0,), (2, 0, 3)):
        x = np.full(shape, 0.25)
        got = get(BE.binary("add", put(x, dtype), put(x, dtype), dtype), dtype)
        assert_same(got, x + x, dtype)
        assert_same(get(BE.unary("erf", put(x, dtype), dtype), dtype), np.vectorize(math.erf)(x)
                    if x.size else x, dtype)


def test_where_on_every_dtype():
    rng = np.random.default_rng(3)
    cond = rng.random((4, 5)) < 0.5
    for dtype in ALL_DTYPES:
        a, b = sample((4, 5), dtype, rng), sample((4, 5), dtype, rng)
        got = get(BE.where(put(cond, bool_, "stepped"), put(a, dtype, "flipped"), put(b, dtype)),
                  dtype)
        assert_same(got, [[x if c else y for c, x, y in zip(*rows)]
                          for rows in zip(cond.tolist(), a.tolist(), b.tolist())], dtype)


# ---- erf ---------------------------------------------------------------------------------

def test_erf_float64_matches_math_erf_to_1e15():
    grid = np.concatenate([
        np.linspace(-30.0, 30.0, 120001),  # the whole range, tails included
        np.linspace(1.9, 2.1, 4001), np.linspace(5.8, 6.2, 4001),  # where methods switch
        np.logspace(-310, 0.5, 3000), -np.logspace(-300, 0.5, 3000),  # tiny and subnormal
    ])
    got = get(BE.unary("erf", put(grid, float64), float64), float64)
    want = np.array([math.erf(v) for v in grid.tolist()])
    normal = np.abs(want) > 1e-307  # subnormal results are compared to within 2 of their ulps
    assert (np.abs(got - want)[normal] <= 1e-15 * np.abs(want[normal])).all()
    assert (np.abs(got - want)[~normal] <= 1e-323).all()
    special = get(BE.unary("erf", put([math.nan, math.inf, -math.inf, -0.0], float64), float64),
                  float64)
    assert math.isnan(special[0]) and special[1:3].tolist() == [1.0, -1.0]
    assert math.copysign(1.0, special[3]) == -1.0


@pytest.mark.parametrize("dtype", [float16, float32], ids=ids)
def test_erf_low_precision_is_rounded_from_float64(dtype):
    """To 2**-32 of erf before rounding: math.erf rounded, but where that is within 1/256
    ulp of halfway between two floats (one ulp off there, a few in 10,000 points)."""
    x = np.linspace(-5, 5, 40001).astype(NUMPY_DTYPES[dtype])
    got = get(BE.unary("erf", put(x, dtype), dtype), dtype)
    want = np.array([math.erf(v) for v in x.tolist()]).astype(NUMPY_DTYPES[dtype])
    bits = {float16: np.int16, float32: np.int32}[dtype]
    ulps = np.abs(got.view(bits).astype(np.int64) - want.view(bits).astype(np.int64))
    assert ulps.max() <= 1 and (ulps != 0).mean() < 1e-3


# ---- transfer, creation, cast ------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (5,), (2, 3, 4)], ids=str)
def test_bytes_round_trip(dtype, shape):
    x = sample(shape, dtype, np.random.default_rng(4))
    data = bytearray(x.astype(NUMPY_DTYPES[dtype].newbyteorder("<")).tobytes())
    h = BE.from_bytes(data, shape, dtype)
    data[:] = bytes(len(data))  # the handle must not see later writes to the caller's buffer
    assert_same(get(h, dtype), x, dtype)
    assert_same(get(BE.from_bytes(memoryview(bytes(x.tobytes())), shape, dtype), dtype), x, dtype)


def test_to_bytes_is_c_ordered_for_views():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    h = BE.permute(put(x, int32), (2, 0, 1))
    assert BE.to_bytes(h, (4, 2, 3), int32) == np.ascontiguousarray(x.transpose(2, 0, 1)).tobytes()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_full(dtype):
    value = True if dtype is bool_ else (2.5 if dtype.is_floating_point else 7)
    assert_same(get(BE.full((2, 3), value, dtype), dtype), np.full((2, 3), value), dtype)
    assert get(BE.full((0, 4), value, dtype), dtype).shape == (0, 4)
    assert_same(get(BE.full((), value, dtype), dtype), np.array(value), dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_arange(dtype):
    if dtype.is_floating_point:
        start, step = 0.1, 0.3
        want = [start + i * step for i in range(40)]
    elif dtype is int64:
        start, step = 2**60 + 1, -3
        want = [start + i * step for i in range(40)]
    else:
        start, step = 3, 7
        want = [wrap(start + i * step, dtype) if dtype is not bool_ else start + i * step != 0
                for i in range(40)]
    assert_same(get(BE.arange(start, step, 40, dtype), dtype), want, dtype)
    assert get(BE.arange(start, step, 0, dtype), dtype).shape == (0,)


def _python_cast(value, src: DType, dst: DType):
    if dst is bool_:
        return value != 0
    if dst.is_floating_point:
        return float(value)
    if src.is_floating_point:
        return wrap(int(value), dst) if math.isfinite(value) else 0
    return wrap(int(value), dst)


@pytest.mark.parametrize("dst", ALL_DTYPES, ids=ids)
@pytest.mark.parametrize("src", ALL_DTYPES, ids=ids)
def test_cast(src, dst):
    x = sample((6, 7), src, np.random.default_rng(5), -300.0, 300.0)
    if src is float64 and dst.is_integer:
        x.reshape(-1)[-4:] = [1e19, -1e19, 2.0**63, -(2.0**64) - 4096.0]  # out of int64 range
    want = np.array([_python_cast(v, src, dst) for v in x.reshape(-1).tolist()], dtype=object)
    if dst.is_floating_point:
        want = want.astype(np.float64)
    got = get(BE.cast(put(x, src, "transposed"), dst), dst)
    with np.errstate(over="ignore"):  # ints beyond float16's range become inf
        want = want.reshape(x.shape).astype(NUMPY_DTYPES[dst])
    assert_same(got, want, dst)


# ---- random bits -------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 0x123456789ABCDEF0, 2**64 - 1])
@pytest.mark.parametrize("offset", [0, 1, 2, 3, 5, 4 * 2**32 + 2, 2**66 - 3, 2**130 + 7])
@pytest.mark.parametrize("shape", [(0,), (1,), (3,), (4,), (7,), (3, 5, 7)], ids=str)
def test_random_bits_match_the_reference_stream(seed, offset, shape):
    h = BE.random_bits(shape, seed, offset)
    words = random_words(math.prod(shape), seed, offset)
    assert get(h, int32).reshape(-1).view(np.uint32).tolist() == words


# ---- reductions and scans ----------------------------------------------------------------

REDUCE_AXES = [axes for k in range(4) for axes in combinations(range(3), k)]


def _reduce_reference(op: str, x, axes, dtype: DType):
    wide = x.astype(np.float64 if dtype.is_floating_point else object)
    if op in ("any", "all"):
        return getattr(np, op)(x != 0, axis=axes, keepdims=True)
    if dtype is bool_ and op in ("sum", "prod"):  # bool sums keep bool: any / all
        return (np.any if op == "sum" else np.all)(x, axis=axes, keepdims=True)
    found = getattr(np, {"max": "amax", "min": "amin"}.get(op, op))(wide, axis=axes,
                                                                       keepdims=True)
    if dtype.is_integer:  # Python ints summed exactly, then wrapped like the dtype
        return np.vectorize(lambda v: wrap(int(v), dtype), otypes=[object])(found)
    return found


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "any", "all"])
def test_reduce(op, dtype, layout):
    x = sample((3, 4, 5), dtype, np.random.default_rng(6), -1.5, 1.5)
    if dtype.is_floating_point:  # one NaN only, in a known place; no infinities
        x = np.where(np.isfinite(x), x, 0.75).astype(x.dtype)
        x[1, 2, 3] = np.nan
    out = bool_ if op in ("any", "all") else dtype
    for axes in REDUCE_AXES:
        got = get(BE.reduce(op, put(x, dtype, layout), axes), out)
        want = _reduce_reference(op, x, axes, dtype)
        scale = np.sum(np.abs(x.astype(np.float64)), axis=axes, keepdims=True) if (
            out.is_floating_point and op == "sum") else None
        assert_same(got, want, out, scale=scale)
    if dtype.is_floating_point and op in ("max", "min"):
        assert math.isnan(get(BE.reduce(op, put(x, dtype), (0, 1, 2)), dtype)[0, 0, 0])


@pytest.mark.parametrize("dtype", [float32, float64], ids=ids)
@pytest.mark.parametrize("shape, axes, as_product", [
    ((40, 7), (1,), True), ((2, 30, 3, 5), (2, 3), True), ((16, 4096), (1,), True),
    ((17, 4097), (1,), False), ((15, 9), (1,), False), ((9, 40), (0,), False)], ids=str)
def test_sums_of_many_rows(dtype, shape, axes, as_product):
    """Sums over the trailing dims of many short rows go through one product with ones
    (`sums`): float64's sums, NaN and infinities where a row has them."""
    x = sample(shape, dtype, np.random.default_rng(3), -4.0, 4.0)
    x = np.where(np.isfinite(x), x, 0.5).astype(x.dtype)
    x.reshape(-1)[[5, 7, 8, -1]] = np.nan, np.inf, -np.inf, -np.inf
    assert sums._in_rows(x, axes) is as_product
    got = get(BE.reduce("sum", put(x, dtype), axes), dtype)
    with np.errstate(invalid="ignore"):  # inf + -inf in the reference's own sums
        want = _reduce_reference("sum", x, axes, dtype)
        scale = np.sum(np.abs(x.astype(np.float64)), axis=axes, keepdims=True)
    assert_same(got, want, dtype, scale=scale)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_reduce_over_nothing_gives_identities(dtype):
    empty = put(np.zeros((0, 3)), dtype)
    identity = {"sum": 0, "prod": 1, "any": False, "all": True}
    for op, value in identity.items():
        out = bool_ if op in ("any", "all") or dtype is bool_ else dtype
        assert_same(get(BE.reduce(op, empty, (0,)), out), np.full((1, 3), value), out)
        assert get(BE.reduce(op, empty, (1,)), out).shape == (0, 1)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reduce_first_occurrence_and_nan(op, dtype):
    rng = np.random.default_rng(7)
    x = rng.integers(0, 3, (4, 6, 5)).astype(NUMPY_DTYPES[dtype])  # many ties
    pick = max if op == "argmax" else min
    for axis, layout in product(range(3), ("contiguous", "flipped")):
        got = get(BE.arg_reduce(op, put(x, dtype, layout), axis), int32)
        moved = np.moveaxis(x, axis, -1)
        want = [pick(range(len(row)), key=lambda i, row=row: (row[i], -i)) if op == "argmax" else
                pick(range(len(row)), key=lambda i, row=row: (row[i], i))
                for row in moved.reshape(-1, moved.shape[-1]).tolist()]
        assert_same(got, np.expand_dims(np.reshape(want, moved.shape[:-1]), axis), int32)
    if dtype.is_floating_point:
        nan_row = np.array([1.0, math.nan, 3.0, math.nan, -1.0])
        assert get(BE.arg_reduce(op, put(nan_row, dtype), 0), int32).tolist() == [1]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
@pytest.mark.parametrize("op", ["sum", "prod"])
def test_scan(op, dtype):
    x = sample((3, 6, 4), dtype, np.random.default_rng(8), -1.5, 1.5)
    if dtype.is_floating_point:
        x = np.where(np.isfinite(x), x, 0.5).astype(x.dtype)
    for axis in range(3):
        got = get(BE.scan(op, put(x, dtype, "stepped"), axis), dtype)
        if dtype is bool_:
            want = (np.logical_or if op == "sum" else np.logical_and).accumulate(x, axis=axis)
        elif dtype.is_floating_point:
            want = (np.cumsum if op == "sum" else np.cumprod)(x.astype(np.float64), axis=axis)
        else:
            exact = (np.cumsum if op == "sum" else np.cumprod)(x.astype(object), axis=axis)
            want = np.vectorize(lambda v: wrap(int(v), dtype), otypes=[object])(exact)
        scale = np.cumsum(np.abs(x.astype(np.float64)), axis=axis) if op == "sum" else 4.0
        assert_same(got, want, dtype, scale=scale if dtype.is_floating_point else None)


# ---- movement ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_movement(dtype):
    x = sample((2, 3, 4), dtype, np.random.default_rng(9))
    for layout in LAYOUTS:
        h = put(x, dtype, layout)
        assert_same(get(BE.reshape(h, (4, 6)), dtype), x.reshape(4, 6), dtype)
        assert_same(get(BE.permute(h, (2, 0, 1)), dtype), x.transpose(2, 0, 1), dtype)
        assert_same(get(BE.slice(h, (1, 0, 1), (2, 3, 4), (1, 2, 2)), dtype), x[1:2, 0:3:2, 1::2],
                    dtype)
        for axes in REDUCE_AXES:
            backwards = tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(3))
            flipped = x[backwards]
            assert_same(get(BE.flip(h, axes), dtype), flipped, dtype)
    row = put(x[:, :1, :], dtype, "stepped")
    assert_same(get(BE.expand(row, (2, 5, 4)), dtype), np.repeat(x[:, :1, :], 5, axis=1), dtype)
    scalar = put(x[0, 0, 0], dtype)
    assert_same(get(BE.slice(scalar, (), (), ()), dtype), x[0, 0, 0], dtype)
    assert_same(get(BE.flip(scalar, ()), dtype), x[0, 0, 0], dtype)
    assert_same(get(BE.reshape(scalar, (1, 1)), dtype), x[:1, 0, :1], dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_pad_and_cat(dtype):
    x = sample((2, 3), dtype, np.random.default_rng(10))
    value = True if dtype is bool_ else (-1.5 if dtype.is_floating_point else 9)
    got = get(BE.pad(put(x, dtype, "transposed"), [(1, 2), (0, 3)], value), dtype)
    want = np.full((5, 6), value, dtype=object)
    want[1:3, 0:3] = x
    assert_same(got, want.astype(NUMPY_DTYPES[dtype]), dtype)
    assert_same(get(BE.pad(put(np.zeros((0, 2)), dtype), [(1, 0), (0, 1)], value), dtype),
                np.full((1, 3), value), dtype)
    y = sample((4, 3), dtype, np.random.default_rng(11))
    parts = [put(x, dtype, "flipped"), put(np.zeros((0, 3)), dtype), put(y, dtype, "stepped")]
    assert_same(get(BE.cat(parts, 0), dtype), np.concatenate([x, y]), dtype)
    assert_same(get(BE.cat([put(x, dtype), put(x, dtype, "transposed")], 1), dtype),
                np.concatenate([x, x], axis=1), dtype)


# ---- indexing ----------------------------------------------------------------------------

def _cells(shape):
    return list(np.ndindex(*shape))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather(dtype, axis):
    rng = np.random.default_rng(12)
    x = sample((4, 5, 6), dtype, rng)
    shape = tuple(3 if d == axis else n - 1 for d, n in enumerate(x.shape))  # smaller elsewhere
    index = rng.integers(0, x.shape[axis], shape)
    got = get(BE.gather(put(x, dtype, "flipped"), axis, put(index, int32, "stepped")), dtype)
    want = np.empty(shape, dtype=x.dtype)
    for cell in _cells(shape):
        source = list(cell)
        source[axis] = index[cell]
        want[cell] = x[tuple(source)]
    assert_same(got, want, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
@pytest.mark.parametrize("reduce", ["assign", "add"])
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter(dtype, reduce, axis):
    rng = np.random.default_rng(13)
    x = sample((4, 5), dtype, rng, -2.0, 2.0)
    x = np.where(np.isfinite(x), x, 1).astype(x.dtype) if dtype.is_floating_point else x
    shape = (6, 4) if axis == 0 else (3, 8)  # more entries than the axis: repeats certain
    index = rng.integers(0, x.shape[axis], shape)
    src = sample(shape, dtype, rng, -2.0, 2.0)
    src = np.where(np.isfinite(src), src, 1).astype(src.dtype) if dtype.is_floating_point else src
    got = get(BE.scatter(put(x, dtype, "transposed"), axis, put(index, int64), put(src, dtype),
                         reduce), dtype)
    want = x.astype(object if dtype.is_integer else x.dtype)
    for cell in _cells(shape):  # row-major order: the last write wins
        target = list(cell)
        target[axis] = index[cell]
        target = tuple(target)
        if reduce == "assign":
            want[target] = src[cell]
        elif dtype is bool_:
            want[target] = want[target] or src[cell]
        else:
            want[target] = want[target] + (src[cell].item() if dtype.is_integer else src[cell])
    if dtype.is_integer:
        want = np.vectorize(lambda v: wrap(int(v), dtype), otypes=[object])(want)
    assert_same(got, want, dtype, scale=8.0)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_index_select(dtype):
    x = sample((3, 4, 5), dtype, np.random.default_rng(14))
    index = np.array([4, 0, 0, 2, 4, 1])
    for axis in range(3):
        picked = index[index < x.shape[axis]]
        got = get(BE.index_select(put(x, dtype, "flipped"), axis, put(picked, int32)), dtype)
        want = np.stack([np.moveaxis(x, axis, 0)[i] for i in picked.tolist()], axis=axis)
        assert_same(got, want, dtype)
    assert get(BE.index_select(put(x, dtype), 1, put(np.zeros(0), int32)), dtype).shape == (3, 0, 5)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_nonzero(dtype):
    rng = np.random.default_rng(15)
    for shape in [(), (0,), (7,), (3, 4, 5)]:
        x = (rng.integers(0, 3, shape) == 0).astype(NUMPY_DTYPES[dtype])
        if dtype.is_floating_point and x.size:
            x.reshape(-1)[0] = math.nan  # NaN is nonzero
        h, found_shape = BE.nonzero(put(x, dtype, "flipped"))
        want = [list(cell) for cell in _cells(shape) if x[cell] != 0]
        assert found_shape == (len(want), len(shape))
        assert get(h, int32).tolist() == want


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_with_nan_largest(dtype, descending):
    rng = np.random.default_rng(16)
    x = rng.integers(-2, 3, (3, 8, 4)).astype(NUMPY_DTYPES[dtype])  # many ties
    if dtype.is_floating_point:
        x[rng.random(x.shape) < 0.15] = math.nan
        x[0, 0, 0], x[1, 1, 1] = -0.0, math.inf
    for axis, layout in product(range(3), ("contiguous", "transposed")):
        values, order = BE.sort(put(x, dtype, layout), axis, descending)
        moved = np.moveaxis(x, axis, -1)
        rows = moved.reshape(-1, moved.shape[-1]).tolist()
        want_order = [sorted(range(len(row)), reverse=descending,
                             key=lambda i, row=row: (1, 0) if row[i] != row[i] else (0, row[i]))
                      for row in rows]
        want_values = [[row[i] for i in idx] for row, idx in zip(rows, want_order)]
        assert_same(get(order, int32), np.moveaxis(np.reshape(want_order, moved.shape), -1, axis),
                    int32)
        assert_same(get(values, dtype),
                    np.moveaxis(np.reshape(want_values, moved.shape), -1, axis), dtype)


# ---- matmul ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC, ids=ids)
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)], ids=str)
def test_matmul(dtype, batch):
    rng = np.random.default_rng(17)
    low, high = (0, 4) if dtype is uint8 else (-3, 4)
    a = rng.integers(low, high, batch + (5, 33)).astype(NUMPY_DTYPES[dtype])
    b = rng.integers(low, high, batch + (33, 6)).astype(NUMPY_DTYPES[dtype])
    if dtype.is_floating_point:
        a = (a + rng.uniform(-0.5, 0.5, a.shape)).astype(a.dtype)
        b = (b + rng.uniform(-0.5, 0.5, b.shape)).astype(b.dtype)
    got = get(BE.matmul(put(a, dtype, "transposed"), put(b, dtype, "stepped")), dtype)
    exact = np.matmul(a.astype(object if dtype.is_integer else np.float64),
                      b.astype(object if dtype.is_integer else np.float64))
    if dtype.is_integer:
        exact = np.vectorize(lambda v: wrap(int(v), dtype), otypes=[object])(exact)
    scale = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    assert_same(got, exact, dtype, scale=scale if dtype.is_floating_point else None)
    empty = BE.matmul(put(np.zeros(batch + (2, 0)), dtype), put(np.zeros(batch + (0, 3)), dtype))
    assert_same(get(empty, dtype), np.zeros(batch + (2, 3)), dtype)


@pytest.mark.parametrize("dtype", [int32, int64], ids=ids)
@pytest.mark.parametrize("magnitude", [2 ** 20, 2 ** 31 - 1], ids=["sums-wrap", "past-2**53"])
def test_integer_matmul_wraps_as_integer_arithmetic(dtype, magnitude):
    """Sums that leave the type wrap around it, both where float64 holds every sum (the BLAS
    path) and where it does not (numpy's integer loop)."""
    rng = np.random.default_rng(3)
    a = rng.integers(-magnitude, magnitude, (3, 40)).astype(NUMPY_DTYPES[dtype])
    b = rng.integers(-magnitude, magnitude, (40, 2)).astype(NUMPY_DTYPES[dtype])
    got = get(BE.matmul(put(a, dtype), put(b, dtype)), dtype)
    exact = np.matmul(a.astype(object), b.astype(object))
    assert_same(got, np.vectorize(lambda v: wrap(int(v), dtype), otypes=[object])(exact), dtype)


# ---- quiet numpy -------------------------------------------------------------------------

def _noisy_ops():
    """Ops that make numpy warn by default: 1/0, 0/0, overflow, log(-1), NaN to int, 5 // 0."""
    f = put([1.0, 0.0, -1.0, math.nan, 1e300], float64)
    z = put([0.0, 0.0, 0.0, 0.0, 0.0], float64)
    BE.binary("div", f, z, float64)
    BE.binary("mul", f, f, float64)
    BE.unary("log", f, float64)
    BE.cast(f, int32)
    BE.reduce("sum", BE.cast(f, float16), (0,))
    i = put([5, 0, -5, 1, 2], int32)
    BE.binary("floor_divide", i, put([0] * 5, int32), int32)


def test_no_warnings_and_user_error_state_untouched():
    before = np.geterr()
    _noisy_ops()  # any warning fails the test (pytestmark)
    assert np.geterr() == before
    with pytest.warns(RuntimeWarning):
        np.divide(np.ones(1), np.zeros(1))


def test_no_warnings_in_other_threads():
    errors = []

    def work():
        try:
            _noisy_ops()
        except Exception as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.skipif(not sys.platform.startswith("linux") or any(
    name in os.environ for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")),
    reason="pyburn sets glibc's heap thresholds only on Linux, unless the user chose them")
def test_freed_megabytes_stay_in_the_heap_for_the_next_step():
    """Once a cpu backend exists, a step's megabyte-sized arrays, freed and made again, reuse
    the same pages: not a page fault per 4 KiB each time (with glibc's defaults, this step
    made 36,000 faults in 20 rounds, 0 with the backend's settings)."""
    import resource

    create(0)
    sizes = (3, 5, 7, 2, 6)  # MB, like a training step's activations and columns
    rounds, pages = 20, (sum(sizes) << 20) // 4096

    def step() -> float:
        arrays = [np.ones(n << 18, np.float32) for n in sizes]
        return sum(float(a[-1]) for a in arrays)

    step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(rounds):
        step()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    assert faults < rounds * pages // 4


def test_available_and_caps():
    assert unavailable_reason() is None
    assert BE.name == "cpu" and BE.dtypes == frozenset(ALL_DTYPES)
    # every dtype, plus the numpy computations that replace composites (checked below)
    assert BE.caps == frozenset({"float64", "int64", "float16", "conv", "conv_bias",
                                 "conv_activation", "max_pool", "softmax", "layer_norm",
                                 "batch_norm", "batch_norm_eval", "linear", "nll_loss", "adam",
                                 "quant_matmul", "activation"})
    assert create(1) is not BE


# ---- capabilities against the composites they replace ------------------------------------
# "conv_bias", "softmax", "layer_norm", "batch_norm", "linear", "nll_loss" and "adam" run
# the composite's
# own operations
# in its order, so the numbers must be the composite's bit for bit (the same device with the
# capability taken out of the caps runs the composite).

def _both_paths(monkeypatch: pytest.MonkeyPatch, capabilities: set[str], run):
    """run() with the capabilities, then without them: the two results."""
    with_them = run()
    monkeypatch.setattr(type(BE), "caps", BE.caps - capabilities)
    without = run()
    monkeypatch.undo()
    return with_them, without


def _assert_identical(got, want):
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)  # NaN equals NaN here, -0.0 equals 0.0
        assert np.array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
@pytest.mark.parametrize("options", [{}, {"amsgrad": True}, {"weight_decay": 0.1},
                                     {"weight_decay": 0.1, "amsgrad": True,
                                      "decoupled_weight_decay": True},
                                     {"betas": (0.5, 0.9), "eps": 1e-3, "maximize": True}])
def test_adam_capability_gives_the_composites_numbers(monkeypatch, dtype, options):
    import pyburn
    from pyburn.optim import Adam

    dev = pyburn.device("cpu").autodiff()
    rng = np.random.default_rng(5)
    shapes = [(7, 5), (5,), ()]
    starts = [rng.normal(size=s) for s in shapes]
    grads = [[rng.normal(size=s) for s in shapes] for _ in range(6)]

    def train():
        params = [pyburn.tensor(v.tolist(), dtype=dtype, device=dev, requires_grad=True)
                  for v in starts]
        opt = Adam(params, lr=0.05, **options)
        for step in grads:
            for p, g in zip(params, step):
                p.grad = pyburn.tensor(g.tolist(), dtype=dtype, device=dev)
            opt.step()
        return [p.numpy() for p in params] + [
            t.numpy() for p in params for t in opt.state[p].values()
            if isinstance(t, pyburn.Tensor)]

    _assert_identical(*_both_paths(monkeypatch, {"adam"}, train))


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_capability_gives_the_composites_numbers(monkeypatch, dtype, log):
    import pyburn
    import pyburn.nn.functional as F

    rows = [[0.5, -1.0, 2.0, 0.0], [-math.inf, 1.0, -math.inf, 3.0],
            [-math.inf] * 4, [math.inf, 0.0, 1.0, 2.0], [math.nan, 0.0, 1.0, 2.0],
            [30.0, -30.0, 12.5, 1e-3]]
    x = pyburn.tensor(rows, dtype=dtype, device="cpu")
    fn = F.log_softmax if log else F.softmax

    def run():
        return [fn(x, dim=1).numpy(), fn(x.T, dim=0).numpy(), fn(x.reshape(2, 3, 4), 1).numpy()]

    _assert_identical(*_both_paths(monkeypatch, {"softmax"}, run))
    # an empty class dim gives an empty result (the composite's amax has nothing to reduce)
    assert fn(pyburn.zeros(3, 0, dtype=dtype, device="cpu"), dim=1).shape == (3, 0)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("shape, ignored", [((6, 4), (2, 5)), ((4,), ()), ((3, 4, 2), (1,)),
                                            ((3, 4), (0, 1, 2))])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_capability_gives_the_composites_numbers(monkeypatch, dtype, reduction,
                                                          shape, ignored, weighted):
    """Values and gradients, with ignored targets (all of them in the last shape: a "mean"
    of NaN with a zero gradient)."""
    import pyburn
    import pyburn.nn.functional as F

    dev = pyburn.device("cpu").autodiff()
    rng = np.random.default_rng(len(shape) + len(ignored))
    classes = shape[0] if len(shape) == 1 else shape[1]
    target = rng.integers(0, classes, size=shape[:1] + shape[2:] if len(shape) > 1 else ())
    target.flat[list(ignored)] = -100
    logits = rng.normal(size=shape).tolist()
    weight = rng.uniform(0.2, 2.0, size=classes).tolist() if weighted else None
    upstream = rng.uniform(-1, 1, size=target.shape if reduction == "none" else ()).tolist()

    def run():
        x = pyburn.tensor(logits, dtype=dtype, device=dev, requires_grad=True)
        t = pyburn.tensor(target.tolist(), dtype=pyburn.int64, device=dev)
        w = None if weight is None else pyburn.tensor(weight, dtype=dtype, device=dev)
        losses = [F.cross_entropy(x, t, w, reduction=reduction),
                  F.nll_loss(x * 0.5, t, w, reduction=reduction)]
        sum(loss * pyburn.tensor(upstream, dtype=dtype, device=dev) for loss in losses
            ).sum().backward()
        return [loss.detach().numpy() for loss in losses] + [x.grad.numpy()]

    _assert_identical(*_both_paths(monkeypatch, {"nll_loss"}, run))


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_layer_norm_capability_gives_the_composites_numbers(monkeypatch, dtype, affine):
    """Values over one and two trailing dims, of a strided input too; rows that are
    constant (variance 0), huge, or hold inf and NaN."""
    import pyburn
    import pyburn.nn.functional as F

    rng = np.random.default_rng(7)
    rows = rng.normal(3.0, 2.0, size=(6, 4, 5))
    rows[1] = 0.25
    rows[2] *= 1e4 if dtype is not float16 else 1e2
    rows[3, 0, 1], rows[4, 2, 3] = math.inf, math.nan
    x = pyburn.tensor(rows.tolist(), dtype=dtype, device="cpu")
    w = pyburn.tensor(rng.uniform(0.5, 2, (4, 5)).tolist(), dtype=dtype, device="cpu")
    b = pyburn.tensor(rng.normal(size=(4, 5)).tolist(), dtype=dtype, device="cpu")

    def run():
        one = (w[0] if affine[0] else None, b[0] if affine[1] else None)
        two = (w if affine[0] else None, b if affine[1] else None)
        return [F.layer_norm(x, (5,), *one).numpy(), F.layer_norm(x, (4, 5), *two).numpy(),
                F.layer_norm(x.permute(1, 0, 2), (5,), *one, eps=0.1).numpy()]

    _assert_identical(*_both_paths(monkeypatch, {"layer_norm"}, run))


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_batch_norm_capability_gives_the_composites_numbers(monkeypatch, dtype, affine):
    """Training-mode values and the running statistics it updates, of (N, C), (N, C, L) and
    (N, C, H, W) inputs and a strided one, with channels that are constant (variance 0),
    huge, or hold inf and NaN; the gradients (the closed form against the composite's) to
    a few units in the dtype's last place."""
    import pyburn
    import pyburn.nn.functional as F

    dev = pyburn.device("cpu").autodiff()
    rng = np.random.default_rng(11)
    data = rng.normal(3.0, 2.0, size=(5, 6, 4, 3))
    data[:, 1] = 0.25
    data[:, 2] *= 1e4 if dtype is not float16 else 1e2
    data[1, 3, 0, 1], data[4, 4, 2, 2] = math.inf, math.nan
    weight, bias = rng.uniform(0.5, 2, 6).tolist(), rng.normal(size=6).tolist()
    upstream = rng.normal(size=(5, 6, 4, 3))

    def run():
        x = pyburn.tensor(data.tolist(), dtype=dtype, device=dev, requires_grad=True)
        w = pyburn.tensor(weight, dtype=dtype, device=dev, requires_grad=True)
        b = pyburn.tensor(bias, dtype=dtype, device=dev, requires_grad=True)
        one = (w if affine[0] else None, b if affine[1] else None)
        running = [pyburn.zeros(6, dtype=dtype, device=dev) for _ in range(2)]
        outs = [F.batch_norm(x, *running, *one, training=True),
                F.batch_norm(x[:, :, 1], None, None, *one, training=True, eps=0.1),
                F.batch_norm(x[:, :, :, 0], None, None, *one, training=True),
                F.batch_norm(x.permute(3, 1, 0, 2), None, None, *one, training=True)]
        values = [y.detach().numpy() for y in outs] + [r.numpy() for r in running]
        # the gradients of the finite channels (the inf and NaN ones make NaN either way)
        g = pyburn.tensor(upstream.tolist(), dtype=dtype, device=dev)
        (outs[0][:, :3] * g[:, :3]).sum().backward()
        grads = [x.grad.numpy()[:, :3]] + [t.grad.numpy()[:3] for t in one if t is not None]
        return values, grads

    (values, grads), (want_values, want_grads) = _both_paths(monkeypatch, {"batch_norm"}, run)
    _assert_identical(values, want_values)
    for got, want in zip(grads, want_grads, strict=True):
        scale = np.abs(want).max()
        np.testing.assert_allclose(got, want, rtol=0, atol=8 * np.finfo(want.dtype).eps * scale)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
@pytest.mark.parametrize("shape", [(5,), (6, 5), (2, 3, 5), (0, 5)], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_linear_capability_gives_the_composites_numbers(monkeypatch, dtype, shape, bias):
    """Values bit for bit, of strided operands too; gradients of x and the bias bit for
    bit (the same products and sums), the weight's within rounding: the capability's rule
    computes it as g^T x, (out, in) like the weight, the composite as (x^T g)^T, whose BLAS
    call may sum in another order."""
    import pyburn
    import pyburn.nn.functional as F

    dev = pyburn.device("cpu").autodiff()
    rng = np.random.default_rng(len(shape))
    data = [rng.normal(size=s).astype(NUMPY_DTYPES[dtype])
            for s in (shape, (4, 5), (4,), shape[:-1] + (4,))]

    def run():
        x, w, b, upstream = (pyburn.from_numpy(v, device=dev) for v in data)
        for t in (x, w, b):
            t.requires_grad_()
        y = F.linear(x, w, b if bias else None)
        flipped = F.linear(x.flip(-1), w.flip(-1))  # strided operands
        (y * upstream).sum().backward()
        return [y.detach().numpy(), flipped.detach().numpy(), x.grad.numpy()] + (
            [b.grad.numpy()] if bias else []) + [w.grad.numpy()]

    with_it, without = _both_paths(monkeypatch, {"linear"}, run)
    _assert_identical(with_it[:-1], without[:-1])
    tol = {float16: 1e-3, float32: 1e-6, float64: 1e-14}[dtype]
    np.testing.assert_allclose(with_it[-1], without[-1], rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
@pytest.mark.parametrize("nd, options", [(1, {"padding": "same"}),
                                         (2, {"stride": (2, 1), "padding": 1, "groups": 2}),
                                         (3, {"dilation": 2})], ids=["1d", "2d", "3d"])
def test_conv_bias_capability_gives_the_separate_adds_numbers(monkeypatch, dtype, nd, options):
    """The bias added inside the convolution ("conv_bias") against the convolution and then
    a broadcast add ("conv" alone): values bit for bit, over several chunks of images (a
    small chunk size) and for float16 (computed in float32, the bias added after the
    rounding); the gradients of x and w bit for bit (the same ops), the bias's within
    rounding (the same sum, perhaps taken in another order)."""
    import pyburn
    import pyburn.nn.functional as F
    from pyburn.backends.cpu import conv as cpu_conv

    monkeypatch.setattr(cpu_conv, "CHUNK_BYTES", 2048)
    dev = pyburn.device("cpu").autodiff()
    rng = np.random.default_rng(nd)
    spatial, kernel = (7, 6, 5)[:nd], (3, 2, 2)[:nd]
    data = [rng.normal(size=s).astype(NUMPY_DTYPES[dtype])
            for s in ((5, 4) + spatial, (6, 4 // options.get("groups", 1)) + kernel, (6,))]
    conv = getattr(F, f"conv{nd}d")

    def run():
        x, w, b = (pyburn.from_numpy(v, device=dev).requires_grad_() for v in data)
        y = conv(x, w, b, **options)
        (y * y.detach()).sum().backward()
        return [y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()]

    with_it, without = _both_paths(monkeypatch, {"conv_bias"}, run)
    _assert_identical(with_it[:-1], without[:-1])
    tol = {float16: 1e-2, float32: 1e-5, float64: 1e-12}[dtype]
    np.testing.assert_allclose(with_it[-1], without[-1], rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
@pytest.mark.parametrize("n, biased, nd", [(1, True, 2), (3, False, 2), (2, True, 1)],
                         ids=["one-image-bias", "three-images", "1d-bias"])
def test_pointwise_conv_is_one_product_per_image(dtype, n, biased, nd):
    """A 1x1 convolution (stride 1, no padding, one group) skips im2col: against float64
    torch, on a transposed view as the input (the layout `conv` returns), float16 computed
    in float32 with the bias added after its rounding."""
    import torch

    import pyburn
    import pyburn.nn.functional as F

    rng = np.random.default_rng(n)
    spatial = (5, 4)[:nd]
    x = rng.normal(size=(6, n) + spatial).astype(NUMPY_DTYPES[dtype])  # channels first
    w = rng.normal(size=(3, 6) + (1,) * nd).astype(NUMPY_DTYPES[dtype])
    b = rng.normal(size=3).astype(NUMPY_DTYPES[dtype]) if biased else None
    view = pyburn.from_numpy(x, device="cpu").transpose(0, 1)
    conv = getattr(F, f"conv{nd}d")
    got = conv(view, pyburn.from_numpy(w, device="cpu"),
               None if b is None else pyburn.from_numpy(b, device="cpu")).numpy()
    want = getattr(torch.nn.functional, f"conv{nd}d")(
        torch.from_numpy(x.astype(np.float64)).transpose(0, 1),
        torch.from_numpy(w.astype(np.float64)),
        None if b is None else torch.from_numpy(b.astype(np.float64))).numpy()
    assert got.dtype == NUMPY_DTYPES[dtype] and got.shape == want.shape
    tol = {float16: 1e-2, float32: 1e-5, float64: 1e-12}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)
