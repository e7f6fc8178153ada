"""What is particular to the wgpu backend: limits (bindings cut into pieces, grids spread over
dims), the buffer pool, the generator's words, dtype refusals, float16, templates, adapters.

The conformance, autodiff and nn suites already run every op on wgpu (they parametrize over
``pyburn.available_devices()``); this file checks what they cannot see. References are numpy
(float64 where it matters) and ``pyburn.random.random_words``.

Skipped when the run skips wgpu on purpose (PYBURN_SKIP=wgpu); otherwise tests/conftest.py
stops a run that finds no adapter before any test.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import math
import re
import struct
from importlib import resources

import pytest

np = pytest.importorskip("numpy")

import pyburn  # noqa: E402
from pyburn.backends import wgpu  # noqa: E402
from pyburn.backends.wgpu.fusion import FusionBackend  # noqa: E402
from pyburn.dtypes import DType, bool_, float16, float32, float64, int32, int64, uint8  # noqa: E402
from pyburn.random import random_words  # noqa: E402

REASON = wgpu.unavailable_reason()
if REASON:  # skipped on purpose: tests/conftest.py stops a run that lacks wgpu otherwise
    pytest.skip(REASON, allow_module_level=True)

NP = {float32: np.float32, float16: np.float16, int32: np.int32, uint8: np.uint8,
      bool_: np.bool_}


@pytest.fixture(scope="module")
def be():
    """The plain (unfused) backend of the first adapter (the one ``device("wgpu")`` uses):
    its handles are the `GpuTensor`s this file inspects."""
    backend = pyburn.device("wgpu").backend
    return backend.inner if isinstance(backend, FusionBackend) else backend


def up(be, a: np.ndarray):
    """A handle holding numpy array `a`."""
    dtype = {np.dtype(v): k for k, v in NP.items()}[a.dtype]
    return be.from_bytes(np.ascontiguousarray(a).tobytes(), a.shape, dtype)


def down(be, h, dtype: DType) -> np.ndarray:
    """The handle's values as a numpy array."""
    return np.frombuffer(be.to_bytes(h, h.shape, dtype), NP[dtype]).reshape(h.shape)


@pytest.fixture
def small_limits(be, monkeypatch):
    """Bindings of at most 1 KiB and grids of at most 4 workgroups per dim, so that small
    tensors take the code paths of huge ones."""
    limits = be.runtime.limits
    monkeypatch.setattr(be.runtime, "limits", dataclasses.replace(
        limits, max_storage_buffer_binding_size=1024, max_workgroups_per_dimension=4))
    return be.runtime.limits


# ---- limits ----------------------------------------------------------------------------

def test_large_ops_are_cut_into_bindings_within_the_limit(be, small_limits, monkeypatch):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(60, 50)).astype(np.float32)
    b = rng.normal(size=(50, 60)).astype(np.float32)
    ha, hb = up(be, a), up(be, b)
    seen = []
    dispatch = be.runtime.dispatch

    def record(source, entry, bindings, grid):
        seen.extend(size for _, _, size in bindings.values())
        return dispatch(source, entry, bindings, grid)

    monkeypatch.setattr(be.runtime, "dispatch", record)
    total = be.binary("add", ha, be.permute(hb, (1, 0)), float32)
    np.testing.assert_array_equal(down(be, total, float32), a + b.T)
    assert seen and max(seen) <= 1024
    np.testing.assert_allclose(down(be, be.reduce("sum", ha, (0, 1)), float32),
                               a.astype(np.float64).sum(keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(down(be, be.reduce("max", ha, (0,)), float32),
                               a.max(0, keepdims=True))
    np.testing.assert_array_equal(down(be, be.arg_reduce("argmin", ha, 1), int32),
                                  a.argmin(1)[:, None])
    np.testing.assert_allclose(down(be, be.scan("sum", ha, 1), float32), a.cumsum(1),
                               rtol=1e-5, atol=1e-5)
    assert max(seen) <= 1024


def test_matmul_sort_gather_scatter_in_pieces(be, small_limits):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 40, 8)).astype(np.float32)
    b = rng.normal(size=(3, 8, 24)).astype(np.float32)
    np.testing.assert_allclose(down(be, be.matmul(up(be, a), up(be, b)), float32), a @ b,
                               rtol=1e-5, atol=1e-5)
    x = rng.normal(size=(60, 9)).astype(np.float32)
    values, order = be.sort(up(be, x), 1, False)
    np.testing.assert_array_equal(down(be, order, int32), np.argsort(x, 1, kind="stable"))
    np.testing.assert_array_equal(down(be, values, float32), np.sort(x, 1))
    index = rng.integers(0, 9, size=(60, 5)).astype(np.int32)
    got = down(be, be.gather(up(be, x), 1, up(be, index)), float32)
    np.testing.assert_array_equal(got, np.take_along_axis(x, index, 1))
    src = rng.normal(size=(60, 5)).astype(np.float32)
    added = down(be, be.scatter(up(be, x), 1, up(be, index), up(be, src), "add"), float32)
    expected = x.astype(np.float64).copy()
    np.add.at(expected, (np.arange(60)[:, None], index), src)
    np.testing.assert_allclose(added, expected, rtol=1e-5, atol=1e-6)
    flags = rng.integers(0, 256, size=3000).astype(np.uint8)
    assert be.to_bytes(up(be, flags), (3000,), uint8) == flags.tobytes()


