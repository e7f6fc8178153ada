"""The flex backend's primitives, called directly through the backend protocol.

Each numpy-backed test builds one logical input in several storage layouts (contiguous, a
permuted view, a strided slice, a flipped view) and compares flex with numpy computed in
float64 (or in the integer dtype itself, whose arithmetic wraps the way flex's must) on the
same inputs. Tests that need numpy skip without it (Pyodide); the rest use pure-Python
references and run everywhere.
"""

from __future__ import annotations

import ast
import math
import random
import struct
import sys
from pathlib import Path

import pytest

from pyburn import dtypes as D
from pyburn.backends.base import Backend
from pyburn.backends.flex import FlexBackend, create
from pyburn.ops.elementwise import BINARY, UNARY
from pyburn.random import random_words

FLEX = create(0)
ALL_DTYPES = D.ALL_DTYPES
FLOATS = (D.float16, D.float32, D.float64)
INTS = (D.uint8, D.int32, D.int64)
LAYOUTS = ("contiguous", "permuted", "sliced", "flipped")
# (rtol, atol) per result dtype: flex computes in float64 and rounds once, so results match a
# float64 reference rounded to the dtype up to libm differences and summation order.
TOL = {"float16": (1e-3, 1e-6), "float32": (1e-6, 1e-30), "float64": (1e-12, 1e-300)}
EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.5, 3.0, -3.0, 0.1, 1e-3, 7.25,
               100.0, -100.0, 1e4, 0.9, -0.9, 1e-30, math.inf, -math.inf, math.nan, 60000.0]
PAIR_FLOATS = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, 3.0, 1e-3, math.inf, -math.inf, math.nan]


def ids(dtypes) -> list[str]:
    return [d.name for d in dtypes]


# ---- numpy helpers -------------------------------------------------------------------------

def numpy():
    return pytest.importorskip("numpy")


def np_dtype(np, dtype: D.DType):
    return np.dtype("bool" if dtype.is_bool else dtype.name)


def put(np, values, dtype: D.DType, layout: str = "contiguous"):
    """A flex handle holding `values` (array-like) as `dtype`, stored in `layout`."""
    arr = np.asarray(values).astype(np_dtype(np, dtype))
    rank = arr.ndim
    if layout == "permuted" and rank >= 2:
        axes = tuple(reversed(range(rank)))
        stored = FLEX.from_bytes(arr.transpose(axes).tobytes(), arr.transpose(axes).shape, dtype)
        return FLEX.permute(stored, axes)
    if layout == "sliced" and rank >= 1:
        big = np.zeros(tuple(2 * n + 1 for n in arr.shape), dtype=arr.dtype)
        big[tuple(slice(1, 2 * n + 1, 2) for n in arr.shape)] = arr
        stored = FLEX.from_bytes(big.tobytes(), big.shape, dtype)
        return FLEX.slice(stored, [1] * rank, [2 * n + 1 for n in arr.shape], [2] * rank)
    if layout == "flipped" and rank >= 1:
        stored = FLEX.from_bytes(np.flip(arr).tobytes(), arr.shape, dtype)
        return FLEX.flip(stored, tuple(range(rank)))
    return FLEX.from_bytes(arr.tobytes(), arr.shape, dtype)


def get(np, handle, shape, dtype: D.DType):
    """The handle's elements as a numpy array."""
    data = FLEX.to_bytes(handle, tuple(shape), dtype)
    return np.frombuffer(data, dtype=np_dtype(np, dtype)).reshape(shape)


def assert_matches(np, got, want, dtype: D.DType) -> None:
    """Same shape; floats within TOL with NaN and ±inf in the same places; others exact."""
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if dtype.is_floating_point:
        g, w = got.astype(np.float64), want.astype(np_dtype(np, dtype)).astype(np.float64)
        rtol, atol = TOL[dtype.name]
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want.astype(np_dtype(np, dtype)))


