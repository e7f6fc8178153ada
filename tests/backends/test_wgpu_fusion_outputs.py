"""A fused map kernel stores, besides its root, the steps inside it that a live handle holds
(an optimizer's moments, autodiff's saved tensors) when they are in the root's iteration
space: one kernel writes them all (``plan.held_stored``). A held step reached through an
expand or a reshape has fewer points than the kernel: it is still computed first, by a
kernel of its own (``plan.held_first``), and so is one past the binding limit.

References: the unfused backend (``wgpu_nofusion``) and float64 numpy; dispatches counted
with ``pyburn.backends.wgpu.stats()``.

Skipped when the run skips wgpu on purpose (PYBURN_SKIP=wgpu).
"""

from __future__ import annotations

import dataclasses

import pytest

np = pytest.importorskip("numpy")

import pyburn  # noqa: E402
from pyburn.backends import wgpu  # noqa: E402

REASON = wgpu.unavailable_reason()
if REASON:  # skipped on purpose: tests/conftest.py stops a run that lacks wgpu otherwise
    pytest.skip(REASON, allow_module_level=True)


def limited(dev: pyburn.Device, monkeypatch: pytest.MonkeyPatch, buffers: int) -> None:
    """Give `dev` at most `buffers` storage buffers per shader stage (skip where the adapter
    has fewer)."""
    runtime = dev.backend.runtime
    if runtime.limits.max_storage_buffers_per_shader_stage < buffers:
        pytest.skip(f"the adapter binds fewer than {buffers} storage buffers")
    monkeypatch.setattr(runtime, "limits", dataclasses.replace(
        runtime.limits, max_storage_buffers_per_shader_stage=buffers))


def dispatches(*tensors: pyburn.Tensor) -> int:
    """The dispatches that computing `tensors` takes (without reading them back)."""
    wgpu.reset_stats()
    for t in tensors:
        t.device.backend.ready(t._h)
    return wgpu.stats().dispatches


def _inputs(dev: pyburn.Device) -> dict[str, pyburn.Tensor]:
    rng = np.random.default_rng(2)
    arrays = {"x": rng.normal(size=(3, 40)).astype(np.float32),
              "y": rng.uniform(0.5, 2, size=(3, 40)).astype(np.float32),
              "col": rng.normal(size=(3, 1)).astype(np.float32),
              "flat": rng.normal(size=(120,)).astype(np.float32),
              "i": rng.integers(-9, 9, size=(3, 40)).astype(np.int32)}
    return {k: pyburn.tensor(a, device=dev) for k, a in arrays.items()}


def _held_chain(v: dict[str, pyburn.Tensor]) -> tuple[pyburn.Tensor, ...]:
    """A root and four steps inside it, each held: a float, a bool, an int, a half."""
    a = v["x"] * 2.0 - v["y"]
    b = a.exp()
    mask = b > 1.5
    k = v["i"] * 3 + mask.int()
    h = (b * 0.5).half()
    return (pyburn.where(mask, b, a) + k.float() * h.float(), a, b, mask, k, h)


def test_held_steps_are_stored_by_the_kernel_that_computes_them(fused):
    if "float16" not in fused.backend.caps:
        pytest.skip("the adapter has no shader-f16")
    out, *held = _held_chain(_inputs(fused))
    assert dispatches(out) == 1
    assert dispatches(*held) == 0  # stored by it
    want = _held_chain(_inputs(pyburn.device("wgpu_nofusion")))
    for got, expected in zip((out, *held), want):
        got, expected = got.numpy(), expected.numpy()
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_a_held_step_read_through_a_view_is_computed_first(fused):
    v = _inputs(fused)
    wide = (v["col"] * 2.0).exp()  # read expanded: fewer points than the root
    flat = v["flat"] * 0.5 + 1.0  # read reshaped (the same points, renumbered: first too)
    out = wide.expand(3, 40) * v["y"] + flat.reshape(3, 40)
    assert dispatches(out) == 3
    assert dispatches(wide, flat) == 0
    col, y, flat64 = (v[k].numpy().astype(np.float64) for k in ("col", "y", "flat"))
    want = np.exp(col * 2) * y + (flat64 * 0.5 + 1).reshape(3, 40)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


