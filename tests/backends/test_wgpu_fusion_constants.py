"""A fused kernel reads every scalar of its graph (``x * 0.9``, an optimizer's betas) from one
table of constants (``fusion/constants.py``): one storage binding however many there are, in
map kernels, in a reduction's producers and epilogue (whole, and in segments merged by a
second pass), in matmul and convolution epilogues; code keyed by the constants' dtypes and
positions, not their values.

References: the unfused backend (``wgpu_nofusion``) exactly, for chains a shader compiler
cannot contract (no multiply feeding an add in float32), and float64 numpy. Bindings are
counted by a spy on the runtime's dispatch (metadata included); WebGPU's default of 8
storage buffers per stage is forced where a test says so.

Skipped when the run skips wgpu on purpose (PYBURN_SKIP=wgpu).
"""

from __future__ import annotations

import dataclasses

import pytest

np = pytest.importorskip("numpy")

import pyburn  # noqa: E402
import pyburn.nn.functional as F  # noqa: E402
from pyburn.backends import wgpu  # noqa: E402

REASON = wgpu.unavailable_reason()
if REASON:  # skipped on purpose: tests/conftest.py stops a run that lacks wgpu otherwise
    pytest.skip(REASON, allow_module_level=True)

#: the storage buffers per shader stage WebGPU guarantees (browsers often give no more)
DEFAULT_LIMIT = 8


@pytest.fixture
def bound(fused: pyburn.Device, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of bindings of every dispatch made while the test runs, in order."""
    runtime = fused.backend.runtime
    seen: list[int] = []
    dispatch = runtime.dispatch

    def spy(source, entry, bindings, groups):
        seen.append(len(bindings))
        return dispatch(source, entry, bindings, groups)

    monkeypatch.setattr(runtime, "dispatch", spy)
    return seen


@pytest.fixture
def eight(fused: pyburn.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fused device with WebGPU's default limit of storage buffers."""
    runtime = fused.backend.runtime
    monkeypatch.setattr(runtime, "limits", dataclasses.replace(
        runtime.limits, max_storage_buffers_per_shader_stage=DEFAULT_LIMIT))


def computed(*tensors: pyburn.Tensor) -> None:
    """Compute `tensors` (without reading them back)."""
    for t in tensors:
        t.device.backend.ready(t._h)


def _floats(dev: pyburn.Device, *shape: int, seed: int = 0) -> pyburn.Tensor:
    rng = np.random.default_rng(seed)
    return pyburn.tensor(rng.uniform(0.5, 2, size=shape).astype(np.float32), device=dev)


# chains of many scalars that no shader compiler can contract: exactly the unfused values
EXACT = {
    "float32": lambda v: ((v["y"] / 0.7).maximum(0.3) - 1.25).abs() / 3.0 - 0.125,
    "float32-many": lambda v: ((((v["y"] + 0.5) / 1.5 - 0.25) / 2.5 + 0.75) / 3.5 - 1.0) / 4.5,
    "int32": lambda v: ((v["i"] * 3 + 7) // 2 - 5).maximum(-4) % 6,
    "uint8": lambda v: (v["i"].to(pyburn.uint8) * 37 + 200) // 3,
    "bool": lambda v: (v["m"] | False) & (v["i"] > 2) ^ True,
    "where-scalars": lambda v: pyburn.where(v["m"], 2.5, v["y"]) / 1.5 - 0.5,
    "float16": lambda v: (v["y"].half() * 0.3 + 1.5) / 0.7 - 2.0,
}


def _values(dev: pyburn.Device) -> dict[str, pyburn.Tensor]:
    rng = np.random.default_rng(1)
    return {"y": _floats(dev, 3, 70),
            "i": pyburn.tensor(rng.integers(-20, 20, size=(3, 70)).astype(np.int32), device=dev),
            "m": pyburn.tensor(rng.integers(0, 2, size=(3, 70)).astype(bool), device=dev)}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_every_scalar_of_a_chain_is_one_binding(name, fused, bound, eight):
    if name == "float16" and "float16" not in fused.backend.caps:
        pytest.skip("the adapter has no shader-f16")
    chain = EXACT[name]
    out = chain(_values(fused))
    bound.clear()
    computed(out)
    inputs = 2 if name in ("bool", "where-scalars") else 1
    assert bound == [3 + inputs]  # metadata, out, the inputs, the table of constants
    want = chain(_values(pyburn.device("wgpu_nofusion"))).numpy()
    got = out.numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_code_is_keyed_by_the_constants_dtypes_not_their_values(fused):
    y = _floats(fused, 5, 7)
    (y * 0.5 + 0.25).numpy()
    wgpu.reset_stats()
    for a, b in [(0.5, 0.5), (2.0, -1.0), (3.0, 7.0)]:
        np.testing.assert_allclose((y * a + b).numpy(), y.numpy() * a + b, rtol=1e-6)
    counted = wgpu.stats()
    assert counted.fused_kernels == 3 and counted.cache_hits == 3
    assert counted.pipelines_compiled == 0
    (y.int() * 2 + 1).numpy()  # other dtypes: other code
    assert wgpu.stats().cache_misses == 1


def test_twenty_scalars_and_four_inputs_are_one_kernel_within_eight_bindings(fused, bound,
                                                                               eight):
    xs = [_floats(fused, 4, 9, seed=k) for k in range(4)]
    out = xs[0]
    for k in range(20):
        out = out * (1.0 + k / 64) + xs[k % 4] * (0.5 - k / 128)
    bound.clear()
    computed(out)
    # metadata, out, four inputs, one table (and a binding to spare: the graph's size limit
    # keeps one for a value the kernel may have to store besides its result)
    assert bound == [7]
    want = xs[0].numpy().astype(np.float64)
    for k in range(20):
        want = want * (1.0 + k / 64) + xs[k % 4].numpy() * (0.5 - k / 128)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)


@pytest.mark.parametrize("rows", [30, 3000])  # whole; in segments, merged by a second pass
def test_a_reduction_binds_one_table_for_its_producers_and_epilogue(fused, bound, rows):
    x = _floats(fused, rows, 300)
    out = (x * 0.5 + 0.25).exp().sum(0) * 3.0 - 1.0
    bound.clear()
    computed(out)
    # metadata, out (or the partial results), x, the table; the merge reads the partial
    # results and the table
    assert bound == ([4] if rows == 30 else [4, 4])
    want = np.exp(x.numpy().astype(np.float64) * 0.5 + 0.25).sum(0) * 3.0 - 1.0
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-5)