def sample(np, shape, dtype: D.DType, seed: int = 0):
    """Random values valid for `dtype`, with repeats (ties) among the integers."""
    rng = np.random.default_rng(seed)
    if dtype.is_bool:
        return rng.random(shape) < 0.5
    if dtype.is_integer:
        info = np.iinfo(np_dtype(np, dtype))
        wide = rng.integers(info.min, info.max, size=shape, endpoint=True)
        small = rng.integers(max(info.min, -3), 4, size=shape)
        return np.where(rng.random(shape) < 0.5, wide, small).astype(np_dtype(np, dtype))
    return rng.standard_normal(shape).astype(np_dtype(np, dtype))


def extreme_ints(np, dtype: D.DType) -> list[int]:
    info = np.iinfo(np_dtype(np, dtype))
    return sorted({info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2, 7,
                   max(info.min, -1), max(info.min, -7), 100})


# ---- the protocol itself (no numpy) -------------------------------------------------------

def test_every_primitive_is_implemented():
    abstract = [name for name, member in vars(Backend).items()
                if callable(member) and not name.startswith("_") and name not in Backend.DEFAULTED]
    missing = [name for name in abstract if getattr(FlexBackend, name) is getattr(Backend, name)]
    assert missing == []
    assert {"float64", "int64", "float16"} <= FLEX.caps
    assert set(FLEX.dtypes) == set(ALL_DTYPES)


def test_flex_never_imports_numpy():
    package = Path(sys.modules[FlexBackend.__module__].__file__).parent
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "numpy" for n in names), path


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (3, 4)], ids=str)
def test_bytes_round_trip(dtype, shape):
    rng = random.Random(7)
    n = math.prod(shape)
    if dtype.is_floating_point:
        data = struct.pack(f"<{n}{dtype.struct_char}", *[rng.uniform(-9, 9) for _ in range(n)])
        data = struct.pack(f"<{n}{dtype.struct_char}",
                           *struct.unpack(f"<{n}{dtype.struct_char}", data))
    else:
        top = 1 if dtype.is_bool else 255
        data = bytes(rng.randint(0, top) for _ in range(n * dtype.itemsize))
    assert FLEX.to_bytes(FLEX.from_bytes(data, shape, dtype), shape, dtype) == data


@pytest.mark.parametrize("seed,offset,shape", [(0, 0, (7,)), (12345678901234, 3, (2, 5)),
                                              (2**64 - 1, 10, (0,)), (42, 1, (3, 3))])
def test_random_bits_are_the_philox_words(seed, offset, shape):
    n = math.prod(shape)
    bits = FLEX.random_bits(shape, seed, offset)
    words = struct.unpack(f"<{n}I", FLEX.to_bytes(bits, shape, D.int32))
    assert list(words) == random_words(n, seed, offset)


def ints_of(handle, shape, dtype) -> list[int]:
    n = math.prod(shape)
    return list(struct.unpack(f"<{n}{dtype.struct_char}", FLEX.to_bytes(handle, shape, dtype)))


def floats_of(handle, shape, dtype) -> list[float]:
    n = math.prod(shape)
    return list(struct.unpack(f"<{n}{dtype.struct_char}", FLEX.to_bytes(handle, shape, dtype)))


def test_integer_arithmetic_wraps_without_numpy():
    top = FLEX.full((2,), 2**31 - 1, D.int32)
    one = FLEX.full((2,), 1, D.int32)
    assert ints_of(FLEX.binary("add", top, one, D.int32), (2,), D.int32) == [-2**31] * 2
    small = FLEX.arange(0, 1, 3, D.uint8)
    assert ints_of(FLEX.unary("neg", small, D.uint8), (3,), D.uint8) == [0, 255, 254]
    big = FLEX.full((1,), 2**62, D.int64)
    assert ints_of(FLEX.binary("mul", big, big, D.int64), (1,), D.int64) == [0]
    wide = FLEX.arange(250, 3, 3, D.int64)
    assert ints_of(FLEX.cast(wide, D.uint8), (3,), D.uint8) == [250, 253, 0]


def test_float16_is_stored_rounded_without_numpy():
    x = FLEX.arange(0.1, 30000.0, 4, D.float16)  # 0.1, 30000.1, 60000.1, 90000.1 (too big)
    assert floats_of(x, (4,), D.float16) == [0.0999755859375, 30000.0, 60000.0, math.inf]
    doubled = FLEX.binary("add", x, x, D.float16)
    assert floats_of(doubled, (4,), D.float16) == [0.199951171875, 60000.0, math.inf, math.inf]