def test_an_operand_that_cannot_be_cut_is_a_clear_error(be, small_limits):
    # a matmul's K is the loop inside each invocation: a column of b longer than the limit
    a, b = up(be, np.ones((2, 400), np.float32)), up(be, np.ones((400, 2), np.float32))
    with pytest.raises(pyburn.PyburnError, match="max_storage_buffer_binding_size"):
        be.matmul(a, b)


def test_grids_beyond_the_per_dimension_limit_are_spread(be, small_limits):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 70)).astype(np.float32)  # 2800 elements: 11 workgroups of 256
    h = up(be, x)
    np.testing.assert_allclose(down(be, be.unary("exp", h, float32), float32), np.exp(x),
                               rtol=1e-6)
    np.testing.assert_allclose(down(be, be.reduce("sum", h, (1,)), float32),
                               x.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(down(be, be.matmul(h, be.permute(h, (1, 0))), float32),
                               x @ x.T, rtol=1e-4, atol=1e-4)


def test_long_loops_are_cut_to_the_loop_budget(be, monkeypatch):
    """llvmpipe stops an invocation's loops after 65,535 iterations in all: reductions, scans,
    arg-reductions and matmul's K are cut so that no invocation loops longer (here with a
    budget of a few dozen iterations)."""
    from pyburn.backends.wgpu import launch

    monkeypatch.setattr(launch, "MAX_LOOP", 1100)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 20000)).astype(np.float32)
    h = up(be, x)
    np.testing.assert_allclose(down(be, be.reduce("sum", h, (1,)), float32),
                               x.astype(np.float64).sum(1, keepdims=True), rtol=1e-5)
    x[1, 12345] = np.nan
    h = up(be, x)
    np.testing.assert_array_equal(down(be, be.arg_reduce("argmax", h, 1), int32),
                                  [[x[0].argmax()], [12345], [x[2].argmax()]])
    np.testing.assert_allclose(down(be, be.scan("sum", up(be, x[::2]), 1), float32),
                               x[::2].astype(np.float64).cumsum(1), rtol=1e-4, atol=1e-3)
    a = rng.normal(size=(5, 300)).astype(np.float32)
    np.testing.assert_allclose(down(be, be.matmul(up(be, a), up(be, a.T.copy())), float32),
                               a.astype(np.float64) @ a.T, rtol=1e-5, atol=1e-4)


def test_a_reduction_longer_than_llvmpipe_loops_run(be):
    n = 6_000_000  # 23,438 elements for each of 256 invocations: beyond 65,535 / 3
    x = be.arange(0, 1, n, int32)
    assert down(be, be.reduce("max", x, (0,)), int32).tolist() == [n - 1]
    assert down(be, be.arg_reduce("argmax", x, 0), int32).tolist() == [n - 1]


def test_grid_shape():
    from pyburn.backends.wgpu.launch import grid

    assert grid(30, 4) == (4, 4, 2)
    assert grid(3, 65535) == (3, 1, 1)
    with pytest.raises(pyburn.PyburnError, match="workgroups"):
        grid(65, 4)


# ---- memory ----------------------------------------------------------------------------

def test_freed_tensors_return_their_buffers_to_the_pool(be):
    pool = be.gpu.pool
    gc.collect()
    before = pool.stats()
    h = be.unary("exp", up(be, np.ones(1000, np.float32)), float32)
    in_use = pool.stats().in_use_bytes
    del h
    gc.collect()
    after = pool.stats()
    assert after.in_use_bytes < in_use and after.pooled_bytes > 0
    again = be.unary("exp", up(be, np.ones(1000, np.float32)), float32)
    assert pool.stats().allocated_bytes == after.allocated_bytes  # reused, not allocated
    assert down(be, again, float32)[0] == pytest.approx(math.e)
    assert before.allocated_bytes <= after.allocated_bytes


