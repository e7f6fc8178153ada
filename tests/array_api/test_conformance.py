"""pyburn.array_api against array_api_strict (the standard's reference implementation, held to
2024.12), function by function, on the cpu and flex devices: `CASES` says how to draw each
function's arguments, hypothesis draws a few (derandomized: the same ones every run), and
both namespaces must give the same shapes, dtypes (pyburn's defaults standing for the
reference's, tests/array_api/reference.py) and values.

`SKIPS` holds the functions left out, each with its reason; docs/array_api.md reports the
pass rate per device.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pyburn import array_api as xp

from .reference import DEVICES, Dt, as_numpy, assert_same, input_dtypes, run, strict

SETTINGS = settings(max_examples=6, derandomize=True, deadline=None, database=None,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=list(HealthCheck))
FLOATS, INTS, SIGNED = ("float32", "float64"), ("int32", "int64", "uint8"), ("int32", "int64")
SPECIAL = (0.0, -0.0, math.inf, -math.inf, math.nan)
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
NONEMPTY = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)
#: tolerances (rtol, atol): exact; float32 ulps apart; a reduction's or an algorithm's
EXACT, CLOSE, LOOSE = (0.0, 0.0), (2e-5, 1e-6), (2e-4, 2e-5)
Case = tuple[st.SearchStrategy, tuple[float, float]]


def elements(dtype: str, special: bool = True, low: float = -8, high: float = 8
             ) -> st.SearchStrategy:
    if dtype == "bool":
        return st.booleans()
    if dtype in INTS:
        return st.integers(0 if dtype == "uint8" else int(low) * 3, int(high) * 3)
    finite = st.floats(low, high, width=32)
    return st.one_of(finite, st.sampled_from(SPECIAL)) if special else finite


def array(dtype: str, shape: Any = SHAPES, **options: Any) -> st.SearchStrategy:
    return hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype, **options))


def one_of(dtypes: tuple[str, ...]) -> st.SearchStrategy:
    return st.sampled_from(dtypes)


def unary(dtypes: tuple[str, ...], **options: Any) -> st.SearchStrategy:
    return one_of(dtypes).flatmap(lambda d: array(d, **options)).map(lambda a: ((a,), {}))


@st.composite
def binary(draw: Any, pairs: tuple[tuple[str, str], ...], nonzero: bool = False,
           shift: bool = False) -> tuple:
    first, second = draw(st.sampled_from(pairs))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
    a = draw(array(first, shapes.input_shapes[0]))
    right = (st.integers(0, 5) if shift else
             elements(second).filter(lambda v: v != 0) if nonzero else elements(second))
    return (a, draw(hnp.arrays(np.dtype(second), shapes.input_shapes[1], elements=right))), {}


@st.composite
def axis_of(draw: Any, ndim: int, tuples: bool = True) -> Any:
    options = [st.none(), st.integers(-ndim, ndim - 1)] if ndim else [st.none()]
    if tuples and ndim:
        options.append(st.lists(st.integers(0, ndim - 1), unique=True).map(tuple))
    return draw(st.one_of(options))


@st.composite
def reduce(draw: Any, dtypes: tuple[str, ...], shape: Any = SHAPES, special: bool = True,
           **extra: st.SearchStrategy) -> tuple:
    a = draw(array(draw(one_of(dtypes)), shape, special=special))
    kwargs = {"axis": draw(axis_of(a.ndim)), "keepdims": draw(st.booleans())}
    return (a,), kwargs | {k: draw(v) for k, v in extra.items()}


@st.composite
def along(draw: Any, dtypes: tuple[str, ...], shape: Any = NONEMPTY, special: bool = False,
          **extra: st.SearchStrategy) -> tuple:
    """An array and one axis of it (with `extra` keyword arguments)."""
    a = draw(array(draw(one_of(dtypes)), shape, special=special))
    return (a,), {"axis": draw(st.integers(-a.ndim, a.ndim - 1))} | {
        k: draw(v) for k, v in extra.items()}


@st.composite
def matrices(draw: Any, kind: str = "any", batch: bool = True) -> tuple:
    """A float matrix (batch): "any" shape, "square" and well conditioned, or "spd"."""
    n = draw(st.integers(1, 4))
    rows = n if kind != "any" else draw(st.integers(1, 4))
    lead = draw(st.sampled_from([(), (2,)])) if batch else ()
    dtype = draw(one_of(FLOATS))
    a = draw(array(dtype, lead + (rows, n), special=False, low=-2, high=2))
    if kind != "spd":  # well conditioned, of full rank
        a = a + 6 * np.eye(rows, n, dtype=dtype)
    if kind == "spd":
        a = a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=dtype)
    return (a,), {}


def pairs_of(dtypes: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((a, b) for a in dtypes for b in dtypes)


@st.composite
def shaped(draw: Any, make: Callable[[np.ndarray, Any], tuple]) -> tuple:
    """An array of any dtype and what `make` builds from it and `draw`."""
    a = draw(array(draw(one_of(FLOATS + INTS)), NONEMPTY, special=False))
    return make(a, draw)


UNARY_FLOAT = ("abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh",
               "exp", "expm1", "floor", "isfinite", "isinf", "isnan", "log", "log10", "log1p",
               "log2", "negative", "positive", "reciprocal", "round", "sign", "signbit", "sin",
               "sinh", "sqrt", "square", "tan", "tanh", "trunc")
UNARY_INT = ("abs", "bitwise_invert", "ceil", "floor", "negative", "positive", "round", "sign",
             "square", "trunc")
BINARY_FLOAT = ("add", "atan2", "copysign", "divide", "equal", "floor_divide", "greater",
                "greater_equal", "hypot", "less", "less_equal", "logaddexp", "maximum", "minimum",
                "multiply", "not_equal", "pow", "remainder", "subtract")
BINARY_INT = ("add", "bitwise_and", "bitwise_or", "bitwise_xor", "equal", "greater",
              "greater_equal", "less", "less_equal", "maximum", "minimum", "multiply",
              "not_equal", "subtract")
BINARY_BOOL = ("bitwise_and", "bitwise_or", "bitwise_xor", "equal", "logical_and", "logical_or",
               "logical_xor", "not_equal")
#: the dtype pairs whose promotion the standard defines (within a kind)
INT_PAIRS = (("int32", "int32"), ("int32", "int64"), ("int64", "int32"), ("uint8", "int32"),
             ("int64", "uint8"), ("uint8", "uint8"))

CASES: dict[str, Case] = {
    **{f"{name}[float]": (unary(FLOATS), CLOSE) for name in UNARY_FLOAT},
    **{f"{name}[int]": (unary(SIGNED), EXACT) for name in UNARY_INT},
    "logical_not[bool]": (unary(("bool",)), EXACT),
    "bitwise_invert[bool]": (unary(("bool",)), EXACT),
    **{f"{name}[float]": (binary(pairs_of(FLOATS)), CLOSE) for name in BINARY_FLOAT},
    **{f"{name}[int]": (binary(INT_PAIRS), EXACT) for name in BINARY_INT},
    **{f"{name}[int]": (binary(INT_PAIRS[:3], nonzero=True), EXACT)
       for name in ("floor_divide", "remainder")},
    **{f"{name}[int]": (binary(INT_PAIRS[:3], shift=True), EXACT)
       for name in ("bitwise_left_shift", "bitwise_right_shift")},
    **{f"{name}[bool]": (binary((("bool", "bool"),)), EXACT) for name in BINARY_BOOL},
    "clip": (st.tuples(array("float32", special=False), st.floats(-4, 0), st.floats(0, 4))
             .map(lambda t: ((t[0],), {"min": t[1], "max": t[2]})), EXACT),
    # statistical and utility functions
    **{f"{name}[float]": (reduce(FLOATS), LOOSE) for name in ("sum", "prod", "mean")},
    **{f"{name}[int]": (reduce(INTS), EXACT) for name in ("sum", "prod")},
    **{name: (reduce(FLOATS + INTS, NONEMPTY), EXACT) for name in ("max", "min")},
    **{name: (reduce(FLOATS, NONEMPTY, special=False, correction=st.sampled_from([0, 1])),
              LOOSE) for name in ("std", "var")},
    **{name: (reduce(FLOATS + ("bool",)), EXACT) for name in ("all", "any")},
    "count_nonzero": (reduce(FLOATS + INTS), EXACT),
    **{name: (along(FLOATS + SIGNED, include_initial=st.booleans()), LOOSE)
       for name in ("cumulative_sum", "cumulative_prod")},
    "diff": (along(FLOATS + SIGNED, n=st.integers(0, 2)), EXACT),
    # searching and sorting
    **{name: (along(FLOATS + INTS, special=False, keepdims=st.booleans()), EXACT)
       for name in ("argmax", "argmin")},
    "nonzero": (unary(FLOATS + INTS + ("bool",), shape=NONEMPTY), EXACT),
    "where": (binary(pairs_of(FLOATS)).flatmap(lambda c: array("bool", np.broadcast_shapes(
        c[0][0].shape, c[0][1].shape)).map(lambda m: ((m, *c[0]), {}))), EXACT),
    "searchsorted": (st.tuples(array("float32", (5,), special=False), array("float32",
                               special=False), st.sampled_from(["left", "right"]))
                     .map(lambda t: ((np.sort(t[0]), t[1]), {"side": t[2]})), EXACT),
    **{name: (along(FLOATS + INTS, descending=st.booleans()), EXACT)
       for name in ("sort", "argsort")},
    # sets
    **{name: (unary(("int32", "float32"), special=False, low=-3, high=3), EXACT)
       for name in ("unique_values", "unique_counts", "unique_inverse", "unique_all")},
    # manipulation and indexing
    "broadcast_to": (shaped(lambda a, draw: ((a, (2,) + a.shape), {})), EXACT),
    "broadcast_arrays": (binary(pairs_of(FLOATS)), EXACT),
    "concat": (shaped(lambda a, draw: (([a, a[:1]],), {"axis": 0})), EXACT),
    "expand_dims": (shaped(lambda a, draw: ((a,), {"axis": draw(
        st.integers(-a.ndim - 1, a.ndim))})), EXACT),
    "flip": (shaped(lambda a, draw: ((a,), {"axis": draw(axis_of(a.ndim))})), EXACT),
    "moveaxis": (shaped(lambda a, draw: ((a, 0, -1), {})), EXACT),
    "permute_dims": (shaped(lambda a, draw: ((a, tuple(draw(st.permutations(
        range(a.ndim))))), {})), EXACT),
    "repeat": (shaped(lambda a, draw: ((a, draw(st.integers(0, 3))), {"axis": draw(
        st.one_of(st.none(), st.integers(0, a.ndim - 1)))})), EXACT),
    "reshape": (shaped(lambda a, draw: ((a, (-1,)), {})), EXACT),
    "roll": (shaped(lambda a, draw: ((a, draw(st.integers(-5, 5))), {"axis": draw(
        st.one_of(st.none(), st.integers(0, a.ndim - 1)))})), EXACT),
    "squeeze": (shaped(lambda a, draw: ((a[:1],), {"axis": 0})), EXACT),
    "stack": (shaped(lambda a, draw: (([a, a],), {"axis": draw(
        st.integers(-a.ndim - 1, a.ndim))})), EXACT),
    "tile": (shaped(lambda a, draw: ((a, tuple(draw(st.lists(st.integers(1, 2), min_size=1,
                                                              max_size=3)))), {})), EXACT),
    "unstack": (shaped(lambda a, draw: ((a,), {"axis": draw(
        st.integers(-a.ndim, a.ndim - 1))})), EXACT),
    "take": (shaped(lambda a, draw: ((a, np.asarray(draw(st.lists(
        st.integers(-a.shape[0], a.shape[0] - 1), max_size=4)), dtype=np.int32)),
        {"axis": 0})), EXACT),
    "take_along_axis": (shaped(lambda a, draw: ((a, np.argsort(a, axis=-1).astype(np.int32)),
                                                {"axis": -1})), EXACT),
    # creation
    "arange": (st.tuples(st.integers(-5, 5), st.integers(-5, 10), st.integers(1, 3))
               .map(lambda t: (t, {})), EXACT),
    "asarray": (unary(FLOATS + INTS + ("bool",)), EXACT),
    "eye": (st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(-3, 3))
            .map(lambda t: (t[:2], {"k": t[2]})), EXACT),
    "full": (st.tuples(SHAPES, st.integers(-3, 3)).map(lambda t: (t, {})), EXACT),
    "linspace": (st.tuples(st.integers(-5, 5), st.integers(-5, 5), st.integers(0, 6),
                           st.booleans()).map(lambda t: (t[:3], {"endpoint": t[3]})), CLOSE),
    "meshgrid": (st.tuples(array("float32", (3,)), array("float32", (2,)),
                           st.sampled_from(["xy", "ij"])).map(
        lambda t: (t[:2], {"indexing": t[2]})), EXACT),
    **{name: (st.tuples(SHAPES).map(lambda t: (t, {})), EXACT) for name in ("ones", "zeros")},
    **{name: (unary(FLOATS + INTS), EXACT) for name in ("ones_like", "zeros_like")},
    "full_like": (unary(FLOATS + SIGNED).map(lambda c: (c[0] + (2,), {})), EXACT),
    **{name: (matrices().map(lambda c: (c[0], {"k": 1})), EXACT) for name in ("tril", "triu")},
    # data type functions
    "astype": (st.tuples(array("float32", special=False), one_of(FLOATS + INTS))
               .map(lambda t: ((t[0], Dt(t[1])), {})), EXACT),
    "can_cast": (st.tuples(one_of(FLOATS + INTS), one_of(FLOATS + INTS))
                 .filter(lambda t: (t[0] in FLOATS) == (t[1] in FLOATS))
                 .map(lambda t: ((Dt(t[0]), Dt(t[1])), {})), EXACT),
    "result_type": (st.sampled_from(INT_PAIRS + pairs_of(FLOATS))
                    .map(lambda t: ((Dt(t[0]), Dt(t[1])), {})), EXACT),
    "isdtype": (st.tuples(one_of(FLOATS + INTS + ("bool",)), st.sampled_from([
        "bool", "signed integer", "unsigned integer", "integral", "real floating",
        "complex floating", "numeric"])).map(lambda t: ((Dt(t[0]), t[1]), {})), EXACT),
    "finfo": (one_of(FLOATS).map(lambda d: ((Dt(d),), {})), EXACT),
    "iinfo": (one_of(INTS).map(lambda d: ((Dt(d),), {})), EXACT),
    # linear algebra
    "matmul": (matrices(batch=False).map(lambda c: ((c[0][0], c[0][0].T), {})), LOOSE),
    "matrix_transpose": (matrices(), EXACT),
    "tensordot": (matrices(batch=False).map(lambda c: ((c[0][0], c[0][0]), {"axes": 2})),
                  LOOSE),
    "vecdot": (binary(pairs_of(FLOATS)).filter(lambda c: min(a.ndim for a in c[0]) > 0 and
                                               c[0][0].shape[-1] == c[0][1].shape[-1]), LOOSE),
    **{f"linalg.{name}": (matrices("square"), LOOSE)
       for name in ("det", "inv", "matrix_rank", "svdvals", "pinv", "trace", "diagonal")},
    **{f"linalg.{name}": (matrices("spd"), LOOSE) for name in ("cholesky", "eigvalsh")},
    "linalg.slogdet": (matrices("square"), LOOSE),
    "linalg.solve": (matrices("square").map(lambda c: ((c[0][0], c[0][0][..., :1] + 1), {})),
                     LOOSE),
    "linalg.matrix_power": (matrices("square").map(lambda c: ((c[0][0] / 8, 3), {})), LOOSE),
    "linalg.matrix_norm": (matrices().flatmap(lambda c: st.sampled_from(
        ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]).map(
        lambda o: (c[0], {"ord": o}))), LOOSE),
    "linalg.vector_norm": (reduce(FLOATS, special=False, ord=st.sampled_from(
        [1, 2, 3, math.inf, -math.inf])), LOOSE),
    "linalg.outer": (st.tuples(array("float32", (3,)), array("float32", (2,)))
                     .map(lambda t: (t, {})), CLOSE),
    "linalg.cross": (matrices().filter(lambda c: c[0][0].shape[-1] == 3).map(
        lambda c: ((c[0][0], c[0][0][..., ::-1] + 1), {})), LOOSE),
    # the decompositions, defined up to signs: their invariants, in `INVARIANTS`
    "linalg.svd": (matrices().map(lambda c: (c[0], {"full_matrices": False})), LOOSE),
    "linalg.eigh": (matrices("spd"), LOOSE),
    "linalg.qr": (matrices(), LOOSE),
    # fft: the helpers without complex numbers
    **{f"fft.{name}": (st.tuples(st.integers(1, 6), st.sampled_from([1.0, 0.5]))
                       .map(lambda t: (t[:1], {"d": t[1]})), CLOSE)
       for name in ("fftfreq", "rfftfreq")},
    **{f"fft.{name}": (unary(FLOATS, shape=NONEMPTY), EXACT) for name in ("fftshift", "ifftshift")},
}


def _reconstructs(got: list, want: list, a: np.ndarray) -> None:
    u, s, vh = got
    np.testing.assert_allclose(s, want[1], rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, rtol=2e-4, atol=5e-5)


def _diagonalises(got: list, want: list, a: np.ndarray) -> None:
    w, v = got
    np.testing.assert_allclose(w, want[0], rtol=2e-4, atol=5e-5)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=2e-4, atol=2e-4)


def _factors(got: list, want: list, a: np.ndarray) -> None:
    q, r = got
    np.testing.assert_allclose(q @ r, a, rtol=2e-4, atol=5e-5)
    np.testing.assert_allclose(np.abs(r), np.abs(want[1]), rtol=2e-4, atol=5e-5)
    assert np.allclose(np.tril(r, -1), 0)


#: the checks of the decompositions, in place of equal values
INVARIANTS = {"linalg.svd": _reconstructs, "linalg.eigh": _diagonalises, "linalg.qr": _factors}

#: the standard's functions left out, and why (docs/array_api.md lists them too)
SKIPS = {
    "nextafter": "needs the bits of a float (a bit cast), which pyburn has no op for",
    "isin": "2025.12, not in 2024.12",
    "broadcast_shapes": "2025.12, not in 2024.12",
    "real": "the reference accepts complex arrays only",
    "imag": "the reference accepts complex arrays only",
    "conj": "the reference accepts complex arrays only",
    "empty": "unspecified values",
    "empty_like": "unspecified values",
    "from_dlpack": "tests/test_dlpack.py",
    "__array_namespace_info__": "tests/array_api/test_namespace.py",
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("on", DEVICES, ids=str)
def test_same_as_the_reference(on, case):
    strategy, (rtol, atol) = CASES[case]
    name = case.split("[")[0]

    @SETTINGS
    @given(strategy)
    def check(drawn: tuple) -> None:
        args, kwargs = drawn
        want = as_numpy(run(strict, name, args, kwargs, strict.Device("CPU_DEVICE")))
        got = as_numpy(run(xp, name, args, kwargs, on))
        if name in INVARIANTS:
            INVARIANTS[name](got, want, args[0])
        else:
            assert_same(got, want, input_dtypes((args, kwargs)), rtol, atol)

    check()


def test_every_function_of_the_standard_is_covered_or_skipped():
    functions = {name for name in strict.__all__ if callable(getattr(strict, name))
                 and name.islower() and "array_api_strict" not in name}
    functions |= {f"linalg.{n}" for n in strict.linalg.__all__} | {
        f"fft.{n}" for n in strict.fft.__all__}
    covered = {case.split("[")[0] for case in CASES} | set(SKIPS) | {
        f"fft.{n}" for n in FFT_ABSENT}
    shared = {f"linalg.{n}" for n in ("matmul", "matrix_transpose", "tensordot", "vecdot")
              if getattr(xp.linalg, n) is getattr(xp, n)}  # checked as the main namespace's
    assert sorted(functions - covered - shared) == []


#: the fft functions that need complex numbers, which pyburn does not have
FFT_ABSENT = ("fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft")