def test_views_without_numpy():
    x = FLEX.reshape(FLEX.arange(0, 1, 12, D.int32), (3, 4))
    t = FLEX.permute(x, (1, 0))
    assert ints_of(t, (4, 3), D.int32) == [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
    s = FLEX.slice(FLEX.flip(x, (1,)), [0, 1], [3, 4], [2, 2])
    assert ints_of(s, (2, 2), D.int32) == [2, 0, 10, 8]
    e = FLEX.expand(FLEX.slice(x, [1, 0], [2, 4], [1, 1]), (2, 4))
    assert ints_of(FLEX.reshape(e, (8,)), (8,), D.int32) == [4, 5, 6, 7] * 2


def test_empty_reductions_give_the_identity_without_numpy():
    x = FLEX.full((0, 3), 5, D.int32)
    for op, want in [("sum", 0), ("prod", 1), ("any", 0), ("all", 1)]:
        dtype = D.bool_ if op in ("any", "all") else D.int32
        assert ints_of(FLEX.reduce(op, x, (0,)), (1, 3), dtype) == [want] * 3


def test_sort_is_stable_with_nan_largest_without_numpy():
    values = [2.0, math.nan, 1.0, 2.0, -math.inf, 1.0, math.nan, 0.0]
    x = FLEX.from_bytes(struct.pack("<8d", *values), (8,), D.float64)
    for descending in (False, True):
        _, idx = FLEX.sort(x, 0, descending)
        nans, numbers = [1, 6], sorted([0, 2, 3, 4, 5, 7], key=values.__getitem__,
                                       reverse=descending)
        want = nans + numbers if descending else numbers + nans
        assert ints_of(idx, (8,), D.int32) == want


def test_matmul_without_numpy():
    a = FLEX.reshape(FLEX.arange(1, 1, 6, D.float32), (2, 3))
    b = FLEX.reshape(FLEX.arange(0, 1, 6, D.float32), (3, 2))
    got = floats_of(FLEX.matmul(a, b), (2, 2), D.float32)
    assert got == [16.0, 22.0, 34.0, 49.0]


# ---- elementwise against numpy ------------------------------------------------------------

def _np_function(np, name: str):
    if name == "rsqrt_":
        return lambda x: 1.0 / np.sqrt(x)
    if name == "erf_":
        return pytest.importorskip("scipy.special").erf
    if name == "relu_":
        return lambda x: np.maximum(x, x.dtype.type(0))
    return getattr(np, name)


def _unary_dtypes(domain: str) -> tuple[D.DType, ...]:
    return {"float": FLOATS, "numeric": INTS + FLOATS, "rounding": INTS + FLOATS,
            "bitwise": (D.bool_,) + INTS}.get(domain, ALL_DTYPES)


# a backend never meets an op with `on_bool` on bool (the tensor layer calls the other op)
UNARY_CASES = [(name, dtype) for name, op in UNARY.items() for dtype in _unary_dtypes(op.domain)
               if not (op.on_bool and dtype.is_bool)]
BINARY_CASES = [(name, dtype) for name, op in BINARY.items()
                for dtype in _unary_dtypes(op.domain) if not (op.on_bool and dtype.is_bool)]


def _unary_input(np, dtype: D.DType):
    if dtype.is_floating_point:
        with np.errstate(over="ignore"):
            return np.array(EDGE_FLOATS).reshape(4, 6).astype(np_dtype(np, dtype))
    if dtype.is_bool:
        return np.array([[True, False], [False, True]])
    values = extreme_ints(np, dtype)
    return np.array([values, values[::-1]]).astype(np_dtype(np, dtype))


def _reference(np, op, inputs, dtype: D.DType, out: D.DType):
    """numpy's answer: floats in float64, integers and bools in their own dtype."""
    fn = _np_function(np, op.numpy)
    with np.errstate(all="ignore"):
        if op.domain == "rounding" and not dtype.is_floating_point:
            return inputs[0]
        if dtype.is_floating_point:
            return fn(*(x.astype(np.float64) for x in inputs)).astype(np_dtype(np, out))
        return np.asarray(fn(*inputs)).astype(np_dtype(np, out))


def _out_dtype(op, dtype: D.DType) -> D.DType:
    return D.bool_ if op.returns_bool else dtype


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name,dtype", UNARY_CASES,
                         ids=[f"{n}-{d.name}" for n, d in UNARY_CASES])