def test_training_does_not_grow_gpu_memory():
    dev = pyburn.device("wgpu").autodiff()
    pool = dev.backend.gpu.pool
    pyburn.manual_seed(0)
    model = pyburn.nn.Sequential(pyburn.nn.Linear(4, 8, device=dev), pyburn.nn.ReLU(),
                                 pyburn.nn.Linear(8, 2, device=dev))
    opt = pyburn.optim.SGD(model.parameters(), lr=0.05)
    x = pyburn.randn(8, 4, device=dev)
    y = pyburn.tensor([0, 1] * 4, device=dev)
    loss_fn = pyburn.nn.CrossEntropyLoss()

    def step() -> pyburn.Tensor:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    first = step().item()
    settled = None
    for i in range(1020):
        last = step()
        # the first steps fill the pool, the kernel metadata cache and the scalar cache
        # (seen settling by the 8th step); after that a step allocates nothing new
        if i == 19:
            gc.collect()
            settled = pool.stats().allocated_bytes
    gc.collect()
    assert pool.stats().allocated_bytes == settled
    assert last.item() < first


def test_trim_frees_the_pooled_buffers(be):
    del_me = be.unary("exp", up(be, np.ones(5000, np.float32)), float32)
    del del_me
    gc.collect()
    pool = be.gpu.pool
    assert pool.stats().pooled_bytes > 0
    freed = pool.trim()
    assert freed > 0 and pool.stats().pooled_bytes == 0


# ---- random bits -------------------------------------------------------------------------

@pytest.mark.parametrize("seed,offset,n", [(0, 0, 1), (42, 3, 37), (2**40 + 7, 5, 1000),
                                           (2**64 - 1, (2**32 - 1) * 4 + 2, 9)],
                         ids=["one", "unaligned", "wide-seed", "counter-carry"])
def test_random_bits_are_the_philox_words(be, seed, offset, n):
    got = np.frombuffer(be.to_bytes(be.random_bits((n,), seed, offset), (n,), int32), "<u4")
    assert got.tolist() == random_words(n, seed, offset)


def test_manual_seed_gives_the_cpu_numbers():
    pyburn.manual_seed(7)
    on_gpu = pyburn.rand(5, 3, device="wgpu").tolist()
    pyburn.manual_seed(7)
    assert on_gpu == pyburn.rand(5, 3, device="flex").tolist()


# ---- dtypes --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [float64, int64], ids=str)
def test_64_bit_dtypes_are_refused_by_name(be, dtype):
    with pytest.raises(pyburn.DTypeError, match=f"{dtype.name}.*|.*{dtype.name}") as info:
        pyburn.zeros(2, dtype=dtype, device="wgpu")
    assert "wgpu" in str(info.value)
    with pytest.raises(pyburn.DTypeError, match=dtype.name) as info:
        be.from_bytes(bytes(16), (2,), dtype)
    assert "wgpu" in str(info.value)
    assert dtype not in be.dtypes and dtype.name not in be.caps


def test_float16_where_the_adapter_has_it(be):
    if "float16" not in be.caps:
        assert float16 not in be.dtypes
        pytest.skip("this adapter has no shader-f16")
    specials = np.array([0.5, -65504, 6.1e-5, 6e-8, np.inf, -np.inf, np.nan, -0.0], np.float16)
    assert be.to_bytes(up(be, specials), specials.shape, float16) == specials.tobytes()
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 5)).astype(np.float16)
    b = rng.normal(size=(4, 5)).astype(np.float16)
    got = down(be, be.binary("mul", up(be, a), up(be, b), float16), float16)
    np.testing.assert_array_equal(got, (a.astype(np.float32) * b).astype(np.float16))
    ones = be.full((4096,), 1.0, float16)  # summed in float32: float16 alone stops at 2048
    assert down(be, be.reduce("sum", ones, (0,)), float16)[0] == 4096
    big = up(be, np.array([70000.0, -1e6, 1.0], np.float32))
    np.testing.assert_array_equal(down(be, be.cast(big, float16), float16),
                                  np.array([np.inf, -np.inf, 1.0], np.float16))


def test_uint8_and_bool_round_trip_through_words(be):
    values = np.arange(256, dtype=np.uint8)[::-1].copy()
    h = up(be, values)
    assert be.to_bytes(h, h.shape, uint8) == values.tobytes()
    odd = be.slice(h, [3], [256], [7])  # a strided view starting mid-word
    assert be.to_bytes(odd, odd.shape, uint8) == values[3::7].tobytes()
    flags = up(be, values % 3 == 0)
    assert be.to_bytes(flags, flags.shape, bool_) == (values % 3 == 0).tobytes()


# ---- semantics that need a GPU's care ----------------------------------------------------

def test_scatter_assign_lets_the_last_write_win(be):
    index = up(be, np.zeros((1, 500), np.int32))
    src = up(be, np.arange(500, dtype=np.float32)[None])
    out = be.scatter(be.full((1, 3), -1.0, float32), 1, index, src, "assign")
    assert down(be, out, float32).tolist() == [[499.0, -1.0, -1.0]]


