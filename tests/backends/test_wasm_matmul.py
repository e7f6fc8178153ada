"""The wasm backend's matmul kernel on wasmtime against float64 numpy: shapes on and off its
4 x 8 blocks, several batches, and an inner size of one; B per batch or one for every batch;
and the dot-product kernel of A times a transposed B (a linear layer's weight as stored)."""

from __future__ import annotations

import numpy as np
import pytest

from pyburn.backends.wasm import matmul, native
from pyburn.backends.wasm.assemble import Module
from pyburn.backends.wasm.memory import Memory


@pytest.fixture(scope="module")
def engine():
    engine = native.NativeEngine(1)
    exports = engine.instantiate(Module([matmul.kernel(), matmul.int_kernel(),
                                         matmul.nt_kernel()]).binary())
    return engine, exports["matmul_f32"], exports["matmul_i32"], exports["matmul_nt_f32"]


@pytest.mark.parametrize("broadcast", [False, True], ids=["per batch", "one B"])
@pytest.mark.parametrize("batches, m, k, n", [(1, 1, 1, 1), (1, 4, 8, 8), (1, 5, 3, 9),
                                              (3, 17, 33, 15), (2, 8, 1, 16), (1, 64, 70, 130)])
def test_products_match_float64_numpy(engine, batches, m, k, n, broadcast):
    engine, run, _, _ = engine
    rng = np.random.default_rng(m * 100 + n)
    a = rng.standard_normal((batches, m, k)).astype(np.float32)
    b = rng.standard_normal((k, n) if broadcast else (batches, k, n)).astype(np.float32)
    memory = Memory(engine)
    pa, pb = (memory.create_buffer(size) for size in matmul.scratch_bytes(k, n))
    at_a, at_b = memory.create_buffer(a.nbytes, a.tobytes()), memory.create_buffer(b.nbytes,
                                                                                    b.tobytes())
    at_c = memory.create_buffer(4 * batches * m * n + 64, b"\x7f" * (4 * batches * m * n + 64))
    run(at_c, at_a, at_b, batches, m, k, n, pa, pb, 0 if broadcast else 4 * k * n, 4 * n)
    got = np.frombuffer(engine.read(at_c, 4 * batches * m * n), np.float32)
    want = a.astype(np.float64) @ b
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-5 * k)
    assert engine.read(at_c + 4 * batches * m * n, 64) == b"\x7f" * 64  # nothing past C


@pytest.mark.parametrize("batches, m, k, n", [(1, 1, 1, 1), (2, 3, 5, 7), (1, 4, 2, 9)])
def test_int_products_wrap_as_int32_does(engine, batches, m, k, n):
    engine, _, run, _ = engine
    rng = np.random.default_rng(n)
    a = rng.integers(-(2**31), 2**31, (batches, m, k), dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, (batches, k, n), dtype=np.int64).astype(np.int32)
    memory = Memory(engine)
    at_a, at_b = memory.create_buffer(a.nbytes, a.tobytes()), memory.create_buffer(b.nbytes,
                                                                                    b.tobytes())
    at_c = memory.create_buffer(4 * batches * m * n + 64, b"\x7f" * (4 * batches * m * n + 64))
    run(at_c, at_a, at_b, batches, m, k, n)
    got = np.frombuffer(engine.read(at_c, 4 * batches * m * n), np.int32)
    with np.errstate(over="ignore"):
        want = np.matmul(a, b)  # int32 arithmetic: wraps
    np.testing.assert_array_equal(got.reshape(want.shape), want)
    assert engine.read(at_c + 4 * batches * m * n, 64) == b"\x7f" * 64


@pytest.mark.parametrize("broadcast", [False, True], ids=["per batch", "one B"])
@pytest.mark.parametrize("batches, m, k, n", [(1, 1, 1, 1), (1, 1, 784, 64), (2, 3, 13, 10),
                                              (3, 4, 8, 5), (1, 2, 7, 3)])
def test_products_with_a_transposed_b_match_float64_numpy(engine, batches, m, k, n, broadcast):
    engine, _, _, run = engine
    rng = np.random.default_rng(k * 10 + n)
    a = rng.standard_normal((batches, m, k)).astype(np.float32)
    rows = rng.standard_normal((n, k) if broadcast else (batches, n, k)).astype(np.float32)
    memory = Memory(engine)
    at_a = memory.create_buffer(a.nbytes, a.tobytes())
    at_b = memory.create_buffer(rows.nbytes, rows.tobytes())
    at_c = memory.create_buffer(4 * batches * m * n + 64, b"\x7f" * (4 * batches * m * n + 64))
    run(at_c, at_a, at_b, batches, m, k, n, 0 if broadcast else 4 * k * n)
    got = np.frombuffer(engine.read(at_c, 4 * batches * m * n), np.float32)
    want = a.astype(np.float64) @ np.swapaxes(rows, -1, -2)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-5 * k)
    assert engine.read(at_c + 4 * batches * m * n, 64) == b"\x7f" * 64  # nothing past C