def test_unary_matches_numpy(name, dtype, layout):
    np = numpy()
    op = UNARY[name]
    x = _unary_input(np, dtype)
    out = _out_dtype(op, dtype)
    got = get(np, FLEX.unary(name, put(np, x, dtype, layout), out), x.shape, out)
    assert_matches(np, got, _reference(np, op, [x], dtype, out), out)


def _binary_inputs(np, name: str, dtype: D.DType):
    if dtype.is_floating_point:
        values = PAIR_FLOATS
        if name == "floor_divide":  # see test_floor_divide_of_infinities
            values = [v for v in values if not math.isinf(v)]
        a, b = np.meshgrid(values, values, indexing="ij")
        return a.astype(np_dtype(np, dtype)), b.astype(np_dtype(np, dtype))
    if dtype.is_bool:
        return np.array([True, True, False, False]), np.array([True, False, True, False])
    values = extreme_ints(np, dtype)
    if name == "fmod" and dtype is D.int64:  # see test_fmod_of_large_int64
        values = [v for v in values if abs(v) < 2**53]
    a, b = np.meshgrid(values, values, indexing="ij")
    if name == "pow":
        b = np.abs(b) % 6  # numpy refuses negative integer powers
    if name in ("left_shift", "right_shift"):
        b = np.abs(b) % (dtype.itemsize * 8)  # counts past the width are left undefined
    return a.astype(np_dtype(np, dtype)), b.astype(np_dtype(np, dtype))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name,dtype", BINARY_CASES,
                         ids=[f"{n}-{d.name}" for n, d in BINARY_CASES])
def test_binary_matches_numpy(name, dtype, layout):
    np = numpy()
    op = BINARY[name]
    a, b = _binary_inputs(np, name, dtype)
    out = _out_dtype(op, dtype)
    got = FLEX.binary(name, put(np, a, dtype, layout), put(np, b, dtype, "permuted"), out)
    assert_matches(np, get(np, got, a.shape, out), _reference(np, op, [a, b], dtype, out), out)


def test_floor_divide_of_infinities():
    np = numpy()
    values = [1.0, -1.0, 2.5, 0.0, math.inf, -math.inf]
    a, b = np.meshgrid(values, values, indexing="ij")
    got = FLEX.binary("floor_divide", put(np, a, D.float64), put(np, b, D.float64), D.float64)
    with np.errstate(all="ignore"):
        want = np.floor_divide(a, b)
    assert_matches(np, get(np, got, a.shape, D.float64), want, D.float64)


def test_fmod_of_large_int64():
    np = numpy()
    a = np.array([2**63 - 1, -(2**62) - 1, 2**60 + 3], dtype=np.int64)
    b = np.array([10, 7, 2**40 + 1], dtype=np.int64)
    got = FLEX.binary("fmod", put(np, a, D.int64), put(np, b, D.int64), D.int64)
    assert_matches(np, get(np, got, a.shape, D.int64), np.fmod(a, b), D.int64)