def test_a_matmul_and_a_convolution_read_their_epilogues_constants_from_a_table(fused, bound):
    a, b = _floats(fused, 8, 16), _floats(fused, 16, 12, seed=1)
    product = ((a @ b) * 0.5 + 0.125).relu() / 3.0
    x, w = _floats(fused, 2, 3, 9, 9, seed=2), _floats(fused, 4, 3, 3, 3, seed=3)
    conv = (F.conv2d(x, w) * 0.5 - 2.0).relu() / 3.0
    bound.clear()
    computed(product, conv)
    assert bound == [5, 5]  # metadata, out, the two operands, the table
    an, bn = a.numpy().astype(np.float64), b.numpy().astype(np.float64)
    np.testing.assert_allclose(product.numpy(), np.maximum(an @ bn * 0.5 + 0.125, 0) / 3.0,
                               rtol=1e-5)
    plain = pyburn.device("wgpu_nofusion")
    xp, wp = (pyburn.tensor(t.numpy(), device=plain) for t in (x, w))
    np.testing.assert_allclose(conv.numpy(), ((F.conv2d(xp, wp) * 0.5 - 2.0).relu() / 3.0)
                               .numpy(), rtol=3e-7, atol=1e-7)


def _mlp(dev: pyburn.Device) -> pyburn.nn.Sequential:
    pyburn.manual_seed(0)
    return pyburn.nn.Sequential(pyburn.nn.Linear(6, 16, device=dev), pyburn.nn.ReLU(),
                                pyburn.nn.Linear(16, 3, device=dev))


def _train(dev: pyburn.Device, steps: int) -> tuple[pyburn.nn.Sequential, pyburn.optim.Adam,
                                                     dict]:
    """`steps` Adam steps on a small MLP, each update made after its gradients are computed;
    returns the model, the optimizer, and what the last update started from (float64)."""
    model = _mlp(dev)
    opt = pyburn.optim.Adam(model.parameters(), lr=0.01)
    rng = np.random.default_rng(5)
    x = pyburn.tensor(rng.normal(size=(8, 6)).astype(np.float32), device=dev)
    y = pyburn.tensor(rng.normal(size=(8, 3)).astype(np.float32), device=dev)
    before = {}
    for _ in range(steps):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        computed(*(p.grad for p in model.parameters()))
        before = {p: {k: t.numpy().astype(np.float64) for k, t in
                      (("p", p), ("g", p.grad), ("m", opt.state[p].get("exp_avg", p * 0)),
                       ("v", opt.state[p].get("exp_avg_sq", p * 0)))}
                  for p in model.parameters()}
        wgpu.reset_stats()
        opt.step()
        computed(*model.parameters())
    return model, opt, before


def test_an_adam_update_within_eight_bindings(fused, bound, eight):
    model, opt, before = _train(fused.autodiff(), 4)
    counted = wgpu.stats()  # of the last update
    params = list(model.parameters())
    # per parameter: one moment (its own kernel), then the update storing the other one too
    # (p, g, m, v, the table, p', v' and the metadata take the eight bindings)
    assert counted.dispatches == counted.fused_kernels == 2 * len(params)
    assert max(bound) <= DEFAULT_LIMIT
    assert counted.pipelines_compiled == 0  # new bias corrections, the same kernels
    for p in params:
        was = before[p]
        m = 0.9 * was["m"] + 0.1 * was["g"]
        v = 0.999 * was["v"] + 0.001 * was["g"] ** 2
        step_size = 0.01 / (1 - 0.9**4)
        want = was["p"] - step_size * m / (np.sqrt(v) / np.sqrt(1 - 0.999**4) + 1e-8)
        np.testing.assert_allclose(opt.state[p]["exp_avg"].numpy(), m, rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(opt.state[p]["exp_avg_sq"].numpy(), v, rtol=1e-5,
                                   atol=1e-12)
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-5, atol=1e-7)


def test_adam_trains_as_on_the_unfused_device(fused, eight):
    model, _, _ = _train(fused.autodiff(), 4)
    plain, _, _ = _train(pyburn.device("wgpu_nofusion").autodiff(), 4)
    for p, q in zip(model.parameters(), plain.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)