def test_scatter_add_of_ints_and_bytes_wraps(be):
    index = up(be, np.zeros(300, np.int32))
    ones = be.full((300,), 1, uint8)
    assert down(be, be.scatter(be.full((2,), 0, uint8), 0, index, ones, "add"),
                uint8).tolist() == [300 % 256, 0]
    big = be.full((300,), 2**30, int32)
    total = down(be, be.scatter(be.full((1,), 0, int32), 0, index, big, "add"), int32)
    assert total.tolist() == [np.int32(np.int64(300 * 2**30) % 2**32 - 2**32)]


def test_reads_await_inside_an_event_loop(be):
    h = up(be, np.arange(10, dtype=np.int32))

    async def read() -> bytes:
        return await be.to_bytes_async(h, h.shape, int32)

    assert asyncio.run(read()) == np.arange(10, dtype=np.int32).tobytes()


def test_pipelines_are_compiled_once(be):
    x = up(be, np.ones(10, np.float32))
    be.unary("sin", x, float32)
    compiled = be.runtime.stats.pipelines_compiled
    for _ in range(3):
        be.unary("sin", up(be, np.ones(1000, np.float32)), float32)
    assert be.runtime.stats.pipelines_compiled == compiled


# ---- templates, adapters, device order ------------------------------------------------------

def test_templates_are_strict_and_link_only_what_is_called():
    from pyburn.backends.wgpu import templates

    with pytest.raises(templates.TemplateError, match="value"):
        templates.fill("x = {{value}};", {})
    with pytest.raises(templates.TemplateError, match="typo"):
        templates.fill("x = 1;", {"typo": "2"})
    linked = templates.link("fn f(x: f32) -> f32 { return pb_tanh(x); }")
    assert "fn pb_tanh(" in linked and "fn pb_expm1(" in linked  # tanh calls expm1
    assert "fn pb_erf(" not in linked and "enable f16" not in linked
    assert templates.link("fn g(x: f32) -> f16 { return pb_to_f16(x); }").startswith(
        "enable f16;")


def test_kernels_read_their_buffers_through_the_one_loader():
    from pyburn.backends.wgpu import templates

    kernel = ("@group(0) @binding(1) var<storage, read> a: array<f16>;\n"
              "@group(0) @binding(2) var<storage, read_write> b: array<i32>;\n"
              "@group(0) @binding(3) var<storage, read> c: array<f32>;\n"
              "fn f(i: i32) -> f32 { return pb_load_a(i) + f32(pb_load_b(i)); }")
    linked = templates.link(kernel)
    # typed by each buffer's declaration, linked only where called
    assert "fn pb_load_a(i: i32) -> f32 {\n    let v = a[i];\n    return f32(v);\n}" in linked
    assert "fn pb_load_b(i: i32) -> i32 {\n    let v = b[i];\n    return v;\n}" in linked
    assert "pb_load_c" not in linked and linked.startswith("enable f16;")
    shaders = resources.files("pyburn").joinpath("shaders")
    own = [f"{path.name}: fn {name}" for path in shaders.iterdir()
           if path.name.endswith(".wgsl") and path.name != "functions.wgsl"
           for name in re.findall(r"\bfn (\w*load\w*)\(", path.read_text())]
    assert not own, "kernels call pb_load_<buffer> instead of defining loaders"


def test_adapters_are_listed_best_first():
    found = wgpu.adapters()
    assert found
    order = ("DiscreteGPU", "IntegratedGPU", "VirtualGPU", "Unknown", "CPU")
    kinds = [order.index(info.adapter_type) if info.adapter_type in order else 3
             for info, _ in found]
    assert kinds == sorted(kinds)
    for info, limits in found:
        assert info.backend and limits.max_storage_buffer_binding_size > 0


def test_default_order_puts_a_software_adapter_after_cpu():
    software = wgpu.adapters()[0][0].is_software
    kinds = [d.kind for d in pyburn.available_devices()]
    if software:
        assert wgpu.priority() == wgpu.SOFTWARE_PRIORITY
        assert kinds.index("wgpu") > kinds.index("cpu")
    else:
        assert kinds[0] == "wgpu"
    assert kinds.index("wgpu") < kinds.index("flex")


def test_a_missing_adapter_index_is_a_device_error():
    with pytest.raises(pyburn.DeviceError, match="adapter"):
        wgpu.create(len(wgpu.adapters()) + 3)


def test_scalars_share_one_buffer(be):
    a, b = be.full((3, 4), 2.5, float32), be.full((100,), 2.5, float32)
    assert a.storage is b.storage and a.strides == (0, 0)
    assert struct.unpack("<f", be.to_bytes(b, b.shape, float32)[:4])[0] == 2.5