@pytest.mark.parametrize("dtype", [D.float32, D.int32, D.float16], ids=str)
def test_binary_on_broadcast_inputs(dtype):
    np = numpy()
    col = sample(np, (3, 1), dtype, 1)
    row = sample(np, (1, 4), dtype, 2)
    a = FLEX.expand(put(np, col, dtype), (3, 4))
    b = FLEX.expand(put(np, row, dtype), (3, 4))
    got = get(np, FLEX.binary("mul", a, b, dtype), (3, 4), dtype)
    with np.errstate(over="ignore"):
        want = (col.astype(np.float64) * row) if dtype.is_floating_point else col * row
    assert_matches(np, got, want, dtype)
    scalar = FLEX.expand(FLEX.reshape(FLEX.full((1,), 3, dtype), (1, 1)), (3, 4))
    got = get(np, FLEX.binary("sub", scalar, b, dtype), (3, 4), dtype)
    assert_matches(np, got, np.full((3, 4), 3, dtype=np_dtype(np, dtype)) - row, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_where(dtype, layout):
    np = numpy()
    cond = sample(np, (3, 4), D.bool_, 3)
    a, b = sample(np, (3, 4), dtype, 4), sample(np, (1, 4), dtype, 5)
    got = FLEX.where(put(np, cond, D.bool_, layout), put(np, a, dtype, layout),
                     FLEX.expand(put(np, b, dtype), (3, 4)))
    assert_matches(np, get(np, got, (3, 4), dtype), np.where(cond, a, b), dtype)


# ---- cast ---------------------------------------------------------------------------------

def _cast_input(np, src: D.DType, dst: D.DType):
    if src.is_floating_point and dst.is_integer:
        # in range of the target, so that numpy's conversion is defined
        low, high = (0, 250) if dst is D.uint8 else (-1000, 1000)
        return np.array([low, high, -0.0, 0.5, 0.99, 2.7, 3.5, 100.25, low + 0.75, 17.9]
                        ).clip(low, high).astype(np_dtype(np, src))
    if src.is_floating_point:
        with np.errstate(over="ignore"):
            return np.array(EDGE_FLOATS + [70000.0, 1e-8, 1 / 3]).astype(np_dtype(np, src))
    return np.array(extreme_ints(np, src) if src.is_integer else [True, False]
                    ).astype(np_dtype(np, src))


@pytest.mark.parametrize("dst", ALL_DTYPES, ids=ids(ALL_DTYPES))
@pytest.mark.parametrize("src", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_cast_matches_numpy(src, dst):
    np = numpy()
    x = _cast_input(np, src, dst)
    got = get(np, FLEX.cast(put(np, x, src, "flipped"), dst), x.shape, dst)
    with np.errstate(all="ignore"):
        assert_matches(np, got, x.astype(np_dtype(np, dst)), dst)


@pytest.mark.parametrize("dst", INTS, ids=ids(INTS))
def test_cast_float_to_int_truncates_and_maps_nan_inf_to_zero(dst):
    x = FLEX.from_bytes(struct.pack("<6d", -2.7, 2.7, -0.5, math.nan, math.inf, -math.inf),
                        (6,), D.float64)
    want = [-2 & 0xFF if dst is D.uint8 else -2, 2, 0, 0, 0, 0]
    assert ints_of(FLEX.cast(x, dst), (6,), dst) == want


# ---- reductions and scans -----------------------------------------------------------------

REDUCE_AXES = [(), (0,), (1,), (2,), (0, 2), (1, 2), (0, 1, 2)]


def _reduce_reference(np, op: str, x, axes, dtype: D.DType):
    with np.errstate(invalid="ignore"):  # NaN from NaN inputs and from inf - inf
        if op in ("any", "all", "max", "min"):
            return getattr(np, op)(x, axis=axes, keepdims=True)
        if dtype.is_bool:  # numpy's bool sum and prod are logical or / and
            return (np.any if op == "sum" else np.all)(x, axis=axes, keepdims=True)
        fn = np.sum if op == "sum" else np.prod
        if dtype.is_floating_point:
            return fn(x.astype(np.float64), axis=axes, keepdims=True)
        return fn(x, axis=axes, keepdims=True, dtype=x.dtype)


@pytest.mark.parametrize("axes", REDUCE_AXES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "any", "all"])
def test_reduce_matches_numpy(op, dtype, layout, axes):
    np = numpy()
    x = sample(np, (2, 3, 4), dtype, 11)
    if dtype.is_floating_point and op == "prod":
        x = (np.abs(x) + 0.5).astype(x.dtype)
    out = D.bool_ if op in ("any", "all") else dtype
    want = _reduce_reference(np, op, x, axes, dtype)
    got = get(np, FLEX.reduce(op, put(np, x, dtype, layout), axes), want.shape, out)
    assert_matches(np, got, want, out)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_reduce_nan_and_inf(dtype):
    np = numpy()
    x = np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 2.0], [np.inf, 1.0, 5.0]]
                 ).astype(np_dtype(np, dtype))
    for op in ("sum", "max", "min", "prod", "any", "all"):
        for axis in (0, 1):
            out = D.bool_ if op in ("any", "all") else dtype
            want = _reduce_reference(np, op, x, (axis,), dtype)
            got = get(np, FLEX.reduce(op, put(np, x, dtype), (axis,)), want.shape, out)
            assert_matches(np, got, want, out)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_reduce_empty(dtype):
    np = numpy()
    x = np.zeros((0, 3), dtype=np_dtype(np, dtype))
    for op in ("sum", "prod", "any", "all"):
        out = D.bool_ if op in ("any", "all") or dtype.is_bool else dtype
        for axes in ((0,), (1,), (0, 1)):
            want = _reduce_reference(np, op, x, axes, dtype)
            got = get(np, FLEX.reduce(op, put(np, x, dtype), axes), want.shape, out)
            assert_matches(np, got, want, out)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reduce_matches_numpy(op, dtype, layout):
    np = numpy()
    x = sample(np, (3, 4, 5), dtype, 13)
    if dtype.is_floating_point:
        x = np.round(x).astype(x.dtype)  # ties
        x[1, 2, 3] = x[2, 0, 0] = x[0, 3, 1] = np.nan
    for axis in range(3):
        want = getattr(np, op)(x, axis=axis, keepdims=True)
        got = get(np, FLEX.arg_reduce(op, put(np, x, dtype, layout), axis), want.shape, D.int32)
        assert_matches(np, got, want, D.int32)


