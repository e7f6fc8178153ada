"""Fusion on the wasm device (``pyburn/backends/wasm/fusion.py``): chains of elementwise ops
are one generated kernel each, compiled once per structure, and compute what numpy
computes on the same float32, int32, uint8 and bool values: through broadcast, transposed,
sliced and flipped inputs, over rank 0 to 4, with the held steps stored by the kernel that
computes them. Every op of the table, fused, gives the bits of its own kernel. Results
smaller than `EAGER_BELOW` run unfused; the tests that look at kernels lower it to 0."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.backends.wasm.fusion import EAGER_BELOW, WasmFusion
from pyburn.dtypes import bool_, float32, int32, uint8
from pyburn.ops import math_ops
from pyburn.ops.elementwise import BINARY, UNARY


@pytest.fixture
def dev(monkeypatch) -> pyburn.Device:
    """The wasm device, fusing results of every size, with a cache of the numbers' tensors
    of its own (another test's may be computed: a kernel reads those from memory)."""
    device = pyburn.device("wasm")
    if not isinstance(device.backend, WasmFusion):
        pytest.skip("fusion is off ($PYBURN_FUSION=0)")
    monkeypatch.setattr(device.backend, "eager_below", 0)
    monkeypatch.setattr(math_ops, "_CONSTANTS", {})
    return device


@pytest.fixture
def launches(monkeypatch) -> list[int]:
    """One entry per fused kernel launched (its number of stored outputs)."""
    found: list[int] = []
    launch = WasmFusion._launch

    def counted(self, root, walk, value, stored):
        found.append(1 + len(stored))
        return launch(self, root, walk, value, stored)
    monkeypatch.setattr(WasmFusion, "_launch", counted)
    return found


def _t(dev, a: np.ndarray) -> pyburn.Tensor:
    return pyburn.tensor(a, device=dev)


RNG = np.random.default_rng(7)


@pytest.mark.parametrize("view", ["contiguous", "transposed", "flipped", "strided"])
def test_a_chain_is_one_kernel_and_matches_numpy(dev, launches, view):
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    bias = RNG.standard_normal((6,)).astype(np.float32)
    t, b = _t(dev, x), _t(dev, bias)
    if view == "transposed":
        x, t = x.T, t.T
        bias, b = bias[:4], b[:4]
    elif view == "flipped":
        x, t = x[::-1, ::-1], t.flip(0).flip(1)
    elif view == "strided":
        x, t = x[:, ::2], t[:, ::2]
        bias, b = bias[:3], b[:3]
    got = ((t * 0.5 + b).exp() - t).relu().sqrt()
    launches.clear()
    values = np.array(got.tolist(), np.float32)
    want = np.sqrt(np.maximum(np.exp(x.astype(np.float64) * 0.5 + bias) - x, 0))
    np.testing.assert_allclose(values, want, rtol=2e-6, atol=1e-6)
    assert launches == [1]  # five ops, two numbers, one kernel


@pytest.mark.parametrize("shape", [(), (1,), (5,), (3, 1, 5), (2, 3, 4, 7)])
def test_broadcasts_over_every_rank(dev, shape):
    a = RNG.standard_normal(shape).astype(np.float32)
    lead = RNG.standard_normal(shape[-1:] if shape else ()).astype(np.float32)
    column = RNG.standard_normal(shape[:-1] + (1,) if shape else ()).astype(np.float32)
    got = _t(dev, a) * _t(dev, lead) - _t(dev, column) / 3
    want = a.astype(np.float64) * lead - column.astype(np.float64) / 3
    np.testing.assert_allclose(np.array(got.tolist(), np.float32), want, rtol=1e-6, atol=1e-6)


def test_uint8_wraps_at_every_step_as_numpy_does(dev, launches):
    a = np.arange(0, 250, 10, dtype=np.uint8)
    t = _t(dev, a)
    got = ((t + 200) * 3 - 7) // 2
    want = ((a + np.uint8(200)) * np.uint8(3) - np.uint8(7)) // np.uint8(2)
    assert got.tolist() == want.tolist()
    assert launches == [1]


def test_casts_and_where_inside_a_chain(dev):
    x = np.array([-3.7, -0.5, 0.0, 0.4, 2.5, 1e10, -1e10, np.nan, np.inf, 300.2], np.float32)
    t = _t(dev, x)
    as_int = t.int()  # (truncated, wrapped to 32 bits; 0 for NaN and inf, as every cast)
    ints = [-3, 0, 0, 0, 2, 1410065408, -1410065408, 0, 0, 300]
    assert as_int.tolist() == ints
    truth = (t * 2).bool()
    assert truth.tolist() == [bool(v) for v in x * 2]
    picked = pyburn.where(t > 0, t * 10, t.int().float() - 1)
    want = np.where(x > 0, x * 10, np.array(ints, np.float32) - 1)
    np.testing.assert_allclose(np.array(picked.tolist(), np.float32), want, rtol=1e-6)
    small = (t.clamp(-100, 100).int() + 3).to(pyburn.uint8)
    assert small.tolist() == [int(v) % 256 for v in
                              np.trunc(np.nan_to_num(np.clip(x, -100, 100), nan=0)) + 3]


def test_kernels_are_compiled_once_per_structure(dev, monkeypatch):
    compiled: list[int] = []
    instantiate = dev.backend.engine.instantiate
    monkeypatch.setattr(dev.backend.engine, "instantiate",
                        lambda binary: compiled.append(len(binary)) or instantiate(binary))
    for n in (5, 17, 300):  # other shapes, other numbers: the same kernel
        x = _t(dev, np.arange(n, dtype=np.float32))
        assert ((x * (n + 0.25)).tanh() + n).tolist() is not None
    assert len(compiled) == 1


def test_held_steps_are_stored_by_the_kernel_that_needs_them(dev, launches):
    x = _t(dev, np.arange(8, dtype=np.float32))
    doubled = x * 2  # held by the user
    out = (doubled + 1).square()
    assert out.tolist() == [(2 * v + 1) ** 2 for v in range(8)]
    assert doubled.tolist() == [2.0 * v for v in range(8)]
    assert launches == [2]  # one kernel stored both


def test_a_number_alone_is_filled_only_when_read(dev, launches):
    z = pyburn.full((3, 2), 7.5, device=dev)
    assert z.tolist() == [[7.5, 7.5], [7.5, 7.5], [7.5, 7.5]]
    assert launches == []
    assert (z.sum(0)).tolist() == [22.5, 22.5]


def test_an_unread_chain_costs_nothing(dev, launches):
    x = _t(dev, np.ones(16, np.float32))
    y = (x + 1).exp()
    del y
    assert launches == []


#: the dtypes each op domain takes (see `pyburn.ops.elementwise`)
DOMAIN_DTYPES = {"float": (float32,), "numeric": (float32, int32, uint8),
                 "rounding": (float32, int32, uint8), "compare": (float32, int32, bool_),
                 "logical": (float32, int32, bool_), "bitwise": (int32, uint8, bool_)}
#: inputs with the edges: zeros, signs, infinities, NaN, integer extremes
SAMPLES = {float32: np.array([-7.5, -2, -1, -0.5, -0.0, 0, 0.25, 0.5, 1, 1.5, 2, 3, 100,
                              np.inf, -np.inf, np.nan], np.float32),
           int32: np.array([-2**31, -7, -3, -2, -1, 0, 0, 1, 2, 3, 5, 7, 31, 100, 2**31 - 1, 9],
                           np.int32),
           uint8: np.array([0, 1, 2, 3, 5, 7, 8, 31, 100, 127, 128, 200, 254, 255, 0, 9],
                           np.uint8),
           bool_: np.array([0, 1] * 8, np.bool_)}


def _cases() -> list[tuple[str, object]]:
    return [(name, dtype) for table in (UNARY, BINARY) for name, op in table.items()
            for dtype in DOMAIN_DTYPES[op.domain]]


@pytest.mark.parametrize("name,dtype", _cases(), ids=lambda v: getattr(v, "name", v))
def test_every_op_fused_gives_the_bits_of_its_own_kernel(dev, launches, name, dtype):
    fused, plain = dev.backend, dev.backend.inner
    op = UNARY.get(name) or BINARY[name]
    out = bool_ if op.returns_bool else dtype
    shape = (2, 8)
    a = SAMPLES[dtype].reshape(shape)
    b = np.roll(SAMPLES[dtype], 5).reshape(shape)  # every pair of edges meets somewhere
    args = [a] if op.arity == 1 else [a, b]

    def run(backend):
        handles = [backend.from_bytes(x.tobytes(), shape, dtype) for x in args]
        result = (backend.unary(name, *handles, out) if op.arity == 1
                  else backend.binary(name, *handles, out))
        return backend.to_bytes(result, shape, out)
    try:
        want = run(plain)
    except pyburn.PyburnError as error:  # an op the device refuses refuses fused too
        with pytest.raises(type(error)):
            run(fused)
        return
    assert run(fused) == want
    assert launches == [1]


def test_small_results_run_unfused(launches, monkeypatch):
    dev = pyburn.device("wasm")
    monkeypatch.setattr(math_ops, "_CONSTANTS", {})
    x = _t(dev, np.arange(EAGER_BELOW - 1, dtype=np.float32))
    assert ((x * 2 + 1).sqrt()).tolist()[:3] == pytest.approx([1, 3 ** 0.5, 5 ** 0.5])
    assert launches == []
    big = _t(dev, np.arange(EAGER_BELOW, dtype=np.float32))
    assert ((big * 2 + 1).sqrt()).tolist()[:2] == pytest.approx([1, 3 ** 0.5])
    assert launches == [1]

