"""The wgpu matmul kernels, each variant forced on every product: transposed and strided
operands, edges that cut tiles, depths not a multiple of the slab, K cut into pieces, batch
dims, int32, and the fused epilogue (bias and activation). References: float64 numpy.

`pick_variant` chooses on real adapters; llvmpipe always gets "blocked", so the tests
replace the choice to reach the other kernels through the public tensor API too.
"""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")

import pyburn  # noqa: E402
from pyburn.backends import wgpu  # noqa: E402
from pyburn.backends.wgpu import matmul as kernels  # noqa: E402
from pyburn.backends.wgpu.fusion import FusionBackend  # noqa: E402
from pyburn.dtypes import float16, float32, int32  # noqa: E402

REASON = wgpu.unavailable_reason()
if REASON:  # skipped on purpose: tests/conftest.py stops a run that lacks wgpu otherwise
    pytest.skip(REASON, allow_module_level=True)

EPILOGUE_VARIANTS = ("tiled", "blocked")


@pytest.fixture(scope="module")
def be():
    """The plain backend of the default wgpu device (its handles are GpuTensors)."""
    backend = pyburn.device("wgpu").backend
    return backend.inner if isinstance(backend, FusionBackend) else backend


NP = {float32: np.float32, float16: np.float16, int32: np.int32}


def _up(be, a: np.ndarray):
    dtype = {np.dtype(v): k for k, v in NP.items()}[a.dtype]
    return be.from_bytes(np.ascontiguousarray(a).tobytes(), a.shape, dtype)


def _down(be, h, dtype=float32) -> np.ndarray:
    return np.frombuffer(be.to_bytes(h, h.shape, dtype), NP[dtype]).reshape(h.shape)


@pytest.mark.parametrize("variant", list(kernels.VARIANTS))
@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 3, 7), (33, 17, 35), (130, 9, 257),
                                   (128, 128, 128), (2, 200, 13, 140)])
def test_every_variant_matches_numpy(be, variant, shape):
    *batch, m, k, n = shape
    rng = np.random.default_rng(sum(shape))
    a = rng.normal(size=(*batch, m, k)).astype(np.float32)
    b = rng.normal(size=(*batch, k, n)).astype(np.float32)
    got = _down(be, kernels.matmul(be.gpu, _up(be, a), _up(be, b), variant))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("variant", list(kernels.VARIANTS))
@pytest.mark.parametrize("transpose_a,transpose_b", [(True, False), (False, True), (True, True)])
def test_transposed_operands_are_read_in_place(be, variant, transpose_a, transpose_b):
    rng = np.random.default_rng(7)
    m, k, n = 140, 21, 131
    a = rng.normal(size=(k, m) if transpose_a else (m, k)).astype(np.float32)
    b = rng.normal(size=(n, k) if transpose_b else (k, n)).astype(np.float32)
    ha, hb = _up(be, a), _up(be, b)
    if transpose_a:
        ha = be.permute(ha, (1, 0))
        a = a.T
    if transpose_b:
        hb = be.permute(hb, (1, 0))
        b = b.T
    got = _down(be, kernels.matmul(be.gpu, ha, hb, variant))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("variant", ["tiled", "blocked"])
def test_a_depth_beyond_the_loop_budget_is_cut_into_pieces(be, variant):
    piece = kernels.loop_budget(kernels.VARIANTS[variant].loop_cost)
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, piece + 37)).astype(np.float32)
    b = rng.normal(size=(piece + 37, 5)).astype(np.float32)
    got = _down(be, kernels.matmul(be.gpu, _up(be, a), _up(be, b), variant))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("variant", list(kernels.VARIANTS))
def test_int32_products_are_exact(be, variant):
    rng = np.random.default_rng(5)
    a = rng.integers(-50, 50, size=(131, 19)).astype(np.int32)
    b = rng.integers(-50, 50, size=(19, 129)).astype(np.int32)
    got = _down(be, kernels.matmul(be.gpu, _up(be, a), _up(be, b), variant), int32)
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b)


@pytest.mark.parametrize("variant", list(kernels.VARIANTS))
def test_float16_products_where_the_adapter_has_it(be, variant):
    if float16 not in be.dtypes:
        pytest.skip("this adapter has no shader-f16")
    rng = np.random.default_rng(6)
    a = rng.normal(size=(129, 24)).astype(np.float16)
    b = rng.normal(size=(24, 130)).astype(np.float16)
    got = _down(be, kernels.matmul(be.gpu, _up(be, a), _up(be, b), variant), float16)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-2, atol=2e-2)


@pytest.mark.parametrize("variant", EPILOGUE_VARIANTS)
def test_a_fused_bias_and_activation_run_in_each_kernel(monkeypatch, variant):
    dev = pyburn.device("wgpu")
    if not isinstance(dev.backend, FusionBackend):
        pytest.skip("PYBURN_FUSION=0: no epilogue to fuse")
    monkeypatch.setattr(kernels, "pick_variant", lambda gpu, m, n: variant)
    rng = np.random.default_rng(9)
    x, w, bias = (rng.normal(size=s).astype(np.float32) for s in [(150, 40), (130, 40), (130,)])
    out = pyburn.relu(pyburn.tensor(x, device=dev) @ pyburn.tensor(w, device=dev).T
                      + pyburn.tensor(bias, device=dev))
    want = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + bias, 0)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


def test_pick_variant_keeps_register_blocks_on_cpu_drivers_and_small_products(be):
    tile = kernels.VARIANTS["tiled"].tile
    if be.gpu.runtime.info.is_software:
        assert kernels.pick_variant(be.gpu, 4096, 4096) == "blocked"
    else:
        assert kernels.pick_variant(be.gpu, 4096, 4096) == "tiled"
    assert kernels.pick_variant(be.gpu, tile - 1, 4096) == "blocked"