SCAN_DTYPES = tuple(d for d in ALL_DTYPES if not d.is_bool)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", SCAN_DTYPES, ids=ids(SCAN_DTYPES))
@pytest.mark.parametrize("op", ["sum", "prod"])
def test_scan_matches_numpy(op, dtype, layout):
    np = numpy()
    x = sample(np, (3, 4, 5), dtype, 17)
    fn = np.cumsum if op == "sum" else np.cumprod
    for axis in range(3):
        want = (fn(x.astype(np.float64), axis=axis) if dtype.is_floating_point
                else fn(x, axis=axis, dtype=x.dtype))
        got = get(np, FLEX.scan(op, put(np, x, dtype, layout), axis), x.shape, dtype)
        assert_matches(np, got, want, dtype)


# ---- movement -----------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_movement_matches_numpy(dtype, layout):
    np = numpy()
    x = sample(np, (2, 3, 4), dtype, 19)
    h = put(np, x, dtype, layout)
    for shape in [(4, 6), (24,), (2, 12), (1, 2, 3, 4), (2, 3, 4)]:
        assert_matches(np, get(np, FLEX.reshape(h, shape), shape, dtype), x.reshape(shape), dtype)
    for axes in [(2, 0, 1), (1, 0, 2), (0, 1, 2)]:
        want = x.transpose(axes)
        assert_matches(np, get(np, FLEX.permute(h, axes), want.shape, dtype), want, dtype)
    for axes in [(0,), (1, 2), (), (0, 1, 2)]:
        assert_matches(np, get(np, FLEX.flip(h, axes), x.shape, dtype), np.flip(x, axes), dtype)
    for starts, stops, steps in [([0, 1, 0], [2, 3, 4], [1, 1, 3]), ([1, 0, 2], [2, 3, 2],
                                 [1, 2, 1]), ([0, 0, 1], [2, 3, 4], [2, 2, 2])]:
        want = x[tuple(slice(a, b, c) for a, b, c in zip(starts, stops, steps, strict=True))]
        got = FLEX.slice(h, starts, stops, steps)
        assert_matches(np, get(np, got, want.shape, dtype), want, dtype)
    # views of views: a slice of a transpose, then reshaped (forces a gather)
    view = FLEX.slice(FLEX.permute(h, (2, 1, 0)), [1, 0, 0], [4, 3, 2], [2, 2, 1])
    want = x.transpose(2, 1, 0)[1:4:2, 0:3:2, :].reshape(-1)
    assert_matches(np, get(np, FLEX.reshape(view, (8,)), (8,), dtype), want, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_expand_matches_numpy(dtype):
    np = numpy()
    x = sample(np, (3, 1, 4), dtype, 23)
    h = FLEX.expand(put(np, x, dtype, "sliced"), (3, 5, 4))
    want = np.broadcast_to(x, (3, 5, 4))
    assert_matches(np, get(np, h, (3, 5, 4), dtype), want, dtype)
    assert_matches(np, get(np, FLEX.reshape(h, (15, 4)), (15, 4), dtype),
                   want.reshape(15, 4), dtype)
    assert_matches(np, get(np, FLEX.permute(h, (1, 2, 0)), (5, 4, 3), dtype),
                   want.transpose(1, 2, 0), dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_pad_and_cat_match_numpy(dtype, layout):
    np = numpy()
    x = sample(np, (2, 3, 4), dtype, 29)
    h = put(np, x, dtype, layout)
    value = True if dtype.is_bool else 7
    for pads in [((1, 0), (0, 2), (2, 2)), ((0, 0), (0, 0), (0, 1)), ((0, 0),) * 3]:
        want = np.pad(x, pads, constant_values=value)
        assert_matches(np, get(np, FLEX.pad(h, pads, value), want.shape, dtype), want, dtype)
    for axis in range(3):
        other_shape = list(x.shape)
        other_shape[axis] = 2
        other = sample(np, tuple(other_shape), dtype, 31)
        empty_shape = list(x.shape)
        empty_shape[axis] = 0
        empty = np.zeros(empty_shape, dtype=x.dtype)
        parts = [x, other, empty, x]
        want = np.concatenate(parts, axis=axis)
        handles = [h, put(np, other, dtype, "permuted"), put(np, empty, dtype), h]
        assert_matches(np, get(np, FLEX.cat(handles, axis), want.shape, dtype), want, dtype)


# ---- indexing -----------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_gather_and_scatter_match_numpy(dtype, layout):
    np = numpy()
    rng = np.random.default_rng(37)
    x = sample(np, (3, 4, 5), dtype, 41)
    h = put(np, x, dtype, layout)
    for axis in range(3):
        index_shape = [2, 3, 4]
        index_shape[axis] = 6
        index = rng.integers(0, x.shape[axis], size=index_shape)
        idx = put(np, index, D.int64, layout)
        within = x[tuple(slice(0, n) if d != axis else slice(None)
                         for d, n in enumerate(index_shape))]
        want = np.take_along_axis(within, index, axis)
        assert_matches(np, get(np, FLEX.gather(h, axis, idx), want.shape, dtype), want, dtype)

        src = sample(np, tuple(index_shape), dtype, 43)
        assigned = x.copy()
        added = x.astype(np.float64 if dtype.is_floating_point else object)
        for pos in np.ndindex(*index_shape):  # row-major: the last write wins
            target = list(pos)
            target[axis] = index[pos]
            assigned[tuple(target)] = src[pos]
            added[tuple(target)] += src[pos].item()
        if dtype.is_bool:
            added = added.astype(bool)
        elif dtype.is_integer:  # wrapped the way the dtype's two's complement wraps
            info = np.iinfo(x.dtype)
            span = int(info.max) - int(info.min) + 1
            added = ((added - int(info.min)) % span + int(info.min)).astype(x.dtype)
        s = put(np, src, dtype, "flipped")
        got = FLEX.scatter(h, axis, idx, s, "assign")
        assert_matches(np, get(np, got, x.shape, dtype), assigned, dtype)
        got = FLEX.scatter(h, axis, idx, s, "add")
        assert_matches(np, get(np, got, x.shape, dtype), added, dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_index_select_and_nonzero_match_numpy(dtype, layout):
    np = numpy()
    x = sample(np, (3, 4, 5), dtype, 47)
    h = put(np, x, dtype, layout)
    for axis in range(3):
        for picks in ([2, 0, 2, 1], [], [x.shape[axis] - 1]):
            want = np.take(x, np.array(picks, dtype=np.int64), axis=axis)
            got = FLEX.index_select(h, axis, put(np, np.array(picks), D.int32))
            assert_matches(np, get(np, got, want.shape, dtype), want, dtype)
    for values in (x, x[:, :0], x[0, 0], np.zeros((2, 2), dtype=x.dtype)):
        handle, shape = FLEX.nonzero(put(np, values, dtype, layout))
        want = np.argwhere(values)
        assert shape == want.shape
        assert_matches(np, get(np, handle, shape, D.int32), want, D.int32)


def _descending_reference(np, x, axis):
    """Stable descending order, NaN first: a stable ascending sort of the reversed axis,
    read backwards."""
    n = x.shape[axis]
    rev = np.flip(x, axis)
    order = np.flip(np.argsort(rev, axis=axis, kind="stable"), axis)
    return n - 1 - order


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_sort_matches_numpy(dtype, layout):
    np = numpy()
    x = sample(np, (4, 5, 6), dtype, 53)
    if dtype.is_floating_point:
        x = np.round(x * 2).astype(x.dtype)  # many ties
        x[0, 1, 2] = x[3, 0, 0] = x[1, 4, 5] = x[1, 4, 4] = np.nan
        x[2, 2, 2] = -np.inf
    h = put(np, x, dtype, layout)
    for axis in range(3):
        for descending in (False, True):
            want_idx = (_descending_reference(np, x, axis) if descending
                        else np.argsort(x, axis=axis, kind="stable"))
            values, idx = FLEX.sort(h, axis, descending)
            assert_matches(np, get(np, idx, x.shape, D.int32), want_idx, D.int32)
            assert_matches(np, get(np, values, x.shape, dtype),
                           np.take_along_axis(x, want_idx, axis), dtype)


# ---- matmul and creation ------------------------------------------------------------------

MATMUL_DTYPES = (D.float16, D.float32, D.float64, D.int32, D.int64, D.uint8, D.bool_)


@pytest.mark.parametrize("dtype", MATMUL_DTYPES, ids=ids(MATMUL_DTYPES))
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
                                    ((2, 2, 1, 7), (2, 2, 7, 3)), ((3, 0), (0, 2)),
                                    ((0, 4), (4, 2)), ((2, 3, 4), (1, 4, 5))], ids=str)
def test_matmul_matches_numpy(dtype, shapes):
    np = numpy()
    a_shape, b_shape = shapes
    a = sample(np, a_shape, dtype, 59)
    b = sample(np, b_shape, dtype, 61)
    if dtype in (D.int32, D.int64):  # large enough to wrap, as numpy's integer matmul does
        a, b = (a % 2**12).astype(a.dtype), (b % 2**12).astype(b.dtype)
    ha, hb = put(np, a, dtype, "sliced"), put(np, b, dtype, "permuted")
    batch = a.shape[:-2]
    if b.shape[:-2] != batch:  # a batch dim of b broadcast by expand (stride 0)
        hb = FLEX.expand(hb, batch + b.shape[-2:])
        b = np.broadcast_to(b, batch + b.shape[-2:])
    want = a.astype(np.float64) @ b if dtype.is_floating_point else np.matmul(a, b)
    got = get(np, FLEX.matmul(ha, hb), want.shape, dtype)
    if dtype is D.float16:
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=1e-3)
    else:
        assert_matches(np, got, want, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_full_and_arange_match_numpy(dtype):
    np = numpy()
    value = True if dtype.is_bool else (0.1 if dtype.is_floating_point else 200)
    got = get(np, FLEX.full((2, 3), value, dtype), (2, 3), dtype)
    assert_matches(np, got, np.full((2, 3), value, dtype=np_dtype(np, dtype)), dtype)
    assert get(np, FLEX.full((0, 3), value, dtype), (0, 3), dtype).shape == (0, 3)
    if dtype.is_bool:
        return
    start, step = (0.25, 0.1) if dtype.is_floating_point else (3, 5)
    want = start + np.arange(40, dtype=np.float64 if dtype.is_floating_point else np.int64) * step
    got = get(np, FLEX.arange(start, step, 40, dtype), (40,), dtype)
    with np.errstate(over="ignore"):
        assert_matches(np, got, want, dtype)
