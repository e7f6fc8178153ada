"""What tests/quant cannot see of ``quant_matmul.wgsl`` (pyburn/backends/wgpu/quantized.py):
operands cut into bindings within a small limit, rows walked in pieces of words within a
small loop budget, flipped views; both products against float64 / exact numpy."""

from __future__ import annotations

import dataclasses

import pytest

np = pytest.importorskip("numpy")

from quant.test_kernels import pack  # noqa: E402

import pyburn  # noqa: E402
from pyburn.backends import wgpu  # noqa: E402
from pyburn.backends.wgpu import launch  # noqa: E402
from pyburn.backends.wgpu.fusion import FusionBackend  # noqa: E402
from pyburn.dtypes import float32, int32  # noqa: E402

if wgpu.unavailable_reason():
    pytest.skip(wgpu.unavailable_reason(), allow_module_level=True)


@pytest.fixture(scope="module")
def be():
    """The plain backend of the default adapter, whose handles are GpuTensors."""
    backend = pyburn.device("wgpu").backend
    return backend.inner if isinstance(backend, FusionBackend) else backend


@pytest.fixture
def tight(be, monkeypatch):
    """Bindings of 4 KiB, 4 workgroups per grid dim and a loop budget of 25 words, so that
    small products take the paths of huge ones."""
    monkeypatch.setattr(be.runtime, "limits", dataclasses.replace(
        be.runtime.limits, max_storage_buffer_binding_size=4096,
        max_workgroups_per_dimension=4))
    monkeypatch.setattr(launch, "MAX_LOOP", 1024 + 75)


def up(be, a: np.ndarray):
    dtype = float32 if a.dtype == np.float32 else int32
    return be.from_bytes(np.ascontiguousarray(a).tobytes(), a.shape, dtype)


def down(be, h, dtype) -> np.ndarray:
    return np.frombuffer(be.to_bytes(h, h.shape, dtype),
                         np.float32 if dtype is float32 else np.int32).reshape(h.shape)


def test_weight_only_in_bindings_and_pieces(be, tight):
    rng = np.random.default_rng(0)
    m, n, k, block = 9, 40, 600, 8
    q = rng.integers(-8, 8, (n, k))
    scale = rng.uniform(0.01, 0.1, (n, k // block)).astype(np.float32)
    zero = rng.integers(-8, 8, (n, k // block)).astype(np.int32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    # x read through a flipped view (copied first), the others as they are
    flipped = be.flip(up(be, x[::-1].copy()), (0,))
    got = be.quant_linear(flipped, up(be, pack(q, 4)), up(be, scale), up(be, zero), 4, True,
                          block, k, up(be, bias))
    dense = (q - np.repeat(zero, block, 1)) * np.repeat(scale, block, 1).astype(np.float64)
    np.testing.assert_allclose(down(be, got, float32), x @ dense.T + bias, rtol=1e-4,
                               atol=1e-4)


def test_the_integer_product_in_bindings_and_pieces(be, tight):
    rng = np.random.default_rng(1)
    m, n, k = 7, 30, 300
    q = rng.integers(0, 256, (n, k))
    zero = rng.integers(0, 256, (n, 1)).astype(np.int32)
    a = rng.integers(0, 256, (m, k)).astype(np.int32)
    a_zero = rng.integers(0, 256, (m, 1)).astype(np.int32)
    got = be.quant_matmul_int(up(be, a), up(be, a_zero), up(be, pack(q, 8)), up(be, zero), 8,
                              False, k)
    want = (a.astype(np.int64) - a_zero) @ (q - zero).T
    np.testing.assert_array_equal(down(be, got, int32), want)