def test_held_steps_past_the_binding_limit_get_kernels_of_their_own(fused, monkeypatch):
    limited(fused, monkeypatch, 8)
    v = _inputs(fused)
    steps = [v["x"]]
    for _ in range(9):  # each held: nine outputs besides the root, too many for 8 bindings
        steps.append(steps[-1] * 0.5 + v["y"])
    seen = []
    dispatch = fused.backend.runtime.dispatch

    def spy(source, entry, bindings, groups):
        seen.append(len(bindings))
        return dispatch(source, entry, bindings, groups)

    monkeypatch.setattr(fused.backend.runtime, "dispatch", spy)
    root = steps[-1].sin()
    count = dispatches(root)
    assert 1 < count < 10 and max(seen) <= 8
    assert dispatches(*steps[1:]) == 0
    want = v["x"].numpy().astype(np.float64)
    y = v["y"].numpy().astype(np.float64)
    for got in steps[1:]:
        want = want * 0.5 + y
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(root.numpy(), np.sin(want), rtol=1e-5, atol=1e-6)


def _mlp(dev: pyburn.Device) -> pyburn.nn.Sequential:
    pyburn.manual_seed(0)
    return pyburn.nn.Sequential(pyburn.nn.Linear(6, 16, device=dev), pyburn.nn.ReLU(),
                                pyburn.nn.Linear(16, 3, device=dev))


def _adam_steps(dev: pyburn.Device, steps: int, amsgrad: bool = False):
    """`steps` Adam steps on a small MLP, the gradients computed before each update; returns
    the model, the optimizer and the dispatches of the last update."""
    model = _mlp(dev)
    opt = pyburn.optim.Adam(model.parameters(), lr=0.01, amsgrad=amsgrad)
    rng = np.random.default_rng(5)
    x = pyburn.tensor(rng.normal(size=(8, 6)).astype(np.float32), device=dev)
    y = pyburn.tensor(rng.normal(size=(8, 3)).astype(np.float32), device=dev)
    count = 0
    for _ in range(steps):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        dispatches(*(p.grad for p in model.parameters()))
        opt.step()
        count = dispatches(*model.parameters())
    return model, opt, count


@pytest.mark.parametrize("amsgrad", [False, True])
def test_an_adam_update_is_one_kernel_per_parameter(fused, monkeypatch, amsgrad):
    limited(fused, monkeypatch, 16)
    model, opt, count = _adam_steps(fused.autodiff(), 4, amsgrad)
    params = list(model.parameters())
    assert count == len(params)  # each writes p, m and v (and v_max)
    plain, plain_opt, _ = _adam_steps(pyburn.device("wgpu_nofusion").autodiff(), 4, amsgrad)
    names = ["exp_avg", "exp_avg_sq"] + ["max_exp_avg_sq"] * amsgrad
    for p, q in zip(params, plain.parameters()):
        assert dispatches(*(opt.state[p][n] for n in names)) == 0
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)
        for n in names:
            np.testing.assert_allclose(opt.state[p][n].numpy(), plain_opt.state[q][n].numpy(),
                                       rtol=1e-5, atol=1e-9)


def test_an_update_fused_into_its_gradient_stores_the_moments(fused):
    # the parameters read after every step: each update is then computed with its gradient
    # (a bias's by the reduction over the batch, its epilogue storing m and v too); moments
    # left pending there would grow by a step's graph each time, and compile anew
    dev = fused.autodiff()
    model = _mlp(dev)
    opt = pyburn.optim.Adam(model.parameters(), lr=0.01)
    rng = np.random.default_rng(6)
    x = pyburn.tensor(rng.normal(size=(8, 6)).astype(np.float32), device=dev)
    y = pyburn.tensor(rng.normal(size=(8, 3)).astype(np.float32), device=dev)

    def step() -> None:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
        for p in model.parameters():
            dev.backend.ready(p._h)

    for _ in range(3):
        step()
    wgpu.reset_stats()
    for _ in range(6):
        step()
        for p in model.parameters():
            assert not any(opt.state[p][n]._h.tensor.pending for n in ("exp_avg", "exp_avg_sq"))
    assert wgpu.stats().pipelines_compiled == 0
