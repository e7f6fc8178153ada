"""The wasm backend's reduction kernels on wasmtime against numpy: every op and dtype, rows
(inner 1) and columns (inner > 1), lengths with a tail, NaN propagation, and integer sums
that wrap."""

from __future__ import annotations

import numpy as np
import pytest

from pyburn.backends.wasm import native
from pyburn.backends.wasm.assemble import Module
from pyburn.backends.wasm.reduce import DTYPES, REDUCTIONS, kernel
from pyburn.dtypes import bool_, float32, int32, uint8

NUMPY = {float32: np.float32, int32: np.int32, uint8: np.uint8, bool_: np.bool_}
CASES = [(op, dtype) for op in REDUCTIONS for dtype in DTYPES[op]]
SHAPES = [(3, 11, 1), (2, 9, 7), (1, 4, 8), (2, 1, 5), (4, 0, 1)]
#: max and min never get an empty reduction (the tensor layer refuses one)
RUNS = [(op, dtype, shape) for op, dtype in CASES for shape in SHAPES
        if shape[1] or op not in ("max", "min")]


@pytest.fixture(scope="module")
def kernels():
    engine = native.NativeEngine(4)
    return engine, engine.instantiate(Module([kernel(op, d) for op, d in CASES]).binary())


def _input(dtype, shape, rng) -> np.ndarray:
    if dtype is float32:
        x = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        x.flat[::7] = 0.0
        return x
    if dtype is bool_:
        return rng.random(shape) < 0.9
    return rng.integers(-3 if dtype is int32 else 0, 200, shape).astype(NUMPY[dtype])


def _numpy(op: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return {"sum": lambda: x.sum(axis=1, dtype=x.dtype),
                "prod": lambda: x.prod(axis=1, dtype=x.dtype),
                "max": lambda: x.max(axis=1), "min": lambda: x.min(axis=1),
                "any": lambda: x.astype(bool).any(axis=1),
                "all": lambda: x.astype(bool).all(axis=1)}[op]()


@pytest.mark.parametrize("op, dtype, shape", RUNS,
                         ids=[f"{o}-{d.name}-{'x'.join(map(str, s))}" for o, d, s in RUNS])
def test_a_reduction_matches_numpy(kernels, op, dtype, shape):
    engine, exports = kernels
    x = _input(dtype, shape, np.random.default_rng(sum(shape)))
    if dtype is float32 and op in ("max", "min") and shape[1] > 3:
        x[0, 2, 0] = np.nan  # NaN wins
    engine.write(1024, x.tobytes() + bytes(16))
    out_dtype = bool_ if REDUCTIONS[op].truth else dtype
    want = _numpy(op, x)
    exports[f"reduce_{op}_{dtype.name}"](1 << 16, 1024, shape[0], shape[1], shape[2])
    got = np.frombuffer(engine.read(1 << 16, want.nbytes), NUMPY[out_dtype]).reshape(want.shape)
    if dtype is float32 and op in ("sum", "prod"):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)
